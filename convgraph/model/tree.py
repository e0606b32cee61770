"""The tree operations, on one conversation's DiGraph (the helpers of
docs/design.md#the-twelve-helpers, and a few more).

A conversation tree is a `ConversationTree`: a `networkx.DiGraph` whose
edges run parent -> child, whose nodes and successors are in log order, and
whose every node has at most one parent (`convgraph.model.loading` builds
them so). The operations are plain functions of a graph, `f(tree, node) ->
value`, as networkx's own algorithms are; each one is iterative and linear in
the size of the tree at most, so a 100,000-deep chain is as easy as a short
one. `node_totals` is the one place where what some nodes add up to (a
branch, a run, a whole tree) is computed; a whole tree's statistics,
`convgraph.analysis.stats.summary`, sit beside the table that computes the
same figures for a whole forest at once.

Examples
--------
>>> tree = ConversationTree.from_edges([("root", "a"), ("root", "b"), ("a", "c")])
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

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

import networkx as nx

from convgraph.contract import INTEGER_ATTRIBUTES, NODE_ATTRIBUTES, PLACE_ATTRIBUTES
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
    """A conversation tree (edges parent -> child) that draws itself in Jupyter.

    Everything of `networkx.DiGraph` works as before: it pickles, copies and
    makes subgraphs of its own class. The graph attributes are
    `tree_id` and `name` (a node's `conversation_id` is the conversation or
    thread that made the call). A notebook shows it as a
    picture (Graphviz's SVG, or the text tree): `convgraph.jupyter` registers
    the pictures with IPython by this class's name, so this module imports
    no display code.

    Examples
    --------
    >>> tree = ConversationTree(tree_id="c1", name="Trees")
    >>> tree.add_node("r", prompt="What is a tree?")
    >>> tree.add_node("a", prompt="And <b>bold</b>?")
    >>> tree.add_node("b", prompt="Or a forest?")
    >>> tree.add_edges_from([("r", "a"), ("r", "b")])
    >>> tree
    <ConversationTree 'c1' (Trees): 3 nodes, 1 root, 2 leaves>
    >>> from convgraph.jupyter.tree_view import tree_text_html
    >>> print(tree_text_html(tree))
    <div class="convgraph-tree"><p><b>c1</b>  Trees</p><pre>r  What is a tree?
    ├── a  And &lt;b&gt;bold&lt;/b&gt;?
    └── b  Or a forest?</pre></div>
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

        Nodes go in in the order they first appear in `edges` (then any node
        only `attributes` names), so that order is the log order. Every node
        carries every attribute of the node contract: None, unless
        `attributes[node]` gives it.

        Examples
        --------
        >>> tree = ConversationTree.from_edges(
        ...     [("r", "a")], {"a": {"model": "echo"}}, tree_id="c1")
        >>> tree.nodes["a"]["model"], tree.nodes["r"]["model"]
        ('echo', None)
        >>> tree
        <ConversationTree 'c1': 2 nodes, 1 root, 1 leaf>
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
        """One conversation's tree from a source's records (in log order,
        each with `id` and the node attributes) and their checked parents
        (`convgraph.links.integrity.check_links`), as every tree convgraph
        reads is built. `calls`: the node of each call inside a run (a tool
        chain is one node, `convgraph.sources.llm.runs`), kept as the graph's
        `calls` where there are some, so that a call's id finds its node.

        Nodes go in in log order, so successors come out in log order. The
        branch attributes a source does not give (`active`, `note`,
        `preferred`) are attached by `convgraph.model.marks.mark_tree`, with
        `notes`.

        Examples
        --------
        >>> tree = ConversationTree.from_records(
        ...     [{"id": "r"}, {"id": "a", "model": "echo"}], {"r": None, "a": "r"},
        ...     tree_id="c1")
        >>> list(tree.edges), tree.nodes["a"]["active"]
        ([('r', 'a')], True)
        """
        records = list(records)
        # An agent's project and git branch, where its source gives them:
        # after the contract's, as the exports write other attributes.
        keys = (
            *NODE_ATTRIBUTES,
            *(key for key in PLACE_ATTRIBUTES if records and key in records[0]),
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
        """One conversation's tree from its nodes' ids, checked parent ids
        (None for a root) and attribute dicts (each the contract's, in
        order, with whatever follows), in log order. What `from_records` builds, without the marks:
        for a forest's table, whose `active`, `note` and `preferred` are
        set (`convgraph.model.marks.mark_tree_table`), a million nodes at
        networkx's own cost.

        Examples
        --------
        >>> tree = ConversationTree.from_columns(
        ...     ["r", "a"], [None, "r"], [{"model": None}, {"model": "echo"}], "c1")
        >>> list(tree.edges), tree.nodes["a"]["model"]
        ([('r', 'a')], 'echo')
        """
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
    """The node `node` names: itself, or for the id of a call inside a run
    (`ConversationTree.from_records`' `calls`) the run's node.

    Raises
    ------
    UnknownNode
        `node` names no node and no call of the tree.
    """
    if node in tree:
        return node
    found = tree.graph.get("calls", {}).get(node)
    if found is None or found not in tree:
        raise UnknownNode(node)
    return str(found)


def run_calls(tree: nx.DiGraph[str], node: str) -> list[str]:
    """The ids of the calls inside the node's run, before the node's own (a
    tool chain llm logged as several calls); empty for a run of one call.

    Examples
    --------
    >>> tree = ConversationTree.from_records(
    ...     [{"id": "r2"}], {"r2": None}, "t", calls={"r1": "r2"}
    ... )
    >>> run_calls(tree, "r2"), node_of(tree, "r1")
    (['r1'], 'r2')
    """
    node = node_of(tree, node)
    return [
        call for call, owner in tree.graph.get("calls", {}).items() if owner == node
    ]


def children(tree: nx.DiGraph[str], node: str) -> list[str]:
    """The node's direct children, in log order.

    Raises
    ------
    UnknownNode
        `node` is not in the tree.

    Examples
    --------
    >>> tree = ConversationTree.from_edges([("r", "a"), ("r", "b"), ("a", "c")])
    >>> children(tree, "r")
    ['a', 'b']
    >>> children(tree, "c")
    []
    """
    node = node_of(tree, node)
    return list(tree.successors(node))


def parent(tree: nx.DiGraph[str], node: str) -> str | None:
    """The node's parent, or None for a root.

    Examples
    --------
    >>> tree = ConversationTree.from_edges([("r", "a")])
    >>> parent(tree, "a"), parent(tree, "r")
    ('r', None)
    """
    node = node_of(tree, node)
    return next(iter(tree.predecessors(node)), None)


def siblings(tree: nx.DiGraph[str], node: str) -> list[str]:
    """The node's alternatives, in log order: the other children of its
    parent, or for a root the other roots of the tree.

    The roots of one tree are alternatives to each other, as the children of
    one node are: a first prompt regenerated or edited in an app, or asked
    again with another model (docs/design.md#depth-roots-and-branching).

    Raises
    ------
    UnknownNode
        `node` is not in the tree.

    Examples
    --------
    >>> tree = ConversationTree.from_edges([("r", "a"), ("r", "b"), ("r", "c")])
    >>> siblings(tree, "b")
    ['a', 'c']
    >>> siblings(tree, "r")
    []
    >>> two_starts = ConversationTree.from_edges([("r", "a"), ("s", "b")])
    >>> siblings(two_starts, "s")
    ['r']
    """
    node = node_of(tree, node)
    return [other for other in alternatives(tree, parent(tree, node)) if other != node]


def alternatives(tree: nx.DiGraph[str], point: str | None) -> list[str]:
    """The alternatives tried at one point of the conversation, in log order:
    the children of `point`, or the roots of the tree where `point` is None
    (the start, as `branch_points` names it).

    Raises
    ------
    UnknownNode
        `point` is not in the tree.

    Examples
    --------
    >>> tree = ConversationTree.from_edges([("r", "a"), ("r", "b"), ("s", "t")])
    >>> alternatives(tree, "r"), alternatives(tree, None)
    (['a', 'b'], ['r', 's'])
    """
    if point is None:
        return roots(tree)
    return children(tree, point)


def path(tree: nx.DiGraph[str], node: str) -> list[str]:
    """The ids from the node's root down to the node itself."""
    node = node_of(tree, node)
    ancestors = list(
        ParentWalk(node, lambda below: next(iter(tree.predecessors(below)), None))
    )
    ancestors.reverse()
    return ancestors


def ancestors(tree: nx.DiGraph[str], node: str) -> list[str]:
    """The node's ancestors, nearest first (the original notes' path to root,
    docs/design.md#the-twelve-helpers, without the node).

    Examples
    --------
    >>> tree = ConversationTree.from_edges([("r", "a"), ("a", "b")])
    >>> ancestors(tree, "b")
    ['a', 'r']
    """
    return path(tree, node)[-2::-1]


def descendants(tree: nx.DiGraph[str], node: str) -> list[str]:
    """Every node below `node`, breadth first, each level in log order.

    Examples
    --------
    >>> tree = ConversationTree.from_edges([("r", "a"), ("a", "c"), ("r", "b")])
    >>> descendants(tree, "r")
    ['a', 'b', 'c']
    """
    node = node_of(tree, node)
    return [child for _, child in nx.bfs_edges(tree, node)]


def subtree(tree: nx.DiGraph[str], node: str) -> nx.DiGraph[str]:
    """The node and everything below it, as a graph of its own, in log order.

    Built node by node rather than with `tree.subgraph`, whose views iterate a
    small selection in set order and would lose the log order.

    Examples
    --------
    >>> tree = ConversationTree.from_edges([("r", "a"), ("a", "c"), ("r", "b")])
    >>> list(subtree(tree, "a").edges)
    [('a', 'c')]
    """
    node = node_of(tree, node)
    keep = {node, *descendants(tree, node)}
    below = tree.__class__()
    below.graph.update(tree.graph)
    below.add_nodes_from((n, tree.nodes[n]) for n in tree if n in keep)
    below.add_edges_from((p, c) for p, c in tree.edges if c in keep and c != node)
    return below


def depth(tree: nx.DiGraph[str], node: str) -> int:
    """How many links lie between the node and its root (a root is 0).

    Examples
    --------
    >>> tree = ConversationTree.from_edges([("r", "a"), ("a", "b")])
    >>> depth(tree, "r"), depth(tree, "b")
    (0, 2)
    """
    return len(path(tree, node)) - 1


def depths(tree: nx.DiGraph[str]) -> dict[str, int]:
    """Every node's depth, in log order, from one breadth-first pass down
    from each root.

    Examples
    --------
    >>> tree = ConversationTree.from_edges([("r", "a"), ("a", "b"), ("s", "t")])
    >>> depths(tree)
    {'r': 0, 'a': 1, 'b': 2, 's': 0, 't': 1}
    """
    found = dict.fromkeys(roots(tree), 0)
    for root in list(found):
        for above, below in nx.bfs_edges(tree, root):
            found[below] = found[above] + 1
    return {node: found[node] for node in tree if node in found}


def roots(tree: nx.DiGraph[str]) -> list[str]:
    """The nodes without a parent, in log order.

    Examples
    --------
    >>> roots(ConversationTree.from_edges([("r", "a"), ("s", "t")]))
    ['r', 's']
    """
    return [node for node, degree in tree.in_degree() if degree == 0]


def leaves(tree: nx.DiGraph[str]) -> list[str]:
    """The nodes without children, in log order: the tips of the branches.

    Examples
    --------
    >>> leaves(ConversationTree.from_edges([("r", "a"), ("r", "b")]))
    ['a', 'b']
    """
    return [node for node, degree in tree.out_degree() if degree == 0]


def branch_points(tree: nx.DiGraph[str]) -> list[str | None]:
    """Where the conversation forked: the start, as None, where the tree has
    several roots (its first turn had alternatives), then the nodes with more
    than one child, in log order (docs/design.md#depth-roots-and-branching).

    Examples
    --------
    >>> branch_points(ConversationTree.from_edges([("r", "a"), ("r", "b"), ("a", "c")]))
    ['r']
    >>> branch_points(ConversationTree.from_edges([("r", "a"), ("r", "b"), ("s", "t")]))
    [None, 'r']
    """
    start: list[str | None] = [None] if len(roots(tree)) > 1 else []
    return start + [node for node, degree in tree.out_degree() if degree > 1]


def tree_size(tree: nx.DiGraph[str], root: str | None = None) -> int:
    """How many nodes the tree holds, or the subtree under `root` holds.

    Examples
    --------
    >>> tree = ConversationTree.from_edges([("r", "a"), ("a", "c"), ("r", "b")])
    >>> tree_size(tree), tree_size(tree, "a")
    (4, 2)
    """
    if root is None:
        return tree.number_of_nodes()
    return 1 + len(descendants(tree, root))


def branching_factor(tree: nx.DiGraph[str]) -> tuple[float, int]:
    """Average and maximum number of children over the nodes that have any,
    and over the start where the tree has several roots (its number of
    roots counts as its children: docs/design.md#depth-roots-and-branching).

    A linear chain has (1.0, 1); a tree without links and with one root has
    neither children nor alternatives at its start: (0.0, 0).

    Examples
    --------
    >>> branching_factor(ConversationTree.from_edges([("r", "a"), ("r", "b"), ("a", "c")]))
    (1.5, 2)
    >>> two_chains = [("r", "a"), ("a", "b"), ("s", "x"), ("x", "y")]
    >>> branching_factor(ConversationTree.from_edges(two_chains))
    (1.2, 2)
    >>> branching_factor(ConversationTree.from_edges([], {"r": {}}))
    (0.0, 0)
    """
    counts = [degree for _, degree in tree.out_degree() if degree > 0]
    starts = len(roots(tree))
    if starts > 1:
        counts.append(starts)
    if not counts:
        return 0.0, 0
    return sum(counts) / len(counts), max(counts)


def branches(tree: nx.DiGraph[str]) -> list[list[str]]:
    """Every root-to-leaf path, in the log order of the leaves.

    Examples
    --------
    >>> branches(ConversationTree.from_edges([("r", "a"), ("r", "b")]))
    [['r', 'a'], ['r', 'b']]
    """
    return [path(tree, leaf) for leaf in leaves(tree)]


def node_totals(
    tree: nx.DiGraph[str], nodes: Iterable[str] | None = None
) -> dict[str, Any]:
    """What some nodes of the tree add up to (all of them by default): a
    branch's, a run's or the whole conversation's figures.

    Returns
    -------
    dict
        The keys of `TOTAL_KEYS`: `nodes` (how many), `first_datetime` and
        `last_datetime` (the earliest and latest time as llm stored it; times
        that do not read as ISO 8601 are left out; a time without an offset
        is UTC), `models` (distinct, in the order of the nodes; an empty
        model id counts as none), and the sums of `input_tokens`,
        `output_tokens` and `duration_ms` over the nodes that report them
        (None when there are nodes and none of them reports it; 0 when there
        are no nodes).

    Examples
    --------
    >>> tree = ConversationTree.from_edges([("r", "a"), ("r", "b")], {
    ...     "r": {"model": "m1", "input_tokens": 3},
    ...     "a": {"model": "m2", "input_tokens": 4,
    ...           "datetime_utc": "2024-05-01T10:00:00+00:00"},
    ...     "b": {"model": "m1", "datetime_utc": "2024-05-01T09:00:00"}})
    >>> node_totals(tree)
    {'nodes': 3, 'first_datetime': '2024-05-01T09:00:00', 'last_datetime': '2024-05-01T10:00:00+00:00', 'models': ['m1', 'm2'], 'input_tokens': 7, 'output_tokens': None, 'duration_ms': None}
    >>> node_totals(tree, ["a"])["models"], node_totals(tree, [])["input_tokens"]
    (['m2'], 0)
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
