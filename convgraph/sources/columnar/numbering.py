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

from typing import TYPE_CHECKING, Any

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
    byte for byte (`KeyBytes`). None where that does not hold (then
    `numbered` hashes the strings)."""
    width = common_length(keys, *others)
    if width is None or width < 8 or not len(keys):
        return None
    found = []
    by_bytes = KeyBytes(keys, width)
    for values in others:
        codes = by_bytes.rows(values)
        if codes is None:
            return None
        found.append(codes)
    return len(by_bytes), found


class KeyBytes:
    """Unique keys of one width (8 bytes or more), each reference's row
    among them found by its bytes: first where a guess says, where the
    caller can guess (a message's parent is nearly always the message
    logged just before it), checked byte for byte; the others by their
    bytes mixed into one integer (`mix`) and looked up in one call, every
    match checked byte for byte too.

    The keys must be unique as strings (the reader's `table` makes sure of
    it for `hash` and `id`); two keys that mix to one integer are told
    apart by the check, or the lookup gives up (None: then `numbered`).
    """

    #: Past this share of references not guessed, the keys' integers are
    #: one hash table (built once); below it, the references' integers are
    #: one and every key is looked up in it (a small table: cheaper than
    #: hashing every key, and no large one in memory).
    FEW_MISSED = 0.25

    def __init__(self, keys: pa.ChunkedArray, width: int):
        import numpy as np

        self.width = width
        #: Every key's bytes, row by row (one `S{width}` array).
        self.bytes = np.concatenate(
            [np.zeros(0, f"S{width}"), *_fixed_width(keys, width)]
        )
        self._mixed: np.ndarray | None = None
        self._index: Any = None

    def __len__(self) -> int:
        return len(self.bytes)

    def rows(
        self, values: pa.ChunkedArray, guess: np.ndarray | None = None
    ) -> np.ndarray | None:
        """The key row of each of `values` (strings of the keys' width or
        NULL; -1 for NULL), `guess` (a row for each value, -1 for none)
        tried first; None where a value is no key, or two keys mix alike
        and the integers cannot tell which."""
        import numpy as np

        codes = np.full(len(values), -1, np.int64)
        at = np.flatnonzero(_valid(values))
        missed_at, missed = [], []
        start = 0
        for strings in _fixed_width(values, self.width):
            where = at[start : start + len(strings)]
            start += len(strings)
            if guess is not None:
                guessed = guess[where]
                hit = (guessed >= 0) & (guessed < len(self.bytes))
                hit[hit] = self.bytes[guessed[hit]] == strings[hit]
                codes[where[hit]] = guessed[hit]
                if hit.all():
                    continue
                where, strings = where[~hit], strings[~hit]
            missed_at.append(where)
            missed.append(strings)
        if missed:
            found = self._looked_up(missed)
            if found is None:
                return None
            codes[np.concatenate(missed_at)] = found
        return codes

    def _looked_up(self, chunks: list[np.ndarray]) -> np.ndarray | None:
        """The key rows of these strings (chunk after chunk) by their
        integers; None where one is no key or a match is not its key."""
        import numpy as np
        import pandas as pd

        # The strings are read where Arrow holds them, chunk by chunk; their
        # integers are looked up in one call, as a call per chunk (thousands
        # of the driver's chunks) costs more than the lookups themselves.
        mixed = np.concatenate([np.zeros(0, np.uint64), *map(mix, chunks)])
        if self._index is None and len(mixed) < self.FEW_MISSED * len(self.bytes):
            # Few: their integers are the table, every key looked up in it.
            codes, wanted = pd.factorize(mixed)
            if self._mixed is None:
                self._mixed = mix(self.bytes)
            matched = pd.Index(wanted).get_indexer(self._mixed)
            keys = np.flatnonzero(matched >= 0)
            row_of = np.full(len(wanted), -1, np.int64)
            # Two keys that mix alike leave the later one here: the check
            # below finds it if it is not the one wanted.
            row_of[matched[keys]] = keys
            rows = row_of[codes]
        else:
            if self._index is None:
                self._index = pd.Index(
                    self._mixed if self._mixed is not None else mix(self.bytes)
                )
                self._mixed = None
                if not self._index.is_unique:
                    return None
            rows = self._index.get_indexer(mixed)
        # A value that is no key needs a number of its own; two strings that
        # mix to one integer need the strings: `numbered` does both.
        if (rows < 0).any():
            return None
        start = 0
        for strings in chunks:
            if not (self.bytes[rows[start : start + len(strings)]] == strings).all():
                return None
            start += len(strings)
        return rows


def _valid(array: pa.ChunkedArray) -> np.ndarray:
    """Where a column is not NULL."""
    import pyarrow.compute as pc

    return pc.is_valid(array).to_numpy(zero_copy_only=False)


def common_length(*columns: pa.ChunkedArray) -> int | None:
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
        _, offsets, data = chunk.buffers()
        ends = [chunk.offset, chunk.offset + len(chunk)]
        start, end = np.frombuffer(offsets, np.int32)[ends]
        if chunk.null_count and end - start != width * (len(chunk) - chunk.null_count):
            # A NULL may hold characters of its own: leave it out first.
            # (Where the bytes are exactly the strings', every NULL is
            # empty, as the driver writes them: the strings lie end to
            # end, and no copy is needed.)
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
