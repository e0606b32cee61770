"""The `Source` interface every reader answers, one tree's raw records, and
log order; kept apart from the readers so that no reader imports another."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from convgraph.contract import PARENT_ROWS
from convgraph.errors import (
    LONGEST_ID,
    AmbiguousId,
    ConversationNotNode,
    NodeNotConversation,
    UnknownConversation,
    UnknownNode,
)
from convgraph.links.integrity import Problem
from convgraph.text import cell_width, excerpt

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd


#: Told how far a read has come: `(phase, done, total)`, total None if unknown.
ProgressCallback = Callable[[str, int, int | None], None]


def no_progress(phase: str, done: int, total: int | None) -> None:
    pass


@dataclass
class TreeRecords:
    """One tree's raw rows in log order, links unchecked; `problems` beside
    parent links; `calls` maps each call inside a run to the run's node."""

    tree_id: str
    name: str | None
    records: list[dict[str, Any]]
    problems: list[Problem] = field(default_factory=list)
    calls: dict[str, str] = field(default_factory=dict)


NODE = "node"
CONVERSATION = "conversation"

#: The shortest prefix looked up as one: "01jb" begins nearly every id of a
#: year, so a shorter one names only itself (git asks for 4 too).
MIN_PREFIX = 4

LISTED = 8
#: An ambiguous prefix's candidate lines, indented by two, fit 80 columns.
DESCRIBED = 78


@dataclass(frozen=True)
class IdMatch:
    """An id a prefix begins (`Source.id_matches`): its kind, the tree that
    holds it, and its words (a node's prompt, a conversation's name)."""

    kind: str
    id: str
    tree_id: str
    text: str | None = None

    def describe(self) -> str:
        """One line of an ambiguous prefix's listing: its words fill 80
        columns, indented, after the id, which is never cut."""
        if self.kind == NODE:
            what = f"node of {self.tree_id}"
        elif self.tree_id != self.id:
            what = f"conversation in tree {self.tree_id}"
        else:
            what = "conversation"
        head = f"{self.id}  {what}"
        room = DESCRIBED - cell_width(head) - 2
        words = excerpt(self.text, room) if self.text and room > 4 else ""
        return f"{head}: {words}" if words else head


def prefix_end(prefix: str) -> str | None:
    """The least string above every string beginning with `prefix` (code
    point order, as SQLite's), or None where there is none."""
    while prefix and prefix[-1] == chr(0x10FFFF):
        prefix = prefix[:-1]
    return prefix[:-1] + chr(ord(prefix[-1]) + 1) if prefix else None


def prefix_range(column: str, prefix: str) -> tuple[str, list[str]]:
    """SQL that `column` begins with `prefix`, and its parameters: a range,
    which an index answers where `like` or `substr` would scan."""
    if (end := prefix_end(prefix)) is None:
        return f"{column} >= ?", [prefix]
    return f"{column} >= ? and {column} < ?", [prefix, end]


@dataclass
class ForestRead:
    """What `Source.read` gives: `nodes` in log order (`SOURCE_COLUMNS`,
    a source's own, maybe `PARENT_ROWS`), links unchecked; else as `TreeRecords`."""

    nodes: pd.DataFrame
    names: dict[str, Any]
    problems: list[Problem] = field(default_factory=list)
    calls: dict[str, str] = field(default_factory=dict)


class TextsWithForest(Exception):
    """Raised by `Source.text_batches` at its first batch: this file's texts come
    only with the forest (a turn of another shape)."""


class NodeTexts(NamedTuple):
    """A batch of nodes' ids and their `contract.TEXT_ATTRIBUTES` columns."""

    ids: list[str]
    texts: dict[str, list[str | None]]


