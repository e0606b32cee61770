"""Query results as pandas columns, built chunk by chunk, and the nodes table's dtypes.

Each chunk's columns are converted at once (repeated strings to categories, integers to
Int64) so that a million rows never live as Python tuples. `as_text` and `as_integer`
read any value SQLite holds (llm's schema types nothing strictly) in the contract's
types; non-UTF-8 text reads with U+FFFD (`replacing_text`), so one bad row never makes a
file unreadable.
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
    """The text factory of convgraph's connections."""
    return data.decode("utf-8", "replace")


def as_text(expression: str) -> str:
    """SQL for a value as text or NULL, whatever its storage class."""
    return f"cast({expression} as text)"


def as_integer(expression: str) -> str:
    """SQL for a value as an integer or NULL (a whole real in range counts;
    text such as '12 tokens', fractions and BLOBs do not)."""
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
    """Chunks of rows as a DataFrame of `names` (a leading rowid dropped if
    `rowid`); `categories` and `integers` name columns to convert."""
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
    """Strings as a categorical in first-seen order (`pd.Categorical` sorts,
    which costs more and differs chunk by chunk)."""
    import numpy as np
    import pandas as pd

    codes, uniques = pd.factorize(np.asarray(values, dtype=object))
    return pd.Categorical.from_codes(codes, pd.Index(uniques))


def conform_nodes(nodes: pd.DataFrame) -> pd.DataFrame:
    """The nodes table with `SOURCE_COLUMNS` first in the contract's dtypes
    (columns already so are kept), other columns after; missing `parts`,
    `tool_calls` or `tools` are added as missing."""
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
            # pandas 3 would infer its string dtype, missing as NaN.
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
    """`string[pyarrow]` for `STRING_COLUMNS` where pyarrow is installed,
    else object."""
    # Not `pd.ArrowDtype(pa.string())`: its `.str.split(..).str[0]` gives
    # Arrow lists, where notebooks expect pandas' answers.
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return object
    import pandas as pd

    return pd.StringDtype("pyarrow")


def string_column(values: Any) -> Any:
    """Strings (any missing marker, any container) as a `string_dtype`
    column without copying Arrow's strings; non-text stays objects."""
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
            # Kept for the writer that meets them to refuse.
            return _none_where_missing(objects)
    if arrow.type != pa.large_string():
        # `ArrowStringArray` holds only `large_string`.
        arrow = arrow.cast(pa.large_string())
    return pd.arrays.ArrowStringArray(arrow)


def _none_where_missing(objects: np.ndarray) -> np.ndarray:
    import pandas as pd

    objects = objects.copy()
    objects[pd.isna(objects)] = None
    return objects


def object_column(values: Iterable[Any]) -> np.ndarray:
    """Values as a 1-D object array (`np.array` makes equal lists a matrix)."""
    import numpy as np

    values = list(values)
    return np.fromiter(values, dtype=object, count=len(values))


def plain_run_columns(count: int) -> dict[str, Any]:
    """`parts`, `tool_calls`, `tools` of `count` nodes without parts or calls."""
    import numpy as np
    import pandas as pd

    return {
        PARTS: np.full(count, None, dtype=object),
        TOOL_CALLS: pd.arrays.IntegerArray(
            np.zeros(count, np.int64), np.zeros(count, bool)
        ),
        TOOLS: np.full(count, None, dtype=object),
    }
