"""Whole tables read as of one instant, in short statements, so llm can log.

llm's rollback journal lets no writer commit while a reader holds the lock,
and llm drops a response after five seconds' wait. So a `Snapshot` takes
each table's largest rowid at once, then reads rowid ranges, each its own
autocommit statement of about `CHUNK_SECONDS`. llm only appends rows and
moves thread tips; `Snapshot.changed` detects anything else."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

from convgraph.sources.source import ProgressCallback, no_progress

BUSY_TIMEOUT_SECONDS = 5.0
#: What one statement aims to take: about a writer's longest wait for the lock.
CHUNK_SECONDS = 0.03
FIRST_CHUNK_ROWS = 2_000
MIN_CHUNK_ROWS, MAX_CHUNK_ROWS = 200, 100_000
READ_ATTEMPTS = 3
BEFORE_FIRST_ROWID = -(2**63)

clock: Callable[[], float] = time.perf_counter

Chunk = TypeVar("Chunk")
Found = TypeVar("Found")


class Statements(Protocol):
    """A sqlite3 connection, or a DB-API cursor whose `execute` returns itself."""

    def execute(self, sql: str, parameters: Any = ..., /) -> Any: ...


def paced(rows: int, seconds: float) -> int:
    """The next statement's rows, to take about `CHUNK_SECONDS` after `rows`
    took `seconds`: at most twice as many (a fast chunk may be luck)."""
    # No floor on the shrink: the writer's wait is what the rule bounds.
    scale = min(CHUNK_SECONDS / max(seconds, 1e-4), 2.0)
    return min(max(int(rows * scale), MIN_CHUNK_ROWS), MAX_CHUNK_ROWS)


def paced_chunks(
    fetch: Callable[[int, int], Chunk],
    size: Callable[[Chunk], int],
    last_rowid: Callable[[Chunk], int],
    after: int,
    last: int,
) -> Iterator[Chunk]:
    """Chunks of rowids in ``(after, last]``, one `paced` statement each;
    `fetch(after, rows)` must read its rows to the end, releasing the lock."""
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
        # A chunk of Arrow columns may be large: not kept during the next.
        del chunk
        if rows < wanted:
            return
        wanted = paced(wanted, took)


class Snapshot:
    """Whole `tables` as of one instant; `conn` (autocommit) is sqlite3's,
    which reads `rows`, or an ADBC cursor, whose reader reports `counted`."""

    def __init__(
        self,
        conn: Statements,
        tables: Iterable[str],
        progress: ProgressCallback | None = None,
    ):
        self.conn = conn
        self.tables = list(tables)
        self.report: ProgressCallback = progress or no_progress
        self._read_so_far: dict[str, int] = {}
        self._progress_lock = threading.Lock()
        self.version = self._one("pragma data_version")[0]
        #: Each table's largest rowid at the start (None: empty or no rowids).
        self.bounds: dict[str, int | None] = {}
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
            # A table without rowids (hand-made files) is read in one
            # statement; the columnar reader leaves such files to sqlite3.
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
        if parameters:
            return tuple(self.conn.execute(sql, parameters).fetchone())
        return tuple(self.conn.execute(sql).fetchone())

    def counted(self, table: str, rows: int) -> None:
        """Note `rows` read of `table` (-1: no rowids) for `changed`."""
        self._reads.append((table, rows))
        total = self.bounds.get(table)
        if total and self._read_so_far.get(table, 0) < total:
            self.report(f"reading {table}", total, total)

    def advanced(self, table: str, rows: int) -> None:
        """Report `rows` more rows of `table` read; thread-safe."""
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
        """Chunks of `table`'s rows up to its bound: rowid, then `columns`.
        No filter: `changed` can count only whole tables cheaply."""
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
        """One statement's rows, read at once to free the lock; `str` first
        (fast), the connection's text factory again for non-UTF-8 text."""
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
        """Whether a writer changed, not only appended to, the rows read."""
        # All rows minus those above the bound: SQLite counts a whole table
        # on its smallest index, where a count below the bound walks pages.
        if self._one("pragma data_version")[0] == self.version:
            return False
        for table, count in self._reads:
            if count < 0:
                return True
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
    """`read(snapshot)`, again while a writer did more than append, up to
    `READ_ATTEMPTS` times; the last answer."""
    tables = list(tables)
    for _ in range(READ_ATTEMPTS):
        snapshot = Snapshot(conn, tables, progress)
        found = read(snapshot)
        if not snapshot.changed():
            break
    return found
