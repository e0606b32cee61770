"""How the write side opens a database and holds its write transactions."""

from __future__ import annotations

import os
import sqlite3
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from convgraph.errors import DatabaseError, DatabaseLocked

T = TypeVar("T")
R = TypeVar("R")

#: How long a write waits for another writer (llm logging a prompt, say).
WRITE_BUSY_TIMEOUT_SECONDS = 5.0


def database_path(path: str | os.PathLike[str] | None) -> Path:
    """`path`, or llm's own `logs.db` when it is None."""
    if path is not None:
        return Path(path)
    from convgraph.sources import default_database_path

    return default_database_path()


def connect_read_write(
    path: str | os.PathLike[str] | None, timeout: float | None = None
) -> sqlite3.Connection:
    """Open an existing database for writing in autocommit mode, so every BEGIN
    is `write_transaction`'s; raises DatabaseError where there is no SQLite file."""
    path = database_path(path)
    if not path.is_file():
        raise DatabaseError(f"no database file at {path}")
    timeout = WRITE_BUSY_TIMEOUT_SECONDS if timeout is None else timeout
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
    return float(conn.execute("pragma busy_timeout").fetchone()[0]) / 1000


@contextmanager
def reporting_locks(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """Turn "database is locked" from a read or a write outside
    `write_transaction` into `DatabaseLocked`."""
    try:
        yield conn
    except sqlite3.OperationalError as error:
        if _is_locked(error):
            raise _locked(_file_of(conn), busy_timeout(conn)) from None
        raise


@contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One short `exclusive_transaction`, rolled back on any error; raises
    DatabaseLocked where no free moment came within the busy timeout."""
    timeout = busy_timeout(conn)
    path = _file_of(conn)
    try:
        with exclusive_transaction(conn):
            yield conn
    except sqlite3.OperationalError as error:
        if _is_locked(error):
            raise _locked(path, timeout) from None
        raise


#: How often `exclusive_transaction` looks again for a free moment.
PROBE_INTERVAL_SECONDS = 0.01

#: Longer than SQLite's busy handler sleeps between retries, so a waiting
#: writer finds the lock free.
WRITER_GAP_SECONDS = 0.15


@contextmanager
def exclusive_transaction(
    conn: sqlite3.Connection, timeout: float | None = None
) -> Iterator[sqlite3.Connection]:
    """One `BEGIN EXCLUSIVE` ... `COMMIT`, begun only when nobody reads or writes the
    file, for writes beside a live llm. llm logs in a deferred transaction that reads
    before it writes; in a rollback-journal file its write fails at once if another
    holds the write lock. An exclusive lock can only be had while nobody holds even a
    read lock, so it never cuts into llm's transaction, and while held llm waits in its
    busy handler. The lock is asked for with a zero busy timeout, again and again, as
    waiting inside SQLite would keep a pending lock that fails llm's write too. Raises
    `DatabaseLocked` (no free moment came within `timeout` (default: the busy
    timeout))."""
    _begin_exclusive(conn, timeout)
    try:
        yield conn
        conn.execute("commit")
    except BaseException:
        if conn.in_transaction:
            conn.execute("rollback")
        raise


def _begin_exclusive(conn: sqlite3.Connection, timeout: float | None) -> bool:
    """`BEGIN EXCLUSIVE` at the first free moment; whether it had to wait."""
    timeout = busy_timeout(conn) if timeout is None else timeout
    path = _file_of(conn)
    saved = conn.execute("pragma busy_timeout").fetchone()[0]
    deadline = time.monotonic() + timeout
    conn.execute("pragma busy_timeout = 0")
    waited = False
    try:
        while True:
            try:
                conn.execute("begin exclusive")
                return waited
            except sqlite3.OperationalError as error:
                if not _is_locked(error):
                    raise
                if time.monotonic() >= deadline:
                    raise _locked(path, timeout) from None
            waited = True
            time.sleep(PROBE_INTERVAL_SECONDS)
    finally:
        conn.execute(f"pragma busy_timeout = {int(saved)}")


def pause_for_writers() -> None:
    """Leave the file free long enough for a writer that waited to get in."""
    time.sleep(WRITER_GAP_SECONDS)


#: How long `batched_writes` holds the lock before the file is left free:
#: well under llm's busy timeout.
BATCH_SECONDS = 0.5

#: The most weight (an import's turns) one batch writes: a bounded journal.
BATCH_WEIGHT = 2_000

#: How long one unit a transaction lasts after another connection was seen.
QUIET_SECONDS = 2.0


def batched_writes(
    conn: sqlite3.Connection,
    units: Iterable[T],
    write: Callable[[T], R],
    *,
    weight: Callable[[T], int] = lambda unit: 1,
    timeout: float | None = None,
) -> Iterator[tuple[T, R]]:
    """Write many small units, each atomic (a savepoint), in as few exclusive
    transactions as the file's other users allow; yield each unit with what `write`
    returned once committed. A failing unit is rolled back alone and its error raised
    after the units before it. Raises `DatabaseLocked` (no free moment came within
    `timeout`; units committed before stay)."""
    source = iter(units)
    queue: deque[T] = deque()
    queued = 0
    failure: BaseException | None = None
    exhausted = False
    last_version: int | None = None
    quiet_from = 0.0
    held = 0.0
    target = 0
    free_since = time.monotonic()
    while True:
        # Make the next units in the gap other writers need.
        while not exhausted and queued < BATCH_WEIGHT:
            if (
                queue
                and queued >= target
                and time.monotonic() - free_since >= WRITER_GAP_SECONDS
            ):
                break
            try:
                unit = next(source)
            except StopIteration:
                exhausted = True
            except BaseException as error:
                exhausted, failure = True, error
            else:
                queue.append(unit)
                queued += weight(unit)
        if not queue:
            if failure is not None:
                raise failure
            return
        if held >= BATCH_SECONDS:
            time.sleep(max(0.0, free_since + WRITER_GAP_SECONDS - time.monotonic()))
            held = 0.0
        waited = _begin_exclusive(conn, timeout)
        started = time.monotonic()
        written: list[tuple[T, R]] = []
        try:
            version = conn.execute("pragma data_version").fetchone()[0]
            if waited or (last_version is not None and version != last_version):
                quiet_from = started + QUIET_SECONDS
            last_version = version
            alone = started < quiet_from
            done = 0
            while queue:
                unit = queue[0]
                if written and (
                    alone
                    or time.monotonic() - started >= BATCH_SECONDS
                    or done + weight(unit) > BATCH_WEIGHT
                ):
                    break
                conn.execute("savepoint convgraph_unit")
                try:
                    result = write(unit)
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("rollback to convgraph_unit")
                    raise
                finally:
                    if conn.in_transaction:
                        conn.execute("release convgraph_unit")
                queue.popleft()
                queued -= weight(unit)
                done += weight(unit)
                written.append((unit, result))
            conn.execute("commit")
        except BaseException as error:
            # Keep the whole units before, unless the transaction went too.
            try:
                if not conn.in_transaction:
                    written = []
                else:
                    conn.execute("commit")
            except sqlite3.Error:
                if conn.in_transaction:
                    conn.execute("rollback")
                written = []
            yield from written
            if isinstance(error, sqlite3.OperationalError) and _is_locked(error):
                raise _locked(_file_of(conn), busy_timeout(conn)) from None
            raise
        free_since = time.monotonic()
        held += free_since - started
        target = done
        yield from written


def _file_of(conn: sqlite3.Connection) -> str:
    for row in conn.execute("pragma database_list"):
        if row[1] == "main":
            return row[2] or ":memory:"
    return "the database"
