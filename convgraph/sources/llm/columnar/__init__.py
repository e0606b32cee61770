"""The whole forest as Arrow columns (ADBC driver), links found on integer arrays, then
the declared `pipeline` on the table: the row readers' answer exactly. Only a legacy
file without parts, or a message store of plain texts without legacy rows; anything else
(or no `fast` extra) returns None, and the row readers, which report odd data, read."""

from __future__ import annotations

import importlib.util
from collections.abc import Collection
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from convgraph.sources.llm.columnar.reader import ArrowReader
    from convgraph.sources.llm.database import LogDatabase
    from convgraph.sources.source import ForestRead, ProgressCallback


def available() -> bool:
    """Whether pyarrow and the ADBC SQLite driver are installed."""
    return all(
        importlib.util.find_spec(name) is not None
        for name in ("pyarrow", "adbc_driver_sqlite")
    )


def read_forest(
    logs: LogDatabase,
    text: bool | Collection[str] = True,
    progress: ProgressCallback | None = None,
) -> ForestRead | None:
    """`LogDatabase.read_all`'s answer read as columns, or None where this
    path does not apply. A message store's texts are read all or none."""
    if not available():
        return None
    import adbc_driver_manager

    from convgraph.sources.llm.columnar import legacy, message_store
    from convgraph.sources.llm.columnar.reader import ArrowReader, NotColumnar
    from convgraph.sources.llm.pipeline import Read, run_on_table
    from convgraph.sources.llm.snapshot import read_consistently
    from convgraph.sources.source import ForestRead
    from convgraph.sources.tables import conform_nodes

    try:
        with ArrowReader(logs.path) as reader:
            kind = _generation(logs, reader)
            if kind is None:
                return None
            if kind == "legacy":
                assert logs.legacy is not None
                if any(
                    reader.one(f'select exists(select 1 from "{table}")')[0]
                    for table in logs.legacy.parts.tables()
                ):
                    # Parts to build and chains to fold: `legacy_parts`.
                    return None
                unique = "id" in reader.unique_columns("responses")
                nodes, names = read_consistently(
                    reader,
                    legacy.tables(logs),
                    lambda snapshot: legacy.read_legacy(logs, reader, snapshot, text),
                    progress,
                )
            else:
                unique = True  # `read_store` takes no file whose ids repeat
                nodes, names = read_consistently(
                    reader,
                    message_store.TABLES,
                    lambda snapshot: message_store.read_store(
                        reader, snapshot, bool(text)
                    ),
                    progress,
                )
    except (NotColumnar, adbc_driver_manager.Error):
        # The row readers report locked, damaged or odd files.
        return None
    read = Read(
        legacy=kind == "legacy",
        store=kind == "store",
        linked=logs.legacy is not None and logs.legacy.has_parent,
        unique=unique,
        text=bool(text),
    )
    nodes = run_on_table(nodes, read)
    return ForestRead(conform_nodes(nodes), names, read.problems, read.calls)


def _generation(logs: LogDatabase, reader: ArrowReader) -> str | None:
    """ "legacy" or "store" for a file of one generation only, else None."""

    def has_rows(table: str) -> bool:
        return bool(reader.one(f"select exists(select 1 from {table})")[0])

    legacy_rows = logs.legacy is not None and (
        has_rows("responses")
        or (logs.legacy.has_conversations and has_rows("conversations"))
    )
    store_rows = logs.store is not None and (has_rows("turns") or has_rows("threads"))
    if legacy_rows and not store_rows:
        return "legacy"
    if store_rows and not legacy_rows and has_rows("turns"):
        return "store"
    return None
