"""Tables of conversations, as `convgraph stats` and `convgraph
conversations` print them.

`convgraph.analysis.stats` answers with a pandas DataFrame; this turns its rows into
plain records for the output options, and says how the aligned table shows
them for a person: names cut short, times to the second in UTC.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from convgraph.cli.output import echo_records
from convgraph.times import shown_time

if TYPE_CHECKING:
    import pandas as pd

#: The width the table cuts conversation names to.
NAME_WIDTH = 40


def plain_records(table: pd.DataFrame) -> list[dict[str, Any]]:
    """The table's rows as dicts of plain JSON values: times in ISO 8601,
    missing values as None, models as lists."""
    import pandas as pd

    columns: dict[str, list[Any]] = {}
    for name in table.columns:
        column = table[name]
        if isinstance(column.dtype, pd.DatetimeTZDtype):
            if column.dropna().dt.nanosecond.eq(0).all():
                # Python's datetimes write the same text, twice as fast.
                column = column.dt.to_pydatetime()
            values = [None if pd.isna(time) else time.isoformat() for time in column]
        elif name == "models":
            values = [list(models) for models in column]
        elif column.dtype.kind in "iub":
            values = column.tolist()  # no missing value to look for
        else:
            # Whole columns: NA, NaN and NaT become None, Int64's ints int.
            values = column.astype(object).where(column.notna(), None).tolist()
        columns[name] = values
    names = list(columns)
    rows = zip(*columns.values(), strict=True)
    return [dict(zip(names, row, strict=True)) for row in rows]


def print_conversations(table: pd.DataFrame, output_format: str | None) -> None:
    """Print a table of conversations; the aligned table without an output
    option."""
    echo_records(
        plain_records(table),
        list(table.columns),
        output_format or "table",
        cells=_CELLS,
    )


def _name(name: str | None) -> str:
    from convgraph.text import excerpt

    return excerpt(name, NAME_WIDTH)


_CELLS: dict[str, Callable[[Any], str]] = {
    "name": _name,
    "first_datetime": shown_time,
    "last_datetime": shown_time,
}
