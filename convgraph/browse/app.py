"""`convgraph browse`: the Textual app that walks conversation trees. The list
shows names at once and figures as reads finish; a conversation's screen
reads its tree alone; each thread asks its own `Logs.reopen` handle."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from convgraph.browse.conversations import ABANDONED, ON_PATH, ConversationList
from convgraph.browse.listing import (
    APART_ABOVE_NODES,
    SHAPES_COMMAND,
    ConversationRow,
    TreeFigures,
    count_conversations,
    figures_from_json,
    list_conversations,
    structure_figures,
    trees_in,
)
from convgraph.browse.tree_screen import ConversationScreen
from convgraph.errors import ConvgraphError
from convgraph.logs import Given, Logs
from convgraph.text import counted, terminal_text

if TYPE_CHECKING:
    import networkx as nx

    from convgraph.model.filters import TreeFilter

SEARCH_HITS = 50


def write_refusal(logs: Logs) -> str | None:
    """Why the write keys cannot write to this file, or None: an export is
    read-only; SQLite also needs the folder writable for its journal."""
    path = logs.source.path
    if len(logs.paths) > 1:
        return "several sources are read as one: b and r write in one, opened alone"
    if logs.source.conn is None:
        kind = ", ".join(logs.source.generations) or "chat"
        return (
            f"{path.name} is a {kind} export: convgraph reads it, it cannot write"
            f" it; convgraph import {path.name} copies it into llm's database,"
            " where b and r write"
        )
    if not os.access(path, os.W_OK):
        return f"{path} is read-only for you: branching writes to it"
    if not os.access(path.parent, os.W_OK):
        return f"cannot write in {path.parent} (SQLite writes its journal there)"
    return None


class BrowseApp(App[None]):
    """Browse the conversation trees of one source."""

    TITLE = "convgraph browse"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "list_help", "Keys", show=False),
    ]
    CSS = """
    #list-status { height: 1; background: $panel; }
    """

    def __init__(
        self,
        logs: Logs | Given,
        conversation_id: str | None = None,
        model: str | None = None,
        where: TreeFilter | None = None,
    ) -> None:
        """`logs` is the open file (the caller's to close), or opened here."""
        super().__init__()
        self._own = not isinstance(logs, Logs)
        self.logs = logs if isinstance(logs, Logs) else Logs(logs)
        self.start_id = conversation_id
        self.model = model
        self.where = where or None
        self.kept: set[str] | None = None
        self.refusal = write_refusal(self.logs)
        self.figures: dict[str, TreeFigures] = {}
        self.cursors: dict[str, str] = {}
        self._shapes: Any = None

    def on_unmount(self) -> None:
        """Quitting ends the shape read at once, and lets go of the file."""
        if self._shapes is not None and self._shapes.poll() is None:
            self._shapes.terminate()
        if self._own:
            self.logs.close()

    def compose(self) -> ComposeResult:
        yield ConversationList(id="list")
        yield Static("Reading conversations…", id="list-status", markup=False)

    def on_mount(self) -> None:
        self.read_list()
        if self.start_id is not None:
            self.open_tree(self.start_id)

    def say(self, message: str) -> None:
        self.query_one("#list-status", Static).update(terminal_text(message))

    @property
    def conversations(self) -> ConversationList:
        return self.query_one(ConversationList)

    @work(thread=True, exclusive=True, group="list")
    def read_list(self) -> None:
        """The names at once, then each tree's figures, then its shape."""
        try:
            with self.logs.reopen() as logs:
                forest = None
                if self.where is not None:
                    # Read first, so that no tree the filter leaves out shows.
                    forest = logs.forest(text=False)
                    self.kept = trees_in(forest, self.where)
                rows = list_conversations(logs)
                if rows:
                    self.call_from_thread(self._show_rows, rows, "Counting nodes…")
                rows = count_conversations(logs)
                self.call_from_thread(self._show_rows, rows, "Reading tree shapes…")
                if sum(row.nodes for row in rows) > APART_ABOVE_NODES:
                    self.figures.update(self._figures_apart())
                else:
                    forest = logs.forest(text=False) if forest is None else forest
                    self.figures.update(structure_figures(forest))
        except Exception as error:  # SQLite's own errors too: one line, not an exit
            self.call_from_thread(self.say, f"error: {error}")
            return
        self.call_from_thread(self._show_rows, rows, None)

    def _figures_apart(self) -> dict[str, TreeFigures]:
        """`structure_figures` read by a process of its own, so keys still work."""
        import subprocess
        import sys

        self._shapes = subprocess.Popen(
            [sys.executable, "-c", SHAPES_COMMAND, *self.logs.paths],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        output, errors = self._shapes.communicate()
        if self._shapes.returncode == 2:
            raise ConvgraphError(errors.strip())
        if self._shapes.returncode != 0:  # ended by on_unmount, or killed
            return {}
        return figures_from_json(output)

    def _show_rows(self, rows: list[ConversationRow], status: str | None) -> None:
        kept, figures = self.kept, self.figures
        shaped = [
            figures[row.tree_id].on(row) if row.tree_id in figures else row
            for row in rows
            if kept is None or row.tree_id in kept
        ]
        self.conversations.set_rows(shaped)
        count = f"{len(shaped)} conversations" + (
            " in the filter" if kept is not None else ""
        )
        self.say(f"{count} · {status or '/ filter or search · enter open · q quit'}")

    def tree_opened(self, graph: nx.DiGraph[str]) -> None:
        from convgraph.analysis.stats import summary

        self.figures[graph.graph["tree_id"]] = TreeFigures.of(summary(graph))

    def action_list_help(self) -> None:
        self.say(
            "/ filter by name, enter on ⌕ to search the content · ↑↓ choose"
            " · enter open · esc leave the box · q quit"
        )

    def on_conversation_list_chosen(self, event: ConversationList.Chosen) -> None:
        self.open_tree(event.tree_id, event.node)

    def on_conversation_list_search_asked(
        self, event: ConversationList.SearchAsked
    ) -> None:
        from convgraph.search.index import index_path

        indexing = not index_path(self.logs.source.path).exists()
        self.conversations.searching(event.query, indexing)
        self.search_content(event.query)

    @work(thread=True, exclusive=True, group="search")
    def search_content(self, query: str) -> None:
        """Every conversation's nodes that hold `query`, best first, read off
        the interface's thread (a first search builds the index)."""
        try:
            with self.logs.reopen() as logs:
                hits = logs.search(query, limit=SEARCH_HITS, where=self.where)
        except Exception as error:  # SQLite's, or a cache that cannot be made
            found = f"⚠ {error}"
            self.call_from_thread(self.conversations.show_hits, query, [], found)
            return
        if not hits:
            found = "no node of any conversation holds it"
        else:
            best = "the best " if len(hits) == SEARCH_HITS else ""
            found = (
                f"{best}{counted(len(hits), 'node')}"
                f" ({ON_PATH} on the active path, {ABANDONED} on an abandoned branch)"
            )
        self.call_from_thread(self.conversations.show_hits, query, hits, found)

    def open_tree(self, conversation_id: str, node: str | None = None) -> None:
        """Show a conversation's screen, or say in the status line that it has
        no nodes."""
        row = next(
            (r for r in self.conversations.rows if r.tree_id == conversation_id), None
        )
        if row is not None and row.counted and row.nodes == 0:
            named = f" ({row.name})" if row.name else ""
            self.say(f"{conversation_id}{named} holds no prompt and no answer: 0 nodes")
            return
        self.push_screen(ConversationScreen(conversation_id, node))


def run(
    logs: Logs | Given,
    conversation_id: str | None = None,
    model: str | None = None,
    where: TreeFilter | None = None,
) -> None:
    """Run the browser on `logs` until the user quits."""
    BrowseApp(logs, conversation_id, model, where).run()


__all__ = ["BrowseApp", "run", "write_refusal"]
