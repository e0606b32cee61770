"""Printing what commands answer: records (dicts of plain JSON values) in
the format the output options chose, ids, JSON documents, and the one
aligned table layout, measured in terminal cells and fitted to a terminal.

Stored text is hostile until shown otherwise: the forms for a person show
control characters as symbols (`terminal_text`), JSON escapes them, CSV
and TSV carry them exact.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import sys
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, islice
from typing import Any

import click
import orjson

from convgraph.encoding import dumps, dumps_bytes
from convgraph.text import (
    TERMINAL_CONTROLS,
    cell_width,
    excerpt,
    pad_column,
    terminal_text,
)

#: The header of a list of ids printed as records.
ID_COLUMN = "id"

#: What JSON may carry raw but a terminal acts on (DEL, C1 and bidi
#: controls, line separators, lone surrogates): escaped, read back the same.
_JSON_UNSAFE = re.compile(
    "[\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff]"
)


def json_text(value: Any, indent: int | None = 2) -> str:
    """`value` as JSON, text kept verbatim (no ASCII escapes) but for the
    characters that drive a terminal, which are written as escapes; values
    JSON has no type for (a datetime, a path) as their `str`."""
    if indent == 2:
        # orjson: Python's encoder indents in pure Python, slowly.
        text = dumps(value, indent=True)
    else:
        text = json.dumps(value, indent=indent, ensure_ascii=False, default=str)
    if _JSON_UNSAFE.search(text) is None:
        return text
    return _JSON_UNSAFE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def is_terminal(stream: Any) -> bool:
    """Whether `stream` is a terminal (a closed or test stream is not)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def terminal_lines(text: str) -> str:
    """A document's lines for a terminal: control characters as symbols,
    tabs as spaces (code keeps its indentation)."""
    return "\n".join(terminal_text(line.expandtabs(8)) for line in text.split("\n"))


@dataclass(frozen=True)
class TableFit:
    """How a table fits `width` cells, as `ls` does: the columns of
    `priority`, then others, kept while they fit, `squeeze` counted at
    `squeeze_min` cells and then given what is left, cut with an ellipsis."""

    width: int
    priority: Sequence[str]
    squeeze: str | None = None
    squeeze_min: int = 20

    def apply(
        self, columns: list[str], shown: list[list[str]], left: set[int]
    ) -> tuple[list[list[str]], set[int]]:
        """The columns `shown` (header and cells, by column) that fit, and
        the indexes among them that are flush left."""
        sizes = [_column_width(cells) for cells in shown]
        where = {name: index for index, name in enumerate(columns)}
        squeezed = where.get(self.squeeze) if self.squeeze is not None else None

        def demand(index: int) -> int:
            if index == squeezed:
                return min(sizes[index], self.squeeze_min)
            return sizes[index]

        kept: list[int] = []
        used = 0
        # A column the priority does not name comes last, not never.
        for name in [*self.priority, *columns]:
            index = where.get(name)
            if index is None or index in kept:
                continue
            need = demand(index) + (2 if kept else 0)  # two spaces between
            if kept and used + need > self.width:
                break
            kept.append(index)
            used += need
        kept.sort()
        if squeezed in kept:
            room = self.width - used + demand(squeezed)
            cut = max(self.squeeze_min, min(sizes[squeezed], room))
            if cut < sizes[squeezed]:
                header, *texts = shown[squeezed]
                shown[squeezed] = [header, *(excerpt(text, cut) for text in texts)]
        return (
            [shown[index] for index in kept],
            {position for position, index in enumerate(kept) if index in left},
        )


def _column_width(cells: Sequence[str]) -> int:
    """The widest cell of a column, in terminal cells."""
    if "".join(cells).isascii():
        return max(map(len, cells), default=0)
    return max(map(cell_width, cells), default=0)


def table_width() -> int | None:
    """The width a table for a person fits: the terminal's, when stdout is
    one (`shutil.get_terminal_size`, so $COLUMNS first, as everywhere); None
    (every column) when stdout is a file or a pipe, so that what a script
    reads depends neither on a window's size nor on a $COLUMNS that a parent
    program left in the environment."""
    if not is_terminal(sys.stdout):
        return None
    return shutil.get_terminal_size().columns


