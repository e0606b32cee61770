"""Conversation trees as a Mermaid flowchart, which GitHub draws in Markdown."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from convgraph.export.common import (
    Graphs,
    PathOrFile,
    UniqueIds,
    adjacency,
    as_graphs,
    check_rankdir,
    without_controls,
    write_lines,
)
from convgraph.export.labels import (
    ModelColours,
    branches,
    conversation_title,
    node_label,
)

if TYPE_CHECKING:
    pass

#: Character -> Mermaid entity code, for every character a label escapes.
ENTITIES = {
    '"': "#quot;",
    "#": "#35;",
    "&": "#38;",
    "<": "#60;",
    ">": "#62;",
    "%": "#37;",
    "`": "#96;",
    "\\": "#92;",
    ":": "#58;",
    "\u00b6": "#182;",
    "\ufb02": "#64258;",
}
_ESCAPE = str.maketrans(ENTITIES)

#: Line breaks between a label's lines (Mermaid's own, in any label mode).
LINE_BREAK = "<br>"

#: Node shapes: (opening, closing) around the quoted label.
SHAPES = {"node": ("(", ")"), "branch-point": ("{{", "}}"), "leaf": ("([", "])")}


def quote_label(text: str) -> str:
    """Text as a quoted Mermaid label: the quote, `#`, `&`, `<`, `>`, `%`, the
    backtick, `:` and Mermaid's own entity carriers as entity codes, controls as
    symbols, line breaks as `<br>`."""
    lines = without_controls(
        text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", " ")
    )
    label = LINE_BREAK.join(line.translate(_ESCAPE) for line in lines.split("\n"))
    # Mermaid reads no empty string: an empty label is one space.
    return f'"{label or " "}"'


def generate_mermaid(graphs: Graphs, rankdir: str = "TB") -> Iterator[str]:
    """Yield a Mermaid flowchart of one or several conversations, line by line;
    `rankdir` is "TB", "LR", "BT" or "RL". Raises `ExportError` (an unknown `rankdir`,
    or one node id in two of the conversations)."""
    check_rankdir(rankdir)
    yield f"flowchart {rankdir}"
    classes: dict[Any, str] = {}
    unique = UniqueIds()
    count = 0
    for index, graph in enumerate(as_graphs(graphs)):
        unique.check(graph)
        yield f"  subgraph c{index}[{quote_label(conversation_title(graph))}]"
        ids = {}
        succ, _ = adjacency(graph)
        marked = branches(graph)
        for node, data in graph.nodes(data=True):
            ids[node] = mermaid_id = f"n{count}"
            count += 1
            children = len(succ[node])
            shape = (
                "leaf" if not children else "branch-point" if children > 1 else "node"
            )
            opening, closing = SHAPES[shape]
            model = data.get("model")
            suffix = ""
            if model is not None:
                if model not in classes:
                    classes[model] = f"model{len(classes)}"
                suffix = f":::{classes[model]}"
            label = quote_label(node_label(node, data, marked))
            yield f"    {mermaid_id}{opening}{label}{closing}{suffix}"
        for parent, child in graph.edges():
            yield f"    {ids[parent]} --> {ids[child]}"
        yield "  end"
    colour = ModelColours()
    for model, name in classes.items():
        yield f"  classDef {name} fill:{colour(model)},stroke:#555,color:#000"


def write_mermaid(
    graphs: Graphs, path_or_file: PathOrFile, rankdir: str = "TB"
) -> None:
    """Write `generate_mermaid(graphs, rankdir)` to a path or an open file."""
    write_lines(generate_mermaid(graphs, rankdir), path_or_file)
