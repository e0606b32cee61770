"""What every drawing of a tree shows the same way: a node's label and
tooltip, a conversation's title, and the fill colour of each model.

The DOT export (`convgraph.export.dot`) and the Mermaid flowchart
(`convgraph.export.mermaid`) draw the same boxes: id and model, then one-line
excerpts of the prompt (») and the response («), the branch marks, and a
colour per model from one palette in order of first appearance; a tooltip
holds a node's full texts, how many tools its run called, and the ids of the
calls its run folds (`convgraph.export.common.CALLS`), so that every id llm
logged is in the drawing. Each format
quotes the text its own way; what the text says is decided here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from convgraph.contract import TOOL_CALLS, TOOLS
from convgraph.export.common import adjacency
from convgraph.text import excerpt

if TYPE_CHECKING:
    import networkx as nx

#: Characters of prompt and response that a node's label shows.
LABEL_EXCERPT = 40

#: Fill colours, one per model in order of first appearance (ColorBrewer's
#: Set3: light enough for black text); more models than colours reuse them.
PALETTE = (
    "#8dd3c7",
    "#ffffb3",
    "#bebada",
    "#fb8072",
    "#80b1d3",
    "#fdb462",
    "#b3de69",
    "#fccde5",
    "#d9d9d9",
    "#bc80bd",
    "#ccebc5",
    "#ffed6f",
)
NO_MODEL_COLOUR = "white"


def node_label(node_id: Any, data: dict[str, Any], active: bool = False) -> str:
    """The text a node's box shows (before quoting): id and model, then
    one-line excerpts of the prompt (») and the response («). The marks
    follow the first line: ● on the active path (where `active`: in a
    conversation that branches), ★ the preferred answer; a note is a last
    line after ✎.
    """
    model = data.get("model")
    lines = [f"{node_id}  ·  {model}" if model else str(node_id)]
    if active and data.get("active"):
        lines[0] += "  ●"
    if data.get("preferred"):
        lines[0] += "  ★"
    for mark, key in (("»", "prompt"), ("«", "response"), ("✎", "note")):
        text = excerpt(data.get(key), LABEL_EXCERPT)
        if text:
            lines.append(f"{mark} {text}")
    return "\n".join(lines)


def branches(graph: nx.DiGraph[Any]) -> bool:
    """Whether a conversation has more than one branch (a node with several
    children, or several roots): where its active path is worth marking."""
    succ, pred = adjacency(graph)
    roots = sum(1 for node in graph if not pred[node])
    return roots > 1 or any(len(succ[node]) > 1 for node in graph)


def node_tooltip(data: dict[str, Any], folded: Sequence[Any] = ()) -> str:
    """The full texts of a node (before quoting): system, prompt, response,
    how many tools its run called, and which, and the ids of the calls
    its run folds (`folded`: `convgraph.export.common.tree_calls`), where
    there are some.
    """
    texts = [
        f"{key}: {data[key]}"
        for key in ("system", "prompt", "response")
        if data.get(key) is not None
    ]
    calls = data.get(TOOL_CALLS)
    if isinstance(calls, int) and calls > 0:
        tools = data.get(TOOLS)
        texts.append(f"tool calls: {calls}" + (f" ({tools})" if tools else ""))
    if folded:
        texts.append("earlier calls of its run: " + ", ".join(map(str, folded)))
    return "\n\n".join(texts)


def conversation_title(graph: nx.DiGraph[Any]) -> str:
    """A conversation's name and id, as its cluster or graph label says it."""
    tree_id = graph.graph.get("tree_id")
    name = graph.graph.get("name")
    if name and tree_id is not None:
        return f"{excerpt(name, LABEL_EXCERPT)}  ({tree_id})"
    return str(name or tree_id or "")


class ModelColours:
    """The fill colour of each model, from `PALETTE` in order of first
    appearance (more models than colours reuse them); `NO_MODEL_COLOUR` for
    a node without a model.
    """

    def __init__(self) -> None:
        self.colours: dict[Any, str] = {}

    def __call__(self, model: Any) -> str:
        if model is None:
            return NO_MODEL_COLOUR
        if model not in self.colours:
            self.colours[model] = PALETTE[len(self.colours) % len(PALETTE)]
        return self.colours[model]