def echo_json(value: Any) -> None:
    """Print `value` as indented JSON."""
    click.echo(json_text(value))


#: How many records `echo_records` turns into text and writes at a time.
BATCH = 2_000


def _batches(items: Iterable[Any]) -> Iterator[list[Any]]:
    """`items` in lists of `BATCH`."""
    iterator = iter(items)
    while batch := list(islice(iterator, BATCH)):
        yield batch


def echo_json_array(items: Iterable[Any]) -> None:
    """Print `items` as `echo_json` prints their list, a batch at a time:
    a large answer is never one string."""
    # Bytes, as orjson writes them: never decoded to be encoded again.
    opening = b"[\n"
    for batch in _batches(items):
        _echo_bytes(opening + _json_items(batch))
        opening = b",\n"
    click.echo("[]" if opening == b"[\n" else "\n]")


def _echo_bytes(data: bytes) -> None:
    """Print UTF-8 `data`, as text where stdout takes only text."""
    try:
        click.echo(data, nl=False)
    except TypeError:
        click.echo(data.decode(), nl=False)


#: Every ASCII byte but DEL, none of which `_JSON_UNSAFE` finds.
_SAFE_ASCII = bytes(range(0x7F))


def _json_items(batch: list[Any]) -> bytes:
    """`batch` as UTF-8 inside an indented JSON array, less its brackets."""
    # orjson indents a list's items as `json_text` of the whole list does.
    try:
        data = dumps_bytes(batch, indent=True)
    except (orjson.JSONEncodeError, TypeError):
        pass
    else:
        # Rare and never ASCII but DEL: looked for among the other bytes
        # alone, not by a regex over the whole text.
        if _JSON_UNSAFE.search(data.translate(None, _SAFE_ASCII).decode()) is None:
            return data[2:-2]
        text = _JSON_UNSAFE.sub(
            lambda match: f"\\u{ord(match.group()):04x}", data.decode()
        )
        return text[2:-2].encode()
    # What orjson refuses goes item by item through `json_text`.
    return ",\n".join(
        "  " + json_text(item).replace("\n", "\n  ") for item in batch
    ).encode()


def echo_records(
    records: Iterable[Mapping[str, Any]],
    columns: Sequence[str],
    output_format: str,
    cells: Mapping[str, Callable[[Any], str]] | None = None,
    fit: TableFit | None = None,
) -> None:
    """Print `records`' `columns` as "table", "json", "nl", "csv" or "tsv"
    (CSV and TSV print their header even without records). For the table,
    `cells` shows a column's values by name and `fit` fits it (`TableFit`).
    """
    rows = ({column: record[column] for column in columns} for record in records)
    if output_format == "json":
        echo_json_array(rows)
    elif output_format == "nl":
        for batch in _batches(rows):
            click.echo("\n".join(json_text(row, indent=None) for row in batch))
    elif output_format in ("csv", "tsv"):
        _echo_delimited(rows, columns, "," if output_format == "csv" else "\t")
    elif output_format == "table":
        table = list(rows)
        if table:
            # One write: a write (and flush) a line would cost most of the time.
            click.echo("\n".join(_table_lines(table, columns, cells or {}, fit)))
    else:
        raise ValueError(f"unknown output format {output_format!r}")


def echo_ids(ids: Iterable[str], output_format: str | None) -> None:
    """Print node ids: one a line without an output option, a JSON array of
    strings with --json, one JSON string a line with --nl, and otherwise as
    records with one column, `id`."""
    if output_format is None:
        for node_id in ids:
            click.echo(terminal_text(node_id))
    elif output_format in ("json", "nl"):
        ids = list(ids)
        if output_format == "json":
            echo_json(ids)
        else:
            for node_id in ids:
                click.echo(json_text(node_id, indent=None))
    else:
        records = [{ID_COLUMN: node_id} for node_id in ids]
        echo_records(records, [ID_COLUMN], output_format)


