"""Query results as pandas columns, built chunk by chunk.

The whole-forest reads return a million rows. Building a DataFrame from one
`fetchall()` holds every row as a tuple of Python objects at once, and repeated
strings (conversation ids, model names) as a million separate objects. Here
rows arrive in chunks, each chunk's columns are converted at once (repeated
strings to categories, integers to nullable Int64), and only the converted
columns are kept. `conform_nodes` gives every reader's nodes table the same
columns, order and dtypes.
"""

from __future__ import annotations

import gc
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from convgraph.contract import CATEGORY_COLUMNS, INTEGER_ATTRIBUTES, NODE_COLUMNS

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
                    parts[name].append(categorical(values))
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


def categorical(values: Any) -> pd.Categorical:
    """Strings (None for missing) as a categorical, categories in first-seen
    order: `pd.Categorical(values)` would sort them, which costs more and
    differs chunk by chunk."""
    import numpy as np
    import pandas as pd

    codes, uniques = pd.factorize(np.asarray(values, dtype=object))
    return pd.Categorical.from_codes(codes, uniques)


def conform_nodes(nodes: pd.DataFrame) -> pd.DataFrame:
    """The nodes table with `NODE_COLUMNS` first, in order, in the contract's
    dtypes: categories for `CATEGORY_COLUMNS`, nullable Int64 for the usage
    figures, object (str or None) for the rest. Columns already in their
    dtype are kept as they are, so a conforming table costs nothing; other
    columns follow, unchanged."""
    import pandas as pd

    columns = {}
    for name in NODE_COLUMNS:
        values = nodes[name]
        if name in CATEGORY_COLUMNS:
            if not isinstance(values.dtype, pd.CategoricalDtype):
                values = pd.Series(categorical(values), index=nodes.index)
        elif name in INTEGER_ATTRIBUTES:
            if not isinstance(values.dtype, pd.Int64Dtype):
                values = pd.Series(pd.array(values, dtype="Int64"), index=nodes.index)
        elif values.dtype != object:
            # pandas' own string dtype shows a missing value as NaN.
            values = values.astype(object).where(values.notna(), None)
        columns[name] = values
    for name in nodes.columns:
        if name not in columns:
            columns[name] = nodes[name]
    return pd.DataFrame(columns, index=nodes.index, copy=False)
