"""Message hashes and thread ids numbered as integers, in one pass each.

The message store links rows by strings: a message names its parent by
hash, a turn its input and its tip, a thread the thread it was forked from.
The columnar reader answers its questions about links on integers instead:
`numbered` gives every key its row and every reference the row it names
(or a number of its own past the keys), by one dictionary encoding of
every column; `numbered_by_bytes` does the same faster where every string
has one length, as llm's hashes do ("b2:" and 32 hex digits): each string's
bytes mixed into one 64-bit integer (`mix`), the integers numbered by
pandas' hash table, and every match checked byte for byte.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from convgraph.sources.columnar.arrays import chunks_of, dictionary_codes

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


def numbered_by_bytes(
    keys: pa.ChunkedArray, *others: pa.ChunkedArray
) -> tuple[int, list[np.ndarray]] | None:
    """`numbered`, faster where every string is as long as every other (as
    llm's message hashes are: "b2:" and 32 hex digits) and every one of
    `others` is a key: each string's bytes mixed into one 64-bit integer, and
    the integers numbered by pandas' hash table, every match then checked
    byte for byte. None where that does not hold (then `numbered` hashes
    the strings)."""
    import numpy as np
    import pandas as pd

    width = _common_length(keys, *others)
    if width is None or width < 8 or not len(keys):
        return None
    key_bytes = np.concatenate(_fixed_width(keys, width))
    index = pd.Index(mix(key_bytes))
    if not index.is_unique:
        return None
    found = []
    for values in others:
        # The strings are read where Arrow holds them, chunk by chunk; their
        # integers are looked up in one call, as a call per chunk (thousands
        # of the driver's chunks) costs more than the lookups themselves.
        chunks = _fixed_width(values, width)
        rows = index.get_indexer(
            np.concatenate([mix(strings) for strings in chunks])
            if chunks
            else np.zeros(0, np.uint64)
        )
        # A value that is no key needs a number of its own; two strings that
        # mix to one integer need the strings: `numbered` does both.
        if (rows < 0).any():
            return None
        start = 0
        for strings in chunks:
            if not (key_bytes[rows[start : start + len(strings)]] == strings).all():
                return None
            start += len(strings)
        codes = np.full(len(values), -1, np.int64)
        codes[_valid(values)] = rows
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
    for chunk in chunks_of(array):
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


def mix(strings: np.ndarray) -> np.ndarray:
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
