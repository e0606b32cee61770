"""Read the whole forest as columns: Arrow arrays from SQLite, links on arrays.

The row readers (`legacy.LegacyReader.read_all`,
`message_store.MessageStoreReader.read_all`) make a Python tuple per row and,
for the message store, walk each turn's messages in a Python loop. Here the
ADBC SQLite driver (Apache Arrow's) hands over whole columns as Arrow arrays,
repeated strings become pandas categories straight from Arrow's dictionary
encoding, and parents are found on integers: a legacy response's parent by
SQLite itself, as the rowid its index of the ids gives (`PARENT_ROWID`); a
turn's by joins and pointer jumping over message numbers (every hash mixed
into a 64-bit integer and numbered by one hash table, `_numbered_by_bytes`;
the nearest tip above each turn's input by
`convgraph.links.pointer_jumping.nearest_marked`): no Python loop per row, turn or
message. The parents' rows go to the `Forest` with the table
(`contract.PARENT_ROWS`). The answer is the row readers' exactly (same table,
dtypes, order, names); `tests/test_columnar.py` compares them on every kind
of file.

Reads never hold SQLite's read lock for long, by the row readers' rule
(`tables.Snapshot`): the largest rowid of every table is taken first, in one
statement; each table is then read in rowid ranges up to it, each range its
own statement in autocommit mode, sized to take about `CHUNK_SECONDS`, so
llm can commit between two of them. A large table is read in `READ_THREADS`
such sequences side by side, each on its own connection (SQLite steps
through rows without Python's lock). Rows that llm appends meanwhile lie
above the bounds and wait for the next read. At the end, if anyone
committed (`PRAGMA data_version`), the rows under each bound are counted
again, and a count that moved (a deletion, a replacement) starts the read
again.

This path covers the files it can answer exactly and fast: a legacy file (no
turns), or a message store without legacy rows read without its texts. Other
files (upgraded ones, with both generations), and any sign of values the
contract's types cannot hold as they are (a BLOB, undecodable UTF-8, a
number among text, text among integers, a NULL or repeated id, a cycle of
messages or forks), make `read_forest` return None, and the row readers,
which decide how such data is reported, read the file instead. So does a
machine without pyarrow and the ADBC driver (the optional ``fast`` extra).
"""

from __future__ import annotations

import importlib.util
import os
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from convgraph.contract import (
    INTEGER_ATTRIBUTES,
    PARENT_ROWS,
    SOURCE_COLUMNS,
    TEXT_ATTRIBUTES,
)

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    from convgraph.sources import LogDatabase

#: How many times a read starts again when a writer did more than append
#: meanwhile, as the row readers do.
READ_ATTEMPTS = 3
#: Rows of a table's first statement. Each next statement's rows are sized
#: so that it takes about CHUNK_SECONDS (a writer waits at most that long
#: for the read lock; llm waits five seconds), between the bounds: the row
#: readers' figures (`tables.Snapshot`).
CHUNK_ROWS = 2_000
CHUNK_SECONDS = 0.03
MIN_CHUNK_ROWS, MAX_CHUNK_ROWS = 200, 100_000
#: How many ranges of rowids a large table is read in side by side, and the
#: fewest rows a range is worth a thread for.
READ_THREADS = min(4, os.cpu_count() or 1)
ROWS_PER_RANGE = 50_000

_TEXT = "('text', 'null')"
_INTEGER = "('integer', 'null')"
#: An id: text, never NULL (a NULL id is for the row readers to report).
_ID = "('text')"
#: A legacy response's parent's rowid, found through the index of the ids.
PARENT_ROWID = (
    "(select rowid from responses as parent"
    " where parent.id = responses.parent_response_id)"
)
#: The columns that name one row each.
_KEYS = ("id", "hash")


class NotColumnar(Exception):
    """The file holds what only the row readers decode as the contract says;
    raised inside this module and turned into None by `read_forest`."""


def available() -> bool:
    """Whether pyarrow and the ADBC SQLite driver are installed."""
    return all(
        importlib.util.find_spec(name) is not None
        for name in ("pyarrow", "adbc_driver_sqlite")
    )


def read_forest(
    logs: LogDatabase, text: bool = True
) -> tuple[pd.DataFrame, dict[str, Any]] | None:
    """Every node as one table and every tree's name, as
    `LogDatabase.read_forest` gives them, read column by column; None where
    this path does not apply (see the module's docstring): then read the rows.
    """
    if not available():
        return None
    import adbc_driver_manager

    try:
        with _ArrowReader(logs.path) as reader:
            kind = _generation(logs, reader)
            if kind is None or (kind == "store" and text):
                return None
            for _ in range(READ_ATTEMPTS):
                reader.begin()
                if kind == "legacy":
                    found = _read_legacy(logs, reader, text)
                else:
                    found = _read_store(reader)
                if not reader.changed():
                    break
            return found
    except (NotColumnar, adbc_driver_manager.Error):
        # A locked or damaged file, or values to report: the row readers
        # say what is wrong in the house's words.
        return None
    finally:
        _give_back_memory()


