"""Query results as pandas columns, built chunk by chunk.

The whole-forest reads return a million rows. Building a DataFrame from one
`fetchall()` holds every row as a tuple of Python objects at once, and repeated
strings (conversation ids, model names) as a million separate objects. Here
rows arrive in chunks, each chunk's columns are converted at once (repeated
strings to categories, integers to nullable Int64), and only the converted
columns are kept. `conform_nodes` gives every reader's nodes table the same
columns, order and dtypes.

Whole tables arrive in the chunks of `snapshot.Snapshot`, which reads them
in short statements so that llm can log meanwhile.

The SQL expressions `as_text` and `as_integer` read any value SQLite holds
(llm's schema types nothing strictly) in the contract's types: text, or an
integer, or NULL. Text that is not UTF-8 is decoded with U+FFFD in place of
the bad bytes (`replacing_text`), so one bad row never makes a file
unreadable.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from convgraph.contract import (
    CATEGORY_COLUMNS,
    INTEGER_COLUMNS,
    PARTS,
    SOURCE_COLUMNS,
    STRING_COLUMNS,
    TOOL_CALLS,
    TOOLS,
)

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd


def replacing_text(data: bytes) -> str:
    """SQLite text as str, bytes that are not UTF-8 shown as U+FFFD: the
    text factory of convgraph's connections."""
    return data.decode("utf-8", "replace")


def as_text(expression: str) -> str:
    """SQL for a column's value as text or NULL, whatever SQLite type it was
    stored as (a BLOB becomes its bytes as text, a number its digits)."""
    return f"cast({expression} as text)"


def as_integer(expression: str) -> str:
    """SQL for a column's value as an integer or NULL: a real that is a whole
    number in range becomes it; text ('12 tokens'), a fraction, a BLOB or a
    number out of range become NULL."""
    e = expression
    return (
        f"(case typeof({e}) when 'integer' then {e}"
        f" when 'real' then (case when {e} = cast({e} as integer)"
        f" and abs({e}) < 9.2e18 then cast({e} as integer) end) end)"
    )


def frame_of_chunks(
    chunks: Iterable[list[tuple[Any, ...]]],
    names: list[str],
    categories: Iterable[str] = (),
    integers: Iterable[str] = (),
    rowid: bool = True,
) -> pd.DataFrame:
    """Rows that come in chunks (a `Snapshot`'s) as a DataFrame with the
    columns `names`; `rowid`: the first value of each row is its rowid,
    left out. `categories` name the columns of repeated strings (pandas
    categoricals), `integers` the integer columns (nullable Int64); the rest
    stay object columns."""
    import numpy as np
    import pandas as pd
    from pandas.api.types import union_categoricals

    categories, integers = set(categories), set(integers)
    parts: dict[str, list[Any]] = {name: [] for name in names}
    for rows in chunks:
        values_of_columns = zip(*rows, strict=True)
        if rowid:
            next(values_of_columns)
        for name, values in zip(names, values_of_columns, strict=True):
            if name in categories:
                parts[name].append(categorical(values))
            elif name in integers:
                parts[name].append(pd.array(values, dtype="Int64"))
            else:
                parts[name].append(np.array(values, dtype=object))
    columns = {}
    for name, chunks_of_column in parts.items():
        if not chunks_of_column:
            dtype = (
                "category"
                if name in categories
                else "Int64"
                if name in integers
                else object
            )
            columns[name] = pd.Series([], dtype=dtype)
        elif name in categories:
            columns[name] = pd.Series(union_categoricals(chunks_of_column))
        elif name in integers:
            columns[name] = pd.Series(
                pd.concat([pd.Series(c) for c in chunks_of_column], ignore_index=True)
            )
        else:
            columns[name] = pd.Series(np.concatenate(chunks_of_column), dtype=object)
    return pd.DataFrame(columns)


def categorical(values: Any) -> pd.Categorical:
    """Strings (None for missing) as a categorical, categories in first-seen
    order: `pd.Categorical(values)` would sort them, which costs more and
    differs chunk by chunk."""
    import numpy as np
    import pandas as pd

    codes, uniques = pd.factorize(np.asarray(values, dtype=object))
    return pd.Categorical.from_codes(codes, pd.Index(uniques))


