"""The statistics of a small file, tree by tree by `summary`, without pandas
or networkx, each row as `conversation_table` gives it."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import Any

from convgraph.analysis.conversation_stats import empty_summary, summary
from convgraph.contract import CACHE_ATTRIBUTES
from convgraph.errors import UnknownConversation
from convgraph.links.integrity import check_links
from convgraph.sources import Source, TreeRecords, log_order
from convgraph.sources.notes import read_notes
from convgraph.times import utc_iso

#: The size (bytes, write-ahead log counted) under which importing pandas
#: would cost more than measuring each tree alone.
SMALL_INPUT_BYTES = 1_000_000


def is_small(source: Source) -> bool:
    """Whether `source` is one file under `SMALL_INPUT_BYTES`, or is read a
    tree at a time in one pass (a chat export), where pandas costs more."""
    if source.trees() is not None:
        return True
    path = os.fspath(source.path)
    try:
        if not os.path.isfile(path):
            return False
        size = os.path.getsize(path)
        if os.path.isfile(path + "-wal"):
            size += os.path.getsize(path + "-wal")
    except OSError:
        return False
    return size < SMALL_INPUT_BYTES


def summary_records(
    source: Source, conversation_ids: Iterable[str] = ()
) -> list[dict[str, Any]] | None:
    """The rows of `conversation_table` for every tree, or those the ids name
    (each once, in order named); None where the table must answer (hidden
    branches, a tree the file does not give alone). Raises UnknownConversation.
    """
    if any(note.hidden for note in read_notes(source).values()):
        return None
    one_pass = source.trees()
    if one_pass is not None:
        return None if conversation_ids else _one_pass_records(source, one_pass)
    named: dict[str, str] = {}  # each tree once, with the id that named it
    for conversation_id in conversation_ids:
        named.setdefault(
            source.tree_id_of_conversation(conversation_id), conversation_id
        )
    records = []
    for tree_id in named or source.tree_ids():
        try:
            tree = source.read_tree(tree_id)
            if not tree.records:
                raise UnknownConversation(tree_id)
        except UnknownConversation:
            if not named:
                return None  # a thread's row without its id: the table reads it
            raise UnknownConversation(named[tree_id]) from None
        records.append(_tree_summary(source, tree))
    return records


def _one_pass_records(
    source: Source, trees: Iterator[TreeRecords]
) -> list[dict[str, Any]]:
    """`summary_records` of a file read once, empty trees last."""
    found, empty = [], []
    for tree in trees:
        if not tree.records:
            empty.append(tree)
            continue
        found.append((min(map(log_order, tree.records)), _tree_summary(source, tree)))
    # The table's order: each tree where its first node is in log order.
    records = [record for _, record in sorted(found, key=lambda pair: pair[0])]
    return records + [empty_summary(tree.tree_id, tree.name) for tree in empty]


def _tree_summary(source: Source, tree: TreeRecords) -> dict[str, Any]:
    """`summary` of a tree's records (some), as the table gives it: links
    checked as `read_tree` checks them, `active` marked as `mark_tree` does."""
    records = sorted(tree.records, key=log_order)
    ids = {record["id"] for record in records}
    outside = [
        parent
        for record in records
        if (parent := record["parent_id"]) is not None and parent not in ids
    ]
    outsiders = source.conversations_of(outside) if outside else {}
    parents = check_links(records, outsiders)[0]
    marked = [record | {"parent_id": parents[record["id"]]} for record in records]
    if all(record.get("active") is None for record in marked):
        by_id = {record["id"]: record for record in marked}
        on_path = marked[-1]["id"]
        while on_path is not None:  # checked links have no cycle
            by_id[on_path]["active"] = True
            on_path = by_id[on_path]["parent_id"]
    found = summary(marked, tree.tree_id, tree.name)
    for key in ("first_datetime", "last_datetime"):  # as the table prints them
        found[key] = utc_iso(found[key])
    return found | _cache_sums(tree)


def _cache_sums(tree: TreeRecords) -> dict[str, Any]:
    """The cache figures the table ends with, where the records carry them."""
    sums = {}
    for key in CACHE_ATTRIBUTES:
        if any(key in record for record in tree.records):
            known = [r[key] for r in tree.records if r.get(key) is not None]
            sums[key] = sum(known) if known else None
    return sums
