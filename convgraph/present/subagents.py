"""Where a coding agent's subagents start in a tree, for the outputs that
fold them (the HTML explorer, the browser's tree).

A subagent's nodes are those whose parts carry the key `sidechain` (the
agent's id, set by the agents' readers); its subtree hangs under the node of
the Task call that started it. The root of such a subtree is a sidechain node
whose parent is not of the same sidechain. The walk keeps its own stack: no
recursion, however deep the tree.

Examples
--------
>>> import networkx as nx
>>> tree = nx.DiGraph([("a", "x"), ("x", "y"), ("a", "b")])
>>> nx.set_node_attributes(tree, {"a": [{"type": "text"}], "b": [],
...     "x": [{"type": "text", "sidechain": "ag1"}],
...     "y": [{"type": "text", "sidechain": "ag1"}]}, "parts")
>>> subagent_roots(tree)
{'x': Subagent(agent='ag1', nodes=2)}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import networkx as nx


class Subagent(NamedTuple):
    """A subagent's subtree: the agent's id and how many nodes it holds."""

    agent: str
    nodes: int


def sidechain(parts: Iterable[Mapping[str, Any]] | None) -> str | None:
    """The subagent a node's parts belong to (their `sidechain`), or None
    for a node of the main session."""
    for part in parts or ():
        agent = part.get("sidechain") if isinstance(part, Mapping) else None
        if agent is not None:
            return str(agent)
    return None


def subagent_roots(tree: nx.DiGraph) -> dict[str, Subagent]:
    """Each node that starts a subagent's subtree, in the tree's node
    order, with the subagent's id and the count of the subtree's nodes."""
    agents = {node: sidechain(tree.nodes[node].get("parts")) for node in tree}
    starts: dict[str, Subagent] = {}
    for node, agent in agents.items():
        if agent is None:
            continue
        above = next(iter(tree.predecessors(node)), None)
        if above is not None and agents[above] == agent:
            continue
        count, stack = 0, [node]
        while stack:
            count += 1
            stack.extend(tree.successors(stack.pop()))
        starts[node] = Subagent(agent, count)
    return starts
