"""The texts of llm's message store a batch of turns at a time (`Source.text_batches`),
for the search index: messages and parts numbered on arrays, the words of a batch's
parts read by rowid. Only for a store whose parts are all texts with their words,
whose roles are user and assistant, and where each turn is one user message answered
by one message: then a turn's prompt and response are those messages' words, as
`message_chains.add_texts` joins them. Elsewhere None, or `TextsWithForest` at the first
batch (a turn of another shape): the forest gives the texts."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from convgraph.sources.source import NodeTexts, TextsWithForest
from convgraph.sources.tables import as_integer

#: Turns whose texts are read at once.
BATCH = 50_000

PLAIN = """select not exists (select 1 from parts
    where cast(type as text) is not 'text' or text is null)
and not exists (select 1 from messages
    where coalesce(cast(role as text), '') not in ('user', 'assistant'))"""
POSITION = as_integer("position")


def text_batches(conn: sqlite3.Connection, path: Path) -> Iterator[NodeTexts] | None:
    """Every turn's prompt and response, `BATCH` turns at a time in rowid order;
    None where the store holds more than plain texts, or Arrow's SQLite driver is
    not installed. The turns are numbered at the first batch, which raises
    `TextsWithForest` for a turn of another shape."""
    from convgraph.sources.llm.columnar import available

    if not available() or not conn.execute(PLAIN).fetchone()[0]:
        return None
    return _batches(path)


def _numbered(reader: Any) -> tuple[Any, ...] | None:
    """The turns' ids, input and tip messages, and each message's parts (`_batches`),
    or None for a store of another shape. Each column of hashes is numbered and let
    go before the next is read: together they would be most of the build's memory."""
    import numpy as np
    import pyarrow.compute as pc

    # In rowid order, as the parents are read (else SQLite may read an index).
    (hashes,) = _columns(
        reader, "select cast(hash as text) from messages order by rowid"
    )

    def numbers(sql: str, count: int = 0) -> list[Any]:
        found = _columns(reader, sql, count)
        codes = pc.index_in(found[0], value_set=hashes)
        return [pc.fill_null(codes, -1).to_numpy().astype(np.int64), *found[1:]]

    above, user = numbers(
        "select cast(parent_hash as text),"
        " coalesce(cast(role as text) = 'user', 0) from messages order by rowid",
        1,
    )
    outputs, ids = numbers(
        "select cast(tip_message_hash as text), cast(id as text) from turns"
        " where id is not null and thread_id is not null order by rowid"
    )
    (inputs,) = numbers(
        "select cast(parent_message_hash as text) from turns"
        " where id is not null and thread_id is not null order by rowid"
    )
    owner, placed, position, rowid = numbers(
        f"select cast(message_hash as text), {POSITION} is not null,"
        f" coalesce({POSITION}, 0), rowid from parts",
        3,
    )
    count = len(hashes)
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
    return ids, inputs, outputs, counts, np.cumsum(counts) - counts, rowid[order]


def _batches(path: Path) -> Iterator[NodeTexts]:
    """The turns' texts: message m's parts are `part_rowids[first[m]:][:counts[m]]`,
    their words joined; text that is not UTF-8 decoded as the row readers do."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from convgraph.sources.llm.columnar.reader import ArrowReader

    # Memory that Arrow's pool holds freed (the forest's read before, the hashes
    # after) given back: tantivy's heap is not Arrow's.
    pool = pa.default_memory_pool()
    pool.release_unused()
    with ArrowReader(path) as reader:
        found = _numbered(reader)
        if found is None:
            raise TextsWithForest("a turn of another shape")
        ids, inputs, outputs, counts, first, part_rowids = found
        del found
        pool.release_unused()
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
