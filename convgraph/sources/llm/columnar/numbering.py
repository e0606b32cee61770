"""Message hashes and thread ids numbered as integers, in one pass each (not
by SQLite's index: llm's random hashes land each lookup on another page)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from convgraph.sources.llm.columnar.arrays import chunks_of, dictionary_codes

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa


def numbered(
    keys: pa.Array | pa.ChunkedArray, *others: pa.Array | pa.ChunkedArray
) -> tuple[int, list[np.ndarray]]:
    """Number unique `keys` by position and other values after them, first seen first:
    how many numbers, and the numbers of each of `others` (-1 for NULL)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    joined = pa.chunked_array(
        [chunk for array in others for chunk in chunks_of(array)], keys.type
    )
    # A lookup in the keys' set: encoding every value would also copy out
    # a dictionary as large as the keys.
    codes = np.empty(len(joined), np.int64)
    start = 0
    for chunk in pc.index_in(joined, value_set=keys).chunks:
        codes[start : start + len(chunk)] = pc.fill_null(chunk, -1)
        start += len(chunk)
    count = len(keys)
    strays = np.flatnonzero(codes < 0)
    if len(strays):
        stray_codes, values = dictionary_codes(joined.take(pa.array(strays)))
        codes[strays] = np.where(stray_codes >= 0, stray_codes + count, -1)
        count += len(values)
    found, start = [], 0
    for array in others:
        found.append(codes[start : start + len(array)])
        start += len(array)
    return count, found
