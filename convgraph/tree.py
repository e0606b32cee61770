"""The design notes' tree operations, on one conversation's DiGraph.

Plain functions of a graph, `f(tree, node) -> value`, as networkx's own
algorithms are. Every one is iterative and linear in the size of the tree at
most, so a 100,000-deep chain is as easy as a short one. The trees come from
`convgraph.forest`: edges run parent -> child, nodes and successors are in log
order, and every node has at most one parent.

Examples
--------
>>> import networkx as nx
>>> tree = nx.DiGraph([("root", "a"), ("root", "b"), ("a", "c")])
>>> path(tree, "c")
['root', 'a', 'c']
>>> depth(tree, "c")
2
>>> siblings(tree, "a")
['b']
>>> leaves(tree)
['b', 'c']
>>> branching_factor(tree)
(1.5, 2)
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from convgraph.errors import UnknownNode

if TYPE_CHECKING:
    import networkx as nx


def _known(tree: nx.DiGraph, node: str) -> None:
    if node not in tree:
        raise UnknownNode(node)


def children(tree: nx.DiGraph, node: str) -> list[str]:
    """The node's direct children, in log order."""
    _known(tree, node)
    return list(tree.successors(node))


def parent(tree: nx.DiGraph, node: str) -> str | None:
    """The node's parent, or None for a root."""
    _known(tree, node)
    return next(iter(tree.predecessors(node)), None)


def siblings(tree: nx.DiGraph, node: str) -> list[str]:
    """The other children of the node's parent, in log order.

    Roots have no siblings: separate starting points of a conversation are not
    alternatives to one another.
    """
    above = parent(tree, node)
    if above is None:
        return []
    return [child for child in tree.successors(above) if child != node]


def path(tree: nx.DiGraph, node: str) -> list[str]:
    """The ids from the node's root down to the node itself."""
    _known(tree, node)
    ancestors = [node]
    while (above := next(iter(tree.predecessors(ancestors[-1])), None)) is not None:
        ancestors.append(above)
    ancestors.reverse()
    return ancestors


def ancestors(tree: nx.DiGraph, node: str) -> list[str]:
    """The node's ancestors, nearest first (the seed's path to root, without
    the node)."""
    return path(tree, node)[-2::-1]


def descendants(tree: nx.DiGraph, node: str) -> list[str]:
    """Every node below `node`, breadth first, each level in log order."""
    _known(tree, node)
    found = []
    queue = deque(tree.successors(node))
    while queue:
        current = queue.popleft()
        found.append(current)
        queue.extend(tree.successors(current))
    return found


def subtree(tree: nx.DiGraph, node: str) -> nx.DiGraph:
    """The node and everything below it, as a graph of its own, in log order.

    Built node by node rather than with `tree.subgraph`, whose views iterate a
    small selection in set order and would lose the log order.
    """
    keep = {node, *descendants(tree, node)}
    below = tree.__class__()
    below.graph.update(tree.graph)
    below.add_nodes_from((n, tree.nodes[n]) for n in tree if n in keep)
    below.add_edges_from((p, c) for p, c in tree.edges if c in keep and c != node)
    return below


def depth(tree: nx.DiGraph, node: str) -> int:
    """How many links lie between the node and its root (a root is 0)."""
    return len(path(tree, node)) - 1


def depths(tree: nx.DiGraph) -> dict[str, int]:
    """Every node's depth, in one pass from the roots."""
    found: dict[str, int] = {}
    queue = deque((root, 0) for root in roots(tree))
    while queue:
        node, level = queue.popleft()
        found[node] = level
        queue.extend((child, level + 1) for child in tree.successors(node))
    return found


def roots(tree: nx.DiGraph) -> list[str]:
    """The nodes without a parent, in log order."""
    return [node for node, degree in tree.in_degree() if degree == 0]


def leaves(tree: nx.DiGraph) -> list[str]:
    """The nodes without children, in log order: the tips of the branches."""
    return [node for node, degree in tree.out_degree() if degree == 0]


def branch_points(tree: nx.DiGraph) -> list[str]:
    """The nodes with more than one child: where the conversation forked."""
    return [node for node, degree in tree.out_degree() if degree > 1]


def tree_size(tree: nx.DiGraph, root: str | None = None) -> int:
    """How many nodes the tree holds, or the subtree under `root` holds."""
    if root is None:
        return tree.number_of_nodes()
    return 1 + len(descendants(tree, root))


def branching_factor(tree: nx.DiGraph) -> tuple[float, int]:
    """Average and maximum number of children over the nodes that have any.

    A tree without links has neither: (0.0, 0).
    """
    counts = [degree for _, degree in tree.out_degree() if degree > 0]
    if not counts:
        return 0.0, 0
    return sum(counts) / len(counts), max(counts)


def branches(tree: nx.DiGraph) -> list[list[str]]:
    """Every root-to-leaf path, in the log order of the leaves."""
    return [path(tree, leaf) for leaf in leaves(tree)]


def summary(tree: nx.DiGraph) -> dict[str, Any]:
    """The conversation's statistics in one dict (the seed's summary)."""
    levels = depths(tree)
    average, most = branching_factor(tree)
    models = list(dict.fromkeys(m for _, m in tree.nodes(data="model") if m))
    return {
        "conversation_id": tree.graph.get("conversation_id"),
        "name": tree.graph.get("name"),
        "nodes": tree.number_of_nodes(),
        "roots": len(roots(tree)),
        "leaves": len(leaves(tree)),
        "max_depth": max(levels.values(), default=0),
        "branch_points": len(branch_points(tree)),
        "branching_factor_avg": average,
        "branching_factor_max": most,
        "models": models,
    }
