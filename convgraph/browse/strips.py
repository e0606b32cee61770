"""Lines of the browser's widgets cut at the edge with an ellipsis."""

from __future__ import annotations

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.strip import Strip


def fitted(text: Text, console: Console, left: int, width: int, style: Style) -> Strip:
    """Cells `left` to `left + width` of `text`, the last an ellipsis if cut."""
    strip = Strip(list(text.render(console)), text.cell_len)
    right = left + width
    if text.cell_len > right and width > 1:
        kept = strip.crop(left, right - 1)
        last = next((s.style for s in reversed(list(kept)) if s.text), None)
        strip = Strip.join([kept, Strip([Segment("…", last)], 1)])
    else:
        strip = strip.crop_extend(left, right, None)
    return strip.apply_style(style)