def _echo_delimited(
    rows: Iterable[dict[str, Any]], columns: Sequence[str], delimiter: str
) -> None:
    """CSV or TSV with a header row, a line at a time (the csv module
    quotes what needs it; lists are joined with commas, dicts are JSON)."""
    buffer = io.StringIO()
    # The csv module quotes a field holding a character of the line
    # terminator: with "\r\n" a lone carriage return is quoted too, and reads
    # back as itself rather than as a line end. Rows still end in "\n".
    writer = csv.writer(buffer, delimiter=delimiter, lineterminator="\r\n")
    lines = chain([list(columns)], ([_flat(row[c]) for c in columns] for row in rows))
    for batch in _batches(lines):
        text = []
        for line in batch:
            writer.writerow(line)
            text.append(buffer.getvalue()[:-2])
            buffer.seek(0)
            buffer.truncate()
        click.echo("\n".join(text))


def _flat(value: Any) -> Any:
    """A value as one CSV field."""
    if isinstance(value, list):
        return ",".join(str(item) for item in value)
    if isinstance(value, dict):
        return json_text(value, indent=None)
    return value


def _table_lines(
    rows: list[dict[str, Any]],
    columns: Sequence[str],
    cells: Mapping[str, Callable[[Any], str]],
    fit: TableFit | None = None,
) -> Iterator[str]:
    """The records as an aligned table with a header: numbers flush right,
    everything else flush left; fitted to `fit` when given."""
    shown = []
    left = set()
    for index, column in enumerate(columns):
        values = [row[column] for row in rows]
        kinds = set(map(type, values)) - {type(None)}
        show = cells.get(column)
        if show is None and kinds in ({int}, {str}):
            # A column of plain ints or of text, the common case: shown as
            # `_cell` shows each, without a call per cell.
            texts = ["" if value is None else str(value) for value in values]
        else:
            texts = list(map(show or _cell, values))
        shown.append([column, *texts])
        numbers = all(issubclass(kind, int | float) for kind in kinds)
        if not numbers or any(issubclass(kind, bool) for kind in kinds):
            left.add(index)
    if fit is not None:
        shown, left = fit.apply(list(columns), shown, left)
    return _aligned_columns(shown, left)


