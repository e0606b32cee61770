"""Tables of conversations as `stats` and `conversations` print them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from itertools import repeat
from typing import TYPE_CHECKING, Any

from convgraph.cli.options import UserError
from convgraph.cli.output import (
    TableFit,
    echo_json_array,
    echo_records,
    table_width,
)
from convgraph.contract import CONVERSATION_COLUMNS, COST_COLUMNS
from convgraph.present.local_time import person_time
from convgraph.text import excerpt

if TYPE_CHECKING:
    import pandas as pd

NAME_WIDTH = 40
NAME_MIN_WIDTH = 20

#: The columns kept first on a narrow terminal (`convgraph stats --help`).
PRIORITY = (
    "tree_id",
    "name",
    "nodes",
    "leaves",
    "max_depth",
    "branch_points",
    "alternatives_spread",
    "last_datetime",
    "models",
    "roots",
    "first_datetime",
    "tool_calls",
    "input_tokens",
    "output_tokens",
    "duration_ms",
    "cache_read_tokens",
    "cache_write_tokens",
    "active_path_length",
    "abandoned_branches",
    "abandoned_share",
    "abandoned_input_tokens",
    "abandoned_output_tokens",
    "branching_factor_avg",
    "branching_factor_max",
    "tools",
    *COST_COLUMNS,
)


def plain_records(table: pd.DataFrame) -> Iterator[dict[str, Any]]:
    """The table's rows as dicts of plain JSON values, made `BATCH_ROWS` at a
    time so a large table is never all dicts at once."""
    for start in range(0, len(table), BATCH_ROWS):
        yield from _plain_rows(table.iloc[start : start + BATCH_ROWS])


BATCH_ROWS = 10_000


def _plain_rows(table: pd.DataFrame) -> list[dict[str, Any]]:
    import pandas as pd

    columns: dict[str, list[Any]] = {}
    for name in table.columns:
        column = table[name]
        values: list[Any]
        if isinstance(column.dtype, pd.DatetimeTZDtype):
            values = _iso_times(column)
        elif name == "models":
            values = [list(models) for models in column]
        elif column.dtype.kind in "iub" and not column.hasnans:
            # A nullable Int64 column is of kind "i" too; its pd.NA is no JSON.
            values = column.tolist()
        else:
            values = column.astype(object).where(column.notna(), None).tolist()
        columns[name] = values
    # By map, not a Python loop: the dicts are most of the time.
    rows = zip(*columns.values(), strict=True)
    return list(map(dict, map(zip, repeat(list(columns)), rows)))


def _iso_times(column: pd.Series) -> list[str | None]:
    """A column of times as `isoformat` writes each (None where missing)."""
    import datetime

    import numpy as np
    import orjson
    import pandas as pd

    present = column.dropna()
    whole_microseconds = bool(present.dt.nanosecond.eq(0).all())
    if column.dt.tz is datetime.UTC and whole_microseconds:
        # orjson writes numpy's times from 1970 on as isoformat does in UTC;
        # it refuses earlier ones, which go the slow way below.
        try:
            texts: list[str | None] = orjson.loads(
                orjson.dumps(
                    present.to_numpy(dtype="datetime64[us]"),
                    option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NAIVE_UTC,
                )
            )
        except (orjson.JSONEncodeError, TypeError):
            pass
        else:
            if len(texts) == len(column):
                return texts
            found = np.full(len(column), None, dtype=object)
            found[column.notna().to_numpy()] = texts
            return found.tolist()
    if whole_microseconds:
        column = column.dt.to_pydatetime()
    return [None if pd.isna(time) else time.isoformat() for time in column]


def print_conversations(
    table: pd.DataFrame | list[dict[str, Any]],
    output_format: str | None,
    columns: Sequence[str] | None = None,
) -> None:
    """Print `Logs.summaries`' rows in `output_format` (None: the aligned
    table); `columns` in every format, else what fits the terminal."""
    records: Iterable[dict[str, Any]]
    if isinstance(table, list):
        records = table
        names = list(records[0] if records else CONVERSATION_COLUMNS)
    else:
        if columns is not None:
            table = table[list(columns)]
        records = plain_records(table)
        names = list(table.columns)
    fitted = output_format in (None, "table") and columns is None
    width = table_width() if fitted else None
    fit = None if width is None else TableFit(width, PRIORITY, "name", NAME_MIN_WIDTH)
    if output_format == "json":
        # The table's records already hold its columns, in order.
        selected = not isinstance(table, list)
        echo_json_array(records if selected else _only(records, columns or names))
        return
    shown = names if columns is None else columns
    echo_records(records, shown, output_format or "table", cells=CELLS, fit=fit)


def _only(
    records: Iterable[dict[str, Any]], columns: Sequence[str]
) -> Iterator[dict[str, Any]]:
    return ({column: record[column] for column in columns} for record in records)


def chosen_columns(text: str | None, available: Sequence[str]) -> list[str] | None:
    """The columns `--columns a,b,c` names (None without). Raises UserError."""
    if text is None:
        return None
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in available]
    if unknown or not names:
        what = f"unknown column {unknown[0]!r}" if unknown else "no column named"
        raise UserError(f"--columns: {what}; choose from {', '.join(available)}")
    return list(dict.fromkeys(names))


def _dollars(cost: float | None) -> str:
    return "" if cost is None else f"{cost:.6f}"


def _share(share: float | None) -> str:
    return "" if share is None else f"{share:.0%}"


def _time(value: str | None) -> str:
    # The user's time zone is every row's, so no cell names it.
    return person_time(value, named=False)


#: How the tables show a column's values for a person, by column name.
CELLS: dict[str, Callable[[Any], str]] = {
    "name": partial(excerpt, width=NAME_WIDTH),
    "abandoned_share": _share,
    "cost_usd": _dollars,
    "abandoned_cost_usd": _dollars,
    "first_datetime": _time,
    "last_datetime": _time,
}
