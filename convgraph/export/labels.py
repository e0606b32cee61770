"""What every drawing of a tree shows the same way (DOT, Mermaid): a node's
label and tooltip, a conversation's title, and each model's fill colour. Each
format quotes the text its own way; what the text says is decided here."""

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

#: ColorBrewer's Set3, light enough for black text; reused past its end.
PALETTE = tuple(
    "#8dd3c7 #ffffb3 #bebada #fb8072 #80b1d3 #fdb462 #b3de69 #fccde5 #d9d9d9"  # noqa: SIM905 (words)
    " #bc80bd #ccebc5 #ffed6f".split()
)
NO_MODEL_COLOUR = "white"


def node_label(node_id: Any, data: dict[str, Any], active: bool = False) -> str:
    """A node box's text (unquoted): id and model, then one-line excerpts of
    prompt (») and response («); ● marks the active path where `active`, ★ the
    preferred answer; a note is a last line after ✎."""
    model = data.get("model")
    lines = [f"{node_id}  ·  {model}" if model else str(node_id)]
    if active and data.get("active"):
        lines[0] += "  ●"
    if data.get("preferred"):
        lines[0] += "  ★"
    for mark, key in (("»", "prompt"), ("«", "response"), ("✎", "note")):
        if text := excerpt(data.get(key), LABEL_EXCERPT):
            lines.append(f"{mark} {text}")
    return "\n".join(lines)


def branches(graph: nx.DiGraph[Any]) -> bool:
    """Whether a conversation has several branches (where marking its active
    path is worth it)."""
    succ, pred = adjacency(graph)
    roots = sum(1 for node in graph if not pred[node])
    return roots > 1 or any(len(succ[node]) > 1 for node in graph)


def node_tooltip(data: dict[str, Any], folded: Sequence[Any] = ()) -> str:
    """A node's full texts (unquoted): system, prompt, response, the tools its
    run called and the calls it folds (`folded`)."""
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
    """Each model's fill colour from `PALETTE` in order of first appearance;
    `NO_MODEL_COLOUR` without a model."""

    def __init__(self) -> None:
        self.colours: dict[Any, str] = {}

    def __call__(self, model: Any) -> str:
        if model is None:
            return NO_MODEL_COLOUR
        if model not in self.colours:
            self.colours[model] = PALETTE[len(self.colours) % len(PALETTE)]
        return self.colours[model]
