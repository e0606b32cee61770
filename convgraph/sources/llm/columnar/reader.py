"""The ADBC reader: whole tables as Arrow columns, by the chunked-read rule of
`snapshot`, a large table in `READ_THREADS` rowid ranges side by side (SQLite
steps through rows without Python's lock). A value the contract's column
cannot hold as it is raises `NotColumnar`: the row readers report it."""

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

READ_THREADS = min(4, os.cpu_count() or 1)
ROWS_PER_RANGE = 50_000

#: The `typeof` values a column may hold; an id is never NULL.
TEXT = "('text', 'null')"
INTEGER = "('integer', 'null')"
ID = "('text')"


class NotColumnar(Exception):
    """Values only the row readers decode as the contract says."""


class ArrowReader:
    """Read-only ADBC connections: one for small statements (a `Snapshot`'s
    too), one more per rowid range read side by side."""

    def __init__(self, path: Any):
        from pathlib import Path

        self.uri = f"{Path(path).resolve().as_uri()}?mode=ro"
        self.connections: list[Any] = []
        self.cursor = self._cursor()
        self.range_cursors = [self.cursor]

    def _cursor(self) -> Any:
        import adbc_driver_sqlite.dbapi

        # The DB-API default would hold one transaction, and the read lock,
        # from the first statement on.
        conn = adbc_driver_sqlite.dbapi.connect(self.uri, autocommit=True)
        self.connections.append(conn)
        cursor = conn.cursor()
        busy_ms = int(chunked.BUSY_TIMEOUT_SECONDS * 1000)
        cursor.execute(f"pragma busy_timeout = {busy_ms}")
        cursor.fetchall()
        # One batch per chunk: the driver infers a column's type per batch.
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
        """The columns of `table` with SQLite's TEXT affinity."""
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
        """The columns a one-column unique index keeps unique."""
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
        """Run a small statement; the cursor, as a `Snapshot` wants."""
        return self.cursor.execute(sql, parameters)

    def one(self, sql: str) -> tuple[Any, ...]:
        row: tuple[Any, ...] = self.execute(sql).fetchone()
        return row

    def texts_at(self, table: str, column: str, rowids: np.ndarray) -> list[str | None]:
        """`column` of the rows with these `rowids`, in order; `NotColumnar`
        for a value that is no UTF-8 text."""
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
        # A row deleted meanwhile is None; `Snapshot.changed` reads again.
        return [found.get(int(rowid)) for rowid in rowids]

    def table(
        self,
        name: str,
        columns: dict[str, tuple[str, str]],
        snapshot: Snapshot,
        strings: tuple[str, ...] = (),
        log_order: bool = False,
        categories: tuple[str, ...] = (),
        key: str | None = None,
    ) -> dict[str, Any]:
        """Table `name` up to its `snapshot` bound, in rowid order: per output column of
        `columns` (SQL, allowed `typeof`s) an Arrow array, but `strings` as
        `large_string`, `categories` as categoricals and, where `strings` names any,
        integers as Int64, converted chunk by chunk. `log_order` adds "_in_log_order".
        `NotColumnar` for other types, or where column `key` repeats a value."""
        import numpy as np
        import pandas as pd
        import pyarrow as pa
        import pyarrow.compute as pc

        last_rowid = snapshot.bounds[name]
        if last_rowid is None:
            snapshot.counted(name, 0)
            return _empty(columns, log_order)
        fields = ", ".join(f"{sql} as {out}" for out, (sql, _) in columns.items())
        # Other types come as other Arrow types (`_typed` refuses them), but
        # a number among text comes as digits: unless the column has TEXT
        # affinity (llm's do), ask SQLite's `typeof` row by row.
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
                    # Copied out of the batch and cast per chunk: a cast
                    # at the end would hold the column twice.
                    value = pa.concat_arrays(
                        value.chunks or [pa.array([], pa.string())]
                    ).cast(pa.large_string())
                elif out in categories:
                    # A slice of the batch would keep the whole batch alive.
                    value = pc.dictionary_encode(value)
                elif types == INTEGER and strings:
                    value = integer_parts(value)
                else:
                    # Copied to its size: the driver's buffers grow by
                    # doubling and would hold their spare room.
                    value = pa.chunked_array(
                        [pa.concat_arrays(value.chunks)] if value.chunks else [],
                        value.type,
                    )
                part[out] = value
            return part

        first_rowid = self.one(f"select min(rowid) from {name}")[0]
        if first_rowid is None:
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
            keyed = out == key and out not in unique
            if out in strings:
                arrays[out] = pa.chunked_array(parts.pop(out), pa.large_string())
            elif out in categories:
                arrays[out] = joined_categories(parts.pop(out))
                keyed = False
            elif types == INTEGER and strings:
                pieces = parts.pop(out)
                arrays[out] = pd.arrays.IntegerArray(
                    np.concatenate([values for values, _ in pieces]),
                    np.concatenate([mask for _, mask in pieces]),
                )
                keyed = False
            else:
                pieces = [piece for part in parts.pop(out) for piece in part.chunks]
                arrays[out] = pa.chunked_array(pieces, _arrow_type(types))
            if keyed and pc.count_distinct(arrays[out]).as_py() < len(arrays[out]):
                # No primary key: the row readers keep the first and report.
                raise NotColumnar(f"an id repeated in {name}")
        return arrays


def _rowid_ranges(after: int, last: int) -> list[tuple[int, int]]:
    """`(after, last]` cut into up to `READ_THREADS` equal ranges of at least
    `ROWS_PER_RANGE` rowids."""
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
    """`query`'s rows in `(after, last]` by `paced_chunks`, each chunk
    converted; the chunks and the row count."""
    import pyarrow.compute as pc

    def fetch(after: int, wanted: int) -> pa.Table:
        return cursor.execute(query, (after, last, wanted)).fetch_arrow_table()

    parts = []
    count = 0

    def last_rowid(chunk: pa.Table) -> int:
        return int(chunk["_rowid"][-1].as_py())

    for chunk in chunked.paced_chunks(fetch, len, last_rowid, after, last):
        if pc.min(chunk["_clean"]).as_py() != 1:
            raise NotColumnar("values of other types")
        count += chunk.num_rows
        parts.append(convert(chunk))
        advanced(chunk.num_rows)
        del chunk
    return parts, count


def _checked_column(
    column: pa.ChunkedArray, types: str, table: str, name: str
) -> pa.ChunkedArray:
    """A column in the contract's type; `NotColumnar` for another type,
    non-UTF-8 text or a NULL id."""
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
    """`column` as `wanted` (the driver types a column of NULLs as int64)."""
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
