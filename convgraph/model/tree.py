"""The tree operations on one conversation's DiGraph (docs/design.md#the-twelve-helpers).

Plain functions `f(tree, node) -> value`, as networkx's algorithms are;
each is iterative and at most linear in the tree's size.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

import networkx as nx

from convgraph.contract import INTEGER_ATTRIBUTES, NODE_ATTRIBUTES, OPTIONAL_ATTRIBUTES
from convgraph.errors import UnknownNode
from convgraph.links.integrity import ParentWalk
from convgraph.model.marks import mark_tree
from convgraph.text import counted
from convgraph.times import parse_time

if TYPE_CHECKING:
    from convgraph.sources.notes import NodeNote

#: What `node_totals` adds up, in the order of its dict.
TOTAL_KEYS = (
    "nodes",
    "first_datetime",
    "last_datetime",
    "models",
    *INTEGER_ATTRIBUTES,
)


if TYPE_CHECKING:
    # networkx's stubs make DiGraph generic in its node type; the class
    # itself takes no subscript at run time.
    _DiGraphOfIds = nx.DiGraph[str]
else:
    _DiGraphOfIds = nx.DiGraph


class ConversationTree(_DiGraphOfIds):
    """A conversation tree (edges parent -> child; graph attributes `tree_id`, `name`).

    `convgraph.jupyter` registers its pictures with IPython by this class's
    name, so this module imports no display code.
    """

    @classmethod
    def from_edges(
        cls,
        edges: Iterable[tuple[str, str]],
        attributes: Mapping[str, Mapping[str, Any]] | None = None,
        tree_id: str = "c",
        name: str | None = None,
    ) -> ConversationTree:
        """A small tree from parent -> child links, for examples and tests.

        Nodes go in in order of first appearance (the log order), each with
        every contract attribute: None unless `attributes[node]` gives it.
        """
        tree = cls(tree_id=tree_id, name=name)
        edges = list(edges)
        attributes = attributes or {}
        order = dict.fromkeys(node for edge in edges for node in edge)
        order.update(dict.fromkeys(attributes))
        for node in order:
            data = dict.fromkeys(NODE_ATTRIBUTES)
            data.update(attributes.get(node, {}))
            tree.add_node(node, **data)
        tree.add_edges_from(edges)
        return tree

    @classmethod
    def from_records(
        cls,
        records: Iterable[Mapping[str, Any]],
        parents: Mapping[str, str | None],
        tree_id: str,
        name: str | None = None,
        notes: Mapping[str, NodeNote] | None = None,
        calls: Mapping[str, str] | None = None,
    ) -> ConversationTree:
        """One tree from a source's records (log order) and their checked parents.

        `calls` maps each call inside a run to its node (the graph's `calls`);
        the branch attributes come from `mark_tree` with `notes`.
        """
        records = list(records)
        # After the contract's, as the exports write other attributes.
        keys = (
            *NODE_ATTRIBUTES,
            *(key for key in OPTIONAL_ATTRIBUTES if records and key in records[0]),
        )
        graph = cls.from_columns(
            [record["id"] for record in records],
            [parents[record["id"]] for record in records],
            [{key: record.get(key) for key in keys} for record in records],
            tree_id,
            name,
            calls,
        )
        mark_tree(graph, notes)
        return graph

    @classmethod
    def from_columns(
        cls,
        ids: list[str],
        parent_ids: list[str | None],
        attributes: list[dict[str, Any]],
        tree_id: str,
        name: str | None = None,
        calls: Mapping[str, str] | None = None,
    ) -> ConversationTree:
        """`from_records` without the marks, from columns in log order (a
        forest's table, whose marks are set already)."""
        graph = cls(tree_id=tree_id, name=name)
        graph.add_nodes_from(zip(ids, attributes, strict=True))
        graph.add_edges_from(
            (parent, node)
            for node, parent in zip(ids, parent_ids, strict=True)
            if parent is not None
        )
        if calls:
            graph.graph["calls"] = dict(calls)
        return graph

    def __repr__(self) -> str:
        roots = sum(1 for _, degree in self.in_degree() if degree == 0)
        leaves = sum(1 for _, degree in self.out_degree() if degree == 0)
        name = self.graph.get("name")
        named = f" ({name})" if name else ""
        return (
            f"<{type(self).__name__} {self.graph.get('tree_id')!r}{named}:"
            f" {counted(self.number_of_nodes(), 'node')}, {counted(roots, 'root')},"
            f" {counted(leaves, 'leaf', 'leaves')}>"
        )


def node_of(tree: nx.DiGraph[str], node: str) -> str:
    """`node` itself, or the run's node for a call inside a run; UnknownNode if neither."""
    if node in tree:
        return node
    found = tree.graph.get("calls", {}).get(node)
    if found is None or found not in tree:
        raise UnknownNode(node)
    return str(found)


def run_calls(tree: nx.DiGraph[str], node: str) -> list[str]:
    """The ids of the calls inside the node's run before its own (empty for one call)."""
    node = node_of(tree, node)
    return [
        call for call, owner in tree.graph.get("calls", {}).items() if owner == node
    ]


def children(tree: nx.DiGraph[str], node: str) -> list[str]:
    """The node's children, in log order; UnknownNode if it is not in the tree."""
    return list(tree.successors(node_of(tree, node)))


def parent(tree: nx.DiGraph[str], node: str) -> str | None:
    """The node's parent, or None for a root."""
    return next(iter(tree.predecessors(node_of(tree, node))), None)


def siblings(tree: nx.DiGraph[str], node: str) -> list[str]:
    """The other children of the node's parent, or for a root the other roots."""
    node = node_of(tree, node)
    return [other for other in alternatives(tree, parent(tree, node)) if other != node]


def alternatives(tree: nx.DiGraph[str], point: str | None) -> list[str]:
    """The children of `point`, or the roots where `point` is None (the start)."""
    return roots(tree) if point is None else children(tree, point)


def path(tree: nx.DiGraph[str], node: str) -> list[str]:
    """The ids from the node's root down to the node itself."""
    node = node_of(tree, node)
    walk = ParentWalk(node, lambda below: next(iter(tree.predecessors(below)), None))
    return list(walk)[::-1]


def ancestors(tree: nx.DiGraph[str], node: str) -> list[str]:
    """The node's ancestors, nearest first."""
    return path(tree, node)[-2::-1]


def descendants(tree: nx.DiGraph[str], node: str) -> list[str]:
    """Every node below `node`, breadth first, each level in log order."""
    return [child for _, child in nx.bfs_edges(tree, node_of(tree, node))]


def subtree(tree: nx.DiGraph[str], node: str) -> nx.DiGraph[str]:
    """The node and everything below it, as a graph of its own, in log order."""
    # Not `tree.subgraph`: its views iterate in set order, losing the log order.
    node = node_of(tree, node)
    keep = {node, *descendants(tree, node)}
    below = tree.__class__()
    below.graph.update(tree.graph)
    below.add_nodes_from((n, tree.nodes[n]) for n in tree if n in keep)
    below.add_edges_from((p, c) for p, c in tree.edges if c in keep and c != node)
    return below


def depth(tree: nx.DiGraph[str], node: str) -> int:
    """How many links lie between the node and its root (a root is 0)."""
    return len(path(tree, node)) - 1


def depths(tree: nx.DiGraph[str]) -> dict[str, int]:
    """Every node's depth, in log order."""
    found = dict.fromkeys(roots(tree), 0)
    for root in list(found):
        for above, below in nx.bfs_edges(tree, root):
            found[below] = found[above] + 1
    return {node: found[node] for node in tree if node in found}


def roots(tree: nx.DiGraph[str]) -> list[str]:
    """The nodes without a parent, in log order."""
    return [node for node, degree in tree.in_degree() if degree == 0]


def leaves(tree: nx.DiGraph[str]) -> list[str]:
    """The nodes without children, in log order: the tips of the branches."""
    return [node for node, degree in tree.out_degree() if degree == 0]


def branch_points(tree: nx.DiGraph[str]) -> list[str | None]:
    """The start (None) where there are several roots, then nodes with several children."""
    start: list[str | None] = [None] if len(roots(tree)) > 1 else []
    return start + [node for node, degree in tree.out_degree() if degree > 1]


def tree_size(tree: nx.DiGraph[str], root: str | None = None) -> int:
    """How many nodes the tree holds, or the subtree under `root` holds."""
    return tree.number_of_nodes() if root is None else 1 + len(descendants(tree, root))


def branching_factor(tree: nx.DiGraph[str]) -> tuple[float, int]:
    """Mean and maximum children over the nodes that have any, the start
    counting its roots where there are several; (0.0, 0) where none has any."""
    counts = [degree for _, degree in tree.out_degree() if degree > 0]
    starts = len(roots(tree))
    if starts > 1:
        counts.append(starts)
    return (0.0, 0) if not counts else (sum(counts) / len(counts), max(counts))


def branches(tree: nx.DiGraph[str]) -> list[list[str]]:
    """Every root-to-leaf path, in the log order of the leaves."""
    return [path(tree, leaf) for leaf in leaves(tree)]


def node_totals(
    tree: nx.DiGraph[str], nodes: Iterable[str] | None = None
) -> dict[str, Any]:
    """What some nodes (all by default) add up to, keyed by `TOTAL_KEYS`.

    Times are the earliest and latest as stored (unreadable ones left out); models
    distinct in node order; each sum is None where no node reports it (0 for no nodes).
    """
    attributes = [tree.nodes[node] for node in (tree.nodes if nodes is None else nodes)]
    times = [
        (moment, text)
        for data in attributes
        if (moment := parse_time(text := data.get("datetime_utc"))) is not None
    ]
    totals: dict[str, Any] = {
        "nodes": len(attributes),
        "first_datetime": min(times, key=_first)[1] if times else None,
        "last_datetime": max(times, key=_first)[1] if times else None,
        "models": list(
            dict.fromkeys(m for data in attributes if (m := data.get("model")))
        ),
    }
    for key in INTEGER_ATTRIBUTES:
        known = [value for data in attributes if (value := data.get(key)) is not None]
        totals[key] = sum(known) if known or not attributes else None
    return totals


def _first(pair: tuple[datetime, Any]) -> datetime:
    return pair[0]
