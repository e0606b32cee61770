"""Where a coding agent's subagents start in a tree, for the outputs that
fold them: nodes whose parts carry `sidechain` (the agent's id), the root of
each such subtree being one whose parent is not of the same sidechain."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import networkx as nx


class Subagent(NamedTuple):
    """A subagent's subtree: the agent's id and how many nodes it holds."""

    agent: str
    nodes: int


def sidechain(parts: object) -> str | None:
    """The subagent a node's parts belong to, or None for the main session."""
    if not isinstance(parts, list | tuple):
        return None
    for part in parts:
        agent = part.get("sidechain") if isinstance(part, Mapping) else None
        if agent is not None:
            return str(agent)
    return None


def subagent_roots(tree: nx.DiGraph[Any]) -> dict[str, Subagent]:
    """Each node that starts a subagent's subtree, in node order, with the
    subagent's id and its subtree's node count (one pass from the leaves up)."""
    # The graph's own adjacency: a view a node costs more than the walk.
    above, below = tree.pred, tree.succ
    agents = {node: sidechain(parts) for node, parts in tree.nodes(data="parts")}
    starts = [
        node
        for node, agent in agents.items()
        if agent is not None and agents.get(next(iter(above[node]), None)) != agent
    ]
    if not starts:
        return {}
    order = [node for node in tree if not above[node]]
    for node in order:  # grows as it goes: breadth first, no recursion
        order.extend(below[node])
    size = dict.fromkeys(order, 1)
    for node in reversed(order):
        for child in below[node]:
            size[node] += size[child]
    return {node: Subagent(str(agents[node]), size.get(node, 1)) for node in starts}
