"""Message hashes and thread ids numbered as integers, in one pass each.

The message store links rows by strings: a message names its parent by
hash, a turn its input and its tip, a thread the thread it was forked from.
The columnar reader answers its questions about links on integers instead:
`numbered` gives every key its row and every reference the row it names
(or a number of its own past the keys), by one dictionary encoding of
every column. (SQLite itself could give each hash's row through its unique
index, but llm's hashes are random: every lookup lands on another page of
the index, which costs more than hashing the strings here.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from convgraph.sources.llm.columnar.arrays import chunks_of, dictionary_codes

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa


def numbered(
    keys: pa.Array | pa.ChunkedArray, *others: pa.Array | pa.ChunkedArray
) -> tuple[int, list[np.ndarray]]:
    """Number `keys` (unique) 0..len-1 and every other value after them, in
    one pass of one hash table: how many numbers were given, and the
    numbers of each of `others` (-1 for NULL). A value of `others` that is
    no key gets a number of its own, at or past len(keys)."""
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