def _cell(value: Any) -> str:
    """How the table shows a value by default."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, list):
        return ", ".join(_cell(item) for item in value)
    if isinstance(value, dict):
        return json_text(value, indent=None)
    return str(value)


def aligned_lines(rows: Sequence[Sequence[str]], left: Container[int]) -> Iterator[str]:
    """Rows of cells as aligned lines, two spaces between columns, the
    columns in `left` flush left and the others right, cells made safe."""
    if not rows:
        return iter(())
    return _aligned_columns([list(column) for column in zip(*rows, strict=True)], left)


def _aligned_columns(columns: list[list[str]], left: Container[int]) -> Iterator[str]:
    """`aligned_lines` of the cells given column by column: a column is
    made safe and padded at once (`convgraph.text.pad_column`)."""
    padded = []
    for index, cells in enumerate(columns):
        if TERMINAL_CONTROLS.search("".join(cells)) is not None:
            cells = [terminal_text(cell) for cell in cells]
        padded.append(pad_column(cells, right=index not in left))
    return ("  ".join(row).rstrip() for row in zip(*padded, strict=True))


def say(text: str) -> None:
    """One line for a person on stderr, shown safely, wrapped to fit."""
    width = shutil.get_terminal_size().columns if is_terminal(sys.stderr) else None
    for line in wrapped(terminal_text(text), width):
        click.echo(line, err=True)


def filter_words(where: Any) -> str:
    """A `TreeFilter` as the options that make it, for a message: its
    bounds in the user's time zone, to the minute (`person_time`).
    """
    from convgraph.present.local_time import person_time

    words = []
    for option, bound in (("--since", where.since), ("--until", where.until)):
        if bound is not None:
            words.append(f"{option} {person_time(bound)}")
    words.extend(f"--model {glob}" for glob in where.models)
    words.extend(f"--source {source}" for source in where.sources)
    return " ".join(words)


def say_none_kept(total: int, where: Any, path: Any = None) -> None:
    """Say on stderr why a listing of conversations is empty: the file
    holds none, or the filter kept none of the `total` it holds."""
    from convgraph.text import counted

    if total == 0:
        held = f" in {path}" if path is not None else ""
        say(f"no conversations{held}")
    elif where:
        say(
            f"no conversation matches {filter_words(where)}"
            f" ({counted(total, 'conversation', grouping=',')} before the filter)"
        )


class Counted:
    """The items of an iterable, counted as they are taken (once): how a
    command that streams trees to a writer learns afterwards that there
    were none, to say so."""

    def __init__(self, items: Iterable[Any]) -> None:
        self.items = iter(items)
        self.count = 0

    def __iter__(self) -> Iterator[Any]:
        for item in self.items:
            self.count += 1
            yield item


def echo_markdown(text: str) -> None:
    """Print Markdown rendered for the terminal (rich), control characters
    as symbols and no link clickable: its addresses come from data."""
    from rich.console import Console
    from rich.markdown import Markdown

    console = Console(
        file=sys.stdout,
        width=table_width(),
        force_terminal=True,
        highlight=False,
        emoji=False,
        markup=False,
    )
    console.print(Markdown(terminal_lines(text), hyperlinks=False))


def wrapped(text: str, width: int | None, hang: str | None = None) -> list[str]:
    """`text` (one line) as lines of at most `width` cells, broken at
    spaces where it can be; later lines begin with `hang` (the line's
    indentation and two more by default). None keeps it whole."""
    if width is None or cell_width(text) <= width:
        return [text]
    if hang is None:
        hang = " " * (len(text) - len(text.lstrip(" ")) + 2)
    if cell_width(hang) > width // 2:
        hang = ""  # a narrow line keeps its room for the text
    room = max(width - cell_width(hang), 1)
    lines: list[str] = []
    line = ""
    for word in re.split(r"(?<= )", text):
        limit = width if not lines else room
        if cell_width(line + word.rstrip(" ")) <= limit:
            line += word
            continue
        if cell_width(word.rstrip(" ")) <= room:
            # A word a line can hold starts the next one.
            lines.append(line.rstrip(" "))
            line = word
            continue
        # A word no line holds (a path, a URL) goes on where the line is,
        # cut where each line ends.
        while cell_width(line + word.rstrip(" ")) > limit:
            space = limit - cell_width(line)
            piece = _first_cells(word, space) if space > 0 else ""
            if cell_width(piece) > space:  # a wide character at the edge
                piece = ""
            if not piece and not line:
                piece = word[0]  # wider than a whole line: shown anyway
            lines.append((line + piece).rstrip(" "))
            word = word[len(piece) :]
            line, limit = "", room
        line += word
    if line.strip() or not lines:
        lines.append(line.rstrip(" "))
    return [lines[0], *(hang + line for line in lines[1:])]


def _first_cells(text: str, cells: int) -> str:
    """The longest start of `text` that takes at most `cells` cells (one
    character at least)."""
    taken = 0
    for index, character in enumerate(text):
        taken += cell_width(character)
        if taken > cells:
            return text[: max(index, 1)]
    return text


def fitted(lines: Iterable[str], width: int | None) -> Iterator[str]:
    """`lines` of a table (aligned columns) cut at `width` cells with an
    ellipsis, as `ps` cuts its lines: a table is read across, not wrapped.
    None keeps them whole."""
    from convgraph.present.text_tree import cut_line

    for line in lines:
        yield line if width is None else cut_line(line, width)


def echo_line(text: str) -> None:
    """Print one line of a report for a person on stdout: its stored text
    shown safely (`terminal_text`), wrapped at the terminal's width where
    stdout is one (`wrapped`), whole where it is a file or a pipe."""
    for line in wrapped(terminal_text(text), table_width()):
        click.echo(line)