class Source:
    """A file of conversations, read-only. A reader implements `tree_ids`,
    `tree_id_of_*`, `read_tree` and `read_all`; the rest is built on them."""

    path: Path
    #: The SQLite connection behind the file, if any.
    conn: sqlite3.Connection | None = None

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        pass

    @property
    def generations(self) -> list[str]:
        """The storage formats the file holds, oldest first."""
        raise NotImplementedError

    def tree_ids(self) -> list[str]:
        """Every conversation tree's id, in the order of its first node."""
        raise NotImplementedError

    def tree_id_of_conversation(self, conversation_id: str) -> str:
        """The tree that `conversation_id` names."""
        raise NotImplementedError

    def tree_id_of_node(self, node_id: str) -> str:
        """The tree that holds `node_id`."""
        raise NotImplementedError

    def node_of(self, node_id: str) -> str:
        """`node_id`, or the run's node for a call inside a run."""
        return self.read_tree(self.tree_id_of_node(node_id)).calls.get(node_id, node_id)

    def conversations_of(self, node_ids: list[str]) -> dict[str, str]:
        """The conversation of each node the file holds: tells a parent in
        another conversation from a missing one. Only readers whose trees
        link outside themselves answer."""
        return {}

    def id_matches(self, given: str, limit: int) -> list[IdMatch]:
        """Up to `limit` ids of each kind beginning with `given` (at least
        `MIN_PREFIX` long); this default reads every tree."""
        conversations: list[IdMatch] = []
        nodes: list[IdMatch] = []
        for tree_id in self.tree_ids():
            tree = self.read_tree(tree_id)
            if tree_id.startswith(given) and len(conversations) < limit:
                conversations.append(IdMatch(CONVERSATION, tree_id, tree_id, tree.name))
            words = {record["id"]: record.get("prompt") for record in tree.records}
            words.update((call, None) for call in tree.calls)
            nodes += [
                IdMatch(NODE, node_id, tree_id, text)
                for node_id, text in words.items()
                if node_id.startswith(given)
            ][: limit - len(nodes)]
        return conversations + nodes

    def exact_matches(self, given: str) -> list[IdMatch]:
        """`given` as a node and as a conversation, where it is one."""
        found = []
        with contextlib.suppress(UnknownNode):
            found.append(IdMatch(NODE, given, self.tree_id_of_node(given)))
        with contextlib.suppress(UnknownConversation):
            found.append(
                IdMatch(CONVERSATION, given, self.tree_id_of_conversation(given))
            )
        return found

    def is_id(self, given: str, kind: str) -> bool:
        """Whether `given` is a whole id of `kind` (`NODE` or `CONVERSATION`)."""
        try:
            if kind == NODE:
                self.tree_id_of_node(given)
            else:
                self.tree_id_of_conversation(given)
        except (UnknownNode, UnknownConversation):
            return False
        return True

    def resolve(self, given: str, wanted: str | None = None) -> tuple[str, str]:
        """`(kind, id)` that `given` names, whole or as a unique prefix;
        `wanted` is `NODE`, `CONVERSATION` or None for either (node first).
        Raises `AmbiguousId`, `*NotConversation`/`*NotNode`, `Unknown*`."""
        kinds = (wanted,) if wanted is not None else (NODE, CONVERSATION)
        if len(given) > LONGEST_ID:
            raise (
                UnknownConversation(given)
                if wanted == CONVERSATION
                else UnknownNode(given)
            )
        # The whole id first: one index probe in llm's database.
        for kind in kinds:
            if self.is_id(given, kind):
                return kind, given
        if len(given) < MIN_PREFIX:
            matches = self.exact_matches(given)
        else:
            matches = self.id_matches(given, LISTED + 1)
        exact = [match for match in matches if match.id == given]
        for kind in kinds:
            if any(match.kind == kind for match in exact):
                return kind, given
        if exact:
            # A whole id of the other kind wins over prefixes of the wanted.
            raise _other_kind(given, exact[0])
        chosen = _each_id_once([match for match in matches if match.kind in kinds])
        if len(chosen) == 1:
            return chosen[0].kind, chosen[0].id
        if len(chosen) > 1:
            raise ambiguous_id(given, chosen)
        others = _each_id_once(matches)
        if len(others) > 1:
            raise ambiguous_id(given, others, none_of=wanted)
        if others:
            raise _other_kind(given, others[0])
        if wanted == CONVERSATION:
            raise UnknownConversation(given)
        raise UnknownNode(given)

    def unique_length(self, ids: Collection[str], length: int) -> int:
        """The fewest characters, at least `length`, whose prefixes of `ids`
        each begin no other id of the whole file."""
        for one in sorted(set(ids)):
            while length < len(one):
                others = {match.id for match in self.id_matches(one[:length], LISTED)}
                others.discard(one)
                if not others:
                    break
                shared = max(
                    len(os.path.commonprefix([one, other])) for other in others
                )
                length = max(length, shared + 1)
        return length

    def resolve_node(self, given: str) -> str:
        return self.resolve(given, NODE)[1]

    def resolve_conversation(self, given: str) -> str:
        return self.resolve(given, CONVERSATION)[1]

    def path_by_links(self, node_id: str) -> list[str] | None:
        """Root-to-`node_id` ids by stored links, or None if the tree is needed."""
        return None

    def read_tree(self, tree_id: str) -> TreeRecords:
        """One tree's rows, read with questions about it alone."""
        raise NotImplementedError

    def read(
        self,
        texts: bool | Collection[str] = True,
        trees: Iterable[str] | None = None,
        progress: ProgressCallback | None = None,
    ) -> ForestRead:
        """Every tree as one table, or only `trees`; `texts` False leaves texts
        and parts out, a collection names the text columns wanted."""
        report = progress or no_progress
        if trees is not None:
            return _read_trees(self, list(dict.fromkeys(trees)), bool(texts), report)
        return self.read_all(texts, report)

    def read_all(
        self, texts: bool | Collection[str], progress: ProgressCallback
    ) -> ForestRead:
        raise NotImplementedError

    def text_batches(
        self, progress: ProgressCallback | None = None
    ) -> Iterator[NodeTexts] | None:
        """Every node's texts in batches, any order (maybe nodes a forest read
        missed); None, or `TextsWithForest` at the first batch, where texts come
        only with the forest."""
        return None

    def answers(self, node_ids: list[str]) -> dict[str, str | None]:
        """These nodes' answers where a read of fewer texts left them out;
        empty where every read holds them."""
        return {}

    def tree_names(self) -> list[tuple[str, str | None]] | None:
        """Every named tree's id and name, newest first; None if unknown."""
        return None

    def tree_counts(
        self,
    ) -> list[tuple[str, str | None, int, str | None, list[str]]] | None:
        """Every tree's id, name, calls logged, last time and sorted models,
        without reading any tree; None where only the forest tells."""
        return None

    def trees(self) -> Iterator[TreeRecords] | None:
        """Every tree's records in one pass, where `read_tree` would read the
        file from its start each time; None otherwise."""
        return None

    def table_stamps(
        self, since: dict[str, Any] | None = None
    ) -> dict[str, Any] | None:
        """A JSON stamp of the rows that any commit adding, deleting or moving rows
        changes; with `since`, "logged_since" names the trees of rows logged after it
        (None if anything else changed). None where the file has no such tables."""
        return None


