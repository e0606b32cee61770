"""A conversation tree as text, drawn with box-drawing characters.

The `print_tree` of docs/design.md#the-twelve-helpers: one line per node, its
id and an excerpt of its prompt, children under their parent in log order.
Indentation marks branching, not turns: a node that is its parent's only child
is drawn in its parent's column, so a linear run reads as a list and a
100,000-turn chain draws in 100,000 short lines (indenting every turn would
make the drawing quadratic in the depth). `indent_chains=True` indents every
child, as the original notes' `print_tree` did. The walk keeps its own stack,
so depth never touches the recursion limit. Ids and prompts are shown through
`terminal_text`: a stored escape sequence prints as symbols, never as a command
to the terminal.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from convgraph.text import EXCERPT_WIDTH, excerpt, terminal_text

if TYPE_CHECKING:
    import networkx as nx


def generate_tree_lines(
    tree: nx.DiGraph,
    start: str | None = None,
    width: int = EXCERPT_WIDTH,
    indent_chains: bool = False,
    marks: bool = False,
    active: bool = False,
) -> Iterator[str]:
    """Yield the drawing line by line: every root's tree, or `start`'s subtree.

    Several roots are separated by an empty line. With `marks` (as `convgraph
    tree` draws), a node the user marked preferred ends in ` ★`, and a node
    with a note in ` ✎` and the note's first words; with `active`, the nodes
    of the active path (the branch last used) end in ` ●`. Both are off by
    default for callers that mark nodes their own way (the browser).

    Examples
    --------
    >>> import networkx as nx
    >>> tree = nx.DiGraph([("r", "a"), ("a", "b"), ("b", "c"), ("b", "d")])
    >>> print("\\n".join(generate_tree_lines(tree)))
    r
    a
    b
    ├── c
    └── d
    >>> print("\\n".join(generate_tree_lines(tree, indent_chains=True)))
    r
    └── a
        └── b
            ├── c
            └── d
    """
    starts = (
        [start] if start is not None else [n for n, d in tree.in_degree() if d == 0]
    )
    for number, root in enumerate(starts):
        if number:
            yield ""
        # Each entry: the node, the text before its connector, and how it
        # hangs from the line above: ROOT, LAST or MIDDLE child, or ONLY
        # child (drawn in its parent's column unless chains are indented).
        stack: list[tuple[str, str, str]] = [(root, "", ROOT)]
        while stack:
            node, prefix, place = stack.pop()
            label = _label(tree, node, width)
            if marks or active:
                label += _marks(tree.nodes[node], width, marks, active)
            if place in (ROOT, ONLY):
                yield prefix + label
                below_prefix = prefix
            else:
                yield prefix + ("└── " if place == LAST else "├── ") + label
                below_prefix = prefix + ("    " if place == LAST else "│   ")
            below = list(tree.successors(node))
            if len(below) == 1 and not indent_chains:
                stack.append((below[0], below_prefix, ONLY))
                continue
            for index in range(len(below) - 1, -1, -1):
                place = LAST if index == len(below) - 1 else MIDDLE
                stack.append((below[index], below_prefix, place))


ROOT, ONLY, LAST, MIDDLE = "root", "only", "last", "middle"


def render_tree(
    tree: nx.DiGraph,
    start: str | None = None,
    width: int = EXCERPT_WIDTH,
    indent_chains: bool = False,
    marks: bool = False,
    active: bool = False,
) -> str:
    """The whole drawing as one string (see `generate_tree_lines`)."""
    return "\n".join(
        generate_tree_lines(tree, start, width, indent_chains, marks, active)
    )


def _marks(data: dict, width: int, marks: bool, active: bool) -> str:
    """The markers after a node's label: active path, preferred, note."""
    text = ""
    if active and data.get("active"):
        text += " ●"
    if marks and data.get("preferred"):
        text += " ★"
    if marks and data.get("note"):
        text += " ✎ " + terminal_text(excerpt(data["note"], max(width // 2, 1)))
    return text


def _label(tree: nx.DiGraph, node: str, width: int) -> str:
    data = tree.nodes[node]
    text = excerpt(data.get("prompt"), width)
    if not text and data.get("prompt") == "" and data.get("response"):
        # llm logs the call that hands a tool's output back to the model with
        # an empty prompt: say so rather than draw a bare id.
        text = excerpt("(tool result given back) answer: " + data["response"], width)
    return terminal_text(f"{node}  {text}" if text else str(node))
