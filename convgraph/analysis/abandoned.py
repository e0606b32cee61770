"""Which nodes are branches the user left, and which work went into them.

A branch left is a node off the active path with no child of the user's own.
A subagent's nodes (a sidechain) are work its starter asked for: they never
count as left, nor keep their starter from counting; their work counts with
their starter's. That work's tokens are what retries and edits spent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from convgraph.contract import AGENT_SOURCES, PARTS, SIDECHAIN
from convgraph.links.rules import RECORDS, rule, table_form

if TYPE_CHECKING:
    # Only the table forms import numpy and pandas.
    import networkx as nx
    import numpy as np
    import pandas as pd

    #: One tree's node records in log order, each with its checked
    #: `parent_id` and its `active`; or its graph (`tree_records`).
    Tree: TypeAlias = Sequence[Mapping[str, Any]] | nx.DiGraph[str]


def _marked(parts: Any) -> bool:
    """Whether parts (a list of part dicts) are a subagent's node's."""
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
    """Which rows are a subagent's: by the `sidechain` column where the table
    has it, else by the mark on an agent's node's parts."""
    import numpy as np

    if SIDECHAIN in nodes.columns:
        return nodes[SIDECHAIN].notna().to_numpy(dtype=bool)
    found = np.zeros(len(nodes), dtype=bool)
    if PARTS not in nodes.columns:
        return found
    # Only an agent's nodes are looked at one by one.
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
    """Whether one node's attributes are a subagent's; told by the parts, so
    a tree read with `text=False` cannot tell (the tables can)."""
    if data.get(SIDECHAIN) is not None:
        return True
    source = data.get("source")
    return (source is None or source in AGENT_SOURCES) and _marked(data.get(PARTS))


def tree_records(tree: Tree) -> Sequence[Mapping[str, Any]]:
    """The records of a tree given as records or as its graph."""
    if isinstance(tree, Sequence):
        return tree
    parents = tree.pred
    return [
        {**data, "id": node, "parent_id": next(iter(parents[node]), None)}
        for node, data in tree.nodes(data=True)
    ]


@rule(RECORDS)
def abandoned_nodes(tree: Tree) -> list[Any]:
    """The ids of one tree's nodes that are branches the user left."""
    records = tree_records(tree)
    kept = {r["parent_id"] for r in records if not in_subagent(r)}
    return [
        r["id"]
        for r in records
        if not r.get("active") and not in_subagent(r) and r["id"] not in kept
    ]


@table_form(abandoned_nodes)
def abandoned_nodes_table(
    nodes: pd.DataFrame, parent_rows: np.ndarray, active: np.ndarray
) -> np.ndarray:
    """`abandoned_nodes` of a nodes table, as a bool per row."""
    import numpy as np

    own = ~subagent_rows(nodes)
    linked = parent_rows[own & (parent_rows >= 0)]
    own_children = np.bincount(linked, minlength=len(parent_rows))
    left: np.ndarray = own & ~active & (own_children == 0)
    return left


@rule(RECORDS)
def abandoned_work_nodes(tree: Tree) -> list[Any]:
    """The ids of one tree's nodes whose work went into a branch the user left."""
    records = tree_records(tree)
    if not any(map(in_subagent, records)):
        return [r["id"] for r in records if not r.get("active")]
    by_id = {r["id"]: r for r in records}
    # Each node's starter: itself, or the nearest main node above; a walk
    # stops at a node already known, so a chain is walked once.
    starter_of: dict[Any, Any] = {}
    for record in records:
        walked = []
        current = record["id"]
        while current is not None and current not in starter_of:
            if not in_subagent(by_id[current]):
                starter_of[current] = current
                break
            walked.append(current)
            current = by_id[current]["parent_id"]
        starter = None if current is None else starter_of[current]
        starter_of.update(dict.fromkeys(walked, starter))
    return [
        r["id"]
        for r in records
        if (starter := starter_of[r["id"]]) is not None
        and not by_id[starter].get("active")
    ]


@table_form(abandoned_work_nodes)
def abandoned_work_nodes_table(
    nodes: pd.DataFrame, parent_rows: np.ndarray, active: np.ndarray
) -> np.ndarray:
    """`abandoned_work_nodes` of a nodes table, as a bool per row."""
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
