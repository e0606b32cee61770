"""The browser's conversation list: a filter box over a table of trees.

The rows are `listing.ConversationRow`s; the table (Textual's DataTable,
which draws only the rows on screen) is refilled as the filter changes and
as the slower figures arrive. Typing filters by name, id or model.
"""

from __future__ import annotations

from typing import Any

from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Input

from convgraph.browse.listing import ConversationRow
from convgraph.text import excerpt, terminal_text

#: The table's columns: key and heading.
COLUMNS = (
    ("name", "name"),
    ("nodes", "nodes"),
    ("leaves", "leaves"),
    ("depth", "depth"),
    ("last", "last"),
    ("models", "models"),
)


class ConversationList(Vertical):
    """The filter box and the table; `rows` every conversation, `shown` the
    ones the filter lets through, in the table's order."""

    DEFAULT_CSS = """
    ConversationList #filter { height: 3; }
    ConversationList DataTable { height: 1fr; }
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

    def compose(self):  # type: ignore[no-untyped-def]
        yield Input(placeholder="Filter conversations (name, id, model)", id="filter")
        table: DataTable[str] = DataTable(id="conversations", cursor_type="row")
        for key, heading in COLUMNS:
            table.add_column(heading, key=key)
        yield table

    def set_rows(self, rows: list[ConversationRow]) -> None:
        """Show these conversations (through the filter), keeping the cursor
        on the conversation it was on."""
        self.rows = rows
        self._refill()

    def _refill(self) -> None:
        table = self.query_one(DataTable)
        current = self.current()
        wanted = self.query_one("#filter", Input).value.strip().lower()
        self.shown = [row for row in self.rows if _matches(row, wanted)]
        table.clear()
        table.add_rows(_cells(row) for row in self.shown)
        ids = [row.tree_id for row in self.shown]
        if current in ids:
            table.move_cursor(row=ids.index(current), animate=False)

    def current(self) -> str | None:
        """The tree id under the table's cursor."""
        table = self.query_one(DataTable)
        if not self.shown or not 0 <= table.cursor_row < len(self.shown):
            return None
        return self.shown[table.cursor_row].tree_id

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._refill()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in the filter opens the first conversation it lets through."""
        event.stop()
        if self.shown:
            self.post_message(self.Chosen(self.current() or self.shown[0].tree_id))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if 0 <= event.cursor_row < len(self.shown):
            self.post_message(self.Chosen(self.shown[event.cursor_row].tree_id))


def _matches(row: ConversationRow, wanted: str) -> bool:
    if not wanted:
        return True
    haystack = " ".join([row.tree_id, row.name or "", *row.models]).lower()
    return wanted in haystack


def _cells(row: ConversationRow) -> tuple[str, ...]:
    def figure(value: int | None) -> str:
        return "…" if value is None else str(value)

    return (
        terminal_text(excerpt(row.name or row.tree_id, 24)),
        figure(row.nodes if row.last_datetime or row.nodes else None),
        figure(row.leaves),
        figure(row.max_depth),
        terminal_text((row.last_datetime or "")[:16].replace("T", " ")),
        terminal_text(excerpt(", ".join(row.models), 16)),
    )
