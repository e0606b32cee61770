"""How the write side opens a database and holds its one write transaction.

The reading side opens files read-only; every write here goes through
`connect_read_write` and `write_transaction`. The transaction starts with
`BEGIN IMMEDIATE`, so it takes the write lock before reading what it is about
to change: no other writer can slip in between the check and the change. A
database that another writer keeps locked past the busy timeout ends as one
`DatabaseLocked` line, with the transaction rolled back and nothing lost.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from convgraph.errors import DatabaseError, DatabaseLocked

#: How long a write waits for another writer (llm logging a prompt, say).
WRITE_BUSY_TIMEOUT_SECONDS = 5.0


def database_path(path: str | os.PathLike[str] | None) -> Path:
    """`path`, or llm's own `logs.db` when it is None."""
    if path is not None:
        return Path(path)
    from convgraph.sources import default_database_path

    return default_database_path()


def connect_read_write(
    path: str | os.PathLike[str] | None,
    timeout: float | None = None,
) -> sqlite3.Connection:
    """Open an existing database for writing, in autocommit mode.

    Autocommit (`isolation_level=None`) leaves every `BEGIN` to
    `write_transaction`, so Python's sqlite3 module never opens or commits a
    transaction behind the caller's back.

    Raises
    ------
    DatabaseError
        There is no file at `path`, or it is not an SQLite database.
    """
    path = database_path(path)
    if not path.is_file():
        raise DatabaseError(f"no database file at {path}")
    if timeout is None:
        timeout = WRITE_BUSY_TIMEOUT_SECONDS
    conn = sqlite3.connect(path, timeout=timeout, isolation_level=None)
    try:
        conn.execute("select count(*) from sqlite_master").fetchone()
    except sqlite3.DatabaseError as error:
        conn.close()
        if _is_locked(error):
            raise _locked(path, timeout) from None
        raise DatabaseError(f"{path} is not an SQLite database ({error})") from None
    conn.row_factory = sqlite3.Row
    return conn


def _is_locked(error: sqlite3.Error) -> bool:
    message = str(error).lower()
    return "database is locked" in message or "database is busy" in message


def _locked(path: Path | str, timeout: float) -> DatabaseLocked:
    return DatabaseLocked(
        f"{path} is locked by another writer (waited {timeout:g} s); "
        "nothing was changed, try again when it is free"
    )


def busy_timeout(conn: sqlite3.Connection) -> float:
    """The connection's busy timeout, in seconds."""
    return conn.execute("pragma busy_timeout").fetchone()[0] / 1000


@contextmanager
def reporting_locks(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """Turn "database is locked", from a read or a write made outside
    `write_transaction` (a writer that is committing blocks readers too),
    into `DatabaseLocked`."""
    try:
        yield conn
    except sqlite3.OperationalError as error:
        if _is_locked(error):
            raise _locked(_file_of(conn), busy_timeout(conn)) from None
        raise


@contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One `BEGIN IMMEDIATE` ... `COMMIT`, rolled back on any error.

    Raises
    ------
    DatabaseLocked
        The write lock was not free within the busy timeout, at the start or
        at the commit; the transaction is rolled back.
    """
    timeout = busy_timeout(conn)
    path = _file_of(conn)
    try:
        conn.execute("begin immediate")
    except sqlite3.OperationalError as error:
        if _is_locked(error):
            raise _locked(path, timeout) from None
        raise
    try:
        yield conn
        conn.execute("commit")
    except BaseException as error:
        if conn.in_transaction:
            conn.execute("rollback")
        if isinstance(error, sqlite3.OperationalError) and _is_locked(error):
            raise _locked(path, timeout) from None
        raise


def _file_of(conn: sqlite3.Connection) -> str:
    for row in conn.execute("pragma database_list"):
        if row[1] == "main":
            return row[2] or ":memory:"
    return "the database"
