"""The texts of llm's message store a batch of turns at a time (`Source.text_batches`),
for the search index: messages and parts numbered on arrays, the words of a batch's
parts read by rowid. Only for a store whose parts are all texts with their words,
whose roles are user and assistant, and where each turn is one user message answered
by one message: then a turn's prompt and response are those messages' words, as
`message_chains.add_texts` joins them. Elsewhere None: the forest gives the texts."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convgraph.sources.source import NodeTexts
from convgraph.sources.tables import as_integer

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

#: Turns whose texts are read at once.
BATCH = 50_000

PLAIN = """select not exists (select 1 from parts
    where cast(type as text) is not 'text' or text is null)
and not exists (select 1 from messages
    where coalesce(cast(role as text), '') not in ('user', 'assistant'))"""
POSITION = as_integer("position")


def text_batches(conn: sqlite3.Connection, path: Path) -> Iterator[NodeTexts] | None:
    """Every turn's prompt and response, `BATCH` turns at a time in rowid order;
    None where the store holds more than plain texts or a turn of another shape,
    or Arrow's SQLite driver is not installed."""
    from convgraph.sources.llm.columnar import available

    if not available() or not conn.execute(PLAIN).fetchone()[0]:
        return None
    from convgraph.sources.llm.columnar.reader import ArrowReader

    with ArrowReader(path) as reader:
        found = _numbered(reader)
    return None if found is None else _batches(path, *found)


def _numbered(reader: Any) -> tuple[Any, ...] | None:
    """The turns' ids, input and tip messages, and each message's parts (`_batches`),
    or None for a store of another shape."""
    import numpy as np
    import pyarrow as pa

    from convgraph.sources.llm.columnar.numbering import numbered

    hashes, parents, user = _columns(
        reader,
        "select cast(hash as text), cast(parent_hash as text),"
        " coalesce(cast(role as text) = 'user', 0) from messages",
        1,
    )
    ids, starts, tips = _columns(
        reader,
        "select cast(id as text), cast(parent_message_hash as text),"
        " cast(tip_message_hash as text) from turns"
        " where id is not null and thread_id is not null order by rowid",
    )
    owners, placed, position, rowid = _columns(
        reader,
        f"select cast(message_hash as text), {POSITION} is not null,"
        f" coalesce({POSITION}, 0), rowid from parts",
        3,
    )
    count = len(hashes)
    # Numbered in one pass (not by SQLite's index: random hashes, random pages).
    inputs, outputs, above, owner = (
        np.where(codes < count, codes, -1)
        for codes in numbered(hashes, starts, tips, parents, owners)[1]
    )
    del hashes, parents, starts, tips, owners
    user = user.astype(bool)
    if not ((inputs >= 0).all() and (outputs >= 0).all() and user[inputs].all()):
        return None
    # llm's rule of a turn's own input: the user messages above it up to another
    # role; here one, whose parent is no user message, and its tip its answer.
    up = above[inputs]
    if (
        (user[np.maximum(up, 0)] & (up >= 0)).any()
        or (above[outputs] != inputs).any()
        or (inputs == outputs).any()
    ):
        return None
    # A message's parts in SQLite's order of positions (NULL first), then rowid.
    order = np.lexsort((rowid, position, placed, owner))
    order = order[owner[order] >= 0]
    counts = np.bincount(owner[order], minlength=count)
    found = ids, inputs, outputs, counts, np.cumsum(counts) - counts, rowid[order]
    del above, user, owner, placed, position, rowid, order
    # The structure's strings are gone: their memory back before the forest's read.
    pa.default_memory_pool().release_unused()
    return found


def _batches(
    path: Path,
    ids: pa.Array,
    inputs: np.ndarray,
    outputs: np.ndarray,
    counts: np.ndarray,
    first: np.ndarray,
    part_rowids: np.ndarray,
) -> Iterator[NodeTexts]:
    """The turns' texts: message m's parts are `part_rowids[first[m]:][:counts[m]]`,
    their words joined; text that is not UTF-8 decoded as the row readers do."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from convgraph.sources.llm.columnar.reader import ArrowReader

    with ArrowReader(path) as reader:
        for start in range(0, len(ids), BATCH):
            stop = start + BATCH
            wanted = np.unique(np.hstack((inputs[start:stop], outputs[start:stop])))
            sizes = counts[wanted]
            at = np.repeat(first[wanted] - np.cumsum(sizes) + sizes, sizes)
            rowids = part_rowids[at + np.arange(len(at))]
            rowid, text = reader.execute(
                "select rowid, cast(text as text) from parts"
                " where rowid in (select value from json_each(?))",
                (json.dumps(np.sort(rowids).tolist()),),
            ).fetch_arrow_table()
            texts = text.cast(pa.string()).combine_chunks()
            try:
                texts.validate(full=True)
            except pa.ArrowInvalid:
                binary = texts.cast(pa.binary()).to_pylist()
                texts = pa.array([b and b.decode(errors="replace") for b in binary])
            words = pc.binary_join(
                pa.ListArray.from_arrays(
                    pa.array(np.concatenate([[0], np.cumsum(sizes)]), pa.int32()),
                    texts.take(pc.index_in(rowids, rowid.combine_chunks())).fill_null(
                        ""
                    ),
                ),
                "",
            )
            yield NodeTexts(
                ids[start:stop].to_pylist(),
                {
                    name: words.take(
                        np.searchsorted(wanted, rows[start:stop])
                    ).to_pylist()
                    for name, rows in (("prompt", inputs), ("response", outputs))
                },
            )


def _columns(reader: Any, sql: str, numbers: int = 0) -> list[Any]:
    """The query's columns (ADBC's read): Arrow strings (chunked: joining them would
    copy them), and the last `numbers` columns numpy integers (-1 for NULL)."""
    import pyarrow as pa

    table = reader.execute(sql).fetch_arrow_table()
    width = table.num_columns - numbers
    return [
        column.cast(pa.string())
        if n < width
        else column.cast(pa.int64()).fill_null(-1).to_numpy()
        for n, column in enumerate(table.columns)
    ]
