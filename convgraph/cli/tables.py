"""Tables of conversations as `stats` and `conversations` print them: the
rows as plain records, and for a person names cut, times to the minute in
the user's zone, the columns that fit the terminal first (`PRIORITY`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
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

if TYPE_CHECKING:
    import pandas as pd

#: The width the table cuts conversation names to.
NAME_WIDTH = 40
#: The fewest cells a name is cut to so that more columns fit a terminal.
NAME_MIN_WIDTH = 20

#: The columns of a conversation the aligned table keeps first when the
#: terminal is too narrow for all: those that say what a tree is (its id and
#: name, size and shape, when it was last used and by which models), then
#: usage and the finer measures. `convgraph stats --help` lists them.
PRIORITY = (
    "tree_id",
    "name",
    "nodes",
    "leaves",
    "max_depth",
    "branch_points",
    "last_datetime",
    "models",
    "roots",
    "first_datetime",
    "tool_calls",
    "input_tokens",
    "output_tokens",
    "duration_ms",
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
    """The table's rows as dicts of plain JSON values: times in ISO 8601,
    missing values as None, models as lists; made `BATCH_ROWS` rows at a
    time, so 100,000 conversations are never 100,000 dicts at once."""
    for start in range(0, len(table), BATCH_ROWS):
        yield from _plain_rows(table.iloc[start : start + BATCH_ROWS])


#: How many rows `plain_records` turns into dicts at a time.
BATCH_ROWS = 10_000


def _plain_rows(table: pd.DataFrame) -> list[dict[str, Any]]:
    """`plain_records` of a few rows."""
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
            # No missing value to look for (a nullable Int64 column is of
            # kind "i" too, and its pd.NA is no JSON value).
            values = column.tolist()
        else:
            # Whole columns: NA, NaN and NaT become None, Int64's ints int.
            values = column.astype(object).where(column.notna(), None).tolist()
        columns[name] = values
    # Each row's dict made by map, not a loop of Python: the dicts are most
    # of the time of making records.
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
        # orjson writes numpy's times from 1970 on in C, as isoformat does
        # in UTC (the microseconds left out where they are zero); it
        # refuses earlier ones, which go the slow way below.
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
        # Python's datetimes write the same text, twice as fast.
        column = column.dt.to_pydatetime()
    return [None if pd.isna(time) else time.isoformat() for time in column]


def print_conversations(
    table: pd.DataFrame | list[dict[str, Any]],
    output_format: str | None,
    columns: Sequence[str] | None = None,
) -> None:
    """Print conversations (`Logs.summaries`' rows: the table, or its rows
    as dicts) in `output_format` (None: the aligned table); `columns`, in
    this order, in every format; without, the terminal keeps what fits."""
    records: Iterable[dict[str, Any]]
    if isinstance(table, list):
        records = table
        names = list(records[0] if records else CONVERSATION_COLUMNS)
    else:
        if columns is not None:
            table = table[list(columns)]
        records = plain_records(table)
        names = list(table.columns)
    fit = None
    if output_format != "json" and columns is None:
        width = table_width()
        if width is not None and output_format in (None, "table"):
            fit = TableFit(width, PRIORITY, "name", NAME_MIN_WIDTH)
    if output_format == "json":
        # The table's records hold its columns, in their order, already:
        # printed as they are, not copied into records of them first.
        selected = not isinstance(table, list)
        echo_json_array(records if selected else _only(records, columns or names))
        return
    echo_records(
        records,
        names if columns is None else columns,
        output_format or "table",
        cells=CELLS,
        fit=fit,
    )


def _only(
    records: Iterable[dict[str, Any]], columns: Sequence[str]
) -> Iterator[dict[str, Any]]:
    """Each record with only `columns`, in their order."""
    return ({column: record[column] for column in columns} for record in records)


def chosen_columns(text: str | None, available: Sequence[str]) -> list[str] | None:
    """The columns `--columns a,b,c` names, in its order (None without);
    a `UserError` for a name not in `available`."""
    if text is None:
        return None
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in available]
    if unknown or not names:
        what = f"unknown column {unknown[0]!r}" if unknown else "no column named"
        raise UserError(f"--columns: {what}; choose from {', '.join(available)}")
    return list(dict.fromkeys(names))


def _name(name: str | None) -> str:
    from convgraph.text import excerpt

    return excerpt(name, NAME_WIDTH)


def _dollars(cost: float | None) -> str:
    # A request costs fractions of a cent: dollars to the millionth.
    return "" if cost is None else f"{cost:.6f}"


def _share(share: float | None) -> str:
    # A share of the whole as a person reads one: a percentage.
    return "" if share is None else f"{share:.0%}"


def _time(value: str | None) -> str:
    # A time as a person reads it, in their own time zone, to the minute;
    # the zone is every row's, so no cell names it.
    return person_time(value, named=False)


#: How the tables show a column's values for a person, by column name (the
#: usage table of `stats --by` shows its shares by the same rule).
CELLS: dict[str, Callable[[Any], str]] = {
    "name": _name,
    "abandoned_share": _share,
    "cost_usd": _dollars,
    "abandoned_cost_usd": _dollars,
    "first_datetime": _time,
    "last_datetime": _time,
}
