"""Query results as pandas columns, built chunk by chunk.

The whole-forest reads return a million rows. Building a DataFrame from one
`fetchall()` holds every row as a tuple of Python objects at once, and repeated
strings (conversation ids, model names) as a million separate objects. Here
rows arrive in chunks, each chunk's columns are converted at once (repeated
strings to categories, integers to nullable Int64), and only the converted
columns are kept. `conform_nodes` gives every reader's nodes table the same
columns, order and dtypes.

Whole tables are read in short steps, never in one long SELECT. llm's file
uses a rollback journal, and a writer cannot commit while any reader holds
the read lock; llm waits five seconds, then drops the response it was
logging. A `Snapshot` takes every table's largest rowid in one statement,
then reads each table by rowid ranges (keyset pagination), each range its
own statement in autocommit mode, sized to take tens of milliseconds, so the
lock is free between two of them. No range reads past the largest rowid
taken at the start: llm only appends rows (one transaction per response) and
moves thread tips, so the rows up to those bounds are the file as it was at
that instant, and rows appended meanwhile wait for the next read. At the end
`Snapshot.changed` asks SQLite whether anyone committed meanwhile (`PRAGMA
data_version`) and, if so, counts the rows below each bound again: a count
that moved means something other than an append (a deletion, an `INSERT OR
REPLACE`) and the caller reads again.

The SQL expressions `as_text` and `as_integer` read any value SQLite holds
(llm's schema types nothing strictly) in the contract's types: text, or an
integer, or NULL. Text that is not UTF-8 is decoded with U+FFFD in place of
the bad bytes (`replacing_text`), so one bad row never makes a file
unreadable.
"""

from __future__ import annotations

import gc
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from convgraph.contract import CATEGORY_COLUMNS, INTEGER_ATTRIBUTES, SOURCE_COLUMNS

if TYPE_CHECKING:
    import pandas as pd

#: How long a read waits for a writer (llm logging a response) to finish.
BUSY_TIMEOUT_SECONDS = 5.0
#: The time one statement of a whole-table read aims to take: a writer waits
#: for the read lock about this long at most (llm waits up to 5 s).
CHUNK_SECONDS = 0.03
#: The rows of a table's first statement, and bounds on any statement's.
FIRST_CHUNK_ROWS = 2_000
MIN_CHUNK_ROWS, MAX_CHUNK_ROWS = 200, 100_000


def replacing_text(data: bytes) -> str:
    """SQLite text as str, bytes that are not UTF-8 shown as U+FFFD: the
    text factory of convgraph's connections."""
    return data.decode("utf-8", "replace")


def as_text(expression: str) -> str:
    """SQL for a column's value as text or NULL, whatever SQLite type it was
    stored as (a BLOB becomes its bytes as text, a number its digits)."""
    return f"cast({expression} as text)"


def as_integer(expression: str) -> str:
    """SQL for a column's value as an integer or NULL: a real that is a whole
    number in range becomes it; text ('12 tokens'), a fraction, a BLOB or a
    number out of range become NULL."""
    e = expression
    return (
        f"(case typeof({e}) when 'integer' then {e}"
        f" when 'real' then (case when {e} = cast({e} as integer)"
        f" and abs({e}) < 9.2e18 then cast({e} as integer) end) end)"
    )


class Snapshot:
    """Whole tables read in short statements, as they were at one instant
    (see the module's docstring).

    Parameters
    ----------
    conn
        A read-only connection in autocommit mode (Python's sqlite3 opens no
        transaction for a SELECT).
    tables
        The tables that will be read; each must exist.
    """

    def __init__(self, conn: sqlite3.Connection, tables: Iterable[str]):
        self.conn = conn
        self.tables = list(tables)
        self.version = conn.execute("pragma data_version").fetchone()[0]
        self.bounds: dict[str, int | None] = {}
        self.rowids: dict[str, bool] = {}
        self._reads: list[tuple[str, int]] = []
        try:
            row = (
                conn.execute(
                    "select "
                    + ", ".join(f'(select max(rowid) from "{t}")' for t in self.tables)
                ).fetchone()
                if self.tables
                else ()
            )
            self.bounds = dict(zip(self.tables, row, strict=True))
            self.rowids = dict.fromkeys(self.tables, True)
        except sqlite3.OperationalError:
            # A table without rowids (only a hand-made file has one): read
            # in one statement, as there is no key to page by.
            for table in self.tables:
                try:
                    self.bounds[table] = conn.execute(
                        f'select max(rowid) from "{table}"'
                    ).fetchone()[0]
                    self.rowids[table] = True
                except sqlite3.OperationalError:
                    self.bounds[table] = None
                    self.rowids[table] = False

    def rows(self, table: str, columns: str, alias: str = "t") -> Iterator[list[tuple]]:
        """Every row of `table` up to its bound, chunk by chunk, in rowid
        order; each row's first value is its rowid, then `columns` (SQL over
        `alias`). No filter: `changed` checks the rows read by counting
        them, and only whole-table counts are cheap (SQLite counts an
        index); callers keep the rows they want."""
        if not self.rowids.get(table, False):
            rows = self._fetch(f'select null, {columns} from "{table}" as {alias}', ())
            self._reads.append((table, -1))
            if rows:
                yield rows
            return
        last = self.bounds[table]
        count = 0
        if last is not None:
            query = (
                f'select {alias}.rowid, {columns} from "{table}" as {alias}'
                f" where {alias}.rowid > ? and {alias}.rowid <= ?"
                f" order by {alias}.rowid limit ?"
            )
            after = -(2**63)
            # Each table starts small: its rows may be far larger than the
            # last table's (texts, not ids).
            wanted = FIRST_CHUNK_ROWS
            while True:
                asked = wanted
                started = time.perf_counter()
                chunk = self._fetch(query, (after, last, asked))
                wanted = _paced(asked, time.perf_counter() - started)
                if not chunk:
                    break
                count += len(chunk)
                yield chunk
                if len(chunk) < asked:
                    break
                after = chunk[-1][0]
        self._reads.append((table, count))

    def _fetch(self, query: str, params: tuple) -> list[tuple]:
        """One statement's rows, read to the end at once, so that SQLite
        releases the read lock before any Python work on them. Decoding
        with the plain `str` is the fast path; text that is not UTF-8 makes
        that fail, and then the chunk is read again with `replacing_text`."""
        factory = self.conn.text_factory
        self.conn.text_factory = str
        try:
            return self.conn.execute(query, params).fetchall()
        except sqlite3.OperationalError as error:
            if "decode" not in str(error):
                raise
        finally:
            self.conn.text_factory = factory
        return self.conn.execute(query, params).fetchall()

    def changed(self) -> bool:
        """Whether a writer changed, not only appended to, the rows read.

        No commit since the start (`data_version` the same): nothing
        changed. Else, per table read, one statement counts its rows and
        those above the bound (appended since): the difference must be the
        number read, or rows read were deleted or replaced. A whole-table
        count is quick, as SQLite counts the smallest index.
        """
        version = self.conn.execute("pragma data_version").fetchone()[0]
        if version == self.version:
            return False
        for table, count in self._reads:
            if count < 0:
                return True  # no rowids: no way to tell an append
            last = self.bounds[table]
            total, appended = self.conn.execute(
                f'select (select count(*) from "{table}"),'
                f' (select count(*) from "{table}" where rowid > ?)',
                (-(2**63) if last is None else last,),
            ).fetchone()
            if total - appended != count:
                return True
        return False


