"""The way in: open any file of conversations read-only, whatever wrote it.

`open_logs` is the one way in. It tells the file by its content, asking
each kind in turn (`DETECTORS`, each a `detect(path)` of its family): llm's
SQLite `logs.db` of any generation (`llm.database.LogDatabase`), coding
agents' sessions (`agents.sessions.AgentSessions`), a ChatGPT, Claude.ai
or Open WebUI export (`chat.exports.ChatExport`). Each is a `Source`, which
answers in the node contract (docs/design.md#the-node-contract), so nothing
downstream asks which kind of file it holds. `opened` does the same for
functions that take either a path or a `Source` already open.

Beside this module: `source` (the interface, log order, ids as typed),
the families `llm/`, `agents/` and `chat/`, `tables` (a nodes table in the
contract's columns and dtypes), `notes` (the user's branch notes) and
`parquet` (a Parquet dataset that `convgraph export` wrote).
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections.abc import Iterator
from pathlib import Path

from convgraph.contract import NODE_ATTRIBUTES
from convgraph.errors import DatabaseError
from convgraph.sources.llm.database import LogDatabase, open_database
from convgraph.sources.llm.files import (
    connect_read_only,
    database_failure,
    default_database_path,
    is_sqlite_file,
)
from convgraph.sources.source import Source, TreeRecords, log_order, sort_log_order

__all__ = [
    "NODE_ATTRIBUTES",
    "LogDatabase",
    "Source",
    "TreeRecords",
    "connect_read_only",
    "database_failure",
    "default_database_path",
    "is_sqlite_file",
    "log_order",
    "open_logs",
    "opened",
    "sort_log_order",
]


#: The kinds of file convgraph reads, asked in this order whether `path` is
#: one of theirs: each names a `detect(path)` that opens it as that kind's
#: `Source`, or gives None where it is not one (cheaply: by its first
#: bytes, or the names in a folder). A module is imported when first asked,
#: so a command on llm's database imports no chat or agents' reader.
DETECTORS = (
    "convgraph.sources.llm.database",
    "convgraph.sources.agents.sessions",
    "convgraph.sources.chat.exports",
)


def open_logs(path: str | os.PathLike[str] | None = None) -> Source:
    """Open a file of conversations read-only, whatever wrote it (told by
    `DETECTORS`); llm's own `logs.db` when `path` is None.

    Returns
    -------
    Source
        A `LogDatabase` for llm's SQLite file, an `AgentSessions` for a
        coding agent's sessions, a `ChatExport` for an app's export.

    Raises
    ------
    DatabaseError
        The file is missing, is none of these (the message says what it
        is), or holds no llm tables.
    """
    path = Path(path) if path is not None else default_database_path()
    try:
        for name in DETECTORS:
            found: Source | None = importlib.import_module(name).detect(path)
            if found is not None:
                return found
    except PermissionError as error:
        raise DatabaseError(f"cannot read {path}: {error.strerror}") from None
    if path.is_dir():
        from convgraph.sources.parquet import is_parquet_dataset

        if is_parquet_dataset(path):
            raise DatabaseError(
                f"{path} is a Parquet dataset: convgraph stats and convgraph"
                " check read one; the other commands read the database it was"
                " exported from"
            )
        raise DatabaseError(
            f"{path} is a directory, not an llm database or chat export"
        )
    # Not one of them: SQLite says why it cannot read the file as llm's.
    return open_database(path)


@contextlib.contextmanager
def opened(db: str | os.PathLike[str] | Source | None) -> Iterator[Source]:
    """`with opened(db) as logs`: an open `Source` as it is, or a path (None
    for llm's own `logs.db`) opened by `open_logs` and closed after the block,
    for the functions that take either.
    """
    if isinstance(db, Source):
        yield db
        return
    with open_logs(db) as logs:
        yield logs
