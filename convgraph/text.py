"""Text as the drawings and tables show it: one line, cut to a width.

A node's prompt or a conversation's name may run to pages and hold line
breaks; a label, a table cell or a line of the text tree holds one short
line. The terminal tree, the exporters' labels and the command line's tables
all cut text here, the same way, and pad it here to terminal cells (a wide
character, in Japanese or an emoji, takes two), so that the command line's
tables, the fan-out's lines and the browser's list keep their columns. Text
for a terminal passes `terminal_text`, which shows every character that
would drive the terminal (an escape sequence that sets the clipboard or the
window title, a bidi override that reorders the line) as a visible symbol
instead. And `counted` says how many of something, in the noun's right form.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: How many characters of a prompt a line of the text tree shows.
EXCERPT_WIDTH = 60


def excerpt(text: str | None, width: int = EXCERPT_WIDTH) -> str:
    """The text on one line, cut to `width` terminal cells with an ellipsis
    (nothing at all for a width of 0). A wide character (CJK, most emoji)
    takes two cells, a combining mark none, a control character one (the
    symbol `terminal_text` shows for it), so a cut line fits its column.

    Examples
    --------
    >>> excerpt("What is\\na   tree?")
    'What is a tree?'
    >>> excerpt("What is a tree?", width=8)
    'What is…'
    >>> excerpt("🌳🌳🌳🌳 forest", width=6)
    '🌳🌳…'
    >>> excerpt(None)
    ''
    """
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
    if sum(cells) <= width:
        return flat
    kept, used = 0, 0
    while kept < len(flat) and used + cells[kept] <= width - 1:
        used += cells[kept]
        kept += 1
    return flat[:kept] + "…"


def window(
    line: str, marks: list[list[int]], width: int
) -> tuple[str, list[list[int]]]:
    """One line cut to `width` terminal cells around the words it marks
    (`marks`, ``[start, end)`` character offsets): where the first mark would
    lie past the width, the line starts nearer to it (a third of the room
    before it, from a word's start) after "…"; a line still too wide ends in
    "…" at the width. Returns the line and its marks moved with it, those cut
    off left out, the one cut across shortened.

    Examples
    --------
    >>> window("a b c d e f g h i j k l m n o p", [[30, 31]], 12)
    ('…o p', [[3, 4]])
    >>> window("find the word here", [[9, 13]], 12)
    ('…word here', [[1, 5]])
    >>> window("word then a very long tail", [[0, 4], [22, 26]], 12)
    ('word then a…', [[0, 4]])
    """
    if cell_width(line) <= width or width < 2:
        return line, marks
    if marks and cell_width(line[: marks[0][1]]) > width - 1:
        shift = max(0, marks[0][0] - width // 3)
        space = line.find(" ", shift, marks[0][0])
        shift = space + 1 if space >= 0 else shift
        line = "…" + line[shift:]
        marks = [[a - shift + 1, b - shift + 1] for a, b in marks if a >= shift]
    if cell_width(line) > width:
        cells, kept, used = _cell_list(line), 0, 0
        while kept < len(line) and used + cells[kept] <= width - 1:
            used += cells[kept]
            kept += 1
        line = line[:kept] + "…"
        marks = [[a, min(b, kept)] for a, b in marks if a < kept]
    return line, marks


def _cell_list(text: str) -> list[int]:
    """The cells each character of one line takes (wcwidth gives -1 for a
    control character: shown as one symbol)."""
    from wcwidth import wcwidth

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
    """The visible symbol for a control character: its Unicode control
    picture for a C0 control or DEL (ESC becomes "␛"), else U+FFFD; one terminal
    cell either way, so tables stay aligned. The exporters show the
    characters their formats cannot hold with the same symbols.

    Examples
    --------
    >>> control_picture("\\x1b"), control_picture("\\x7f"), control_picture("\\u202e")
    ('␛', '␡', '�')
    """
    code = ord(character)
    if code < 0x20:
        return chr(0x2400 + code)
    if code == 0x7F:
        return "\u2421"
    return "\ufffd"


def terminal_text(text: str) -> str:
    """`text` safe to print on a terminal: every character of
    `TERMINAL_CONTROLS` replaced by its `control_picture`, the rest as it is.

    Every line that convgraph prints for a person (tables, the text tree,
    diff and check reports, lists of ids, error messages) passes its stored
    text through here; JSON, CSV and TSV output keep the text exact.

    Examples
    --------
    >>> terminal_text("title \\x1b]0;pwned\\x07 and\\ttab")
    'title ␛]0;pwned␇ and␉tab'
    >>> terminal_text("дерево 🌳")
    'дерево 🌳'
    """
    if TERMINAL_CONTROLS.search(text) is None:
        return text
    return TERMINAL_CONTROLS.sub(lambda match: control_picture(match.group()), text)


def cell_width(text: str) -> int:
    """How many terminal cells `text` takes on one line: a wide character
    (CJK, most emoji) two, a combining mark none, the rest one. Text that
    `wcwidth` cannot measure (a control character left in it) counts one cell
    a character, as `len` does, rather than fail.

    Examples
    --------
    >>> cell_width("tree"), cell_width("木の会話"), cell_width("e\u0301")
    (4, 8, 1)
    """
    if text.isascii() or (text[:-1].isascii() and text.endswith("…")):
        # Printable ASCII (controls are symbols by now), maybe cut short by
        # `excerpt`'s ellipsis: a cell a character, and no table look-ups.
        return len(text)
    from wcwidth import wcswidth

    cells = wcswidth(text)
    return len(text) if cells < 0 else cells


def pad(text: str, width: int, right: bool = False) -> str:
    """`text` filled with spaces to `width` terminal cells (`cell_width`):
    flush left, or flush right where `right`. Text already as wide or wider
    is returned as it is (cut it with `excerpt` first to fit a column).

    Examples
    --------
    >>> pad("tree", 6) + "|", pad("木", 4) + "|", pad("7", 3, right=True)
    ('tree  |', '木  |', '  7')
    """
    fill = " " * max(0, width - cell_width(text))
    return fill + text if right else text + fill


def pad_column(
    cells: Sequence[str], width: int | None = None, right: bool = False
) -> list[str]:
    """Every cell of a table's column `pad`ded to `width` terminal cells (by
    default the widest cell's), so the next column starts at the same cell on
    every line. A column of ASCII is padded at once, without measuring each
    cell: a table of 100,000 conversations has two million cells.

    Examples
    --------
    >>> pad_column(["名前", "tree", "a"])
    ['名前', 'tree', 'a   ']
    >>> pad_column(["3", "12"], right=True)
    [' 3', '12']
    """
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
    """`number` and the noun in the form that agrees with it (the plural is
    the singular and an "s" unless given). `grouping` is the number's format
    spec: "," writes thousands apart.

    Examples
    --------
    >>> counted(1, "node"), counted(0, "root"), counted(3, "leaf", "leaves")
    ('1 node', '0 roots', '3 leaves')
    >>> counted(12345, "conversation", grouping=",")
    '12,345 conversations'
    """
    return (
        f"{number:{grouping}} {singular if number == 1 else plural or singular + 's'}"
    )
