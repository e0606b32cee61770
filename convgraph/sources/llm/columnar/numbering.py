"""Message hashes and thread ids numbered as integers, in one pass each.

The message store links rows by strings: a message names its parent by
hash, a turn its input and its tip, a thread the thread it was forked from.
The columnar reader answers its questions about links on integers instead:
`numbered` gives every key its row and every reference the row it names
(or a number of its own past the keys), by one dictionary encoding of
every column; `numbered_by_bytes` does the same faster where every string
has one length, as llm's hashes do ("b2:" and 32 hex digits), by the keys'
bytes where Arrow holds them (`KeyBytes`): a reference is first looked for
at the row the caller guesses (llm logs a message just after its parent),
and only the misses by their bytes mixed into one 64-bit integer (`mix`)
and pandas' hash table; every match is checked byte for byte. SQLite
itself could give each hash's row through its unique index, as the
legacy reader's parents are found, but not cheaply here: llm's hashes are
random, so every lookup lands on another page of the index (4M lookups at
1M turns took 8 s of CPU against 0.8 s for reading the strings).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
    if width is None or width < 8 or not len(keys) or keys.null_count:
        return None
    found = []
    by_bytes = KeyBytes(keys, width)
    for values in others:
        codes = by_bytes.rows(values)
        if codes is None:
            return None
        found.append(codes)
    return len(by_bytes), found


#: The rows `KeyBytes.rows` checks its guesses for at a time: 2,048
#: strings of 35 bytes and their rows stay under malloc's 128 KiB.
BLOCK_ROWS = 2048
#: The keys mixed and looked up at a time among a few references.
MIX_ROWS = 1 << 16


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
        #: Every key's bytes where Arrow holds them, chunk by chunk (no
        #: copy: fresh memory costs more here than finding a row's chunk),
        #: and the row each chunk starts at. The keys hold no NULL.
        self.chunks = [_chunk_bytes(chunk, width) for chunk in chunks_of(keys)]
        sizes = [len(strings) for strings in self.chunks]
        self.starts = np.cumsum([0, *sizes], dtype=np.int64)
        self._index: Any = None

    def __len__(self) -> int:
        return int(self.starts[-1])

    def at(self, rows: np.ndarray) -> np.ndarray:
        """The keys' bytes at `rows` (each 0 <= row < len(self))."""
        import numpy as np

        which = np.searchsorted(self.starts, rows, side="right") - 1
        if not len(rows) or (which == which[0]).all():
            chunk = int(which[0]) if len(rows) else 0
            return self.chunks[chunk][rows - self.starts[chunk]]
        found = np.empty(len(rows), f"S{self.width}")
        for chunk in np.unique(which).tolist():
            chosen = which == chunk
            found[chosen] = self.chunks[chunk][rows[chosen] - self.starts[chunk]]
        return found

    def rows(
        self, values: pa.ChunkedArray, guess: np.ndarray | int | None = None
    ) -> np.ndarray | None:
        """The key row of each of `values` (strings of the keys' width or
        NULL; -1 for NULL), `guess` tried first: a row for each value (-1
        for none), or a number added to each value's own row. None where a
        value is no key, or two keys mix alike and the integers cannot tell
        which."""
        import numpy as np

        codes = np.full(len(values), -1, np.int64)
        missed_at, missed = [], []
        offset = 0
        for chunk in chunks_of(values):
            strings = _chunk_bytes(chunk, self.width)
            # The rows of the chunk's strings: where it has NULLs, those
            # left; else every row, made block by block below.
            where = offset + np.flatnonzero(_valid(chunk)) if chunk.null_count else None
            first_row, offset = offset, offset + len(chunk)
            if not len(strings):
                continue
            if guess is None:
                missed_at.append(
                    where if where is not None else np.arange(first_row, offset)
                )
                missed.append(strings)
                continue
            # Block by block: each block's arrays stay under malloc's
            # threshold for mapping fresh pages (the driver's chunks are
            # tens of thousands of rows; fresh pages cost a fault each).
            for first in range(0, len(strings), BLOCK_ROWS):
                block = slice(first, first + BLOCK_ROWS)
                rows = (
                    where[block]
                    if where is not None
                    else np.arange(
                        first_row + first,
                        first_row + min(first + BLOCK_ROWS, len(strings)),
                    )
                )
                guessed = rows + guess if isinstance(guess, int) else guess[rows]
                hit = (guessed >= 0) & (guessed < len(self))
                hit[hit] = self.at(guessed[hit]) == strings[block][hit]
                codes[rows[hit]] = guessed[hit]
                if not hit.all():
                    missed_at.append(rows[~hit])
                    missed.append(strings[block][~hit])
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
        if self._index is None and len(mixed) < self.FEW_MISSED * len(self):
            # Few: their integers are the table, every key looked up in it.
            codes, wanted = pd.factorize(mixed)
            table = pd.Index(wanted)
            row_of = np.full(len(wanted), -1, np.int64)
            # The keys a block at a time: no array the length of all of them.
            for strings, start in zip(
                self.chunks, self.starts[:-1].tolist(), strict=True
            ):
                for first in range(0, len(strings), MIX_ROWS):
                    matched = table.get_indexer(mix(strings[first : first + MIX_ROWS]))
                    keys = np.flatnonzero(matched >= 0)
                    # Two keys that mix alike leave the later one here: the
                    # check below finds it if it is not the one wanted.
                    row_of[matched[keys]] = keys + (start + first)
            rows = row_of[codes]
        else:
            if self._index is None:
                self._index = pd.Index(
                    np.concatenate(
                        [np.zeros(0, np.uint64), *map(mix, filter(len, self.chunks))]
                    )
                )
                if not self._index.is_unique:
                    return None
            rows = self._index.get_indexer(mixed)
        # A value that is no key needs a number of its own; two strings that
        # mix to one integer need the strings: `numbered` does both.
        if (rows < 0).any():
            return None
        start = 0
        for strings in chunks:
            if not (self.at(rows[start : start + len(strings)]) == strings).all():
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


def _chunk_bytes(chunk: pa.Array, width: int) -> np.ndarray:
    """The non-NULL strings of one chunk whose strings are all `width`
    bytes long, as numpy bytes (no copy where its NULLs hold no bytes)."""
    import numpy as np
    import pyarrow.compute as pc

    data, start, end = _byte_range(chunk)
    if chunk.null_count and end - start != width * (len(chunk) - chunk.null_count):
        # A NULL may hold characters of its own: leave it out first.
        # (Where the bytes are exactly the strings', every NULL is empty,
        # as the driver writes them: the strings lie end to end, and no
        # copy is needed.)
        data, start, end = _byte_range(pc.drop_null(chunk))
    if end <= start:
        return np.zeros(0, f"S{width}")
    # The strings end to end, `width` characters each.
    return np.frombuffer(data, np.uint8)[start:end].view(f"S{width}")


def _byte_range(chunk: pa.Array) -> tuple[Any, int, int]:
    """A chunk of strings' data buffer, and where its strings' bytes begin
    and end in it (its offsets 32-bit, or 64-bit for `large_string`)."""
    import numpy as np
    import pyarrow as pa

    _, offsets, data = chunk.buffers()
    width = np.int64 if pa.types.is_large_string(chunk.type) else np.int32
    start, end = np.frombuffer(offsets, width)[
        [chunk.offset, chunk.offset + len(chunk)]
    ]
    return data, int(start), int(end)


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
