"""Open any file of conversations read-only, told by its content.

Each kind (`DETECTORS`) is a `Source` answering in the node contract, so
nothing downstream asks which kind of file it holds.
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


#: Modules with a cheap `detect(path) -> Source | None`, asked in order and
#: imported when first asked (llm's database imports no other reader).
DETECTORS = (
    "convgraph.sources.llm.database",
    "convgraph.sources.agents.sessions",
    "convgraph.sources.chat.exports",
)


#: What `--db` takes, said where a file is none of it.
READS = "convgraph reads llm's logs.db, a chat export or coding agents' sessions"
#: Past this size a broken JSON file is not parsed again for its position.
JSON_LOOKED_AT = 64 << 20


def open_logs(path: str | os.PathLike[str] | None = None) -> Source:
    """Open a file of conversations read-only (llm's `logs.db` for None).
    `DatabaseError` if it is missing or of no kind convgraph reads."""
    path = Path(path) if path is not None else default_database_path()
    try:
        for name in DETECTORS:
            found: Source | None = importlib.import_module(name).detect(path)
            if found is not None:
                return found
    except PermissionError as error:
        raise DatabaseError(f"cannot read {path}: {error.strerror}") from None
    except DatabaseError as error:
        raise DatabaseError(_json_fault(path) or str(error)) from None
    if path.is_dir():
        from convgraph.sources.parquet import is_parquet_dataset

        if is_parquet_dataset(path):
            raise DatabaseError(
                f"{path} is a Parquet dataset: convgraph stats and convgraph"
                " check read one; the other commands read the database it was"
                " exported from"
            )
        raise DatabaseError(f"no sessions were found under {path}: {READS}")
    if path.is_file() and path.stat().st_size == 0:
        raise DatabaseError(f"{path} is empty: {READS}")
    # Not one of them: SQLite says why it cannot read the file as llm's.
    return open_database(path)


def _json_fault(path: Path) -> str | None:
    """Where a JSON file (not too large to parse again) breaks, else None."""
    import json

    try:
        if not path.is_file() or path.stat().st_size > JSON_LOOKED_AT:
            return None
        json.loads(path.read_bytes().decode("utf-8-sig"))
    except json.JSONDecodeError as error:
        return (
            f"{path} is JSON with an error at line {error.lineno} column"
            f" {error.colno} ({error.msg}): {READS}"
        )
    except (OSError, ValueError, RecursionError):
        return None  # deep nesting: the reader's own message says it
    return None


@contextlib.contextmanager
def opened(db: str | os.PathLike[str] | Source | None) -> Iterator[Source]:
    """An open `Source` as it is, or a path opened (`open_logs`) and closed
    after the block."""
    if isinstance(db, Source):
        yield db
        return
    with open_logs(db) as logs:
        yield logs
