"""`convgraph browse`'s screen of one conversation: the tree on the left, the
details pane on the right, keys that call the library. The tree is read
again after a write; failures end as a message in the pane, never a traceback."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, cast

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import Input, Label, Static

from convgraph.browse.details import (
    DetailsPane,
    compare_view,
    diff_view,
    safe,
    transcript_view,
)
from convgraph.browse.tree_view import TreeView
from convgraph.errors import ConvgraphError
from convgraph.model import tree as operations
from convgraph.text import excerpt, terminal_text

if TYPE_CHECKING:
    import networkx as nx

    from convgraph.browse.app import BrowseApp

HELP = """\
| key | does |
|---|---|
| ↑ ↓ or k j | previous or next line |
| ← → or h l | parent, first child |
| `[` `]` | previous or next sibling (the alternative answers; a root's are the other roots) |
| space, enter | fold or unfold the subtree (an agent's subagent starts folded, "⤷ subagent AGENT: N nodes": enter or → opens it) |
| `i` | show or hide the node ids (as short as is unique in the tree, 12 characters at least: a unique prefix does for an id; the pane shows it whole) |
| `/` then `n` | search prompts and responses; next hit |
| `m` then `d` | mark a node; diff its branch with the cursor's |
| `c` | compare the cursor's siblings |
| `e` | show or fold the model's reasoning in the details |
| `t` | transcript down to the cursor |
| `b` | branch: a new prompt after the cursor |
| `r` | regenerate the cursor's answer |
| `N` | write the cursor's note (an empty note clears it) |
| `p` | mark the cursor's answer preferred, or unmark it |
| tab | to the details pane and back (to scroll a long answer) |
| escape | from a view (transcript, diff, comparison, these keys) back to the node; from the node back to the conversation list |
| `q` | quit |
"""

#: Seconds the cursor rests before the details pane follows a fast cursor.
DETAILS_DELAY = 0.15

#: Seconds between redraws of an answer streaming in.
STREAM_REDRAW_SECONDS = 0.1

KEY_HINTS = "? keys  / search  m mark  d diff  c compare  b branch  esc list  q quit"


def streaming_view(jobs: list[Any], prompt: str | None = None) -> str:
    """The pane's body while answers stream in: the prompt, then per request
    its state and the text so far, shown safely."""
    parts = [] if prompt is None else [f"> {safe(prompt)}"]
    for job in jobs:
        parts.append(f"*{job.label}: {job.state}, {job.characters} characters*")
        if job.pieces:
            parts.append(safe(job.text))
    return "\n\n".join(parts)


class PromptScreen(ModalScreen[str | None]):
    """A one-line box: enter gives the text stripped, escape None."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    PromptScreen { align: center middle; }
    PromptScreen > Vertical {
        width: 70; height: auto; border: thick $primary; background: $surface;
    }
    """

    def __init__(
        self, title: str, value: str = "", placeholder: str = "Prompt, then enter"
    ) -> None:
        super().__init__()
        self.heading, self.value, self.placeholder = title, value, placeholder

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(terminal_text(self.heading), markup=False)
            yield Input(self.value, placeholder=self.placeholder, id="prompt")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConversationScreen(Screen[None]):
    """One conversation: the tree on the left, the details on the right."""

    BINDINGS = [
        Binding("escape", "back", "List"),
        Binding("slash", "search", "Search"),
        Binding("n", "next_hit", "Next hit"),
        Binding("m", "mark", "Mark"),
        Binding("d", "diff", "Diff"),
        Binding("c", "compare", "Compare"),
        Binding("e", "reasoning", "Reasoning"),
        Binding("question_mark", "help", "Keys"),
        Binding("b", "branch", "Branch"),
        Binding("t", "transcript", "Transcript"),
        Binding("r", "regenerate", "Regenerate"),
        Binding("N", "note", "Note"),
        Binding("p", "prefer", "Prefer"),
    ]

    # The details keep at least 37 cells: a 32-cell code line in Rich's padded
    # block beside a scrollbar.
    DEFAULT_CSS = """
    ConversationScreen #title { height: 1; background: $primary; color: $text; }
    ConversationScreen #panes { height: 1fr; }
    ConversationScreen TreeView { width: 3fr; }
    ConversationScreen DetailsPane {
        width: 2fr; min-width: 37; border-left: solid $primary;
        padding: 0 0 0 1; scrollbar-size-vertical: 1;
    }
    ConversationScreen #search { display: none; }
    ConversationScreen #search.open { display: block; }
    ConversationScreen #status { height: 1; background: $panel; }
    """

    def __init__(self, tree_id: str, node: str | None = None) -> None:
        super().__init__()
        self.tree_id = tree_id
        #: The node to open at (a search's hit), else where the user left it.
        self.start_node = node
        self.graph: nx.DiGraph[str] | None = None
        self.hits: list[str] = []
        self.query_text = ""
        self._details_timer: Any = None
        self._details_shown = 0.0
        #: Whether the pane shows a view: escape closes it first.
        self.view_open = False
        self._notes_lock = threading.Lock()

    def compose(self) -> ComposeResult:
        yield Static(terminal_text(self.tree_id), id="title", markup=False)
        with Horizontal(id="panes"):
            yield TreeView(id="tree")
            yield DetailsPane(id="details")
        yield Input(placeholder="Search prompts and responses", id="search")
        yield Static(f"reading {self.tree_id}…", id="status", markup=False)

    def on_mount(self) -> None:
        # Reopened, the tree puts the cursor back where the user left it.
        self.load(self.start_node or self.browser.cursors.get(self.tree_id))

    @property
    def browser(self) -> BrowseApp:
        return cast("BrowseApp", self.app)

    def read_tree(self) -> nx.DiGraph[str]:
        """This tree read alone, through this thread's own handle."""
        with self.browser.logs.reopen() as logs:
            return logs.tree(self.tree_id)

    @work(thread=True, exclusive=True, group="tree")
    def load(self, node: str | None = None) -> None:
        """Read this tree off the interface's thread; show it at `node`."""
        try:
            graph = self.read_tree()
        except Exception as error:  # SQLite's own errors too: one line, not an exit
            self.app.call_from_thread(self._failed, str(error))
            return
        self.app.call_from_thread(self.show_tree, graph, node)

    def _failed(self, message: str) -> None:
        if self.is_attached:
            self.show_problem(message)
            self.say("escape: back to the list")

    # Textual's DOMNode.tree is a debugging drawing; here, the tree view.
    @property
    def tree(self) -> TreeView:  # type: ignore[override]
        return self.query_one(TreeView)

    @property
    def details(self) -> DetailsPane:
        return self.query_one(DetailsPane)

    def say(self, message: str) -> None:
        self.query_one("#status", Static).update(terminal_text(message))

    def show_tree(self, graph: nx.DiGraph[str], node: str | None = None) -> None:
        """Draw a freshly read tree, the cursor on `node` (or the first root)."""
        if not self.is_attached:  # the user left before the read ended
            return
        self.graph = graph
        name = graph.graph.get("name")
        title = graph.graph["tree_id"] + (f"  {excerpt(name, 50)}" if name else "")
        self.query_one("#title", Static).update(terminal_text(title))
        self.tree.show(graph, node)
        self.tree.focus()
        self.say(KEY_HINTS)
        self.browser.tree_opened(graph)

    def on_tree_view_moved(self, event: TreeView.Moved) -> None:
        """Show the node after a pause, else when the keys rest: a long Markdown
        answer takes longer to lay out than a held key's repeat."""
        self.browser.cursors[self.tree_id] = event.node
        self._stop_timer()
        if time.monotonic() - self._details_shown > DETAILS_DELAY:
            self._show_details()
        else:
            self._details_timer = self.set_timer(DETAILS_DELAY, self._show_details)

    def show_view(self, title: str, source: str) -> None:
        """Show a view in the pane, replacing a node waiting to be shown."""
        self._stop_timer()
        self.view_open = True
        self.details.show(title, source)

    def _stop_timer(self) -> None:
        if self._details_timer is not None:
            self._details_timer.stop()
            self._details_timer = None

    def show_stream(self, title: str, source: str) -> None:
        """Show an answer streaming in, its newest text in sight."""
        self.show_view(title, source)
        self.details.scroll_end(animate=False)

    def show_problem(self, message: str) -> None:
        """A problem in the pane, in one line."""
        self.show_view("⚠ " + terminal_text(message), "")

    def _show_details(self) -> None:
        self._details_timer = None
        self._details_shown = time.monotonic()
        self.view_open = False
        if self.graph is not None and self.tree.node is not None:
            self.details.show_node(self.graph, self.tree.node)

    def action_back(self) -> None:
        """Escape steps back one level: search box, view, tree, list."""
        if self.query_one("#search", Input).has_class("open"):
            self._close_search()
            return
        if self.view_open and self.graph is not None:
            self._show_details()
            self.tree.focus()
            return
        self.app.pop_screen()

    def action_search(self) -> None:
        box = self.query_one("#search", Input)
        box.add_class("open")
        box.value = ""
        box.focus()

    def _close_search(self) -> None:
        self.query_one("#search", Input).remove_class("open")
        self.tree.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._close_search()
        self.find(event.value)

    def find(self, wanted: str) -> None:
        """Every node whose texts hold `wanted` (any case), in drawing order."""
        if self.graph is None or not wanted:
            return
        self.query_text = wanted
        needle = wanted.lower()
        order = [node for node, _ in self.tree._drawn if node is not None]
        self.hits = [
            node
            for node in order
            if needle in (self.graph.nodes[node].get("prompt") or "").lower()
            or needle in (self.graph.nodes[node].get("response") or "").lower()
        ]
        if not self.hits:
            self.say(f"no node holds {wanted!r}")
            return
        position = order.index(self.tree.node) if self.tree.node in order else 0
        after = [hit for hit in self.hits if order.index(hit) >= position]
        self._go_to_hit((after or self.hits)[0])

    def action_next_hit(self) -> None:
        if not self.hits:
            self.say("no search yet: / to search")
            return
        index = self.hits.index(self.tree.node) if self.tree.node in self.hits else -1
        self._go_to_hit(self.hits[(index + 1) % len(self.hits)])

    def _go_to_hit(self, node: str) -> None:
        self.tree.move_to(node)
        number = self.hits.index(node) + 1
        self.say(f"{self.query_text!r}: hit {number} of {len(self.hits)} (n: next)")

    def action_mark(self) -> None:
        self.tree.mark = self.tree.node
        self.tree.refresh()
        self.say(f"marked {self.tree.node}: move, then d to diff")

    def action_diff(self) -> None:
        from convgraph.analysis.branch_diff import diff

        if self.graph is None or self.tree.node is None:
            return
        if self.tree.mark is None:
            self.show_problem("mark a node first (m), then move and press d")
            return
        try:
            result = diff(self.graph, self.tree.mark, self.tree.node)
        except ConvgraphError as error:
            self.show_problem(str(error))
            return
        self.show_view(*diff_view(result))

    def action_compare(self) -> None:
        from convgraph.analysis.compare import compare

        if self.graph is None or self.tree.node is None:
            return
        above = operations.parent(self.graph, self.tree.node)
        if above is None and len(operations.roots(self.graph)) < 2:
            self.show_problem("a root has no siblings to compare")
            return
        # A root's alternatives are the other roots: compare(None) compares them.
        self.show_view(*compare_view(compare(self.graph, above)))

    def action_reasoning(self) -> None:
        """Unfold the reasoning of the nodes shown, or fold it again."""
        self.details.reasoning_open = not self.details.reasoning_open
        self._show_details()

    def action_help(self) -> None:
        self.show_view("Keys", HELP)

    def action_transcript(self) -> None:
        """The path from the cursor's root down to it, as Markdown."""
        from convgraph.model.tree import path
        from convgraph.present.transcript import Transcript

        if self.graph is None or self.tree.node is None:
            return
        node = self.tree.node
        text = transcript_view(
            safe(Transcript(self.graph, path(self.graph, node)).markdown())
        )
        self.show_view(f"transcript to {terminal_text(node)}", text)

    def action_note(self) -> None:
        """Edit the cursor's note in a box; an empty note clears it (`set_note`
        says why where it cannot write)."""
        if self.graph is None or self.tree.node is None:
            return
        node = self.tree.node
        current = self.graph.nodes[node].get("note") or ""

        def written(text: str | None) -> None:
            if text is not None:  # None: escape
                self.run_notes(node, note=text or None)

        box = PromptScreen(
            f"Note on {node}", current, "Note, then enter (empty: no note)"
        )
        self.app.push_screen(box, written)

    def action_prefer(self) -> None:
        """Toggle the cursor's answer as preferred among its alternatives."""
        if self.graph is None or self.tree.node is None:
            return
        node = self.tree.node
        self.run_notes(node, preferred=not self.graph.nodes[node].get("preferred"))

    @work(thread=True, group="notes")
    def run_notes(
        self, node: str, note: str | None = None, preferred: bool | None = None
    ) -> None:
        """Write a note (`preferred` None) or a preferred mark, then reread the
        tree. Not exclusive, so quick writes all land; a lock keeps their order."""
        with self._notes_lock:
            self._write_notes(node, note, preferred)

    def _write_notes(self, node: str, note: str | None, preferred: bool | None) -> None:
        from convgraph.store.notes import set_note, set_preferred

        app = self.browser
        path = app.logs.source.path
        try:
            if preferred is None:
                written = set_note(node, note, path)
                done = f"note on {node} " + (
                    f"written to {written.name}" if note else "cleared"
                )
            else:
                cleared = set_preferred(node, preferred, path)
                done = f"{node} {'preferred' if preferred else 'no longer preferred'}"
                if cleared:
                    done += f"; unmarked {', '.join(cleared)}"
            graph = self.read_tree()
        except Exception as error:  # SQLite's own errors too: one line, not an exit
            app.call_from_thread(self.show_problem, str(error))
            return
        app.call_from_thread(self.show_tree, graph, node)
        app.call_from_thread(self.say, done)

    def action_regenerate(self) -> None:
        """Ask the cursor's prompt again: the answer is its sibling."""
        if not self._refused() and self.tree.node is not None:
            self.show_view(f"regenerating {self.tree.node}…", "")
            self.run_branch(self.tree.node, None)

    def _refused(self) -> bool:
        """Whether writes are refused (said in the pane)."""
        if self.browser.refusal:
            self.show_problem(self.browser.refusal)
        return bool(self.browser.refusal)

    def action_branch(self) -> None:
        node = self.tree.node
        if self._refused() or node is None:
            return

        def asked(prompt: str | None) -> None:
            if prompt:
                self.show_view(f"branching from {node}…", f"> {prompt}")
                self.run_branch(node, prompt)

        self.app.push_screen(PromptScreen(f"Branch from {node}"), asked)

    @work(thread=True, exclusive=True, group="write")
    def run_branch(self, node: str, prompt: str | None) -> None:
        """Ask the model off the interface's thread and log its answer: a child
        of `node` for a new prompt (`fan_out`), else `node`'s sibling
        (`regenerate`); the pane follows it streaming, then the tree rereads."""
        from convgraph.store import fan_out, regenerate
        from convgraph.store.branch import single_answer

        app = self.browser
        path = app.logs.source.path
        models = [app.model] if app.model else []
        title = f"regenerating {node}…" if prompt is None else f"branching from {node}…"
        shown = [0.0]

        def progress(jobs: list[Any]) -> None:
            # The pane need not redraw per chunk faster than the eye reads.
            if time.monotonic() - shown[0] < STREAM_REDRAW_SECONDS:
                return
            shown[0] = time.monotonic()
            app.call_from_thread(self.show_stream, title, streaming_view(jobs, prompt))

        try:
            if prompt is None:
                result = regenerate(node, path, models=models, on_change=progress)
            else:
                result = fan_out(node, prompt, path, models=models, on_change=progress)
            logged = single_answer(result)
            graph = self.read_tree()
        except ConvgraphError as error:
            app.call_from_thread(self.show_problem, str(error))
            return
        except Exception as error:  # a model plugin's own failure
            message = f"the model failed: {type(error).__name__}: {error}"
            app.call_from_thread(self.show_problem, message)
            return
        app.call_from_thread(self.show_tree, graph, logged.node_id)


__all__ = ["ConversationScreen", "PromptScreen", "streaming_view"]