def _give_back_memory() -> None:
    """Hand the Arrow columns' freed memory back to the system.

    The columns are gone once the table is built, but the allocators keep
    their pages for reuse: Arrow's memory pool (mimalloc or jemalloc), and
    C's malloc for the driver's buffers. At a million rows that is a few
    hundred megabytes the rest of the work never reuses.
    """
    import ctypes
    import ctypes.util

    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    name = ctypes.util.find_library("c")
    libc = ctypes.CDLL(name) if name else None
    if libc is not None and hasattr(libc, "malloc_trim"):  # glibc only
        libc.malloc_trim(0)


class _ArrowReader:
    """Read-only ADBC connections that read tables in short chunks: one for
    the small statements, and one per range of rowids that a large table is
    read in, side by side (`table`)."""

    def __init__(self, path: Any):
        from pathlib import Path

        self.uri = f"{Path(path).resolve().as_uri()}?mode=ro"
        self.connections: list[Any] = []
        self.cursor = self._cursor()
        self.range_cursors = [self.cursor]

    def _cursor(self) -> Any:
        """A cursor on a new connection."""
        import adbc_driver_sqlite.dbapi

        from convgraph.sources.tables import BUSY_TIMEOUT_SECONDS

        # autocommit: outside an explicit transaction each statement takes
        # the read lock only while it runs; the DB-API default would hold
        # one transaction, and the lock, from the first statement on.
        conn = adbc_driver_sqlite.dbapi.connect(self.uri, autocommit=True)
        self.connections.append(conn)
        cursor = conn.cursor()
        cursor.execute(f"pragma busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
        cursor.fetchall()
        # One Arrow batch per chunk: the driver infers a column's type per
        # batch, and a chunk then has one type per column.
        cursor.adbc_statement.set_options(
            **{"adbc.sqlite.query.batch_rows": str(MAX_CHUNK_ROWS)}
        )
        return cursor

    def __enter__(self) -> _ArrowReader:
        return self

    def __exit__(self, *exc: object) -> None:
        for cursor in self.range_cursors:
            cursor.close()
        for conn in self.connections:
            conn.close()

    def begin(self) -> None:
        """Start a read: note SQLite's count of commits by others."""
        self.version = self.one("pragma data_version")[0]
        self.reads: list[tuple[str, int, int]] = []

    def changed(self) -> bool:
        """Whether a writer did more than append to the rows read since
        `begin`: the row readers' rule (`tables.Snapshot.changed`). No commit
        since: no. Else the rows up to each table's bound are counted again;
        appended rows lie above the bounds, so another count means rows read
        were deleted or replaced, and the caller reads again."""
        if self.one("pragma data_version")[0] == self.version:
            return False
        # All rows (SQLite counts the smallest index) minus those above the
        # bound (a short range): counting the rows under the bound would
        # walk every page of the table, holding the lock for seconds.
        return any(
            self.one(
                f"select (select count(*) from {name})"
                f" - (select count(*) from {name} where rowid > {last})"
            )[0]
            != count
            for name, last, count in self.reads
        )

    def _text_columns(self, table: str) -> set[str]:
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

    def _unique_columns(self, table: str) -> set[str]:
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

    def one(self, sql: str) -> tuple:
        self.cursor.execute(sql)
        return self.cursor.fetchone()

    def texts_at(self, table: str, column: str, rowids: np.ndarray) -> list[str | None]:
        """The text of `column` in the rows of `table` with these rowids, in
        their order, a few hundred rows a statement; NotColumnar for a value
        that is no text (the row readers decide how to show it)."""
        import pyarrow as pa

        found: dict[int, str] = {}
        for start in range(0, len(rowids), 500):
            wanted = ", ".join(str(int(rowid)) for rowid in rowids[start : start + 500])
            self.cursor.execute(
                f"select rowid, {column} from {table} where rowid in ({wanted})"
            )
            rows = self.cursor.fetch_arrow_table()
            if rows.column(1).type != pa.string():
                raise NotColumnar(f"a {column} of {rows.column(1).type}")
            found.update(
                zip(rows.column(0).to_pylist(), rows.column(1).to_pylist(), strict=True)
            )
        # A row deleted meanwhile is None here, and the read starts again
        # (`changed`).
        return [found.get(int(rowid)) for rowid in rowids]

    def table(
        self,
        name: str,
        columns: dict[str, tuple[str, str]],
        last_rowid: int | None,
        objects: tuple[str, ...] = (),
        log_order: bool = False,
        categories: tuple[str, ...] = (),
    ) -> dict[str, Any]:
        """Every row of table `name` up to rowid `last_rowid`, in rowid order,
        chunk by chunk: one Arrow array per column (in the driver's chunks),
        but for the columns named in `objects`, which come as object arrays
        of str and None (each chunk's Arrow memory freed as soon as it is
        converted, so the two are never held whole at once), the columns in
        `categories`, which come as pandas categoricals, and the integer
        columns, as pandas' Int64, converted chunk by chunk too. `columns` maps
        each output column to its SQL expression and the SQLite types it may
        hold (`_TEXT`, `_INTEGER`, `_ID`); a row of any other type raises
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

        if last_rowid is None:
            return _empty(columns, objects, log_order)
        fields = ", ".join(f"{sql} as {out}" for out, (sql, _) in columns.items())
        # A value of another type comes as another Arrow type (`_typed`
        # refuses it): a BLOB as binary, text among integers as text. Only
        # a number among text does not: it comes as its digits. A column of
        # TEXT affinity (llm's are) holds no numbers, as SQLite stores them
        # as text; any other needs SQLite's word for its types, row by row.
        text_affinity = self._text_columns(name) | {"coalesce", "null"}
        unique = self._unique_columns(name)
        checks = [
            f"typeof({sql}) in {types}"
            for sql, types in columns.values()
            if types != _INTEGER and not set(re.findall(r"\w+", sql)) <= text_affinity
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
                part["_in_log_order"] = _in_log_order(
                    typed["datetime_utc"], typed["id"]
                )
            for out, (_, types) in columns.items():
                value = typed.pop(out)
                if out in objects:
                    value = _objects(value)
                elif out in categories:
                    # Encoded into buffers of its own: a slice of the
                    # driver's batch would keep the whole batch alive.
                    value = pc.dictionary_encode(value)
                elif types == _INTEGER and objects:
                    value = _integer_parts(value)
                part[out] = value
            return part

        first_rowid = self.one(f"select min(rowid) from {name}")[0]
        if first_rowid is None:  # emptied since the bounds were taken
            return _empty(columns, objects, log_order)
        ranges = _rowid_ranges(first_rowid - 1, last_rowid)
        while len(self.range_cursors) < len(ranges):
            self.range_cursors.append(self._cursor())
        if len(ranges) == 1:
            found = [_read_range(self.cursor, query, *ranges[0], convert)]
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
                    )
                )
        chunks = [part for parts, _ in found for part in parts]
        count = sum(rows for _, rows in found)
        self.reads.append((name, last_rowid, count))
        if not count:
            return _empty(columns, objects, log_order)
        arrays: dict[str, Any] = {}
        if log_order:
            arrays["_in_log_order"] = _chunks_in_log_order(
                [chunk.pop("_in_log_order") for chunk in chunks]
            )
        parts = {out: [chunk.pop(out) for chunk in chunks] for out in columns}
        del chunks
        for out, (_, types) in columns.items():
            if out in objects:
                arrays[out] = np.concatenate(parts.pop(out))
                repeated = out in _KEYS and out not in unique
                repeated = repeated and not _all_different(arrays[out])
            elif out in categories:
                arrays[out] = _joined_categories(parts.pop(out))
                repeated = False
            elif types == _INTEGER and objects:
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


def _joined_categories(parts: list[pa.ChunkedArray]) -> pd.Categorical:
    """One categorical of chunks dictionary-encoded one by one: Arrow unifies
    their dictionaries, which keeps the values in first-seen order over all
    chunks, as if encoded at once."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    chunks = [chunk for part in parts for chunk in part.chunks]
    if not chunks:
        return pd.Categorical.from_codes(np.zeros(0, np.int64), [])
    unified = pa.chunked_array(chunks).unify_dictionaries()
    codes = pc.fill_null(
        pa.chunked_array([chunk.indices for chunk in unified.chunks]), -1
    )
    values = unified.chunk(0).dictionary
    return pd.Categorical.from_codes(
        codes.to_numpy().astype(np.int64), _objects(values)
    )


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
) -> tuple[list[dict[str, Any]], int]:
    """The rows of `query` with rowids after `after` up to `last`, each chunk
    a statement of its own sized to take about CHUNK_SECONDS, given to
    `convert`: the converted chunks, in rowid order, and how many rows."""
    import pyarrow.compute as pc

    parts = []
    wanted = CHUNK_ROWS
    count = 0
    while after < last:
        started = time.perf_counter()
        cursor.execute(query, (after, last, wanted))
        chunk = cursor.fetch_arrow_table()
        took = time.perf_counter() - started
        rows = chunk.num_rows
        if rows == 0:
            break
        if pc.min(chunk["_clean"]).as_py() != 1:
            raise NotColumnar("values of other types")
        count += rows
        after = chunk["_rowid"][-1].as_py()
        parts.append(convert(chunk))
        del chunk
        if rows < wanted:
            break
        scale = min(max(CHUNK_SECONDS / max(took, 1e-4), 0.5), 2.0)
        wanted = min(max(int(wanted * scale), MIN_CHUNK_ROWS), MAX_CHUNK_ROWS)
    return parts, count


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
    if types == _ID and column.null_count:
        raise NotColumnar(f"a NULL {name} in {table}")
    return column


