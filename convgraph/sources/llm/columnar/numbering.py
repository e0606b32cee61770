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
    """Number unique `keys` 0..len-1 and other values after them: how many
    numbers, and the numbers of each of `others` (-1 for NULL)."""
    import pyarrow as pa

    codes, values = dictionary_codes(
        pa.chunked_array(
            [chunk for array in (keys, *others) for chunk in chunks_of(array)],
            keys.type,
        )
    )
    found, start = [], len(keys)
    for array in others:
        found.append(codes[start : start + len(array)])
        start += len(array)
    return len(values), found
