"""The columnar read of a legacy file: llm's `responses` table as columns,
each parent's rowid found by SQLite through its index of the ids (faster
than hashing the ids here)."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from convgraph.contract import INTEGER_ATTRIBUTES, PARENT_ROWS, TEXT_ATTRIBUTES
from convgraph.sources.llm.columnar.arrays import ids_at, nodes_frame
from convgraph.sources.llm.columnar.reader import (
    ID,
    INTEGER,
    TEXT,
    ArrowReader,
    NotColumnar,
)

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    from convgraph.sources import LogDatabase
    from convgraph.sources.llm.snapshot import Snapshot

PARENT_ROWID = (
    "(select rowid from responses as parent"
    " where parent.id = responses.parent_response_id)"
)

#: Strings joined into one array as read: a take from chunks joins them
#: again at every take. Texts stay chunked (a join would hold them twice).
TAKEN = ("id", "parent_id", "datetime_utc")


def tables(logs: LogDatabase) -> list[str]:
    assert logs.legacy is not None
    return logs.legacy.tables()


def read_legacy(
    logs: LogDatabase,
    reader: ArrowReader,
    snapshot: Snapshot,
    text: bool | Collection[str],
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The pipeline's input `LegacyReader.read_all` gives, for a file without turns;
    `text` may name the text columns to read (the others missing)."""
    import pyarrow as pa

    from convgraph.sources.llm.legacy import SOURCE
    from convgraph.sources.source import sort_log_order

    assert logs.legacy is not None
    present = logs.legacy._columns

    def column(name: str) -> str:
        return name if name in present else "null"

    # Without an index of the ids the forest looks the parents up.
    by_rowid = logs.legacy.has_parent and "id" in reader.unique_columns("responses")
    columns = {
        "id": ("id", ID),
        # A response outside any conversation is a conversation of its own.
        "conversation_id": (f"coalesce({column('conversation_id')}, id)", TEXT),
        "model": (column("model"), TEXT),
        "datetime_utc": (column("datetime_utc"), TEXT),
    }
    if by_rowid:
        columns |= {
            "rowid": ("rowid", INTEGER),
            "parent_rowid": (PARENT_ROWID, INTEGER),
            "has_parent": ("parent_response_id is not null", INTEGER),
        }
    else:
        columns["parent_id"] = (column("parent_response_id"), TEXT)
    columns |= {name: (column(name), INTEGER) for name in INTEGER_ATTRIBUTES}
    texts = text_columns(text)
    columns |= {name: (column(name), TEXT) for name in texts}
    wanted = ("id", "parent_id", "datetime_utc", *texts)
    table = reader.table(
        "responses",
        columns,
        snapshot,
        strings=wanted,
        log_order=True,
        categories=("conversation_id", "model"),
    )
    if not len(table["id"]):
        raise NotColumnar("no responses")
    snapshot.report("linking the nodes", 0, None)
    in_order = table.pop("_in_log_order")
    for name in TAKEN:
        if name in table:
            table[name] = pa.chunked_array([table[name].combine_chunks()])
    node_ids = table.pop("id")
    if by_rowid:
        parent_rows, parent_ids = parents_by_rowid(reader, node_ids, table)
    else:
        parent_rows, parent_ids = None, table.pop("parent_id")
    # Categories in stored first-seen order, as the row reader: before sorting.
    nodes = nodes_frame(
        node_ids,
        None,  # the tree is the conversation
        parent_ids,
        parent_rows,
        table,
        SOURCE,
    )
    if not in_order:
        del node_ids, parent_ids  # the frame's columns alone, sorted in place
        nodes = sort_log_order(nodes)
    if logs.legacy.has_parent:
        _place_old_writers(logs, nodes)
    names = {}
    if logs.legacy.has_conversations:
        named = reader.table(
            "conversations",
            {"id": ("id", ID), "name": ("name", TEXT)},
            snapshot,
            key="id",
        )
        names = dict(
            zip(named["id"].to_pylist(), named["name"].to_pylist(), strict=True)
        )
    return nodes, names


def text_columns(text: bool | Collection[str]) -> tuple[str, ...]:
    """The text columns `text` asks for, in `TEXT_ATTRIBUTES`' order."""
    if isinstance(text, bool):
        return TEXT_ATTRIBUTES if text else ()
    return tuple(name for name in TEXT_ATTRIBUTES if name in text)


def _place_old_writers(logs: LogDatabase, nodes: pd.DataFrame) -> None:
    """`place_records_table` in place; rows it cannot place are the row
    readers' to report."""
    from convgraph.sources.llm.old_writers import place_records_table, read_placing

    placed, parents, unplaced = place_records_table(nodes, read_placing(logs.conn))
    if unplaced:
        raise NotColumnar("rows an older llm logged that cannot be placed")
    if len(placed) and PARENT_ROWS in nodes:
        rows = nodes[PARENT_ROWS].to_numpy().copy()
        rows[placed] = parents
        nodes[PARENT_ROWS] = rows


def parents_by_rowid(
    reader: ArrowReader, node_ids: pa.ChunkedArray, columns: dict[str, Any]
) -> tuple[np.ndarray, pa.ChunkedArray]:
    """Each response's parent row (-1) and id from `PARENT_ROWID` (popping
    `columns`); a parent id naming no row read is re-read as stored."""
    import numpy as np
    import pyarrow as pa

    linked = columns.pop("has_parent").to_numpy(dtype=bool, na_value=False)
    parent_rowids = columns.pop("parent_rowid")
    found = ~parent_rowids.isna()
    wanted = parent_rowids.to_numpy(dtype=np.int64, na_value=0)
    del parent_rowids
    stored = columns.pop("rowid").to_numpy(dtype=np.int64)
    if stored[-1] - stored[0] == len(stored) - 1:
        # No row deleted: a rowid's row is its distance from the first.
        at = np.clip(wanted - stored[0], 0, len(stored) - 1)
    else:
        at = np.minimum(np.searchsorted(stored, wanted), len(stored) - 1)
    found &= stored[at] == wanted
    del wanted
    parent_rows = np.where(found, at, -1)
    del at
    parent_ids = ids_at(node_ids, parent_rows)
    lost = np.flatnonzero(linked & ~found)
    if len(lost):
        kept = np.asarray(parent_ids.to_pylist(), dtype=object)
        kept[lost] = reader.texts_at("responses", "parent_response_id", stored[lost])
        parent_ids = pa.chunked_array([pa.array(kept, pa.large_string())])
    return parent_rows, parent_ids
