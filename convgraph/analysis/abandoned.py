"""Which nodes are branches the user left, in both forms: over a nodes table
(`abandoned_nodes_table`, vectorized) and over one tree's graph
(`abandoned_nodes`, for `convgraph.analysis.stats.summary`).

A branch left is a node off the active path with no child that is a branch
of the user's own: a leaf, or a node whose only children are a subagent's.
A coding agent's subagent runs in a sidechain (`subagent_rows`,
`in_subagent`): work the main branch asked for, never on the active path,
never a branch the user left, so its nodes are never counted, and do not
keep the node that started them from counting. Every source but the agents'
has no subagents: there a branch left is a leaf off the active path.

What the branches left cost is the work of every node on them, not only
their tips: `abandoned_work_nodes_table` (the table) and `abandoned_work_nodes` (one
tree) name the nodes off the active path, a subagent's node counting with
the node of the main branch that started it (a subagent started from a
branch left was work for it; one started from the active path was not).
Their tokens are what a retry, an edited prompt or a regenerated answer
spent (`convgraph.analysis.stats`' `abandoned_input_tokens`, ...).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from convgraph.contract import AGENT_SOURCES, PARTS, SIDECHAIN
from convgraph.links.rules import TREE, rule, table_form

if TYPE_CHECKING:
    # Only the tables' functions import numpy and take pandas' objects: one
    # tree's (`abandoned_nodes`, `summary` of a small file) imports neither.
    import networkx as nx
    import numpy as np
    import pandas as pd


def _marked(parts: Any) -> bool:
    """Parts (a list of part dicts) of a subagent's node: every part
    carries `SIDECHAIN`."""
    if parts is None or isinstance(parts, str | bytes | Mapping):
        return False
    if not isinstance(parts, list):
        import numpy as np  # a Parquet dataset's parts are an array

        if not isinstance(parts, np.ndarray):
            return False
    if len(parts) == 0:
        return False
    first = parts[0]
    return isinstance(first, Mapping) and first.get(SIDECHAIN) is not None


def subagent_rows(nodes: pd.DataFrame) -> np.ndarray:
    """Booleans over the rows of a nodes table: a subagent's node. The
    `sidechain` column where the table has it (an agent's sessions read by
    convgraph, text or not), else the mark on the parts of an agent's node
    (a table without the agents' columns, whose parts are lists)."""
    import numpy as np

    if SIDECHAIN in nodes.columns:
        return nodes[SIDECHAIN].notna().to_numpy(dtype=bool)
    found = np.zeros(len(nodes), dtype=bool)
    if PARTS not in nodes.columns:
        return found
    # Only an agent's nodes are looked at one by one: a million of llm's
    # are not.
    held = nodes[PARTS].notna().to_numpy(dtype=bool)
    if "source" in nodes.columns:
        source = nodes["source"]
        agents = source.isin(AGENT_SOURCES) | source.isna()
        held = held & agents.to_numpy(dtype=bool)
    rows = np.flatnonzero(held)
    parts = nodes[PARTS].to_numpy(dtype=object)
    found[rows] = [_marked(parts[row]) for row in rows.tolist()]
    return found


def in_subagent(data: Mapping[str, Any]) -> bool:
    """One node's attributes (a tree's node data): a subagent's node, told
    by its parts' mark (a tree's nodes carry the contract's attributes
    alone), so a tree built without its content (`text=False`) cannot tell;
    the tables can, by their `sidechain` column."""
    if data.get(SIDECHAIN) is not None:
        return True
    source = data.get("source")
    return (source is None or source in AGENT_SOURCES) and _marked(data.get(PARTS))


@rule(TREE)
def abandoned_nodes(tree: nx.DiGraph[str]) -> list[Any]:
    """The nodes of one tree's graph that are branches the user left, as
    `abandoned_nodes_table` finds them in a table.
    """
    nodes = tree.nodes
    return [
        node
        for node, data in nodes(data=True)
        if not data.get("active")
        and not in_subagent(data)
        and not any(not in_subagent(nodes[child]) for child in tree.successors(node))
    ]


@table_form(abandoned_nodes)
def abandoned_nodes_table(
    nodes: pd.DataFrame, parent_rows: np.ndarray, active: np.ndarray
) -> np.ndarray:
    """Booleans over the rows of a nodes table: a branch the user left (off
    the active path, outside a subagent, no child outside one). `parent_rows`
    and `active` as the forest has them.
    """
    import numpy as np

    own = ~subagent_rows(nodes)
    linked = parent_rows[own & (parent_rows >= 0)]
    own_children = np.bincount(linked, minlength=len(parent_rows))
    left: np.ndarray = own & ~active & (own_children == 0)
    return left


@rule(TREE)
def abandoned_work_nodes(tree: nx.DiGraph[str]) -> list[Any]:
    """The nodes of one tree's graph whose work went into a branch the user
    left, as `abandoned_work_nodes_table` finds them in a table, in the graph's
    order.
    """
    nodes = tree.nodes
    # Each node's starter: itself where it is a main branch's, else the
    # nearest main node above; each walk stops at a node already known, so
    # a long subagent chain is walked once, not once per node.
    starter_of: dict[Any, Any] = {}
    for node in nodes:
        walked = []
        current: str | None = node
        while current is not None and current not in starter_of:
            if not in_subagent(nodes[current]):
                starter_of[current] = current
                break
            walked.append(current)
            parents = list(tree.predecessors(current))
            current = parents[0] if parents else None
        starter = None if current is None else starter_of[current]
        for passed in walked:
            starter_of[passed] = starter
    return [
        node
        for node in nodes
        if (starter := starter_of[node]) is not None
        and not nodes[starter].get("active")
    ]


@table_form(abandoned_work_nodes)
def abandoned_work_nodes_table(
    nodes: pd.DataFrame, parent_rows: np.ndarray, active: np.ndarray
) -> np.ndarray:
    """Booleans over the rows of a nodes table: a node whose work went into
    a branch the user left. A node of the main branches counts where it is
    off the active path; a subagent's node where the nearest node of the
    main branches above it does (none above it: it does not count).
    """
    import numpy as np

    from convgraph.links.pointer_jumping import nearest_marked

    own = ~subagent_rows(nodes)
    if own.all():
        return ~np.asarray(active, dtype=bool)
    starter = nearest_marked(parent_rows, own)
    left = np.zeros(len(parent_rows), dtype=bool)
    placed = starter >= 0
    left[placed] = ~np.asarray(active, dtype=bool)[starter[placed]]
    return left
