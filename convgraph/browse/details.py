"""The browser's details pane: the node under the cursor, or a view of it.

By default the pane shows the node: a header (id, model, tokens, time, note)
and its prompt, system prompt and response, the response rendered as
Markdown. The other views (the branch diff, the siblings' comparison, the key
help, an error or a model's answer) replace it until the cursor moves. Stored
text passes `terminal_text` line by line first: an escape sequence in a
prompt shows as symbols instead of driving the terminal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.markdown import Markdown
from textual.containers import VerticalScroll
from textual.widgets import Static

from convgraph.contract import INTEGER_ATTRIBUTES
from convgraph.text import terminal_text

if TYPE_CHECKING:
    import networkx as nx

    from convgraph.analysis.branch_diff import BranchDiff
    from convgraph.analysis.compare import Comparison


class DetailsPane(VerticalScroll):
    """The header line and the Markdown body of what is shown.

    `title` and `source` hold the plain text of both, as shown.
    """

    DEFAULT_CSS = """
    DetailsPane { padding: 0 1; }
    DetailsPane #details-title { text-style: bold; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.title = ""
        self.source = ""

    def compose(self):  # type: ignore[no-untyped-def]
        yield Static(id="details-title", markup=False)
        # Rich's Markdown in one widget: Textual's Markdown widget makes a
        # widget per block, and laying those out for every node the cursor
        # passes made the tree lag.
        yield Static(id="details-body")

    def show(self, title: str, source: str) -> None:
        """Show a title line and a Markdown body, from the top."""
        self.title = title
        self.source = source
        self.query_one("#details-title", Static).update(title)
        self.query_one("#details-body", Static).update(
            Markdown(source, code_theme="ansi_dark", hyperlinks=False)
        )
        self.scroll_home(animate=False)

    def show_node(self, graph: nx.DiGraph, node: str) -> None:
        """The node's header and texts."""
        self.show(*node_view(graph, node))


def safe(text: str | None) -> str:
    """Stored text for the pane: control characters shown as symbols, line
    by line, so the line breaks of a Markdown answer stay."""
    if not text:
        return ""
    return "\n".join(terminal_text(line) for line in text.expandtabs(4).split("\n"))


def node_view(graph: nx.DiGraph, node: str) -> tuple[str, str]:
    """The title and Markdown body that show one node."""
    data = graph.nodes[node]
    usage = ", ".join(
        f"{key.replace('_', ' ')} {data[key]}"
        for key in INTEGER_ATTRIBUTES
        if data.get(key) is not None
    )
    facts = [
        f"**model** {safe(data.get('model')) or '?'}",
        f"**time** {safe(data.get('datetime_utc')) or '?'}",
    ]
    if usage:
        facts.append(usage)
    if data.get("preferred"):
        facts.append("★ preferred")
    body = ["  \n".join(facts)]
    if data.get("note"):
        body.append(f"**Note:** {safe(data['note'])}")
    if data.get("system"):
        body.append("### System\n\n" + _quoted(data["system"]))
    body.append("### Prompt\n\n" + _quoted(data.get("prompt")))
    body.append("### Response\n\n" + (safe(data.get("response")) or "*(none)*"))
    return terminal_text(node), "\n\n".join(body)


def _quoted(text: str | None) -> str:
    """A prompt as a block quote: it reads as the person's words, and its
    own Markdown does not take over the pane."""
    if not text:
        return "*(none)*"
    return "\n".join("> " + line for line in safe(text).split("\n"))


def diff_view(result: BranchDiff) -> tuple[str, str]:
    """The title and body that show a branch diff (`convgraph.analysis.branch_diff.diff`)."""
    title = f"diff {result.node_a} → {result.node_b}"
    body = [
        f"**fork point** {result.fork_point}  \n"
        f"**a** {' → '.join(result.a) or '(the fork point)'}  \n"
        f"**b** {' → '.join(result.b) or '(the fork point)'}"
    ]
    for step in result.steps:
        a = step.a.id if step.a else "(none)"
        b = step.b.id if step.b else "(none)"
        lines = [f"### Step {step.step}: {a} / {b}"]
        lines.append(
            f"same prompt: {'yes' if step.same_prompt else 'no'}, "
            f"response similarity {step.response_similarity:.2f}"
        )
        changes = step.prompt_diff + step.response_diff
        if changes:
            lines.append("```diff\n" + safe("\n".join(changes)) + "\n```")
        body.append("\n\n".join(lines))
    return terminal_text(title), "\n\n".join(body)


def compare_view(result: Comparison) -> tuple[str, str]:
    """The title and body that show the alternatives below one node
    (`convgraph.analysis.compare.compare`)."""
    title = f"compare the answers below {result.node}"
    if not result.alternatives:
        return terminal_text(title), "*No alternatives: the node has no children.*"
    ids = result.ids
    header = "| id | model | out tokens | length | subtree | " + " | ".join(
        f"~{index + 1}" for index in range(len(ids))
    )
    rows = [header + " |", "|" + "---|" * (5 + len(ids))]
    for alternative in result.alternatives:
        cells = [
            alternative.id,
            safe(alternative.model) or "?",
            _number(alternative.output_tokens),
            _number(alternative.response_length),
            str(alternative.subtree_size),
        ]
        cells += [
            "1.00"
            if other == alternative.id
            else f"{alternative.similarity[other]:.2f}"
            for other in ids
        ]
        rows.append("| " + " | ".join(cells) + " |")
    legend = ", ".join(f"~{index + 1} = {node}" for index, node in enumerate(ids))
    return terminal_text(title), "\n".join(rows) + f"\n\nSimilarity columns: {legend}"


def _number(value: int | None) -> str:
    return "" if value is None else str(value)
