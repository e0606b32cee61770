"""The way in: open any file of conversations read-only, whatever wrote it.

`open_logs` is the one way in. It tells the file by its content: a ChatGPT,
Claude.ai or Open WebUI export (`chat_exports.ChatExport`), else an SQLite
file opened read-only (`files.connect_read_only`) and read as llm's
`logs.db` (`llm_database.LogDatabase`, whichever generations of llm wrote
it). Both are a `Source`, which answers in the node contract
(docs/design.md#the-node-contract), so nothing downstream asks which kind of
file it holds. `opened` does the same for functions that take either a path
or a `Source` already open.

The modules beside this one: `files` (finding and opening a file),
`llm_database` (llm's generations together), `generations` (the rules that
join them), one reader per storage format (`legacy`, `message_store`,
`columnar`; `chat_exports` with `chatgpt`, `claude`, `openwebui`;
`agent_sessions` with `claude_code`, `codex`, `gemini_cli`), `tables`
(reading whole tables while llm logs), `notes` (the user's branch notes) and
`parquet` (a Parquet dataset that `convgraph export` wrote).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from convgraph.contract import NODE_ATTRIBUTES
from convgraph.errors import DatabaseError
from convgraph.sources.llm.database import LogDatabase
from convgraph.sources.llm.files import connect_read_only, default_database_path
from convgraph.sources.source import Source, TreeRecords, log_order, sort_log_order

__all__ = [
    "NODE_ATTRIBUTES",
    "LogDatabase",
    "Source",
    "TreeRecords",
    "connect_read_only",
    "default_database_path",
    "log_order",
    "open_logs",
    "opened",
    "sort_log_order",
]


def open_logs(path: str | os.PathLike[str] | None = None) -> Source:
    """Open an llm database or a chat export read-only; llm's own `logs.db`
    when `path` is None.

    Returns
    -------
    Source
        A `LogDatabase` for an SQLite file, a `ChatExport` for an export,
        an `AgentSessions` for a coding agent's sessions.

    Raises
    ------
    DatabaseError
        The file is missing, is neither SQLite nor an export, or holds no
        llm tables.
    """
    path = Path(path) if path is not None else default_database_path()
    # Not SQLite: a coding agent's sessions, or a ChatGPT, Claude.ai or Open
    # WebUI export, told by content.
    from convgraph.sources.agents.sessions import open_agent_source
    from convgraph.sources.chat.exports import open_source
    from convgraph.sources.chat.json_files import path_kind

    try:
        if path_kind(path) in ("folder", "json"):
            agent = open_agent_source(path)
            if agent is not None:
                return agent
        export = open_source(path)
    except PermissionError as error:
        raise DatabaseError(f"cannot read {path}: {error.strerror}") from None
    if export is not None:
        return export
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
    conn = connect_read_only(path)
    try:
        return LogDatabase(conn, path)
    except (DatabaseError, sqlite3.DatabaseError) as error:
        conn.close()
        if isinstance(error, DatabaseError):
            raise
        raise DatabaseError(f"cannot read {path}: {error}") from None


@contextlib.contextmanager
def opened(db: str | os.PathLike[str] | Source | None) -> Iterator[Source]:
    """`with opened(db) as logs`: an open `Source` as it is, or a path (None
    for llm's own `logs.db`) opened by `open_logs` and closed after the block,
    for the functions that take either.

    Examples
    --------
    >>> with opened("examples/logs.db") as logs:
    ...     type(logs).__name__
    'LogDatabase'
    """
    if isinstance(db, Source):
        yield db
        return
    with open_logs(db) as logs:
        yield logs
