"""The browser's conversation tree: `convgraph tree`'s drawing as a scrolling
widget that renders only the lines on screen; collapsing hides a subtree's
lines, subagents start folded, prompts are cut at the pane's edge."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from convgraph.browse.strips import fitted
from convgraph.model import tree as operations
from convgraph.present.subagents import Subagent, subagent_roots
from convgraph.present.text_tree import NODE, START, DrawnLine, drawing
from convgraph.text import EXCERPT_WIDTH, cell_width, counted, terminal_text

if TYPE_CHECKING:
    import networkx as nx

#: The fewest characters of a node's id shown (`i`); an llm id's 26 is too wide.
SHORT_ID = 12

MODEL_COLOURS = ("cyan", "magenta", "green", "yellow", "bright_blue", "red")


class TreeView(ScrollView, can_focus=True):
    """One conversation tree, drawn as `convgraph tree` draws it; `node` is
    the node under the cursor, `lines()` the (node id or None, text) shown."""

    BINDINGS = [
        Binding("up,k", "cursor_up", "Up", show=False),
        Binding("down,j", "cursor_down", "Down", show=False),
        Binding("left,h", "parent", "Parent", show=False),
        Binding("right,l", "child", "Child", show=False),
        Binding("left_square_bracket", "sibling(-1)", "Prev sibling", show=False),
        Binding("right_square_bracket", "sibling(1)", "Next sibling", show=False),
        Binding("space,enter", "fold", "Fold", show=False),
        Binding("i", "ids", "Ids", show=False),
        Binding("home", "first", "First", show=False),
        Binding("end", "last", "Last", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
    ]

    DEFAULT_CSS = """
    TreeView { background: $surface; scrollbar-size-horizontal: 0; }
    """

    class Moved(Message):
        """The cursor is on another node."""

        def __init__(self, node: str) -> None:
            super().__init__()
            self.node = node

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.graph: nx.DiGraph[str] | None = None
        self.node: str | None = None
        self.mark: str | None = None
        self.collapsed: set[str] = set()
        #: Subagent roots, and those drawn folded into one line (all, at first).
        self.subagents: dict[str, Subagent] = {}
        self.folded_agents: set[str] = set()
        #: Whether the lines show node ids (off: an llm id takes 26 columns).
        self.show_ids = False
        self._drawn: list[tuple[str | None, str]] = []
        self._without_ids: list[tuple[str | None, str]] = []
        self._kinds: list[str] = []
        self._span: dict[str, int] = {}
        self._subtree_nodes: dict[str, int] = {}
        self._roots: list[str] = []
        self._shown: list[tuple[str | None, str]] = []
        self._shown_kinds: list[str] = []
        self._row: dict[str, int] = {}
        self._colours: dict[str | None, str] = {}
        self._drawn_width = 0

    def show(self, graph: nx.DiGraph[str], node: str | None = None) -> None:
        """Draw `graph`, the cursor on `node` (the first root when None)."""
        self.graph = graph
        self.collapsed = set()
        self.subagents = subagent_roots(graph)
        self.folded_agents = set(self.subagents)
        if self.mark not in graph:
            self.mark = None
        self._draw()
        order = [node for node, _ in self._drawn if node is not None]
        self._layout()
        self.move_to(node if node in graph else (order[0] if order else None))

    def _wanted_width(self) -> int:
        """The cells a prompt may take: the pane's, at least `convgraph tree`'s."""
        return max(EXCERPT_WIDTH, self.size.width or self.app.size.width)

    def _draw(self) -> None:
        if (graph := self.graph) is None:
            return
        self._drawn_width = self._wanted_width()
        lines = list(drawing(graph, width=self._drawn_width))
        drawn = [
            (line.node if line.kind == NODE else None, line.text) for line in lines
        ]
        self._kinds = [line.kind for line in lines]
        self._without_ids = [(node, _without_id(node, line)) for node, line in drawn]
        order = [node for node, _ in drawn if node is not None]
        short = short_ids(order)
        self._drawn = [
            (node, _with_short_id(node, line, short)) for node, line in drawn
        ]
        self._roots = operations.roots(graph)
        self._span, self._subtree_nodes = _subtree_extents(graph, order, lines)
        models = dict.fromkeys(graph.nodes[n]["model"] for n in order)
        self._colours = {
            model: MODEL_COLOURS[index % len(MODEL_COLOURS)]
            for index, model in enumerate(m for m in models if m)
        }

    def on_resize(self) -> None:
        """A pane grown wider than the drawing's prompts draws them again."""
        if self.graph is not None and self._wanted_width() > self._drawn_width:
            self._draw()
            self._layout()

    def lines(self) -> list[tuple[str | None, str]]:
        """The lines shown now (collapsed subtrees left out)."""
        return list(self._shown)

    def _layout(self) -> None:
        drawn = self._drawn if self.show_ids else self._without_ids
        shown: list[tuple[str | None, str]] = []
        kinds = []
        index = 0
        while index < len(drawn):
            node, line = drawn[index]
            kinds.append(self._kinds[index])
            if node is not None and node in self.folded_agents:
                # A subagent's subtree, folded: one line in its root's place.
                shown.append((node, self._subagent_line(node, line)))
                index += self._span[node]
                continue
            shown.append((node, line))
            index += (
                self._span[node] if node is not None and node in self.collapsed else 1
            )
        self._shown, self._shown_kinds = shown, kinds
        self._row = {node: row for row, (node, _) in enumerate(shown) if node}
        # In terminal cells: a prompt in Japanese takes two a character.
        width = max((cell_width(line) for _, line in shown), default=0) + 12
        self.virtual_size = Size(width, len(shown))
        self.refresh()

    def _subagent_line(self, node: str, line: str) -> str:
        """A folded subagent's line: its root's guides, "⤷ subagent AGENT: N nodes"."""
        guides = line[: len(line) - len(line.lstrip("│├└─ "))]
        agent, nodes = self.subagents[node]
        return f"{guides}⤷ subagent {terminal_text(agent)}: {counted(nodes, 'node')}"

    def line_text(self, row: int) -> Text:
        """The `row`th line shown, coloured by model, bold on the active path,
        with its marks and the cursor's highlight."""
        return Text.assemble(*self.line_parts(row))

    def line_parts(self, row: int) -> tuple[Text, Text]:
        """The `row`th line's drawing and marks apart: a drawing too wide is cut
        before its marks, never the marks."""
        node, line = self._shown[row]
        if node is None:
            # The start's line is the conversation's; a call's, its node's.
            style = "bold" if self._shown_kinds[row] == START else "dim"
            return Text(line, style), Text()
        if node in self.folded_agents:
            body, marks = Text(line, "italic"), Text()
        else:
            body, marks = self._styled(node, line), self._marks(node)
        if node == self.node:
            for text in (body, marks):
                text.stylize(Style(reverse=True, bold=True))
        return body, marks

    def render_line(self, y: int) -> Strip:
        row = self.scroll_offset.y + y
        width = self.size.width
        if row >= len(self._shown):
            return Strip.blank(width, self.rich_style)
        body, marks = self.line_parts(row)
        left = self.scroll_offset.x
        shown = body.cell_len - left
        if (
            not marks.cell_len
            or shown + marks.cell_len <= width
            or (marks.cell_len >= width // 2)
        ):
            whole = Text.assemble(body, marks)
            return fitted(whole, self.app.console, left, width, self.rich_style)
        # Cut where the marks begin: a note stays in sight.
        cut = fitted(
            body, self.app.console, left, width - marks.cell_len, self.rich_style
        )
        tail = Strip(list(marks.render(self.app.console)), marks.cell_len)
        return Strip.join([cut, tail.apply_style(self.rich_style)])

    def _styled(self, node: str | None, line: str) -> Text:
        """A node's line coloured by its model, bold on the active path."""
        text = Text(line)
        if node is None or self.graph is None:
            return text
        attributes = self.graph.nodes[node]
        start = len(line) - len(line.lstrip("│├└─ "))
        colour = self._colours.get(attributes.get("model"))
        if start >= 0 and colour:
            text.stylize(colour, start)
        if attributes.get("active"):
            text.stylize("bold", max(start, 0))
        return text

    def _marks(self, node: str) -> Text:
        """A node's marks: ★ preferred, ✎ note, diff, fold count, subagent."""
        text = Text()
        if self.graph is None:
            return text
        attributes = self.graph.nodes[node]
        if attributes.get("preferred"):
            text.append(" ★", "yellow")
        if attributes.get("note"):
            text.append(" ✎", "italic")
        if node == self.mark:
            text.append(" ◆ mark", "bold red")
        if node in self.collapsed:
            text.append(f" ▸ +{self._subtree_nodes[node] - 1}", "dim")
        if node in self.subagents:
            text.append(
                f" ⤷ subagent {terminal_text(self.subagents[node].agent)}", "dim"
            )
        return text

    def move_to(self, node: str | None) -> None:
        """Put the cursor on `node`, unfolding what hides it."""
        if node is None or self.graph is None or node not in self.graph:
            return
        folds = self.collapsed | self.folded_agents
        hidden = folds and [
            n for n in operations.ancestors(self.graph, node) if n in folds
        ]
        if hidden:
            self.collapsed.difference_update(hidden)
            self.folded_agents.difference_update(hidden)
            self._layout()
        self.node = node
        self.scroll_to_region(
            Region(0, self._row[node], 1, 1), animate=False, force=True, immediate=True
        )
        self.refresh()
        self.post_message(self.Moved(node))

    def _step(self, rows: int) -> None:
        if self.node is None:
            return
        row = max(0, min(self._row[self.node] + rows, len(self._shown) - 1))
        # A line that draws no node is stepped over, the way the key goes.
        ahead = 1 if rows > 0 else -1
        for way in (ahead, -ahead):
            at = row
            while 0 <= at < len(self._shown) and self._shown[at][0] is None:
                at += way
            if 0 <= at < len(self._shown):
                self.move_to(self._shown[at][0])
                return

    def action_cursor_up(self) -> None:
        self._step(-1)

    def action_cursor_down(self) -> None:
        self._step(1)

    def action_page(self, pages: int) -> None:
        self._step(pages * max(1, self.size.height - 1))

    def action_first(self) -> None:
        self._step(-len(self._shown))

    def action_last(self) -> None:
        self._step(len(self._shown))

    def action_parent(self) -> None:
        if self.graph is not None and self.node is not None:
            self.move_to(operations.parent(self.graph, self.node))

    def action_child(self) -> None:
        if self.node in self.folded_agents:
            self.action_fold()
        elif self.graph is not None and self.node is not None:
            below = operations.children(self.graph, self.node)
            self.move_to(below[0] if below else None)

    def action_sibling(self, offset: int) -> None:
        """The previous or next alternative, wrapping round."""
        if self.graph is None or self.node is None:
            return
        above = operations.parent(self.graph, self.node)
        group = self._roots if above is None else operations.children(self.graph, above)
        self.move_to(group[(group.index(self.node) + offset) % len(group)])

    def action_ids(self) -> None:
        self.show_ids = not self.show_ids
        self._layout()
        self.move_to(self.node)

    def action_fold(self) -> None:
        """Fold or unfold the cursor's subtree, or a folded subagent's."""
        if self.node in self.folded_agents:
            self.folded_agents.discard(self.node)
        elif self.node is None or self._subtree_nodes.get(self.node, 1) <= 1:
            return
        else:
            self.collapsed.symmetric_difference_update({self.node})
        self._layout()
        self.move_to(self.node)


def short_ids(ids: list[str], fewest: int = SHORT_ID) -> dict[str, str]:
    """Each id's shortest unique prefix, at least `fewest` characters, as git
    abbreviates hashes."""
    ordered = sorted(set(ids))
    shared = [0] * len(ordered)  # characters shared with a neighbour
    for index in range(1, len(ordered)):
        before, after = ordered[index - 1], ordered[index]
        common = len(os.path.commonprefix([before, after]))
        shared[index - 1] = max(shared[index - 1], common)
        shared[index] = max(shared[index], common)
    return {
        node: node[: max(fewest, common + 1)]
        for node, common in zip(ordered, shared, strict=True)
    }


def _with_short_id(node: str | None, line: str, short: dict[str, str]) -> str:
    if node is None or short[node] == node:
        return line
    label = terminal_text(node)
    start = line.find(label)
    return line[:start] + terminal_text(short[node]) + line[start + len(label) :]


def _without_id(node: str | None, line: str) -> str:
    """A drawing's line without its node's id: guides, then the excerpt."""
    if node is None:
        return line
    label = terminal_text(node) + "  "
    start = line.find(label)
    if start < 0:  # no prompt: the id is all the label there is
        return line
    return line[:start] + line[start + len(label) :]


def _subtree_extents(
    graph: nx.DiGraph[str], order: list[str], lines: list[DrawnLine]
) -> tuple[dict[str, int], dict[str, int]]:
    """Each node's subtree's line count (calls included) and node count, in
    one pass over the reversed drawing order."""
    own = dict.fromkeys(order, 0)
    for line in lines:
        if line.node is not None:
            own[line.node] += 1
    span: dict[str, int] = {}
    size: dict[str, int] = {}
    for node in reversed(order):
        below = list(graph.successors(node))
        span[node] = own[node] + sum(span[child] for child in below)
        size[node] = 1 + sum(size[child] for child in below)
    return span, size
