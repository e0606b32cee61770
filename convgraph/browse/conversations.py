"""The browser's conversation list: a filter box over a table of trees that
formats only the rows on screen, and a row to search every conversation's
content (the first search builds the index)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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
from convgraph.browse.strips import fitted
from convgraph.text import cell_width, excerpt, pad, terminal_text
from convgraph.times import shown_time

if TYPE_CHECKING:
    from convgraph.search import Hit

COLUMNS = (
    ("name", 24),
    ("nodes", 6),
    ("leaves", 6),
    ("depth", 5),
    ("retry", 5),
    ("last", 16),
    ("models", 12),
)

FIGURES = {"nodes", "leaves", "depth", "retry"}

HIT_COLUMNS = (("conversation", 20), ("node", 12))
ON_PATH, ABANDONED = "●", "○"


@dataclass(frozen=True)
class Entry:
    """What a table line stands for: a conversation, the search row, or a hit."""

    kind: str
    index: int = 0


CONVERSATION, SEARCH, HIT = "conversation", "search", "hit"


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

    # No horizontal scrollbar: a wide line ends in an ellipsis (`strips.fitted`).
    DEFAULT_CSS = """
    ConversationTable { scrollbar-size-horizontal: 0; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lines: list[str] = []
        self.cursor = 0
        self.marks: dict[int, list[list[int]]] = {}

    def set_lines(
        self,
        lines: list[str],
        cursor: int = 0,
        marks: dict[int, list[list[int]]] | None = None,
    ) -> None:
        self.lines = lines
        self.marks = marks or {}
        self.cursor = max(0, min(cursor, len(lines) - 1))
        self.virtual_size = Size(max(map(cell_width, lines), default=0), len(lines))
        self._reveal()

    def render_line(self, y: int) -> Strip:
        row = self.scroll_offset.y + y
        if row >= len(self.lines):
            return Strip.blank(self.size.width, self.rich_style)
        text = Text(self.lines[row])
        for start, end in self.marks.get(row, ()):
            text.stylize(Style(bold=True, underline=True), start, end)
        if row == self.cursor:
            text.stylize(Style(reverse=True, bold=self.has_focus))
        x, width = self.scroll_offset.x, self.size.width
        return fitted(text, self.app.console, x, width, self.rich_style)

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
    """The filter box and the table; `rows` every conversation, `shown` those
    the filter lets through. `/` goes to the box, escape or enter back."""

    BINDINGS = [Binding("slash", "filter", "Filter", show=False)]

    DEFAULT_CSS = """
    ConversationList #filter { height: 3; }
    ConversationList #heading { height: 1; text-style: bold; }
    ConversationList ConversationTable { height: 1fr; }
    """

    class Chosen(Message):
        """The user opened a conversation (at `node`, for a hit)."""

        def __init__(self, tree_id: str, node: str | None = None) -> None:
            super().__init__()
            self.tree_id = tree_id
            self.node = node

    class SearchAsked(Message):
        """The user asked to search every conversation's content."""

        def __init__(self, query: str) -> None:
            super().__init__()
            self.query = query

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rows: list[ConversationRow] = []
        self.shown: list[ConversationRow] = []
        self._lines: list[str] = []
        self._haystacks: list[str] = []
        #: The last content search's hits; `found` its row's text (None: running).
        self.hits: list[Hit] = []
        self.hits_query: str | None = None
        self.found: str | None = None
        self.indexing = False
        self.entries: list[Entry] = []

    def compose(self):  # type: ignore[no-untyped-def]
        yield Input(placeholder="Filter conversations (name, id, model)", id="filter")
        yield Static(_line([name for name, _ in COLUMNS]), id="heading", markup=False)
        yield ConversationTable(id="conversations")

    def set_rows(self, rows: list[ConversationRow]) -> None:
        """Show these conversations through the filter, keeping the cursor."""
        self.rows = rows
        # Formatted once, so filtering as the user types is substring tests.
        self._lines = [_line(_cells(row)) for row in rows]
        self._haystacks = [
            " ".join([row.tree_id, row.name or "", *row.models]).lower() for row in rows
        ]
        self._refill()

    def typed(self) -> str:
        return self.query_one("#filter", Input).value.strip()

    def _refill(self, cursor: Entry | None = None) -> None:
        """Fill the table: the conversations let through, the search row and
        its hits; the cursor on `cursor`, else where it was, else first."""
        current = self.current()
        typed = self.typed()
        wanted = typed.lower()
        kept = [i for i, haystack in enumerate(self._haystacks) if wanted in haystack]
        self.shown = [self.rows[index] for index in kept]
        lines = [self._lines[index] for index in kept]
        entries = [Entry(CONVERSATION, number) for number in range(len(kept))]
        marks: dict[int, list[list[int]]] = {}
        if typed:
            entries.append(Entry(SEARCH))
            lines.append(self._search_line(typed))
            if typed == self.hits_query:
                names = {row.tree_id: row.name for row in self.rows}
                width = self.query_one(ConversationTable).size.width or 80
                for number, hit in enumerate(self.hits):
                    line, spans = hit_line(hit, names.get(hit.tree_id), width)
                    marks[len(lines)] = spans
                    entries.append(Entry(HIT, number))
                    lines.append(line)
        self.entries = entries
        ids = [row.tree_id for row in self.shown]
        row = ids.index(current) if current in ids else 0
        row = entries.index(cursor) if cursor in entries else row
        self.query_one(ConversationTable).set_lines(lines, row, marks)

    def _search_line(self, typed: str) -> str:
        words = terminal_text(excerpt(typed, 40))
        if typed != self.hits_query:
            return f"⌕ enter: search every conversation's content for “{words}”"
        if self.found is None and self.indexing:
            # Seconds on a large file, once: the row says why it waits.
            return (
                f"⌕ indexing the file's content (once), then searching for “{words}”…"
            )
        if self.found is None:
            return f"⌕ searching every conversation's content for “{words}”…"
        return f"⌕ “{words}”: {self.found}"

    def current(self) -> str | None:
        """The tree id under the cursor (None off a conversation)."""
        entry = self.entry()
        if entry is None or entry.kind != CONVERSATION:
            return None
        return self.shown[entry.index].tree_id

    def entry(self, row: int | None = None) -> Entry | None:
        """What the table's line `row` (the cursor's) stands for."""
        if row is None:
            row = self.query_one(ConversationTable).cursor
        return self.entries[row] if 0 <= row < len(self.entries) else None

    def searching(self, query: str, indexing: bool = False) -> None:
        """The search for `query` has begun; `indexing`: building the index."""
        self.hits_query, self.hits, self.found = query, [], None
        self.indexing = indexing
        self._refill(Entry(SEARCH))

    def show_hits(self, query: str, hits: list[Hit], found: str) -> None:
        """The hits of `query`, the cursor on the first; `found` the row's text."""
        if query != self.hits_query:
            return  # a search the user has typed past
        self.hits, self.found = hits, found
        self._refill(Entry(HIT) if hits else Entry(SEARCH))

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._refill()

    def on_mount(self) -> None:
        self.query_one(ConversationTable).focus()

    def action_filter(self) -> None:
        self.query_one("#filter", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in the filter opens the first conversation let through (or
        the cursor's), or the search row where no name matches."""
        event.stop()
        self.query_one(ConversationTable).focus()
        self._open(self.query_one(ConversationTable).cursor)

    def on_conversation_table_opened(self, event: ConversationTable.Opened) -> None:
        event.stop()
        self._open(event.row)

    def _open(self, row: int) -> None:
        """Open the conversation of the line, its hit's node, or search."""
        if (entry := self.entry(row)) is None:
            return
        if entry.kind == CONVERSATION:
            self.post_message(self.Chosen(self.shown[entry.index].tree_id))
        elif entry.kind == HIT:
            hit = self.hits[entry.index]
            self.post_message(self.Chosen(hit.tree_id, hit.id))
        elif self.typed() != self.hits_query or self.found is not None:
            # (Not again while the same search runs.)
            self.post_message(self.SearchAsked(self.typed()))

    def on_key(self, event: Any) -> None:
        """Up and down in the filter box move in the table; escape leaves it."""
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
        "" if row.abandoned_share is None else f"{row.abandoned_share:.0%}",
        terminal_text(
            excerpt(shown_time(row.last_datetime, seconds=False), COLUMNS[5][1])
        ),
        terminal_text(excerpt(", ".join(row.models), COLUMNS[-1][1])),
    )


def hit_line(
    hit: Hit, name: str | None, width: int = 80
) -> tuple[str, list[list[int]]]:
    """A hit as a table line (name, node id, ● active or ○ abandoned, snippet)
    and the found words' spans; the snippet shifts so the first shows."""
    mark = ON_PATH if hit.active else ABANDONED if hit.active is False else " "
    head = " ".join(
        pad(terminal_text(excerpt(text or hit.tree_id, cells)), cells)
        for text, (_, cells) in zip((name, hit.id), HIT_COLUMNS, strict=True)
    )
    head = f"{head} {mark} "
    # The snippet is one line; its marks are offsets, so shown one for one.
    snippet = terminal_text(hit.snippet)
    marks = hit.marks
    room = width - cell_width(head)
    if marks and room > 2 and cell_width(snippet[: marks[0][1]]) > room - 1:
        # A third of the room before the first word found, the rest after.
        shift = max(0, marks[0][0] - room // 3)
        space = snippet.find(" ", shift, marks[0][0])
        shift = space + 1 if space >= 0 else shift  # from a word's start
        snippet = "…" + snippet[shift:]
        marks = [[a - shift + 1, b - shift + 1] for a, b in marks if a >= shift]
    spans = [[start + len(head), end + len(head)] for start, end in marks]
    return head + snippet, spans


def _line(cells: list[str] | tuple[str, ...]) -> str:
    """The cells padded to the columns' widths: text left, figures right."""
    return " ".join(
        pad(cell, width, right=heading in FIGURES)
        for cell, (heading, width) in zip(cells, COLUMNS, strict=True)
    ).rstrip()
