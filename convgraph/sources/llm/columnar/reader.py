"""The ADBC reader: whole tables as Arrow columns, in short statements.

`ArrowReader` holds read-only connections of the ADBC SQLite driver (Apache
Arrow's), which hands over each statement's rows as Arrow columns. It reads
a table by the one chunked-read rule of `convgraph.sources.llm.snapshot`: up to
the bound its `Snapshot` took, rowid range by rowid range, each range its
own statement in autocommit mode sized by `snapshot.paced` (in
`snapshot.paced_chunks`), so llm can commit between two of them. A large
table is read in `READ_THREADS` such sequences side by side, each on its own
connection (SQLite steps through rows without Python's lock). Each chunk is
checked as it comes: a value of a type the contract's column cannot hold as
it is (a BLOB, text that is not UTF-8, a number among text, a NULL id)
raises `NotColumnar`, and the row readers, which decide how such data is
reported, read the file instead.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from convgraph.sources.llm import snapshot as chunked
from convgraph.sources.llm.columnar.arrays import (
    chunks_in_log_order,
    in_log_order,
    integer_parts,
    joined_categories,
)

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from convgraph.sources.llm.snapshot import Snapshot

#: How many ranges of rowids a large table is read in side by side, and the
#: fewest rows a range is worth a thread for.
READ_THREADS = min(4, os.cpu_count() or 1)
ROWS_PER_RANGE = 50_000

#: The SQLite types a column may hold (`typeof`), as `ArrowReader.table`
#: checks them: text or NULL, an integer or NULL, and an id: text, never
#: NULL (a NULL id is for the row readers to report).
TEXT = "('text', 'null')"
INTEGER = "('integer', 'null')"
ID = "('text')"
#: The columns that name one row each.
_KEYS = ("id", "hash")


class NotColumnar(Exception):
    """The file holds what only the row readers decode as the contract says;
    raised inside the columnar reader and turned into None by
    `columnar.read_forest`."""


class ArrowReader:
    """Read-only ADBC connections that read tables in short chunks: one for
    the small statements (`execute`, `one`; a `Snapshot` runs its own on
    it), and one per range of rowids that a large table is read in, side by
    side (`table`)."""

    def __init__(self, path: Any):
        from pathlib import Path

        self.uri = f"{Path(path).resolve().as_uri()}?mode=ro"
        self.connections: list[Any] = []
        self.cursor = self._cursor()
        self.range_cursors = [self.cursor]

    def _cursor(self) -> Any:
        """A cursor on a new connection."""
        import adbc_driver_sqlite.dbapi

        # autocommit: outside an explicit transaction each statement takes
        # the read lock only while it runs; the DB-API default would hold
        # one transaction, and the lock, from the first statement on.
        conn = adbc_driver_sqlite.dbapi.connect(self.uri, autocommit=True)
        self.connections.append(conn)
        cursor = conn.cursor()
        busy_ms = int(chunked.BUSY_TIMEOUT_SECONDS * 1000)
        cursor.execute(f"pragma busy_timeout = {busy_ms}")
        cursor.fetchall()
        # One Arrow batch per chunk: the driver infers a column's type per
        # batch, and a chunk then has one type per column.
        cursor.adbc_statement.set_options(
            **{"adbc.sqlite.query.batch_rows": str(chunked.MAX_CHUNK_ROWS)}
        )
        return cursor

    def __enter__(self) -> ArrowReader:
        return self

    def __exit__(self, *exc: object) -> None:
        for cursor in self.range_cursors:
            cursor.close()
        for conn in self.connections:
            conn.close()

    def text_columns(self, table: str) -> set[str]:
        """The columns of `table` with TEXT affinity (SQLite's rule: a
        declared type naming CHAR, CLOB or TEXT, and not INT)."""
        self.cursor.execute(f"pragma table_info({table})")
        found = set()
        for row in self.cursor.fetchall():
            declared = (row[2] or "").upper()
            if "INT" not in declared and any(
                word in declared for word in ("CHAR", "CLOB", "TEXT")
            ):
                found.add(row[1])
        return found

    def unique_columns(self, table: str) -> set[str]:
        """The columns of `table` that a unique index (a primary key's
        included) keeps unique by itself."""
        self.cursor.execute(f"pragma index_list({table})")
        indexes = [row[1] for row in self.cursor.fetchall() if row[2]]
        found = set()
        for index in indexes:
            self.cursor.execute(f"pragma index_info({index})")
            columns = [row[2] for row in self.cursor.fetchall()]
            if len(columns) == 1:
                found.add(columns[0])
        return found

    def execute(self, sql: str, parameters: Any = None, /) -> Any:
        """Run one small statement on the main cursor: the cursor, for
        `fetchone` (what a `Snapshot` asks of its connection)."""
        return self.cursor.execute(sql, parameters)

    def one(self, sql: str) -> tuple[Any, ...]:
        """The first row of one small statement."""
        row: tuple[Any, ...] = self.execute(sql).fetchone()
        return row

    def texts_at(self, table: str, column: str, rowids: np.ndarray) -> list[str | None]:
        """The text of `column` in the rows of `table` with these rowids, in
        their order, a few hundred rows a statement; NotColumnar for a value
        that is no text, or text that is not UTF-8 (the row readers decide
        how to show it)."""
        found: dict[int, str] = {}
        for start in range(0, len(rowids), 500):
            wanted = ", ".join(str(int(rowid)) for rowid in rowids[start : start + 500])
            self.cursor.execute(
                f"select rowid, {column} from {table} where rowid in ({wanted})"
            )
            rows = self.cursor.fetch_arrow_table()
            texts = _checked_column(rows.column(1), TEXT, table, column)
            found.update(
                zip(rows.column(0).to_pylist(), texts.to_pylist(), strict=True)
            )
        # A row deleted meanwhile is None here, and the read starts again
        # (`Snapshot.changed`).
        return [found.get(int(rowid)) for rowid in rowids]

    def table(
        self,
        name: str,
        columns: dict[str, tuple[str, str]],
        snapshot: Snapshot,
        strings: tuple[str, ...] = (),
        log_order: bool = False,
        categories: tuple[str, ...] = (),
    ) -> dict[str, Any]:
        """Every row of table `name` up to its bound in `snapshot`, in rowid order,
        chunk by chunk: one Arrow array per column (in the driver's chunks),
        but for the columns named in `strings`, which come as Arrow
        `large_string` arrays, the node table's type (each chunk copied
        out of the driver's batch as it comes, so that the batch, with its
        other columns, goes as soon as the chunk is converted), the columns
        in `categories`, which come as pandas categoricals, and, where
        `strings` names any, the integer columns, as pandas' Int64,
        converted chunk by chunk too. `columns` maps
        each output column to its SQL expression and the SQLite types it may
        hold (`TEXT`, `INTEGER`, `ID`); a row of any other type raises
        NotColumnar. `log_order`: also tell, as "_in_log_order", whether the
        rows are in log order by their `datetime_utc` and `id` columns.

        A large table is read in `READ_THREADS` ranges of rowids side by
        side, each on its own connection in its own thread: SQLite steps
        through rows without Python's lock, so the ranges share the cores,
        and one range's chunks are converted while another's are read.
        """
        import numpy as np
        import pandas as pd
        import pyarrow as pa
        import pyarrow.compute as pc

        last_rowid = snapshot.bounds[name]
        if last_rowid is None:
            snapshot.counted(name, 0)
            return _empty(columns, log_order)
        fields = ", ".join(f"{sql} as {out}" for out, (sql, _) in columns.items())
        # A value of another type comes as another Arrow type (`_typed`
        # refuses it): a BLOB as binary, text among integers as text. Only
        # a number among text does not: it comes as its digits. A column of
        # TEXT affinity (llm's are) holds no numbers, as SQLite stores them
        # as text; any other needs SQLite's word for its types, row by row.
        text_affinity = self.text_columns(name) | {"coalesce", "null"}
        unique = self.unique_columns(name)
        checks = [
            f"typeof({sql}) in {types}"
            for sql, types in columns.values()
            if types != INTEGER and not set(re.findall(r"\w+", sql)) <= text_affinity
        ]
        clean = " and ".join(checks) or "1"
        query = (
            f"select rowid as _rowid, {fields}, ({clean}) as _clean from {name}"
            f" where rowid > ? and rowid <= ? order by rowid limit ?"
        )

        def convert(chunk: pa.Table) -> dict[str, Any]:
            """One chunk's columns as the caller wants them, and, for the
            log order, whether its rows are in it and its first and last
            keys."""
            typed = {
                out: _checked_column(chunk[out], types, name, out)
                for out, (_, types) in columns.items()
            }
            part: dict[str, Any] = {}
            if log_order:
                part["_in_log_order"] = in_log_order(typed["datetime_utc"], typed["id"])
            for out, (_, types) in columns.items():
                value = typed.pop(out)
                if out in strings:
                    # Copied out of the batch, then cast to the table's
                    # `large_string` here, a chunk at a time (the cast keeps
                    # the copy's words): cast whole at the end, a column
                    # would be held twice.
                    value = pa.concat_arrays(
                        value.chunks or [pa.array([], pa.string())]
                    ).cast(pa.large_string())
                elif out in categories:
                    # Encoded into buffers of its own: a slice of the
                    # driver's batch would keep the whole batch alive.
                    value = pc.dictionary_encode(value)
                elif types == INTEGER and strings:
                    value = integer_parts(value)
                part[out] = value
            return part

        first_rowid = self.one(f"select min(rowid) from {name}")[0]
        if first_rowid is None:  # emptied since the bounds were taken
            snapshot.counted(name, 0)
            return _empty(columns, log_order)
        ranges = _rowid_ranges(first_rowid - 1, last_rowid)
        while len(self.range_cursors) < len(ranges):
            self.range_cursors.append(self._cursor())

        def advanced(rows: int) -> None:
            snapshot.advanced(name, rows)

        advanced(0)
        if len(ranges) == 1:
            found = [_read_range(self.cursor, query, *ranges[0], convert, advanced)]
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(len(ranges)) as pool:
                found = list(
                    pool.map(
                        _read_range,
                        self.range_cursors,
                        [query] * len(ranges),
                        *zip(*ranges, strict=True),
                        [convert] * len(ranges),
                        [advanced] * len(ranges),
                    )
                )
        chunks = [part for parts, _ in found for part in parts]
        count = sum(rows for _, rows in found)
        snapshot.counted(name, count)
        if not count:
            return _empty(columns, log_order)
        arrays: dict[str, Any] = {}
        if log_order:
            arrays["_in_log_order"] = chunks_in_log_order(
                [chunk.pop("_in_log_order") for chunk in chunks]
            )
        parts = {out: [chunk.pop(out) for chunk in chunks] for out in columns}
        del chunks
        for out, (_, types) in columns.items():
            if out in strings:
                arrays[out] = pa.chunked_array(parts.pop(out), pa.large_string())
                repeated = out in _KEYS and out not in unique
                repeated = repeated and (
                    pc.count_distinct(arrays[out]).as_py() < len(arrays[out])
                )
            elif out in categories:
                arrays[out] = joined_categories(parts.pop(out))
                repeated = False
            elif types == INTEGER and strings:
                pieces = parts.pop(out)
                arrays[out] = pd.arrays.IntegerArray(
                    np.concatenate([values for values, _ in pieces]),
                    np.concatenate([mask for _, mask in pieces]),
                )
                repeated = False
            else:
                pieces = [piece for part in parts.pop(out) for piece in part.chunks]
                arrays[out] = pa.chunked_array(pieces, _arrow_type(types))
                repeated = out in _KEYS and out not in unique
                repeated = repeated and (
                    pc.count_distinct(arrays[out]).as_py() < len(arrays[out])
                )
            if repeated:
                # A table without a primary key: the row readers keep the
                # first of each id and report the others.
                raise NotColumnar(f"an id repeated in {name}")
        return arrays


def _rowid_ranges(after: int, last: int) -> list[tuple[int, int]]:
    """The rowids after `after` up to `last`, cut into `READ_THREADS` ranges
    (`(after, last)` pairs) of equal width; one where there are fewer than
    `ROWS_PER_RANGE` rowids per range."""
    count = max(1, min(READ_THREADS, (last - after) // ROWS_PER_RANGE))
    bounds = [after + (last - after) * part // count for part in range(count + 1)]
    return list(zip(bounds[:-1], bounds[1:], strict=True))


def _read_range(
    cursor: Any,
    query: str,
    after: int,
    last: int,
    convert: Callable[[pa.Table], dict[str, Any]],
    advanced: Callable[[int], None],
) -> tuple[list[dict[str, Any]], int]:
    """The rows of `query` with rowids after `after` up to `last`, each chunk
    a statement of its own paced by the chunked-read rule
    (`snapshot.paced_chunks`), given to `convert`: the converted chunks, in
    rowid order, and how many rows. `advanced` is told each chunk's rows."""
    import pyarrow.compute as pc

    def fetch(after: int, wanted: int) -> pa.Table:
        return cursor.execute(query, (after, last, wanted)).fetch_arrow_table()

    parts = []
    count = 0
    for chunk in chunked.paced_chunks(fetch, _rows_of, _last_rowid_of, after, last):
        if pc.min(chunk["_clean"]).as_py() != 1:
            raise NotColumnar("values of other types")
        count += chunk.num_rows
        parts.append(convert(chunk))
        advanced(chunk.num_rows)
        del chunk
    return parts, count