def _all_different(values: np.ndarray) -> bool:
    import pandas as pd

    return pd.Index(values).is_unique


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

    return pa.int64() if types == _INTEGER else pa.string()


def _empty(
    columns: dict[str, tuple[str, str]],
    objects: tuple[str, ...] = (),
    log_order: bool = False,
) -> dict[str, Any]:
    import numpy as np
    import pyarrow as pa

    return ({"_in_log_order": True} if log_order else {}) | {
        out: np.empty(0, object)
        if out in objects
        else pa.chunked_array([], _arrow_type(types))
        for out, (_, types) in columns.items()
    }


def _generation(logs: LogDatabase, reader: _ArrowReader) -> str | None:
    """ "legacy" for a file whose nodes are all legacy responses, "store" for
    one whose nodes are all turns (llm 0.32+ leave the legacy tables empty),
    None for both (an upgraded file) or neither."""

    def has_rows(table: str) -> bool:
        return bool(reader.one(f"select exists(select 1 from {table})")[0])

    legacy_rows = logs.legacy is not None and (
        has_rows("responses")
        or (logs.legacy.has_conversations and has_rows("conversations"))
    )
    store_rows = logs.store is not None and (has_rows("turns") or has_rows("threads"))
    if legacy_rows and not store_rows:
        return "legacy"
    if store_rows and not legacy_rows and has_rows("turns"):
        return "store"
    return None