def conform_nodes(nodes: pd.DataFrame) -> pd.DataFrame:
    """The nodes table with `SOURCE_COLUMNS` first, in order, in the contract's
    dtypes: categories for `CATEGORY_COLUMNS`, nullable Int64 for the
    integers (`INTEGER_COLUMNS`), pandas' `string[pyarrow]` for
    `STRING_COLUMNS` (`string_dtype`: object where pyarrow is not installed), object (str, a
    list of parts, or None) for the rest. Columns already in their dtype are kept as they are, so a
    conforming table costs nothing; other columns follow, unchanged. A table
    without `parts`, `tool_calls` or `tools` (a reader that cannot tell)
    gets them as missing."""
    import numpy as np
    import pandas as pd

    columns = {}
    for name in SOURCE_COLUMNS:
        if name not in nodes.columns and name in (PARTS, TOOL_CALLS, TOOLS):
            values = pd.Series(
                pd.array([None] * len(nodes), dtype="Int64")
                if name == TOOL_CALLS
                else object_column([None] * len(nodes)),
                index=nodes.index,
            )
        else:
            values = nodes[name]
        if name in CATEGORY_COLUMNS:
            if not isinstance(values.dtype, pd.CategoricalDtype):
                values = pd.Series(categorical(values), index=nodes.index)
        elif name in INTEGER_COLUMNS:
            if not isinstance(values.dtype, pd.Int64Dtype):
                values = pd.Series(
                    pd.array(values.to_numpy(dtype=object), dtype="Int64"),
                    index=nodes.index,
                )
        elif name in STRING_COLUMNS:
            strings = string_column(values)
            # dtype=object said outright for an object array: pandas 3 would
            # infer its own string dtype, which shows missing as NaN.
            values = pd.Series(
                strings,
                index=nodes.index,
                copy=False,
                dtype=object if isinstance(strings, np.ndarray) else None,
            )
        elif values.dtype != object:
            # pandas' own string dtype shows a missing value as NaN.
            values = values.astype(object).where(values.notna(), None)
        columns[name] = values
    for name in nodes.columns:
        if name not in columns:
            columns[name] = nodes[name]
    return pd.DataFrame(columns, index=nodes.index, copy=False)


def string_dtype() -> Any:
    """The dtype of the nodes table's `STRING_COLUMNS`: pandas' own
    `string[pyarrow]`, `pd.StringDtype("pyarrow")` (Arrow's `large_string`
    underneath, missing as `pd.NA`), where pyarrow is installed, else object.

    pandas' string dtype rather than `pd.ArrowDtype(pa.string())`: its
    string methods give pandas' answers, so the idioms a notebook types
    work (`nodes["id"].str.split("x").str[0]`; on an `ArrowDtype` column
    the split gives Arrow lists that `.str[0]` refuses). The price is
    eight bytes an offset instead of four, and one cast of the columnar
    reader's `string` arrays (ADBC's) into `large_string`.
    """
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return object
    import pandas as pd

    return pd.StringDtype("pyarrow")


def string_column(values: Any) -> Any:
    """Strings (str, None, NaN or NA for missing; a Series, array, Arrow
    array or list) as one column of `string_dtype`, an `ArrowStringArray`:
    as it is where it is one already, no Python object made from Arrow's
    strings. Values that are not all text (a table built by hand) stay an
    object array, None for missing."""
    import numpy as np
    import pandas as pd

    dtype = string_dtype()
    if isinstance(values, pd.Series):
        values = values.array
    if dtype is object:
        if isinstance(values, np.ndarray) and values.dtype == object:
            return values
        return _none_where_missing(np.asarray(values, dtype=object))
    import pyarrow as pa

    if isinstance(values, pd.arrays.ArrowStringArray) and values.dtype == dtype:
        return values
    if isinstance(values, pd.api.extensions.ExtensionArray) and hasattr(
        values, "__arrow_array__"
    ):
        # pandas' other string dtypes ("str", NaN for missing) and Arrow
        # columns of another string type.
        arrow = pa.chunked_array(values.__arrow_array__())
    elif isinstance(values, pa.ChunkedArray):
        arrow = values
    elif isinstance(values, pa.Array):
        arrow = pa.chunked_array([values])
    else:
        objects = np.asarray(values, dtype=object)
        try:
            arrow = pa.chunked_array(
                [pa.array(objects, pa.large_string(), from_pandas=True)]
            )
        except (pa.ArrowTypeError, pa.ArrowInvalid):
            # A table built by hand with other values than text: kept as
            # they are, for the writer that meets them to refuse.
            return _none_where_missing(objects)
    if arrow.type != pa.large_string():
        # Arrow's `string` (ADBC's arrays) copied into 8-byte offsets, the
        # only type `ArrowStringArray` holds.
        arrow = arrow.cast(pa.large_string())
    # Its dtype is pandas' `string[pyarrow]`, missing as NA (`string_dtype`).
    return pd.arrays.ArrowStringArray(arrow)


def _none_where_missing(objects: np.ndarray) -> np.ndarray:
    """An object array with None for each missing value (NaN, NA)."""
    import pandas as pd

    objects = objects.copy()
    objects[pd.isna(objects)] = None
    return objects


def object_column(values: Iterable[Any]) -> np.ndarray:
    """Values (str, lists of parts, None) as a one-dimensional object array:
    `np.array` of equally long lists would make a matrix of them."""
    import numpy as np

    values = list(values)
    return np.fromiter(values, dtype=object, count=len(values))


def plain_run_columns(count: int) -> dict[str, Any]:
    """The `parts`, `tool_calls` and `tools` columns of `count` nodes that
    are only their prompt and their answer: no parts, no tool calls."""
    import numpy as np
    import pandas as pd

    return {
        PARTS: np.full(count, None, dtype=object),
        TOOL_CALLS: pd.arrays.IntegerArray(
            np.zeros(count, np.int64), np.zeros(count, bool)
        ),
        TOOLS: np.full(count, None, dtype=object),
    }