def _read_trees(
    logs: Source, tree_ids: list[str], text: bool, report: ProgressCallback
) -> ForestRead:
    import pandas as pd

    from convgraph.contract import CONTENT_ATTRIBUTES, NODE_COLUMNS
    from convgraph.errors import UnknownConversation
    from convgraph.sources.tables import object_column

    records: list[dict[str, Any]] = []
    found = ForestRead(pd.DataFrame(), {})
    for done, tree_id in enumerate(tree_ids):
        report("reading conversations", done, len(tree_ids))
        tree = logs.read_tree(tree_id)
        if not tree.records:
            raise UnknownConversation(tree_id)
        records.extend(tree.records)
        found.names[tree_id] = tree.name
        found.problems.extend(tree.problems)
        found.calls.update(tree.calls)
    report("reading conversations", len(tree_ids), len(tree_ids))
    nodes = pd.DataFrame.from_records(records, columns=NODE_COLUMNS)
    # A source's own columns stay, as its whole-file read keeps them, values
    # as they are (None, not NaN).
    extra = [key for key in records[0] if key not in NODE_COLUMNS] if records else []
    for key in extra:
        values = object_column([record.get(key) for record in records])
        nodes[key] = pd.Series(values, index=nodes.index, dtype=object)
    if not text:
        # Match a whole-file read without texts.
        for name in CONTENT_ATTRIBUTES:
            nodes[name] = None
    found.nodes = nodes
    return found


