"""Text as terminals, drawings and tables show it: cut to one line, padded to
terminal cells (a wide character takes two), terminal controls made visible."""

from __future__ import annotations

import re
from collections.abc import Sequence

#: How many characters of a prompt a line of the text tree shows.
EXCERPT_WIDTH = 60


def excerpt(text: str | None, width: int = EXCERPT_WIDTH) -> str:
    """The text on one line, cut to `width` terminal cells with an ellipsis."""
    if not text or width <= 0:
        return ""
    # A prompt may run to pages: flatten only as much of its start as the
    # line can show. Flattening a prefix gives a prefix of the flattened
    # whole, so once it is wider than the line, the rest changes nothing.
    end = 4 * width + 16
    while True:
        flat = " ".join(text[:end].split())
        if end >= len(text):
            break
        if flat.isascii():
            if len(flat) > width:
                break
        elif sum(_cell_list(flat)) > width:
            break
        end *= 4
    if flat.isascii():  # one cell a character: the common case, no counting
        return flat if len(flat) <= width else flat[: width - 1] + "…"
    cells = _cell_list(flat)
    return flat if sum(cells) <= width else flat[: _fitting(cells, width - 1)] + "…"


def window(
    line: str, marks: list[list[int]], width: int
) -> tuple[str, list[list[int]]]:
    """One line cut to `width` cells around its `marks` ([start, end) offsets):
    it starts after "…" nearer the first mark where that lies past the width.
    Returns the line and its marks moved with it."""
    if cell_width(line) <= width or width < 2:
        return line, marks
    if marks and cell_width(line[: marks[0][1]]) > width - 1:
        shift = max(0, marks[0][0] - width // 3)
        space = line.find(" ", shift, marks[0][0])
        shift = space + 1 if space >= 0 else shift
        line = "…" + line[shift:]
        marks = [[a - shift + 1, b - shift + 1] for a, b in marks if a >= shift]
    if cell_width(line) > width:
        kept = _fitting(_cell_list(line), width - 1)
        line = line[:kept] + "…"
        marks = [[a, min(b, kept)] for a, b in marks if a < kept]
    return line, marks


def _fitting(cells: list[int], width: int) -> int:
    kept, used = 0, 0
    while kept < len(cells) and used + cells[kept] <= width:
        used += cells[kept]
        kept += 1
    return kept


def _cell_list(text: str) -> list[int]:
    from wcwidth import wcwidth

    # wcwidth gives -1 for a control character, shown as one symbol.
    return [1 if (cell := wcwidth(character)) < 0 else cell for character in text]


#: What stored text must never send to a terminal: C0 controls (a printed line
#: ends with convgraph's own newline, so a tab or line feed inside a field is
#: shown too), DEL, C1 controls (U+009B alone starts an escape sequence on
#: many terminals), the bidirectional controls that reorder what a line shows,
#: the line and paragraph separators, and lone surrogates and noncharacters,
#: which cannot even be encoded.
TERMINAL_CONTROLS = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069"
    "\ud800-\udfff\ufffe\uffff]"
)


def control_picture(character: str) -> str:
    """The one-cell symbol for a control: its control picture for C0 and DEL, else U+FFFD."""
    code = ord(character)
    if code < 0x20:
        return chr(0x2400 + code)
    return "\u2421" if code == 0x7F else "\ufffd"


def terminal_text(text: str) -> str:
    """`text` safe to print: every `TERMINAL_CONTROLS` character as its `control_picture`."""
    if TERMINAL_CONTROLS.search(text) is None:
        return text
    return TERMINAL_CONTROLS.sub(lambda match: control_picture(match.group()), text)


def cell_width(text: str) -> int:
    """How many terminal cells `text` takes on one line (`len` where wcwidth cannot tell)."""
    if text.isascii() or (text[:-1].isascii() and text.endswith("…")):
        # Printable ASCII (controls are symbols by now), maybe cut short by
        # `excerpt`'s ellipsis: a cell a character, and no table look-ups.
        return len(text)
    from wcwidth import wcswidth

    cells = wcswidth(text)
    return len(text) if cells < 0 else cells


def pad(text: str, width: int, right: bool = False) -> str:
    """`text` filled with spaces to `width` cells, flush left or `right`; never cut."""
    fill = " " * max(0, width - cell_width(text))
    return fill + text if right else text + fill


def pad_column(
    cells: Sequence[str], width: int | None = None, right: bool = False
) -> list[str]:
    """Every cell of a column `pad`ded to `width` (by default the widest cell's)."""
    if not cells:
        return []
    if "".join(cells).isascii():
        most = max(map(len, cells)) if width is None else width
        return [cell.rjust(most) if right else cell.ljust(most) for cell in cells]
    sizes = [cell_width(cell) for cell in cells]
    most = max(sizes) if width is None else width
    return [
        " " * (most - size) + cell if right else cell + " " * (most - size)
        for cell, size in zip(cells, sizes, strict=True)
    ]


def counted(
    number: int, singular: str, plural: str | None = None, grouping: str = ""
) -> str:
    """`number` and the noun that agrees with it ("1 node", "3 leaves");
    `grouping` is the number's format spec."""
    return (
        f"{number:{grouping}} {singular if number == 1 else plural or singular + 's'}"
    )
