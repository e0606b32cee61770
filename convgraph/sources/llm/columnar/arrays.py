"""Arrow arrays as the nodes table's columns, exactly as the row readers make
them: Arrow strings, categoricals in first-seen order, nullable Int64."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from convgraph.contract import (
    INTEGER_ATTRIBUTES,
    PARENT_ROWS,
    PARTS,
    SOURCE_COLUMNS,
    TEXT_ATTRIBUTES,
    TOOLS,
)

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    import pyarrow as pa


def chunks_of(array: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    return list(array.chunks) if hasattr(array, "chunks") else [array]


def object_array(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    found: np.ndarray = array.to_numpy(zero_copy_only=False)
    return found


def as_category(values: Any) -> pd.Categorical:
    import pandas as pd

    return values if isinstance(values, pd.Categorical) else category(values)


def dictionary_codes(array: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """Codes in first-seen order (-1 for NULL) and the values they number."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(pa.chunked_array(chunks_of(array), array.type))
    if not encoded.num_chunks:
        return np.zeros(0, np.int64), pa.array([], array.type)
    # Every chunk of the encoding shares the last chunk's dictionary.
    values = encoded.chunk(encoded.num_chunks - 1).dictionary
    # Widened chunk by chunk: the whole column at once would be held thrice.
    codes = np.empty(len(encoded), np.int64)
    start = 0
    for chunk in encoded.iterchunks():
        codes[start : start + len(chunk)] = pc.fill_null(chunk.indices, -1)
        start += len(chunk)
    return codes, values


def category(array: pa.Array | pa.ChunkedArray) -> pd.Categorical:
    """`tables.categorical`'s answer, from Arrow's dictionary."""
    import pandas as pd

    codes, values = dictionary_codes(array)
    return pd.Categorical.from_codes(codes, pd.Index(object_array(values)))


def integer_parts(array: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    # Copied (np.array): a view would keep the driver's whole batch alive.
    values = np.array(pc.fill_null(array, 0).to_numpy(), np.int64)
    # Through bytes: Arrow's bits-to-bool uses its default pool (mimalloc),
    # which keeps the reading threads' pages.
    mask = np.array(pc.cast(pc.is_null(array), pa.uint8()).to_numpy(), bool)
    return values, mask


def integers(array: pa.Array | pa.ChunkedArray) -> pd.arrays.IntegerArray:
    import pandas as pd

    return pd.arrays.IntegerArray(*integer_parts(array))


def joined_categories(parts: list[pa.ChunkedArray]) -> pd.Categorical:
    """One categorical of chunks encoded one by one, as if encoded at once."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    chunks = [chunk for part in parts for chunk in part.chunks]
    if not chunks:
        return pd.Categorical.from_codes(
            np.zeros(0, np.int64), pd.Index([], dtype=object)
        )
    unified = pa.chunked_array(chunks).unify_dictionaries()
    codes = pc.fill_null(
        pa.chunked_array([chunk.indices for chunk in unified.chunks]), -1
    )
    values = unified.chunk(0).dictionary
    return pd.Categorical.from_codes(
        codes.to_numpy().astype(np.int64), pd.Index(object_array(values))
    )


def in_log_order(
    dates: pa.ChunkedArray, ids: pa.ChunkedArray
) -> tuple[bool, tuple[str, str] | None, tuple[str, str] | None]:
    """Whether the rows are in log order (UTF-8 byte order is code point
    order), and the first and last keys (None when empty)."""
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


def chunks_in_log_order(
    chunks: list[tuple[bool, tuple[str, str] | None, tuple[str, str] | None]],
) -> bool:
    """Whether chunks, by their `in_log_order`, are in log order together."""
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


def null_strings(count: int) -> pa.ChunkedArray:
    """`count` missing `large_string`s on numpy's zeros, which the system
    maps only when written (`pa.nulls` writes its zeros)."""
    import numpy as np
    import pyarrow as pa

    offsets = pa.py_buffer(np.zeros(count + 1, np.int64))
    validity = pa.py_buffer(np.zeros((count + 7) // 8, np.uint8))
    array = pa.LargeStringArray.from_buffers(
        count, offsets, pa.py_buffer(b""), validity, null_count=count
    )
    return pa.chunked_array([array])


def ids_at(ids: pa.ChunkedArray, rows: np.ndarray) -> pa.ChunkedArray:
    """The id at each of `rows` (NULL for -1), without Python objects."""
    import pyarrow as pa

    return ids.take(pa.array(rows, pa.int64(), mask=rows < 0))


def nodes_frame(
    ids: pa.ChunkedArray,
    tree_ids: pa.Array | pd.Categorical | None,
    parent_ids: pa.ChunkedArray | np.ndarray,
    parent_rows: np.ndarray | None,
    columns: dict[str, pa.Array],
    source: str,
) -> pd.DataFrame:
    """The pipeline's input: the contract's columns and dtypes, no runs
    (`RUN`, `TOOL_NAMES`), `PARENT_ROWS` where known; `tree_ids` None: each
    tree is its conversation."""
    import numpy as np
    import pandas as pd

    from convgraph.sources.llm.runs import RUN, TOOL_NAMES
    from convgraph.sources.tables import plain_run_columns, string_column

    count = len(ids)
    data: dict[str, Any] = {
        "id": string_column(ids),
        "parent_id": string_column(parent_ids),
        "conversation_id": as_category(columns.pop("conversation_id")),
    }
    data["tree_id"] = (
        data["conversation_id"] if tree_ids is None else as_category(tree_ids)
    )
    for name in TEXT_ATTRIBUTES:
        data[name] = string_column(
            columns.pop(name) if name in columns else null_strings(count)
        )
    data |= plain_run_columns(count)
    # One buffer for all: copy on write splits them when one is written.
    data[PARTS] = data[TOOLS] = data[TOOL_NAMES] = pd.Series(
        data[PARTS], dtype=object, copy=False
    )
    data[RUN] = np.zeros(count, bool)
    data["model"] = as_category(columns.pop("model"))
    data["datetime_utc"] = string_column(columns.pop("datetime_utc"))
    for name in INTEGER_ATTRIBUTES:
        values = columns.pop(name)
        data[name] = (
            values
            if isinstance(values, pd.api.extensions.ExtensionArray)
            else integers(values)
        )
    data["source"] = pd.Categorical.from_codes(
        np.zeros(count, np.int8), pd.Index([source])
    )
    # pandas 3 would infer its string dtype for an object array of str.
    return pd.DataFrame(
        {
            name: pd.Series(
                data[name],
                copy=False,
                dtype=object if isinstance(data[name], np.ndarray) else None,
            )
            for name in (*SOURCE_COLUMNS, RUN, TOOL_NAMES)
        }
        | ({} if parent_rows is None else {PARENT_ROWS: parent_rows}),
        copy=False,
    )
