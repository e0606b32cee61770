"""The browser's conversation list: a filter box over a table of trees.

The rows are `listing.ConversationRow`s. A million-response file may hold
tens of thousands of conversations, so the table is a scrolling widget that
formats only the rows on screen (Textual's line API), and filtering or
filling in figures replaces a Python list, not thousands of widgets or
cells. Typing filters by name, id or model.
"""

from __future__ import annotations

from typing import Any

from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.containers import Vertical
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Input, Static

from convgraph.browse.listing import ConversationRow
from convgraph.text import cell_width, excerpt, pad, terminal_text
from convgraph.times import shown_time

#: The table's columns: heading and width (the last takes what is left).
COLUMNS = (
    ("name", 24),
    ("nodes", 6),
    ("leaves", 6),
    ("depth", 5),
    ("last", 16),
    ("models", 16),
)


class ConversationTable(ScrollView, can_focus=True):
    """The conversations as aligned lines, one per row; enter opens one."""

    BINDINGS = [
        Binding("up,k", "move(-1)", "Up", show=False),
        Binding("down,j", "move(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "move(-1_000_000_000)", "First", show=False),
        Binding("end", "move(1_000_000_000)", "Last", show=False),
        Binding("enter", "open", "Open", show=False),
    ]

    class Opened(Message):
        def __init__(self, row: int) -> None:
            super().__init__()
            self.row = row

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lines: list[str] = []
        self.cursor = 0

    def set_lines(self, lines: list[str], cursor: int = 0) -> None:
        self.lines = lines
        self.cursor = max(0, min(cursor, len(lines) - 1))
        self.virtual_size = Size(max(map(cell_width, lines), default=0), len(lines))
        self._reveal()

    def render_line(self, y: int) -> Strip:
        row = self.scroll_offset.y + y
        if row >= len(self.lines):
            return Strip.blank(self.size.width, self.rich_style)
        text = Text(self.lines[row])
        if row == self.cursor:
            text.stylize(Style(reverse=True, bold=self.has_focus))
        strip = Strip(list(text.render(self.app.console)), text.cell_len)
        return strip.crop_extend(
            self.scroll_offset.x, self.scroll_offset.x + self.size.width, None
        ).apply_style(self.rich_style)

    def _reveal(self) -> None:
        self.scroll_to_region(
            Region(0, self.cursor, 1, 1), animate=False, force=True, immediate=True
        )
        self.refresh()

    def action_move(self, rows: int) -> None:
        if self.lines:
            self.cursor = max(0, min(self.cursor + rows, len(self.lines) - 1))
            self._reveal()

    def action_page(self, pages: int) -> None:
        self.action_move(pages * max(1, self.size.height - 1))

    def action_open(self) -> None:
        if self.lines:
            self.post_message(self.Opened(self.cursor))

    def on_click(self, event: Any) -> None:
        row = self.scroll_offset.y + event.y
        if 0 <= row < len(self.lines):
            self.cursor = row
            self.refresh()
            if event.chain > 1:
                self.action_open()


class ConversationList(Vertical):
    """The filter box and the table; `rows` every conversation, `shown` the
    ones the filter lets through, in the table's order.

    The table has the keys (so `q` quits); `/` goes to the filter box, and
    escape or enter there back to the table.
    """

    BINDINGS = [Binding("slash", "filter", "Filter", show=False)]

    DEFAULT_CSS = """
    ConversationList #filter { height: 3; }
    ConversationList #heading { height: 1; text-style: bold; }
    ConversationList ConversationTable { height: 1fr; }
    """

    class Chosen(Message):
        """The user opened a conversation."""

        def __init__(self, tree_id: str) -> None:
            super().__init__()
            self.tree_id = tree_id

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rows: list[ConversationRow] = []
        self.shown: list[ConversationRow] = []
        self._lines: list[str] = []
        self._haystacks: list[str] = []

    def compose(self):  # type: ignore[no-untyped-def]
        yield Input(placeholder="Filter conversations (name, id, model)", id="filter")
        yield Static(_line([name for name, _ in COLUMNS]), id="heading", markup=False)
        yield ConversationTable(id="conversations")

    def set_rows(self, rows: list[ConversationRow]) -> None:
        """Show these conversations (through the filter), keeping the cursor
        on the conversation it was on."""
        self.rows = rows
        # Formatted once per set of rows: filtering as the user types is
        # then one pass of substring tests over ready strings.
        self._lines = [_line(_cells(row)) for row in rows]
        self._haystacks = [
            " ".join([row.tree_id, row.name or "", *row.models]).lower() for row in rows
        ]
        self._refill()

    def _refill(self) -> None:
        current = self.current()
        wanted = self.query_one("#filter", Input).value.strip().lower()
        kept = [
            index
            for index, haystack in enumerate(self._haystacks)
            if wanted in haystack
        ]
        self.shown = [self.rows[index] for index in kept]
        ids = [row.tree_id for row in self.shown]
        self.query_one(ConversationTable).set_lines(
            [self._lines[index] for index in kept],
            ids.index(current) if current in ids else 0,
        )

    def current(self) -> str | None:
        """The tree id under the table's cursor."""
        table = self.query_one(ConversationTable)
        if not self.shown or not 0 <= table.cursor < len(self.shown):
            return None
        return self.shown[table.cursor].tree_id

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._refill()

    def on_mount(self) -> None:
        self.query_one(ConversationTable).focus()

    def action_filter(self) -> None:
        self.query_one("#filter", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in the filter opens the conversation under the cursor (the
        first the filter lets through, unless the arrows moved)."""
        event.stop()
        self.query_one(ConversationTable).focus()
        if self.shown:
            self.post_message(self.Chosen(self.current() or self.shown[0].tree_id))

    def on_conversation_table_opened(self, event: ConversationTable.Opened) -> None:
        event.stop()
        if 0 <= event.row < len(self.shown):
            self.post_message(self.Chosen(self.shown[event.row].tree_id))

    def on_key(self, event: Any) -> None:
        """Up and down in the filter box move in the table; escape leaves
        the box."""
        if not isinstance(self.app.focused, Input):
            return
        if event.key == "escape":
            event.stop()
            self.query_one(ConversationTable).focus()
        elif event.key in ("up", "down", "pageup", "pagedown"):
            event.stop()
            table = self.query_one(ConversationTable)
            if event.key in ("up", "down"):
                table.action_move(-1 if event.key == "up" else 1)
            else:
                table.action_page(-1 if event.key == "pageup" else 1)


def _cells(row: ConversationRow) -> tuple[str, ...]:
    def figure(value: int | None) -> str:
        return "…" if value is None else str(value)

    return (
        terminal_text(excerpt(row.name or row.tree_id, COLUMNS[0][1])),
        figure(row.nodes if row.counted else None),
        figure(row.leaves),
        figure(row.max_depth),
        terminal_text(
            excerpt(shown_time(row.last_datetime, seconds=False), COLUMNS[4][1])
        ),
        terminal_text(excerpt(", ".join(row.models), COLUMNS[-1][1])),
    )


def _line(cells: list[str] | tuple[str, ...]) -> str:
    """The cells padded to the columns' widths in terminal cells (a name in
    Japanese takes two a character): text left, figures right."""
    return " ".join(
        pad(cell, width, right=0 < index < 4)
        for index, (cell, (_, width)) in enumerate(zip(cells, COLUMNS, strict=True))
    ).rstrip()