def _rows_of(chunk: pa.Table) -> int:
    return int(chunk.num_rows)


def _last_rowid_of(chunk: pa.Table) -> int:
    return int(chunk["_rowid"][-1].as_py())


def _checked_column(
    column: pa.ChunkedArray, types: str, table: str, name: str
) -> pa.ChunkedArray:
    """One chunk's column in the contract's type, or NotColumnar: another
    type, text that is not UTF-8 (the row readers decide how to show it), a
    NULL id."""
    import pyarrow as pa

    column = _typed(column, _arrow_type(types))
    try:
        column.validate(full=True)
    except pa.ArrowInvalid:
        raise NotColumnar(f"text of {table} that is not UTF-8") from None
    if types == ID and column.null_count:
        raise NotColumnar(f"a NULL {name} in {table}")
    return column


def _typed(column: pa.ChunkedArray, wanted: pa.DataType) -> pa.ChunkedArray:
    """A chunk's column in the type the contract wants: the driver types a
    column of NULLs only as int64."""
    import pyarrow as pa

    if column.type == wanted:
        return column
    if column.null_count == len(column):
        return pa.chunked_array([pa.nulls(len(column), wanted)], wanted)
    raise NotColumnar(f"a column of {column.type}")


def _arrow_type(types: str) -> pa.DataType:
    import pyarrow as pa

    return pa.int64() if types == INTEGER else pa.string()


def _empty(
    columns: dict[str, tuple[str, str]], log_order: bool = False
) -> dict[str, Any]:
    import pyarrow as pa

    return ({"_in_log_order": True} if log_order else {}) | {
        out: pa.chunked_array([], _arrow_type(types))
        for out, (_, types) in columns.items()
    }
