"""Printing what commands answer: records in the chosen format, ids, JSON and
aligned tables. Text for a person shows control characters as symbols, JSON
escapes them, CSV and TSV carry them exact."""

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

ID_COLUMN = "id"

#: What a terminal acts on but JSON may carry raw: escaped, read back the same.
_JSON_UNSAFE = re.compile(
    "[\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff]"
)


def json_text(value: Any, indent: int | None = 2) -> str:
    """`value` as JSON, text verbatim but for terminal-driving characters
    (escaped); values JSON has no type for as their `str`."""
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
    """A document's lines for a terminal: control characters as symbols."""
    return "\n".join(terminal_text(line.expandtabs(8)) for line in text.split("\n"))


@dataclass(frozen=True)
class TableFit:
    """How a table fits `width` cells, as `ls` does: `priority` columns
    first, `squeeze` given what is left, cells cut with an ellipsis."""

    width: int
    priority: Sequence[str]
    squeeze: str | None = None
    squeeze_min: int = 20

    def apply(
        self, columns: list[str], shown: list[list[str]], left: set[int]
    ) -> tuple[list[list[str]], set[int]]:
        """The columns `shown` that fit, and the indexes flush left."""
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
    if "".join(cells).isascii():
        return max(map(len, cells), default=0)
    return max(map(cell_width, cells), default=0)


def table_width() -> int | None:
    """The terminal's width when stdout is one; None (every column) for a
    file or pipe, so a script's input never depends on a window or $COLUMNS."""
    return shutil.get_terminal_size().columns if is_terminal(sys.stdout) else None


def echo_json(value: Any) -> None:
    click.echo(json_text(value))


BATCH = 2_000


def _batches(items: Iterable[Any]) -> Iterator[list[Any]]:
    iterator = iter(items)
    while batch := list(islice(iterator, BATCH)):
        yield batch


def echo_json_array(items: Iterable[Any]) -> None:
    """Print `items` as one JSON list, a batch at a time."""
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


_SAFE_ASCII = bytes(range(0x7F))


def _json_items(batch: list[Any]) -> bytes:
    """`batch` as UTF-8 inside an indented JSON array, less its brackets."""
    try:
        data = dumps_bytes(batch, indent=True)
    except (orjson.JSONEncodeError, TypeError):
        pass
    else:
        # Rare and never ASCII but DEL: searched among the other bytes alone.
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
    """Print `records`' `columns` as "table", "json", "nl", "csv" or "tsv";
    `cells` shows a table column's values by name, `fit` fits it."""
    rows = ({column: record[column] for column in columns} for record in records)
    if output_format == "json":
        echo_json_array(rows)
    elif output_format == "nl":
        for batch in _batches(rows):
            click.echo("\n".join(json_text(row, indent=None) for row in batch))
    elif output_format in ("csv", "tsv"):
        _echo_delimited(rows, columns, "," if output_format == "csv" else "\t")
    elif output_format == "table":
        if table := list(rows):
            # One write: a write (and flush) a line would cost most of the time.
            click.echo("\n".join(_table_lines(table, columns, cells or {}, fit)))
    else:
        raise ValueError(f"unknown output format {output_format!r}")


def echo_ids(ids: Iterable[str], output_format: str | None) -> None:
    """Print node ids: one a line, a JSON array with --json, a JSON string a
    line with --nl, else as records of one column, `id`."""
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
    """CSV or TSV with a header row, a line at a time."""
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
    if isinstance(value, list):
        return ",".join(str(item) for item in value)
    return json_text(value, indent=None) if isinstance(value, dict) else value


def _table_lines(
    rows: list[dict[str, Any]],
    columns: Sequence[str],
    cells: Mapping[str, Callable[[Any], str]],
    fit: TableFit | None = None,
) -> Iterator[str]:
    """The records as an aligned table, numbers flush right; fitted to `fit`."""
    shown = []
    left = set()
    for index, column in enumerate(columns):
        values = [row[column] for row in rows]
        kinds = set(map(type, values)) - {type(None)}
        show = cells.get(column)
        if show is None and kinds in ({int}, {str}):
            # Plain ints or text, the common case: no call per cell.
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
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, list):
        return ", ".join(_cell(item) for item in value)
    return json_text(value, indent=None) if isinstance(value, dict) else str(value)


def aligned_lines(rows: Sequence[Sequence[str]], left: Container[int]) -> Iterator[str]:
    """Rows of cells as aligned lines, the columns in `left` flush left."""
    if not rows:
        return iter(())
    return _aligned_columns([list(column) for column in zip(*rows, strict=True)], left)


def _aligned_columns(columns: list[list[str]], left: Container[int]) -> Iterator[str]:
    """`aligned_lines` of cells given column by column."""
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
    """A `TreeFilter` as the options that make it, in the user's time zone."""
    from convgraph.present.local_time import person_time

    words = []
    for option, bound in (("--since", where.since), ("--until", where.until)):
        if bound is not None:
            words.append(f"{option} {person_time(bound)}")
    words.extend(f"--model {glob}" for glob in where.models)
    words.extend(f"--source {source}" for source in where.sources)
    return " ".join(words)


def say_none_kept(total: int, where: Any, path: Any = None) -> None:
    """Say on stderr why a listing of conversations is empty."""
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
    """An iterable's items, counted as taken: how a streaming command learns
    afterwards that there were none."""

    def __init__(self, items: Iterable[Any]) -> None:
        self.items = iter(items)
        self.count = 0

    def __iter__(self) -> Iterator[Any]:
        for item in self.items:
            self.count += 1
            yield item


def echo_markdown(text: str) -> None:
    """Print Markdown for the terminal, no link clickable (data's addresses)."""
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
    """`text` as lines of at most `width` cells, broken at spaces; later lines
    begin with `hang`. None keeps it whole."""
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
        # A word no line holds (a path, a URL) is cut where each line ends.
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
    """The longest start of `text` within `cells` cells (one character at least)."""
    taken = 0
    for index, character in enumerate(text):
        taken += cell_width(character)
        if taken > cells:
            return text[: max(index, 1)]
    return text


def fitted(lines: Iterable[str], width: int | None) -> Iterator[str]:
    """`lines` of a table cut at `width` cells with an ellipsis, as `ps` does.
    None keeps them whole."""
    from convgraph.present.text_tree import cut_line

    for line in lines:
        yield line if width is None else cut_line(line, width)


def echo_line(text: str) -> None:
    """Print a report line on stdout, shown safely, wrapped at the terminal's
    width where stdout is one."""
    for line in wrapped(terminal_text(text), table_width()):
        click.echo(line)
