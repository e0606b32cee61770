"""The chunked-read rule: whole tables read in short statements, as they were
at one instant, so that llm can log while convgraph reads.

llm's file uses a rollback journal, and a writer cannot commit while any
reader holds the read lock; llm waits five seconds, then drops the response
it was logging. So no whole-table read is one long SELECT. A `Snapshot`
takes every table's largest rowid in one statement, then each table is read
by rowid ranges (keyset pagination, `paced_chunks`), each range its own
statement in autocommit mode, sized to take about `CHUNK_SECONDS` (`paced`),
so the lock is free between two of them. No range reads past the largest
rowid taken at the start: llm only appends rows (one transaction per
response) and moves thread tips, so the rows up to those bounds are the file
as it was at that instant, and rows appended meanwhile wait for the next
read. At the end `Snapshot.changed` asks SQLite whether anyone committed
meanwhile (`PRAGMA data_version`) and, if so, counts the rows below each
bound again: a count that moved means something other than an append (a
deletion, an `INSERT OR REPLACE`), and `read_consistently` reads again, up to
`READ_ATTEMPTS` times.

Both whole-forest readers follow this one rule: the row readers (sqlite3
tuples, `Snapshot.rows`) and the columnar reader (Arrow batches through the
ADBC driver, several ranges side by side, `columnar.reader`), which hands its
own statements to `paced_chunks` and its cursor to `Snapshot`.

A `Snapshot` also says how far a read has come, to a `ProgressCallback`
(`(phase, done, total)`: "reading responses", the rows read, the table's
largest rowid as its total), once per chunk, never per row; the readers
name the phases that follow the reads through `Snapshot.report`.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

from convgraph.sources.source import ProgressCallback, no_progress

#: How long a read waits for a writer (llm logging a response) to finish.
BUSY_TIMEOUT_SECONDS = 5.0
#: The time one statement of a whole-table read aims to take: a writer waits
#: for the read lock about this long at most (llm waits up to 5 s).
CHUNK_SECONDS = 0.03
#: The rows of a table's first statement, and bounds on any statement's.
FIRST_CHUNK_ROWS = 2_000
MIN_CHUNK_ROWS, MAX_CHUNK_ROWS = 200, 100_000
#: How many times a whole-file read starts again when a writer changed rows
#: it had read (not only appended to them).
READ_ATTEMPTS = 3
#: Below every rowid SQLite gives (rowids are signed 64-bit integers).
BEFORE_FIRST_ROWID = -(2**63)

#: The clock statements are timed by (a test may set its own).
clock: Callable[[], float] = time.perf_counter

#: What long work reports as it goes, for a progress bar: the phase's name
#: ("reading responses", "linking the nodes"), how much of it is done and
#: its total (rows, conversations or bytes; None where it cannot be known).
#: Called per chunk of work, never per row; the counts of one phase only
#: grow, and a phase with a total ends at it.
Chunk = TypeVar("Chunk")
Found = TypeVar("Found")


class Statements(Protocol):
    """What a `Snapshot` runs its statements on: sqlite3's connection, or a
    DB-API cursor whose `execute` returns itself (ADBC's)."""

    def execute(self, sql: str, parameters: Any = ..., /) -> Any:
        """Run one statement; the result has `fetchone`."""
        ...


def paced(rows: int, seconds: float) -> int:
    """The rows of the next statement, so that it takes about `CHUNK_SECONDS`
    if this one read `rows` in `seconds`: at most twice as many (a fast
    chunk may have been luck), as few as it takes.

    No floor on the shrink: a statement that took ten times too long (large
    texts, a busy machine) is followed by one a tenth its size at once, not
    by several that each still keep a writer waiting too long. The writer's
    wait is what the rule bounds; a statement shrunk too far costs only a
    few more statements while the size doubles back.
    """
    scale = min(CHUNK_SECONDS / max(seconds, 1e-4), 2.0)
    return min(max(int(rows * scale), MIN_CHUNK_ROWS), MAX_CHUNK_ROWS)


def paced_chunks(
    fetch: Callable[[int, int], Chunk],
    size: Callable[[Chunk], int],
    last_rowid: Callable[[Chunk], int],
    after: int,
    last: int,
) -> Iterator[Chunk]:
    """The rows with rowids after `after` up to `last`, chunk by chunk, each
    chunk one statement sized by `paced`: the rule's one loop.

    Parameters
    ----------
    fetch
        Runs one statement: the rows after a rowid, at most so many, in
        rowid order, read to the end (so that SQLite lets go of the lock
        before the caller works on them).
    size, last_rowid
        A chunk's number of rows, and its last row's rowid.
    after, last
        The rowids read lie in ``(after, last]``.
    """
    wanted = FIRST_CHUNK_ROWS
    while after < last:
        started = clock()
        chunk = fetch(after, wanted)
        took = clock() - started
        rows = size(chunk)
        if not rows:
            return
        after = last_rowid(chunk)
        yield chunk
        # Not kept while the next statement runs: a chunk of Arrow columns
        # may be tens of megabytes.
        del chunk
        if rows < wanted:
            return
        wanted = paced(wanted, took)


class Snapshot:
    """Whole tables as they were at one instant, read in short statements
    (see the module's docstring).

    Parameters
    ----------
    conn
        Where the small statements run, in autocommit mode: a read-only
        sqlite3 connection (Python's sqlite3 opens no transaction for a
        SELECT), or the columnar reader's ADBC cursor. Only a sqlite3
        connection reads rows here (`rows`); the columnar reader reads its
        own and says how many (`counted`).
    tables
        The tables that will be read; each must exist.
    progress
        Told each table's rows as they are read (`advanced`, `counted`),
        with the phase "reading TABLE" and the table's largest rowid as the
        total (llm only appends, so that is about its rows).
    """

    def __init__(
        self,
        conn: Statements,
        tables: Iterable[str],
        progress: ProgressCallback | None = None,
    ):
        self.conn = conn
        self.tables = list(tables)
        #: Where the read says how far it has come (`report`).
        self.report: ProgressCallback = progress or no_progress
        self._read_so_far: dict[str, int] = {}
        self._progress_lock = threading.Lock()
        self.version = self._one("pragma data_version")[0]
        #: Each table's largest rowid at the start (None: empty, or no rowids).
        self.bounds: dict[str, int | None] = {}
        #: Whether each table has rowids to page by.
        self.rowids: dict[str, bool] = {}
        self._reads: list[tuple[str, int]] = []
        try:
            row = (
                self._one(
                    "select "
                    + ", ".join(f'(select max(rowid) from "{t}")' for t in self.tables)
                )
                if self.tables
                else ()
            )
            self.bounds = dict(zip(self.tables, row, strict=True))
            self.rowids = dict.fromkeys(self.tables, True)
        except sqlite3.OperationalError:
            # A table without rowids (only a hand-made file has one): read
            # in one statement, as there is no key to page by. (Through
            # ADBC the driver's error goes up: the columnar reader leaves
            # such a file to the row readers.)
            for table in self.tables:
                try:
                    self.bounds[table] = self._one(f'select max(rowid) from "{table}"')[
                        0
                    ]
                    self.rowids[table] = True
                except sqlite3.OperationalError:
                    self.bounds[table] = None
                    self.rowids[table] = False

    def _one(self, sql: str, parameters: Sequence[Any] = ()) -> tuple[Any, ...]:
        """The first row of one small statement."""
        if parameters:
            return tuple(self.conn.execute(sql, parameters).fetchone())
        return tuple(self.conn.execute(sql).fetchone())

    def counted(self, table: str, rows: int) -> None:
        """Note that `rows` rows of `table` were read, up to its bound (-1:
        the table has no rowids, so the count proves nothing), for
        `changed` to count again; its progress ends at its total."""
        self._reads.append((table, rows))
        total = self.bounds.get(table)
        if total and self._read_so_far.get(table, 0) < total:
            self.report(f"reading {table}", total, total)

    def advanced(self, table: str, rows: int) -> None:
        """Report `rows` more rows of `table` read: the callback is told the
        rows read so far (at most the total). Safe from several threads:
        the columnar reader reads ranges of a table side by side."""
        total = self.bounds.get(table)
        if not total:
            return
        with self._progress_lock:
            done = self._read_so_far.get(table, 0) + rows
            self._read_so_far[table] = done
            self.report(f"reading {table}", min(done, total), total)

    def rows(
        self, table: str, columns: str, alias: str = "t"
    ) -> Iterator[list[tuple[Any, ...]]]:
        """Every row of `table` up to its bound, chunk by chunk, in rowid
        order; each row's first value is its rowid, then `columns` (SQL over
        `alias`). No filter: `changed` checks the rows read by counting
        them, and only whole-table counts are cheap (SQLite counts an
        index); callers keep the rows they want. `conn` must be a sqlite3
        connection."""
        if not self.rowids.get(table, False):
            rows = self._fetch(f'select null, {columns} from "{table}" as {alias}', ())
            self.counted(table, -1)
            if rows:
                yield rows
            return
        last = self.bounds[table]
        count = 0
        self.advanced(table, 0)
        if last is not None:
            query = (
                f'select {alias}.rowid, {columns} from "{table}" as {alias}'
                f" where {alias}.rowid > ? and {alias}.rowid <= ?"
                f" order by {alias}.rowid limit ?"
            )
            for chunk in paced_chunks(
                lambda after, wanted: self._fetch(query, (after, last, wanted)),
                len,
                lambda chunk: chunk[-1][0],
                BEFORE_FIRST_ROWID,
                last,
            ):
                count += len(chunk)
                self.advanced(table, len(chunk))
                yield chunk
        self.counted(table, count)

    def _fetch(self, query: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """One statement's rows, read to the end at once, so that SQLite
        releases the read lock before any Python work on them. Decoding
        with the plain `str` is the fast path; text that is not UTF-8 makes
        that fail, and then the chunk is read again with the connection's
        own text factory (`tables.replacing_text`)."""
        conn = self.conn
        assert isinstance(conn, sqlite3.Connection), "rows are read by sqlite3"
        factory = conn.text_factory
        conn.text_factory = str
        try:
            return conn.execute(query, params).fetchall()
        except sqlite3.OperationalError as error:
            if "decode" not in str(error):
                raise
        finally:
            conn.text_factory = factory
        return conn.execute(query, params).fetchall()

    def changed(self) -> bool:
        """Whether a writer changed, not only appended to, the rows read.

        No commit since the start (`data_version` the same): nothing
        changed. Else, per table read, one statement counts its rows and
        those above the bound (appended since): the difference must be the
        number read, or rows read were deleted or replaced. Counting the
        rows under the bound instead would walk every page of the table,
        holding the lock for seconds; a whole-table count is quick, as
        SQLite counts the smallest index, and the rows above the bound are
        a short range.
        """
        if self._one("pragma data_version")[0] == self.version:
            return False
        for table, count in self._reads:
            if count < 0:
                return True  # no rowids: no way to tell an append
            last = self.bounds[table]
            total, appended = self._one(
                f'select (select count(*) from "{table}"),'
                f' (select count(*) from "{table}" where rowid > ?)',
                (BEFORE_FIRST_ROWID if last is None else last,),
            )
            if total - appended != count:
                return True
        return False


def read_consistently(
    conn: Statements,
    tables: Iterable[str],
    read: Callable[[Snapshot], Found],
    progress: ProgressCallback | None = None,
) -> Found:
    """`read(snapshot)` on a fresh `Snapshot` of `tables`, again while a
    writer did more than append meanwhile (`Snapshot.changed`), up to
    `READ_ATTEMPTS` reads: the last read's answer. Each read is as the file
    was at its start; after the last attempt the answer may mix a deletion
    in, which only a writer that keeps deleting during every read causes.
    `progress` is told how far each read has come (a read started again
    counts its tables again)."""
    tables = list(tables)
    for _ in range(READ_ATTEMPTS):
        snapshot = Snapshot(conn, tables, progress)
        found = read(snapshot)
        if not snapshot.changed():
            break
    return found
