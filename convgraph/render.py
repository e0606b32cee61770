"""A conversation tree as text, drawn with box-drawing characters.

The seed's `print_tree`: one line per node, its id and an excerpt of its
prompt, children indented under their parent in log order. The walk keeps its
own stack, so a 100,000-deep chain draws without touching the recursion limit.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import networkx as nx

EXCERPT_WIDTH = 60


def excerpt(text: str | None, width: int = EXCERPT_WIDTH) -> str:
    """The text on one line, cut to `width` characters with an ellipsis."""
    if not text:
        return ""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def generate_tree_lines(
    tree: nx.DiGraph, start: str | None = None, width: int = EXCERPT_WIDTH
) -> Iterator[str]:
    """Yield the drawing line by line: every root's tree, or `start`'s subtree.

    Examples
    --------
    >>> import networkx as nx
    >>> tree = nx.DiGraph([("r", "a"), ("r", "b"), ("a", "c")])
    >>> print("\\n".join(generate_tree_lines(tree)))
    r
    ├── a
    │   └── c
    └── b
    """
    starts = (
        [start] if start is not None else [n for n, d in tree.in_degree() if d == 0]
    )
    for root in starts:
        # Each stack entry: the node, the prefix drawn before its connector,
        # and whether it is its parent's last child (None for the root).
        stack: list[tuple[str, str, bool | None]] = [(root, "", None)]
        while stack:
            node, prefix, last = stack.pop()
            label = _label(tree, node, width)
            if last is None:
                yield label
                child_prefix = ""
            else:
                yield f"{prefix}{'└── ' if last else '├── '}{label}"
                child_prefix = prefix + ("    " if last else "│   ")
            below = list(tree.successors(node))
            for index in range(len(below) - 1, -1, -1):
                stack.append((below[index], child_prefix, index == len(below) - 1))


def render_tree(
    tree: nx.DiGraph, start: str | None = None, width: int = EXCERPT_WIDTH
) -> str:
    """The whole drawing as one string (see `generate_tree_lines`)."""
    return "\n".join(generate_tree_lines(tree, start, width))


def _label(tree: nx.DiGraph, node: str, width: int) -> str:
    text = excerpt(tree.nodes[node].get("prompt"), width)
    return f"{node}  {text}" if text else str(node)
