"""Text as the drawings and tables show it: one line, cut to a width.

A node's prompt or a conversation's name may run to pages and hold line
breaks; a label, a table cell or a line of the text tree holds one short
line. The terminal tree, the exporters' labels and the command line's tables
all cut text here, the same way.
"""

from __future__ import annotations

#: How many characters of a prompt a line of the text tree shows.
EXCERPT_WIDTH = 60


def excerpt(text: str | None, width: int = EXCERPT_WIDTH) -> str:
    """The text on one line, cut to `width` characters with an ellipsis
    (nothing at all for a width of 0).

    Examples
    --------
    >>> excerpt("What is\\na   tree?")
    'What is a tree?'
    >>> excerpt("What is a tree?", width=8)
    'What is…'
    >>> excerpt(None)
    ''
    """
    if not text or width <= 0:
        return ""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
