"""Read the whole forest as columns: Arrow arrays from SQLite, links on arrays.

The row readers (`legacy.LegacyReader.read_all`,
`message_store.MessageStoreReader.read_all`) make a Python tuple per row and,
for the message store, walk each turn's messages in a Python loop. Here the
ADBC SQLite driver (Apache Arrow's) hands over whole columns as Arrow arrays
(`reader`), repeated strings become pandas categories straight from Arrow's
dictionary encoding (`arrays`), and parents are found on integers: a legacy
response's parent by SQLite itself, as the rowid its index of the ids gives
(`legacy`); a turn's by joins and pointer jumping over message numbers
(numbered by one dictionary encoding, `numbering`; the parent rule on
arrays, `turn_parents.turn_parents_table`, in `message_store`): no Python loop per row, turn or message. The parents'
rows go to the `Forest` with the table (`contract.PARENT_ROWS`). The answer
is the row readers' exactly (same table, dtypes, order, names);
`tests/test_columnar.py` compares them on every kind of file.

Reads never hold SQLite's read lock for long: they follow the one
chunked-read rule of `convgraph.sources.llm.snapshot`, as the row readers do
(bounds taken in one statement, short paced statements, several rowid
ranges of a large table side by side, the read started again when a writer
did more than append: `read_consistently`).

This path covers the files it can answer exactly and fast: a legacy file (no
turns) without tool calls, attachments or fragments, or a message store
without legacy rows (its tool calls counted and its tool chains folded on
arrays, `calls`), with its texts where its parts are all texts with their
words. Other
files (upgraded ones, with both generations), and any sign of values the
contract's types cannot hold as they are (a BLOB, undecodable UTF-8, a
number among text, text among integers, a NULL or repeated id, a cycle of
messages or forks), make `read_forest` return None, and the row readers,
which decide how such data is reported, read the file instead. So does a
machine without pyarrow and the ADBC driver (the optional ``fast`` extra).
"""

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
    """Every node as one table and every tree's name, as
    `LogDatabase.read_all` gives them, read column by column; None where
    this path does not apply (see the module's docstring): then read the rows.
    `progress` is told the rows of each table as they are read. `text` may
    name the text columns to read: a legacy file's others are left missing
    (a message store's texts are read all or none).
    """
    if not available():
        return None
    import adbc_driver_manager

    from convgraph.sources.llm.columnar import legacy, message_store
    from convgraph.sources.llm.columnar.reader import ArrowReader, NotColumnar
    from convgraph.sources.llm.snapshot import read_consistently
    from convgraph.sources.source import ForestRead

    try:
        with ArrowReader(logs.path) as reader:
            kind = _generation(logs, reader)
            if kind is None:
                return None
            if kind == "legacy":
                assert logs.legacy is not None  # a file of legacy responses
                if any(
                    reader.one(f'select exists(select 1 from "{table}")')[0]
                    for table in logs.legacy.parts.tables()
                ):
                    # Tool calls, attachments or fragments: parts to build
                    # and tool chains to fold, a response at a time
                    # (`legacy_parts`).
                    return None
                nodes, names = read_consistently(
                    reader,
                    legacy.tables(logs),
                    lambda snapshot: legacy.read_legacy(logs, reader, snapshot, text),
                    progress,
                )
                return ForestRead(nodes, names)
            nodes, names, calls = read_consistently(
                reader,
                message_store.TABLES,
                lambda snapshot: message_store.read_store(reader, snapshot, bool(text)),
                progress,
            )
            return ForestRead(nodes, names, calls=calls)
    except (NotColumnar, adbc_driver_manager.Error):
        # A locked or damaged file, or values to report: the row readers
        # say what is wrong in the house's words.
        return None


def _generation(logs: LogDatabase, reader: ArrowReader) -> str | None:
    """ "legacy" for a file whose nodes are all legacy responses, "store" for
    one whose nodes are all turns (llm 0.32+ leave the legacy tables empty),
    None for both (an upgraded file) or neither."""

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
