"""Printing tables of conversations: aligned for a person, or CSV, JSON or
JSON lines for a program. Shared by `convgraph stats` and `convgraph
conversations`, so both print the same way.
"""

from __future__ import annotations

import csv
import json
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    import pandas as pd

FORMATS = ("table", "csv", "json", "jsonl")
#: The width the table cuts conversation names to.
NAME_WIDTH = 40
#: The columns the table shows flush left.
TEXT_COLUMNS = (
    "id",
    "conversation_id",
    "name",
    "first_datetime",
    "last_datetime",
    "models",
)


def plain_records(table: pd.DataFrame) -> list[dict[str, Any]]:
    """The table's rows as dicts of plain JSON values: times in ISO 8601,
    missing values as None, models as lists."""
    import pandas as pd

    columns: dict[str, list[Any]] = {}
    for name in table.columns:
        column = table[name]
        if isinstance(column.dtype, pd.DatetimeTZDtype):
            values = [None if pd.isna(time) else time.isoformat() for time in column]
        elif isinstance(column.dtype, pd.Int64Dtype):
            values = [None if value is pd.NA else int(value) for value in column]
        elif name == "models":
            values = [list(models) for models in column]
        else:
            values = [
                None if not isinstance(value, list) and pd.isna(value) else value
                for value in column.tolist()
            ]
        columns[name] = values
    names = list(columns)
    rows = zip(*columns.values(), strict=True)
    return [dict(zip(names, row, strict=True)) for row in rows]


def print_table(table: pd.DataFrame, output_format: str) -> None:
    """Print the conversations table in one of `FORMATS`."""
    records = plain_records(table)
    if output_format == "json":
        click.echo(json.dumps(records, indent=2, ensure_ascii=False))
    elif output_format == "jsonl":
        for record in records:
            click.echo(json.dumps(record, ensure_ascii=False))
    elif output_format == "csv":
        stdout = click.get_text_stream("stdout")
        writer = csv.DictWriter(
            stdout, fieldnames=list(table.columns), lineterminator="\n"
        )
        writer.writeheader()
        for record in records:
            writer.writerow(
                {
                    key: ",".join(value) if isinstance(value, list) else value
                    for key, value in record.items()
                }
            )
    elif records:
        click.echo(_aligned(table))


def _aligned(table: pd.DataFrame) -> str:
    """The table as aligned text: names cut short, times to the second in UTC,
    the average to two decimals, nothing where a value is missing; text flush
    left, numbers flush right."""
    import pandas as pd

    from convgraph.text import excerpt

    cells: dict[str, list[str]] = {}
    for name in table.columns:
        column = table[name]
        if isinstance(column.dtype, pd.DatetimeTZDtype):
            cells[name] = column.dt.strftime("%Y-%m-%d %H:%M:%S").fillna("").tolist()
        elif name == "name":
            cells[name] = [excerpt(value, NAME_WIDTH) for value in column]
        elif name == "models":
            cells[name] = [", ".join(models) for models in column]
        elif name == "branching_factor_avg":
            cells[name] = [f"{value:.2f}" for value in column]
        else:
            cells[name] = ["" if pd.isna(value) else str(value) for value in column]
    lines = []
    widths = {
        name: max(len(name), *(len(cell) for cell in values))
        for name, values in cells.items()
    }
    for row in [list(cells), *zip(*cells.values(), strict=True)]:
        line = "  ".join(
            cell.ljust(widths[name])
            if name in TEXT_COLUMNS
            else cell.rjust(widths[name])
            for name, cell in zip(cells, row, strict=True)
        )
        lines.append(line.rstrip())
    return "\n".join(lines)
