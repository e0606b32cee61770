"""Text as the drawings and tables show it: one line, cut to a width.

A node's prompt or a conversation's name may run to pages and hold line
breaks; a label, a table cell or a line of the text tree holds one short
line. The terminal tree, the exporters' labels and the command line's tables
all cut text here, the same way. And text for a terminal passes
`terminal_text`, which shows every character that would drive the terminal
(an escape sequence that sets the clipboard or the window title, a bidi
override that reorders the line) as a visible symbol instead.
"""

from __future__ import annotations

import re

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
    flat = " ".join(text.split())
    if flat.isascii():  # one cell a character: the common case, no counting
        return flat if len(flat) <= width else flat[: width - 1] + "…"
    from wcwidth import wcwidth

    # wcwidth gives -1 for a control character: shown as one symbol.
    cells = [1 if (cell := wcwidth(character)) < 0 else cell for character in flat]
    if sum(cells) <= width:
        return flat
    kept, used = 0, 0
    while kept < len(flat) and used + cells[kept] <= width - 1:
        used += cells[kept]
        kept += 1
    return flat[:kept] + "…"


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