# -- arrays to pandas ------------------------------------------------------------


def _chunks(array: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    """An array's chunks (an Array is one)."""
    return list(array.chunks) if hasattr(array, "chunks") else [array]


def _objects(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Strings as an object array of str and None, as sqlite3 gives them."""
    return array.to_numpy(zero_copy_only=False)


def _as_objects(values: Any) -> np.ndarray:
    """An object array as it is; Arrow strings as one (`_objects`)."""
    import numpy as np

    return values if isinstance(values, np.ndarray) else _objects(values)


def _as_category(values: Any) -> pd.Categorical:
    """A categorical as it is; Arrow strings as one (`_category`)."""
    import pandas as pd

    return values if isinstance(values, pd.Categorical) else _category(values)


def _encoded(array: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """Each value's number (first-seen order; -1 for NULL) and the values so
    numbered: one dictionary encoding over every chunk."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(pa.chunked_array(_chunks(array), array.type))
    if not encoded.num_chunks:
        return np.zeros(0, np.int64), pa.array([], array.type)
    # Every chunk of the encoding shares the last chunk's dictionary.
    indices = pa.chunked_array([chunk.indices for chunk in encoded.chunks])
    codes = pc.fill_null(indices, -1).to_numpy().astype(np.int64)
    return codes, encoded.chunk(encoded.num_chunks - 1).dictionary


def _category(array: pa.Array | pa.ChunkedArray) -> pd.Categorical:
    """Strings as a categorical, categories in first-seen order and missing
    values as NaN: `tables.categorical`'s answer, from Arrow's dictionary."""
    import pandas as pd

    codes, values = _encoded(array)
    return pd.Categorical.from_codes(codes, _objects(values))


def _integer_parts(
    array: pa.Array | pa.ChunkedArray,
) -> tuple[np.ndarray, np.ndarray]:
    """An int64 column's values (0 for NULL) and where it is NULL."""
    import numpy as np
    import pyarrow.compute as pc

    # Copied (np.array): a view would keep the driver's whole batch alive.
    values = np.array(pc.fill_null(array, 0).to_numpy(), np.int64)
    mask = np.asarray(pc.is_null(array).to_numpy(zero_copy_only=False), bool)
    return values, mask


def _integers(array: pa.Array | pa.ChunkedArray) -> pd.arrays.IntegerArray:
    """An int64 column with NULLs as pandas' nullable Int64."""
    import pandas as pd

    return pd.arrays.IntegerArray(*_integer_parts(array))


def _numbered(
    keys: pa.Array | pa.ChunkedArray, *others: pa.Array | pa.ChunkedArray
) -> tuple[int, list[np.ndarray]]:
    """Number `keys` (unique) 0..len-1 and every other value after them, in
    one pass of one hash table: how many numbers were given, and the
    numbers of each of `others` (-1 for NULL). A value of `others` that is
    no key gets a number of its own, at or past len(keys)."""
    import pyarrow as pa

    codes, values = _encoded(
        pa.chunked_array(
            [chunk for array in (keys, *others) for chunk in _chunks(array)],
            keys.type,
        )
    )
    found, start = [], len(keys)
    for array in others:
        found.append(codes[start : start + len(array)])
        start += len(array)
    return len(values), found


def _parents_by_rowid(
    reader: _ArrowReader,
    node_ids: np.ndarray,
    rowids: pd.arrays.IntegerArray,
    parent_rowids: pd.arrays.IntegerArray,
    has_parent: pd.arrays.IntegerArray,
) -> tuple[np.ndarray, np.ndarray]:
    """Each response's parent row (-1 for none) and parent id, from the
    rowids SQLite found (`PARENT_ROWID`): rows are in rowid order, so a
    parent's row is a binary search away. A parent id that names no row
    read (no response, or one logged after the read began) is kept as
    stored, read again for those rows only, for `check` to report."""
    import numpy as np

    rowids = rowids.to_numpy(dtype=np.int64)
    wanted = parent_rowids.to_numpy(dtype=np.int64, na_value=0)
    if rowids[-1] - rowids[0] == len(rowids) - 1:
        # No row deleted: a rowid's row is its distance from the first.
        at = np.clip(wanted - rowids[0], 0, len(rowids) - 1)
    else:
        at = np.minimum(np.searchsorted(rowids, wanted), len(rowids) - 1)
    found = ~parent_rowids.isna() & (rowids[at] == wanted)
    parent_rows = np.where(found, at, -1)
    parent_ids = np.where(found, node_ids[at], None)
    lost = np.flatnonzero(has_parent.to_numpy(dtype=bool, na_value=False) & ~found)
    if len(lost):
        parent_ids[lost] = reader.texts_at(
            "responses", "parent_response_id", rowids[lost]
        )
    return parent_rows, parent_ids


def _numbered_by_bytes(
    keys: pa.ChunkedArray, *others: pa.ChunkedArray
) -> tuple[int, list[np.ndarray]] | None:
    """`_numbered`, faster where every string is as long as every other (as
    llm's message hashes are: "b2:" and 32 hex digits) and every one of
    `others` is a key: each string's bytes mixed into one 64-bit integer, and
    the integers numbered by pandas' hash table, every match then checked
    byte for byte. None where that does not hold (then `_numbered` hashes
    the strings)."""
    import numpy as np
    import pandas as pd

    width = _common_length(keys, *others)
    if width is None or width < 8 or not len(keys):
        return None
    key_bytes = np.concatenate(_fixed_width(keys, width))
    index = pd.Index(_mixed(key_bytes))
    if not index.is_unique:
        return None
    found = []
    for values in others:
        rows = []
        # Chunk by chunk: the strings are read where Arrow holds them.
        for strings in _fixed_width(values, width):
            chunk_rows = index.get_indexer(_mixed(strings))
            # A value that is no key needs a number of its own; two strings
            # that mix to one integer need the strings: `_numbered` does both.
            if (chunk_rows < 0).any() or not (key_bytes[chunk_rows] == strings).all():
                return None
            rows.append(chunk_rows)
        codes = np.full(len(values), -1, np.int64)
        codes[_valid(values)] = np.concatenate(rows) if rows else []
        found.append(codes)
    return len(key_bytes), found


def _valid(array: pa.ChunkedArray) -> np.ndarray:
    """Where a column is not NULL."""
    import pyarrow.compute as pc

    return pc.is_valid(array).to_numpy(zero_copy_only=False)


def _common_length(*columns: pa.ChunkedArray) -> int | None:
    """The one length of every non-NULL string of these columns, if they
    have one."""
    import pyarrow as pa
    import pyarrow.compute as pc

    found = set()
    for column in columns:
        if column.type != pa.string():
            return None
        lengths = pc.min_max(pc.binary_length(column)).as_py()
        found |= {length for length in lengths.values() if length is not None}
    return found.pop() if len(found) == 1 else None


def _fixed_width(array: pa.ChunkedArray, width: int) -> list[np.ndarray]:
    """The non-NULL strings of a column whose strings are all `width` bytes
    long, as numpy bytes, one array per chunk (no copy where it has no
    NULL)."""
    import numpy as np
    import pyarrow.compute as pc

    parts = []
    for chunk in _chunks(array):
        if chunk.null_count:
            # A NULL may hold characters of its own: leave it out first.
            chunk = pc.drop_null(chunk)
        _, offsets, data = chunk.buffers()
        ends = [chunk.offset, chunk.offset + len(chunk)]
        start, end = np.frombuffer(offsets, np.int32)[ends]
        if end > start:
            # The strings end to end, `width` characters each.
            characters = np.frombuffer(data, np.uint8)[start:end]
            parts.append(characters.view(f"S{width}"))
    return parts


def _mixed(strings: np.ndarray) -> np.ndarray:
    """Each byte string of one width (8 or more) as one 64-bit integer: its
    8-byte words multiplied in, as a polynomial hash does, the last word
    ending at the string's end. The words are read in place (strided, not
    copied): fresh memory is what costs here."""
    import numpy as np

    width = strings.dtype.itemsize
    starts = [*range(0, width - 7, 8)]
    if width % 8:
        starts.append(width - 8)
    mixed = np.zeros(len(strings), np.uint64)
    for start in starts:
        word = np.ndarray(
            (len(strings),), "<u8", buffer=strings, offset=start, strides=(width,)
        )
        mixed *= np.uint64(0x9E3779B97F4A7C15)
        mixed += word
    return mixed


def _in_log_order(
    dates: pa.ChunkedArray, ids: pa.ChunkedArray
) -> tuple[bool, tuple[str, str] | None, tuple[str, str] | None]:
    """Whether these rows are in log order (`sources.sort_log_order`'s test,
    on Arrow's strings: byte order is code point order in UTF-8), and the
    first and last row's key, (date or "", id), None when there are none."""
    import pyarrow.compute as pc

    key = pc.fill_null(dates, "")
    if not len(ids):
        return True, None, None
    first, last = (key[0].as_py(), ids[0].as_py()), (key[-1].as_py(), ids[-1].as_py())
    if len(ids) < 2:
        return True, first, last
    later, earlier = key.slice(1), key.slice(0, len(key) - 1)
    ids_later, ids_earlier = ids.slice(1), ids.slice(0, len(ids) - 1)
    ordered = pc.or_(
        pc.greater(later, earlier),
        pc.and_(pc.equal(later, earlier), pc.greater_equal(ids_later, ids_earlier)),
    )
    return bool(pc.all(ordered).as_py()), first, last


def _chunks_in_log_order(
    chunks: list[tuple[bool, tuple[str, str] | None, tuple[str, str] | None]],
) -> bool:
    """Whether consecutive chunks (`_in_log_order` of each) are in log order
    together: each one in itself, and each one's first key at or after the
    last key before it (Python compares str by code point)."""
    last = None
    for ordered, first_key, last_key in chunks:
        if not ordered:
            return False
        if first_key is None:
            continue
        if last is not None and first_key < last:
            return False
        last = last_key
    return True


def _nodes_frame(
    ids: pa.Array | np.ndarray,
    tree_ids: pa.Array | None,
    parent_ids: np.ndarray,
    parent_rows: np.ndarray | None,
    columns: dict[str, pa.Array],
    source: str,
) -> pd.DataFrame:
    """The nodes table in the contract's columns and dtypes (`tree_ids`
    None: each node's tree is its conversation), and the parents' rows as
    `PARENT_ROWS` where they are known."""
    import numpy as np
    import pandas as pd

    # Each Arrow column is taken out of `columns` as it is converted, so
    # that its memory goes before the next one's Python objects are made.
    count = len(ids)
    data: dict[str, Any] = {
        "id": _as_objects(ids),
        "parent_id": parent_ids,
        "conversation_id": _as_category(columns.pop("conversation_id")),
    }
    data["tree_id"] = (
        data["conversation_id"] if tree_ids is None else _category(tree_ids)
    )
    for name in TEXT_ATTRIBUTES:
        data[name] = (
            _as_objects(columns.pop(name))
            if name in columns
            else np.full(count, None, dtype=object)
        )
    data["model"] = _as_category(columns.pop("model"))
    data["datetime_utc"] = _as_objects(columns.pop("datetime_utc"))
    for name in INTEGER_ATTRIBUTES:
        values = columns.pop(name)
        data[name] = (
            values
            if isinstance(values, pd.api.extensions.ExtensionArray)
            else _integers(values)
        )
    data["source"] = pd.Categorical.from_codes(np.zeros(count, np.int8), [source])
    # dtype=object said outright: pandas 3 would infer its own string dtype
    # for an object array of str, and `conform_nodes` would convert it back.
    return pd.DataFrame(
        {
            name: pd.Series(
                data[name],
                copy=False,
                dtype=object if isinstance(data[name], np.ndarray) else None,
            )
            for name in SOURCE_COLUMNS
        }
        | ({} if parent_rows is None else {PARENT_ROWS: parent_rows}),
        copy=False,
    )


# -- legacy --------------------------------------------------------------------------


def _read_legacy(
    logs: LogDatabase, reader: _ArrowReader, text: bool
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The responses of a file without turns, as `LegacyReader.read_all`
    and `LogDatabase.read_forest` give them."""

    from convgraph.sources import legacy
    from convgraph.sources.source import sort_log_order
    from convgraph.sources.tables import conform_nodes

    assert logs.legacy is not None
    present = logs.legacy._columns

    def column(name: str) -> str:
        return name if name in present else "null"

    # Where the ids are a key, SQLite finds each parent's rowid through its
    # index, in the reading threads: a hash of a million strings here would
    # take longer. Without that index the forest looks the parents up.
    by_rowid = logs.legacy.has_parent and "id" in reader._unique_columns("responses")
    columns = {
        "id": ("id", _ID),
        # A response outside any conversation is a conversation of its own.
        "conversation_id": (f"coalesce({column('conversation_id')}, id)", _TEXT),
        "model": (column("model"), _TEXT),
        "datetime_utc": (column("datetime_utc"), _TEXT),
    }
    if by_rowid:
        columns |= {
            "rowid": ("rowid", _INTEGER),
            "parent_rowid": (PARENT_ROWID, _INTEGER),
            "has_parent": ("parent_response_id is not null", _INTEGER),
        }
    else:
        columns["parent_id"] = (column("parent_response_id"), _TEXT)
    columns |= {name: (column(name), _INTEGER) for name in INTEGER_ATTRIBUTES}
    if text:
        columns |= {name: (column(name), _TEXT) for name in TEXT_ATTRIBUTES}
    has_names = logs.legacy.has_conversations
    last, last_name = reader.one(
        "select (select max(rowid) from responses), "
        + ("(select max(rowid) from conversations)" if has_names else "null")
    )
    # The long strings come as Python objects chunk by chunk (see `table`);
    # the texts too, when asked for.
    wanted = ("id", "parent_id", "datetime_utc", *(TEXT_ATTRIBUTES if text else ()))
    table = reader.table(
        "responses",
        columns,
        last,
        objects=wanted,
        log_order=True,
        categories=("conversation_id", "model"),
    )
    if not len(table["id"]):
        raise NotColumnar("no responses")
    in_order = table.pop("_in_log_order")
    node_ids = table.pop("id")
    if by_rowid:
        parent_rows, parent_ids = _parents_by_rowid(
            reader,
            node_ids,
            table.pop("rowid"),
            table.pop("parent_rowid"),
            table.pop("has_parent"),
        )
    else:
        parent_rows, parent_ids = None, table.pop("parent_id")
    # Categories in first-seen order of the table as stored, as the row
    # reader makes them, before any sort.
    nodes = _nodes_frame(
        node_ids,
        None,  # the tree is the conversation
        parent_ids,
        parent_rows,
        table,
        legacy.SOURCE,
    )
    if not in_order:
        # Sorting moves the rows that the parent rows name: the forest looks
        # the parents up by id instead.
        nodes = sort_log_order(nodes.drop(columns=PARENT_ROWS, errors="ignore"))
    if not logs.legacy.has_parent:
        nodes[PARENT_ROWS] = legacy.link_frame_as_chains(nodes)
    names = {}
    if has_names:
        named = reader.table(
            "conversations", {"id": ("id", _ID), "name": ("name", _TEXT)}, last_name
        )
        names = dict(
            zip(named["id"].to_pylist(), named["name"].to_pylist(), strict=True)
        )
    return conform_nodes(nodes), names


# -- message store ----------------------------------------------------------------------


def _read_store(reader: _ArrowReader) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The turns of a message store without legacy rows, structure and usage
    only, with `message_store`'s parent rule (see `_turn_parents`)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from convgraph.links.pointer_jumping import reaches_root, root_pointers
    from convgraph.sources import message_store

    last = dict(
        zip(
            ("threads", "turns", "messages"),
            reader.one(
                "select (select max(rowid) from threads),"
                " (select max(rowid) from turns), (select max(rowid) from messages)"
            ),
            strict=True,
        )
    )
    threads = reader.table(
        "threads",
        {
            "id": ("id", _ID),
            "name": ("name", _TEXT),
            "forked_from": ("forked_from", _TEXT),
        },
        last["threads"],
    )
    turns = reader.table(
        "turns",
        {
            "id": ("id", _ID),
            "conversation_id": ("thread_id", _ID),
            "start": ("parent_message_hash", _TEXT),
            "tip": ("tip_message_hash", _TEXT),
            "model": ("model", _TEXT),
            "datetime_utc": ("datetime_utc", _TEXT),
            **{name: (name, _INTEGER) for name in INTEGER_ATTRIBUTES},
        },
        last["turns"],
    )
    messages = reader.table(
        "messages",
        {"hash": ("hash", _ID), "parent_hash": ("parent_hash", _TEXT)},
        last["messages"],
    )
    if not len(turns["id"]):
        raise NotColumnar("no turns")

    # Log order: the row reader's `order by coalesce(datetime_utc, ''), id`.
    # llm appends as it logs, so the rows nearly always are in it already:
    # checking costs a comparison, moving every column a second or so.
    if not _in_log_order(turns["datetime_utc"], turns["id"])[0]:
        order = pc.sort_indices(
            pa.table(
                {"key": pc.fill_null(turns["datetime_utc"], ""), "id": turns["id"]}
            ),
            [("key", "ascending"), ("id", "ascending")],
        )
        turns = {name: values.take(order) for name, values in turns.items()}

    # Each thread's tree: up forked_from to a thread whose origin is not in
    # the table. A cycle of forks has no such thread: the row reader names
    # the tree by the cycle's smallest id and reports it.
    thread_ids = threads["id"]
    in_table = len(thread_ids)
    ids = (thread_ids, threads["forked_from"], turns["conversation_id"])
    thread_count, (fork_codes, thread_codes) = _numbered_by_bytes(*ids) or _numbered(
        *ids
    )
    fork_rows = np.where(fork_codes < in_table, fork_codes, -1)
    if not reaches_root(fork_rows).all():
        raise NotColumnar("a cycle of forks")
    root_rows = root_pointers(fork_rows)[0]
    turn_thread_rows = np.where(thread_codes < in_table, thread_codes, -1)
    tree_ids = turns["conversation_id"]
    if len(thread_ids):
        root_ids = thread_ids.take(pa.array(root_rows))
        tree_ids = pc.if_else(
            pa.array(turn_thread_rows >= 0),
            root_ids.take(pa.array(np.maximum(turn_thread_rows, 0))),
            tree_ids,
        )

    # Up the forks from any thread id (one not in the table ends the walk,
    # as `ParentWalk` over `forked_from` does).
    fork_up = np.concatenate(
        [fork_codes, np.full(thread_count - in_table, -1, np.int64)]
    )
    numbers = _message_numbers(messages, turns)
    del messages
    parents = _turn_parents(tree_ids, *numbers, thread_codes, fork_up)
    node_ids = _objects(turns["id"])
    parent_ids = np.where(parents >= 0, node_ids[np.maximum(parents, 0)], None)
    nodes = _nodes_frame(
        node_ids, tree_ids, parent_ids, parents, turns, message_store.SOURCE
    )
    is_original = pa.array(root_rows == np.arange(len(root_rows)))
    names = dict(
        zip(
            pc.filter(thread_ids, is_original).to_pylist(),
            pc.filter(threads["name"], is_original).to_pylist(),
            strict=True,
        )
    )
    return nodes, names


def _message_numbers(
    messages: dict[str, pa.ChunkedArray], turns: dict[str, pa.ChunkedArray]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every message numbered (its row), and the number of each message's
    parent and of each turn's input and tip (-1 for none). The hash columns
    are taken out of the tables: once numbered, they are only memory."""
    import numpy as np

    hashes = (
        messages.pop("hash"),
        messages.pop("parent_hash"),
        turns.pop("start"),
        turns.pop("tip"),
    )
    message_count, (parent_rows, start_rows, tip_rows) = _numbered_by_bytes(
        *hashes
    ) or _numbered(*hashes)
    # Hashes that name no message are rows past the messages, with no parent.
    parent_rows = np.concatenate(
        [parent_rows, np.full(message_count - len(hashes[0]), -1, np.int64)]
    )
    return parent_rows, start_rows, tip_rows


def _turn_parents(
    tree_ids: pa.Array,
    parent_rows: np.ndarray,
    start_rows: np.ndarray,
    tip_rows: np.ndarray,
    thread_codes: np.ndarray,
    fork_up: np.ndarray,
) -> np.ndarray:
    """Each turn's parent turn (a row of the turns, in log order), -1 for
    none, from the numbers of `_message_numbers`.

    `message_store`'s rule, on arrays: a turn's parent is a turn of the same
    tree that ended at the nearest message at or above the turn's input (its
    `parent_message_hash`); of several, the first logged of the turn's own
    thread, else of the thread it was forked from, and so on up, else the
    first logged; never the turn itself. A hash that names no message is a
    message without parent here, as the row reader's walk meets it.
    """
    import numpy as np
    import pandas as pd

    from convgraph.links.pointer_jumping import nearest_marked, reaches_root

    count = len(tree_ids)
    message_count = len(parent_rows)
    if not reaches_root(parent_rows).all():
        raise NotColumnar("a cycle of messages")

    # A turn's candidates are the turns of its tree that ended at one
    # message: a group per (tree, tip message).
    tree_codes = _encoded(tree_ids)[0]
    has_tip = tip_rows >= 0
    tip_keys = np.where(has_tip, tree_codes * message_count + tip_rows, -1)
    group_of, group_keys = pd.factorize(tip_keys)
    group_of = np.where(has_tip, group_of, -1)
    group_index = pd.Index(group_keys)

    # The nearest tip above the input: first the nearest message that is any
    # turn's tip (pointer jumping), then, where that is only another tree's
    # tip (content is shared across trees), on from its parent, round by
    # round: as many rounds as such tips stand in one chain.
    marked = np.zeros(message_count, bool)
    marked[tip_rows[has_tip]] = True
    nearest = nearest_marked(parent_rows, marked)
    current = np.where(start_rows >= 0, nearest[np.maximum(start_rows, 0)], -1)
    found_group = np.full(count, -1)
    pending = np.flatnonzero(current >= 0)
    while len(pending):
        groups = group_index.get_indexer(
            tree_codes[pending] * message_count + current[pending]
        )
        hit = groups >= 0
        found_group[pending[hit]] = groups[hit]
        pending = pending[~hit]
        above = parent_rows[current[pending]]
        current[pending] = np.where(above >= 0, nearest[np.maximum(above, 0)], -1)
        pending = pending[current[pending] >= 0]

    # The first two turns (in log order) of every group, and of every
    # (group, thread): enough to pass over the turn itself.
    thread_count = len(fork_up)
    members = np.flatnonzero(group_of >= 0)
    first, second, sizes = _first_two(group_of[members], members, len(group_keys))
    pair_keys = group_of[members] * thread_count + thread_codes[members]
    pair_codes, pair_values = pd.factorize(pair_keys)
    pair_first, pair_second, _ = _first_two(pair_codes, members, len(pair_values))
    pair_index = pd.Index(pair_values)

    parents = np.full(count, -1)
    rows = np.flatnonzero(found_group >= 0)
    groups = found_group[rows]
    # The first candidate that is not the turn itself.
    earliest = np.where(first[groups] != rows, first[groups], second[groups])
    others = sizes[groups] - (group_of[rows] == groups)
    parents[rows] = np.where(others >= 1, earliest, -1)
    # Several candidates: up the turn's threads for one that has some.
    several = others >= 2
    rows, groups, earliest = rows[several], groups[several], earliest[several]
    thread = thread_codes[rows]
    while len(rows):
        pairs = pair_index.get_indexer(groups * thread_count + thread)
        at = np.maximum(pairs, 0)
        pick = np.where(pairs >= 0, pair_first[at], -1)
        pick = np.where((pairs >= 0) & (pick == rows), pair_second[at], pick)
        parents[rows[pick >= 0]] = pick[pick >= 0]
        thread = fork_up[thread]
        # Where no thread up the forks has one, the first logged stays.
        going = (pick < 0) & (thread >= 0)
        rows, groups, thread = rows[going], groups[going], thread[going]
    return parents


def _first_two(
    codes: np.ndarray, positions: np.ndarray, size: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each code 0..size-1: the first and second of its `positions`
    (ascending; -1 for none) and how many it has."""
    import numpy as np

    order = np.argsort(codes, kind="stable")
    ranked = np.append(positions[order], -1)
    counts = np.bincount(codes, minlength=size)
    starts = np.cumsum(counts) - counts
    first = np.where(counts > 0, ranked[starts], -1)
    second = np.where(counts > 1, ranked[np.minimum(starts + 1, len(order))], -1)
    return first, second, counts
