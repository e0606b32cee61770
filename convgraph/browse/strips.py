"""A line of the browser's scrolling widgets as the screen draws it: cut at
the widget's edge with an ellipsis rather than a horizontal scrollbar.

The tree and the conversation list draw their lines themselves (Textual's
line API); a line wider than its widget is cut where the widget ends, its
last cell an ellipsis in the style of the cell it replaces (the cursor's
highlight too), so that a cut prompt or snippet says it goes on.
"""

from __future__ import annotations

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.strip import Strip


def fitted(text: Text, console: Console, left: int, width: int, style: Style) -> Strip:
    """The cells `left` to `left + width` of `text`, rendered, with an
    ellipsis in the last cell where the text goes on past them, and
    `style` (the widget's) beneath.

    Examples
    --------
    >>> from rich.console import Console
    >>> fitted(Text("a long line"), Console(), 0, 6, Style()).text
    'a lon…'
    >>> fitted(Text("short"), Console(), 0, 7, Style()).text
    'short  '
    """
    strip = Strip(list(text.render(console)), text.cell_len)
    right = left + width
    if text.cell_len > right and width > 1:
        kept = strip.crop(left, right - 1)
        last = next((s.style for s in reversed(list(kept)) if s.text), None)
        strip = Strip.join([kept, Strip([Segment("…", last)], 1)])
    else:
        strip = strip.crop_extend(left, right, None)
    return strip.apply_style(style)
