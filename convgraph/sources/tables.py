"""Query results as pandas columns, built chunk by chunk.

The whole-forest reads return a million rows. Building a DataFrame from one
`fetchall()` holds every row as a tuple of Python objects at once, and repeated
strings (conversation ids, model names) as a million separate objects. Here
rows arrive in chunks, each chunk's columns are converted at once (repeated
strings to categories, integers to nullable Int64), and only the converted
columns are kept.
"""

from __future__ import annotations

import gc
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

CHUNK_ROWS = 20_000


@contextmanager
def no_garbage_collection() -> Iterator[None]:
    """Pause the cyclic garbage collector while millions of row tuples are
    made: they hold no cycles, and collecting over them costs a third of the
    read."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def read_frame(
    cursor: sqlite3.Cursor,
    categories: Iterable[str] = (),
    integers: Iterable[str] = (),
) -> pd.DataFrame:
    """All rows of `cursor` as a DataFrame with its column names.

    `categories` name the columns of repeated strings (stored as pandas
    categoricals), `integers` the integer columns (nullable Int64); the rest
    stay object columns.
    """
    import numpy as np
    import pandas as pd
    from pandas.api.types import union_categoricals

    names = [description[0] for description in cursor.description]
    categories, integers = set(categories), set(integers)
    parts: dict[str, list] = {name: [] for name in names}
    with no_garbage_collection():
        while rows := cursor.fetchmany(CHUNK_ROWS):
            for name, values in zip(names, zip(*rows, strict=True), strict=True):
                if name in categories:
                    # factorize keeps first-seen order; Categorical() would
                    # sort the strings of every chunk.
                    codes, uniques = pd.factorize(np.array(values, dtype=object))
                    parts[name].append(pd.Categorical.from_codes(codes, uniques))
                elif name in integers:
                    parts[name].append(pd.array(values, dtype="Int64"))
                else:
                    parts[name].append(np.array(values, dtype=object))
    columns = {}
    for name, chunks in parts.items():
        if not chunks:
            dtype = (
                "category"
                if name in categories
                else "Int64"
                if name in integers
                else object
            )
            columns[name] = pd.Series([], dtype=dtype)
        elif name in categories:
            columns[name] = pd.Series(union_categoricals(chunks))
        elif name in integers:
            columns[name] = pd.Series(
                pd.concat([pd.Series(c) for c in chunks], ignore_index=True)
            )
        else:
            columns[name] = pd.Series(np.concatenate(chunks), dtype=object)
    return pd.DataFrame(columns)
