"""Printing what commands answer: records, ids, JSON documents and aligned
tables, each in one place.

Records are dicts of plain JSON values (str, int, float, bool, None, lists
and dicts of them). `echo_records` prints them in the format the output
options chose; `echo_ids` prints a list of node ids, which without an option
is one id a line and otherwise a record `{"id": ...}` each. `aligned_lines`
is the one table layout: the records table, and the tables inside the
reports of `diff` and `compare`. Widths are terminal cells
(`convgraph.text.pad_column`), so names in Chinese or with emoji line up.
On a terminal a records table can fit its width (`TableFit`, `table_width`):
the columns that matter most are kept and a name column is cut to fit;
piped, it keeps every column.

Stored text is hostile until shown otherwise: a prompt, a name or an id may
hold an escape sequence that sets the user's clipboard or window title. The
forms for a person show such characters as symbols (`convgraph.text.
terminal_text`: every table cell and listed id passes it); JSON escapes them
and reads back exact; CSV and TSV carry them exact, quoted where needed.
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

#: Characters that JSON may carry raw but a terminal would act on (json
#: escapes the C0 controls itself): DEL, C1 controls, bidi controls, line
#: separators, and lone surrogates, which UTF-8 cannot encode. They can only
#: occur inside JSON strings, where a \u escape reads back as the same text.
_JSON_UNSAFE = re.compile(
    "[\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff]"
)


def json_text(value: Any, indent: int | None = 2) -> str:
    """`value` as JSON, text kept verbatim (no ASCII escapes) but for the
    characters that drive a terminal, which are written as escapes; values
    JSON has no type for (a datetime, a path) as their `str`."""
    if indent == 2:
        # orjson: Python's encoder indents in pure Python, a second for
        # every 100,000 rows of `stats`.
        text = dumps(value, indent=True)
    else:
        text = json.dumps(value, indent=indent, ensure_ascii=False, default=str)
    if _JSON_UNSAFE.search(text) is None:
        return text
    return _JSON_UNSAFE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def is_terminal(stream: Any) -> bool:
    """Whether `stream` is a terminal (False for a file, a pipe, a closed or
    a test's stream)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def terminal_lines(text: str) -> str:
    """Lines of a document for a person's terminal (a transcript, an export
    printed there): each line's control characters shown as symbols
    (`terminal_text`), its tabs as the spaces a terminal would show, so
    code keeps its indentation; the line ends kept.

    Examples
    --------
    >>> terminal_lines("a\\x1b]0;t\\x07\\n\\tb\\n")
    'a␛]0;t␇\\n        b\\n'
    """
    return "\n".join(terminal_text(line.expandtabs(8)) for line in text.split("\n"))


@dataclass(frozen=True)
class TableFit:
    """How an aligned table fits a terminal `width` cells wide, as `ls` and
    `ps` do: the columns of `priority` (then any others) are kept in that
    order while they fit (the first always), `squeeze` (a column of names) at `squeeze_min` cells
    at first; then `squeeze` takes what is left, up to its own width, its
    cells cut with an ellipsis. The kept columns stay in the table's order.

    Examples
    --------
    >>> fit = TableFit(10, ("id", "name", "n"), "name", 3)
    >>> fit.apply(["id", "n", "name"], [["id", "a"], ["n", "7"], ["name", "long"]], {0, 2})
    ([['id', 'a'], ['n', '7'], ['name', 'lo…']], {0, 2})
    """

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
        # A column the priority does not name (one a later table adds) comes
        # after those it names, rather than never.
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
    """Print `items` as one indented JSON array, the text `echo_json` prints
    for their list, a batch of them at a time: 100,000 rows of `stats` are
    never one string (nor their dicts all at once, given an iterator)."""
    # Bytes, as orjson writes them: never decoded to be encoded again.
    opening = b"[\n"
    for batch in _batches(items):
        _echo_bytes(opening + _json_items(batch))
        opening = b",\n"
    click.echo("[]" if opening == b"[\n" else "\n]")


def _echo_bytes(data: bytes) -> None:
    """Print UTF-8 `data` as it is, or as text where stdout takes only text
    (a StringIO standing for it: click writes bytes to a stream's buffer)."""
    try:
        click.echo(data, nl=False)
    except TypeError:
        click.echo(data.decode(), nl=False)


#: Every ASCII byte but DEL: what is left of UTF-8 text without them holds
#: every character `_JSON_UNSAFE` can find in it, each whole.
_SAFE_ASCII = bytes(range(0x7F))


def _json_items(batch: list[Any]) -> bytes:
    """The items of `batch` as they stand inside an indented JSON array, one
    after another (`,` and a line break between), in UTF-8: the whole array's
    text less its brackets."""
    # One call for the batch: orjson indents a list's items by two, their
    # insides by four, as `json_text` of the whole list does.
    try:
        data = dumps_bytes(batch, indent=True)
    except (orjson.JSONEncodeError, TypeError):
        pass
    else:
        # The characters to escape are rare and never ASCII but DEL: looked
        # for among the other bytes alone (a batch of `stats` rows is 600 KB,
        # and a regex over its text cost a third of printing it).
        if _JSON_UNSAFE.search(data.translate(None, _SAFE_ASCII).decode()) is None:
            return data[2:-2]
        text = _JSON_UNSAFE.sub(
            lambda match: f"\\u{ord(match.group()):04x}", data.decode()
        )
        return text[2:-2].encode()
    # What orjson refuses goes item by item, each as `json_text` writes it
    # (json's encoder for that item alone): an item indented on its own,
    # then by two more inside the array (a string's line breaks are \n).
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
    """Print records in one of the output formats.

    Parameters
    ----------
    records:
        Dicts with (at least) the keys `columns`, of plain JSON values.
    columns:
        The fields to print, in order: the header of CSV, TSV and the table,
        printed even when there are no records (except by the table, which
        prints nothing then).
    output_format:
        "table", "json" (one array), "nl" (one object a line), "csv" or "tsv".
    cells:
        For the table only: how to show a column's values, by column name
        (the default shows lists joined with commas and floats to two
        decimals).
    fit:
        For the table only: the width to fit and which columns go first
        (`TableFit`); every column, however wide, when None.
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
            # One write: a write (and flush) a line is most of the time of
            # a table of 100,000 conversations.
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
    """Rows of cells as aligned lines, two spaces between columns.

    The columns whose index is in `left` are flush left, the others flush
    right; a column is as wide as its widest cell in terminal cells; lines
    carry no trailing spaces. Cells pass `terminal_text`, so a control
    character shows as a symbol. The first row is usually the header: style
    it as the caller likes.
    """
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
    """One line for a person on stderr (what the answer on stdout is not:
    a note, an empty answer explained), its stored text shown safely,
    wrapped at the terminal's width where stderr is one."""
    width = shutil.get_terminal_size().columns if is_terminal(sys.stderr) else None
    for line in wrapped(terminal_text(text), width):
        click.echo(line, err=True)


def filter_words(where: Any) -> str:
    """A `TreeFilter` as the options that make it, for a message: its
    bounds in the user's time zone, to the minute (`person_time`).

    Examples
    --------
    >>> from convgraph.model.filters import TreeFilter
    >>> filter_words(TreeFilter(models=("gpt*",), sources=("chatgpt",)))
    '--model gpt* --source chatgpt'
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
    """Print a Markdown document rendered for the terminal stdout is
    (rich's Markdown at the terminal's width: headings, emphasis, code
    blocks wrapped to fit), its stored control characters shown as symbols
    first (`terminal_lines`), and no link made clickable: the document's
    addresses come from data."""
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
    """`text` (one line, without styles) as lines of at most `width`
    terminal cells: broken at spaces where it can be, inside a word where a
    word is longer than a line; every line after the first begins with
    `hang` (by default the line's own indentation and two spaces more).
    `width` None (not a terminal) keeps the line whole.

    Examples
    --------
    >>> wrapped("fork point: 01jb0sd01a  (shared path: 2 nodes)", 24)
    ['fork point: 01jb0sd01a', '  (shared path: 2 nodes)']
    >>> wrapped("-" + "x" * 10, 6, hang="-")
    ['-xxxxx', '-xxxxx']
    """
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
