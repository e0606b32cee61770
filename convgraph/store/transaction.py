"""How the write side opens a database and holds its write transactions.

The reading side opens files read-only; every write here goes through
`connect_read_write` and `write_transaction` (or, for long work cut into
pieces, `exclusive_transaction` and `pause_for_writers`, or
`batched_writes` for many small atomic units). A transaction takes
an exclusive lock before it reads what it is about to change, so no other
writer can slip in between the check and the change; and it takes it only at
a moment when no other connection holds a lock, so it never fails the write
of an llm that is logging at the same time. A database that others keep busy
past the busy timeout ends as one `DatabaseLocked` line, with the
transaction rolled back and nothing lost.
"""

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
    return float(conn.execute("pragma busy_timeout").fetchone()[0]) / 1000


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
    """One short write transaction, rolled back on any error.

    It is an `exclusive_transaction`: taken only when nobody else holds a
    lock, so that it never fails the write of an llm that is in the middle
    of logging a prompt (see there).

    Raises
    ------
    DatabaseLocked
        No moment free of other connections came within the busy timeout;
        the transaction is rolled back.
    """
    timeout = busy_timeout(conn)
    path = _file_of(conn)
    try:
        with exclusive_transaction(conn):
            yield conn
    except sqlite3.OperationalError as error:
        if _is_locked(error):
            raise _locked(path, timeout) from None
        raise


#: How often `exclusive_transaction` looks again for a moment when nobody
#: holds a lock on the file.
PROBE_INTERVAL_SECONDS = 0.01

#: How long `pause_for_writers` leaves the file free after a transaction.
#: SQLite's busy handler sleeps at most 100 ms between its retries, so a
#: writer that waited for us finds the lock free in this gap.
WRITER_GAP_SECONDS = 0.15


@contextmanager
def exclusive_transaction(
    conn: sqlite3.Connection, timeout: float | None = None
) -> Iterator[sqlite3.Connection]:
    """One `BEGIN EXCLUSIVE` ... `COMMIT`, begun only when nobody reads or
    writes the file, for long writes beside a live llm.

    llm logs a prompt in a deferred transaction that reads before it writes.
    In a rollback-journal file, such a transaction cannot wait for a writer
    that holds the write lock: its write fails at once with "database is
    locked", whatever its busy timeout. A `BEGIN IMMEDIATE` taken while llm
    is between its read and its write costs llm that prompt. An exclusive
    lock can only be had when no other connection holds even a read lock, so
    it is never taken in the middle of llm's transaction; and while it is
    held, llm's next statement waits in its busy handler (up to 5 s) instead
    of failing. The lock is asked for with a busy timeout of zero, again and
    again, so that a failed attempt holds nothing: waiting inside SQLite
    would keep a pending lock that fails llm's write the same way.

    Keep the work inside short (well under a second), and call
    `pause_for_writers` between two of them.

    Raises
    ------
    DatabaseLocked
        No free moment came within `timeout` seconds (by default the
        connection's busy timeout); nothing was changed.
    """
    _begin_exclusive(conn, timeout)
    try:
        yield conn
        conn.execute("commit")
    except BaseException:
        if conn.in_transaction:
            conn.execute("rollback")
        raise


def _begin_exclusive(conn: sqlite3.Connection, timeout: float | None) -> bool:
    """`BEGIN EXCLUSIVE` at the first moment nobody holds a lock (see
    `exclusive_transaction`); whether it had to wait for one, that is,
    whether another connection was using the file."""
    if timeout is None:
        timeout = busy_timeout(conn)
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


#: How long one transaction of `batched_writes` may hold the lock before it
#: commits, and how long its transactions may hold it back to back before
#: the file is left free for `WRITER_GAP_SECONDS`: llm's busy handler waits
#: up to 5 s, so an llm that starts logging meanwhile waits well under one.
BATCH_SECONDS = 0.5

#: The most weight (an import's: turns) one batch writes, so that a batch of
#: many small units stays a bounded journal however fast they are written.
BATCH_WEIGHT = 2_000

#: How long `batched_writes` keeps to one unit a transaction after it last
#: saw another connection use the file.
QUIET_SECONDS = 2.0


def batched_writes(
    conn: sqlite3.Connection,
    units: Iterable[T],
    write: Callable[[T], R],
    *,
    weight: Callable[[T], int] = lambda unit: 1,
    timeout: float | None = None,
) -> Iterator[tuple[T, R]]:
    """Write many small units (an import's conversations), each atomic, in
    as few exclusive transactions as the file's other users allow; yield
    each unit with what `write` returned once its transaction is committed.

    While nobody else uses the file, one transaction writes many units: up
    to `BATCH_SECONDS` of writing or `BATCH_WEIGHT` of their weight, then
    commits (one journal sync for them all, where a transaction each paid
    one each). Once another connection is seen (the lock was not free at the
    first attempt, or another connection committed since the last
    transaction: `pragma data_version`), each unit is a transaction of its
    own again, until `QUIET_SECONDS` pass without one. After every
    `BATCH_SECONDS` of holding the lock the file is left free for
    `WRITER_GAP_SECONDS`, so a writer that waited gets in; the next units
    are taken from `units` in that gap (an import parses and plans its next
    conversations there), so it costs only what that work does not fill.

    Each unit is a savepoint: readers see whole units only. A unit whose
    `write` fails is rolled back alone, the units before it are committed
    and yielded, and then the error is raised; an error from `units` itself
    comes once the units taken before it are written.

    Raises
    ------
    DatabaseLocked
        No moment free of other connections came within `timeout` (by
        default the busy timeout); units committed before stay.
    """
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
        # The file is free: make the next units now (their making is the
        # gap other writers need), at least as many as the last transaction
        # wrote.
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
            # The units before the failed one are whole: keep them, unless
            # the error took the whole transaction with it.
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