def _each_id_once(matches: list[IdMatch]) -> list[IdMatch]:
    """Each id once, sorted; a node before a conversation of the same id (a
    legacy response outside any conversation is both)."""
    seen: dict[str, IdMatch] = {}
    for match in sorted(matches, key=lambda match: match.kind != NODE):
        seen.setdefault(match.id, match)
    return sorted(seen.values(), key=lambda match: (match.id, match.kind))


def _other_kind(given: str, other: IdMatch) -> UnknownNode | UnknownConversation:
    if other.kind == NODE:
        return NodeNotConversation(given, other.id, other.tree_id)
    return ConversationNotNode(given, other.id, other.tree_id)


def ambiguous_id(
    given: str, matches: list[IdMatch], none_of: str | None = None
) -> AmbiguousId:
    """The error for a prefix that begins several `matches`."""
    return AmbiguousId(
        given,
        [match.describe() for match in matches[:LISTED]],
        more=len(matches) > LISTED,
        none_of=none_of,
    )


def log_order(record: dict[str, Any]) -> tuple[str, str]:
    return (record["datetime_utc"] or "", record["id"])


def sort_log_order(nodes: pd.DataFrame) -> pd.DataFrame:
    """The table in log order, with a fresh 0..n-1 index, its `PARENT_ROWS`
    (where present) following their rows. The columns are replaced in
    place, one at a time, so that the table is never held twice."""
    import numpy as np
    import pandas as pd

    nodes.index = pd.RangeIndex(len(nodes))
    if (order := _log_order_rows(nodes["datetime_utc"], nodes["id"])) is None:
        return nodes
    for name, column in nodes.items():
        taken = column.array.take(order)
        # As a Series of its dtype: pandas 3 would infer str for objects.
        nodes[name] = pd.Series(taken, dtype=column.dtype, copy=False)
    if PARENT_ROWS in nodes.columns:
        rows = nodes[PARENT_ROWS].to_numpy()
        at = np.empty_like(order)
        at[order] = np.arange(len(order))
        nodes[PARENT_ROWS] = np.where(rows >= 0, at[np.maximum(rows, 0)], -1)
    return nodes


def _log_order_rows(dates: pd.Series, ids: pd.Series) -> np.ndarray | None:
    """The rows in log order (a stable sort), None where they are in it."""
    import numpy as np
    import pandas as pd

    if isinstance(dates.array, pd.arrays.ArrowStringArray) and isinstance(
        ids.array, pd.arrays.ArrowStringArray
    ):
        # Arrow compares and sorts the strings in C (pandas would factorize).
        import pyarrow as pa
        import pyarrow.compute as pc

        key = pc.fill_null(pa.chunked_array(dates.array.__arrow_array__()), "")
        names = pa.chunked_array(ids.array.__arrow_array__())
        later, earlier, count = key.slice(1), key.slice(0, len(key) - 1), len(key)
        ordered = pc.or_(
            pc.greater(later, earlier),
            pc.and_(
                pc.equal(later, earlier),
                pc.greater_equal(names.slice(1), names.slice(0, count - 1)),
            ),
        )
        if pc.all(ordered).as_py():
            return None
        keys = pa.table({"key": key, "id": names})
        rows = pc.sort_indices(keys, [("key", "ascending"), ("id", "ascending")])
        return np.asarray(rows.to_numpy(), dtype=np.int64)
    # llm appends, so storage order is nearly always log order: check first.
    key = dates.fillna("").to_numpy(dtype=object)
    names = ids.to_numpy(dtype=object)
    later = (key[1:] > key[:-1]) | ((key[1:] == key[:-1]) & (names[1:] >= names[:-1]))
    return None if later.all() else np.lexsort((names, key))