def _paced(rows: int, seconds: float) -> int:
    """The rows of the next statement, so that it takes about
    `CHUNK_SECONDS` if this one read `rows` in `seconds`: at most twice as
    many (a fast chunk may have been luck), as few as it takes."""
    scale = min(CHUNK_SECONDS / max(seconds, 1e-4), 2.0)
    return min(max(int(rows * scale), MIN_CHUNK_ROWS), MAX_CHUNK_ROWS)


def frame_of_chunks(
    chunks: Iterable[list[tuple]],
    names: list[str],
    categories: Iterable[str] = (),
    integers: Iterable[str] = (),
    rowid: bool = True,
) -> pd.DataFrame:
    """Rows that come in chunks (a `Snapshot`'s) as a DataFrame with the
    columns `names`; `rowid`: the first value of each row is its rowid,
    left out. `categories` name the columns of repeated strings (pandas
    categoricals), `integers` the integer columns (nullable Int64); the rest
    stay object columns."""
    import numpy as np
    import pandas as pd
    from pandas.api.types import union_categoricals

    categories, integers = set(categories), set(integers)
    parts: dict[str, list] = {name: [] for name in names}
    with no_garbage_collection():
        for rows in chunks:
            columns = zip(*rows, strict=True)
            if rowid:
                next(columns)
            for name, values in zip(names, columns, strict=True):
                if name in categories:
                    parts[name].append(categorical(values))
                elif name in integers:
                    parts[name].append(pd.array(values, dtype="Int64"))
                else:
                    parts[name].append(np.array(values, dtype=object))
    columns = {}
    for name, chunks_of_column in parts.items():
        if not chunks_of_column:
            dtype = (
                "category"
                if name in categories
                else "Int64"
                if name in integers
                else object
            )
            columns[name] = pd.Series([], dtype=dtype)
        elif name in categories:
            columns[name] = pd.Series(union_categoricals(chunks_of_column))
        elif name in integers:
            columns[name] = pd.Series(
                pd.concat([pd.Series(c) for c in chunks_of_column], ignore_index=True)
            )
        else:
            columns[name] = pd.Series(np.concatenate(chunks_of_column), dtype=object)
    return pd.DataFrame(columns)


@contextmanager
def no_garbage_collection() -> Iterator[None]:
    """Pause the cyclic garbage collector while millions of row tuples are
    made: they hold no cycles, and collecting over them costs a third of the
    read."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def categorical(values: Any) -> pd.Categorical:
    """Strings (None for missing) as a categorical, categories in first-seen
    order: `pd.Categorical(values)` would sort them, which costs more and
    differs chunk by chunk."""
    import numpy as np
    import pandas as pd

    codes, uniques = pd.factorize(np.asarray(values, dtype=object))
    return pd.Categorical.from_codes(codes, uniques)


def conform_nodes(nodes: pd.DataFrame) -> pd.DataFrame:
    """The nodes table with `SOURCE_COLUMNS` first, in order, in the contract's
    dtypes: categories for `CATEGORY_COLUMNS`, nullable Int64 for the usage
    figures, object (str or None) for the rest. Columns already in their
    dtype are kept as they are, so a conforming table costs nothing; other
    columns follow, unchanged."""
    import pandas as pd

    columns = {}
    for name in SOURCE_COLUMNS:
        values = nodes[name]
        if name in CATEGORY_COLUMNS:
            if not isinstance(values.dtype, pd.CategoricalDtype):
                values = pd.Series(categorical(values), index=nodes.index)
        elif name in INTEGER_ATTRIBUTES:
            if not isinstance(values.dtype, pd.Int64Dtype):
                values = pd.Series(pd.array(values, dtype="Int64"), index=nodes.index)
        elif values.dtype != object:
            # pandas' own string dtype shows a missing value as NaN.
            values = values.astype(object).where(values.notna(), None)
        columns[name] = values
    for name in nodes.columns:
        if name not in columns:
            columns[name] = nodes[name]
    return pd.DataFrame(columns, index=nodes.index, copy=False)
