"""The branch attributes, set the same way for every source.

`active` is True on the path from a root to the branch last used: the chat
exports mark it themselves; in an llm database it ends at each tree's last
logged node, where `llm -c` goes on. `note` and `preferred` come from
convgraph's notes. A hidden branch (`convgraph hide`) is the hidden node and
all below it; the readers leave it out before the marks are set.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from convgraph.links.rules import RECORDS, TREE, rule, table_form

if TYPE_CHECKING:
    import networkx as nx
    import numpy as np
    import pandas as pd

    from convgraph.sources.notes import NodeNote


@rule(TREE)
def mark_tree(
    graph: nx.DiGraph[str], notes: Mapping[str, NodeNote] | None = None
) -> nx.DiGraph[str]:
    """Give every node of `graph` its `active`, `note` and `preferred`.

    Where no node says whether it is active, the path to the last node (log
    order) is; where some do, the others are not. Nodes `notes` do not name
    keep their note and mark (None and False if none).
    """
    data = graph.nodes
    if all(attributes.get("active") is None for _, attributes in data(data=True)):
        for node in graph:
            data[node]["active"] = False
        on_path = list(graph)[-1] if len(graph) else None
        # Checked links have no cycle, so this walk ends.
        while on_path is not None:
            data[on_path]["active"] = True
            on_path = next(iter(graph.predecessors(on_path)), None)
    for node, attributes in data(data=True):
        attributes["active"] = bool(attributes.get("active"))
        found = notes.get(node) if notes else None
        if found is not None:
            attributes["note"] = found.note
            attributes["preferred"] = found.preferred
        else:
            attributes.setdefault("note", None)
            attributes["preferred"] = bool(attributes.get("preferred"))
    return graph


@table_form(mark_tree)
def mark_tree_table(
    nodes: pd.DataFrame,
    parent_rows: np.ndarray,
    notes: Mapping[str, NodeNote] | None = None,
) -> pd.DataFrame:
    """`mark_tree` of a checked nodes table (log order), in place."""
    import numpy as np
    import pandas as pd

    from convgraph.links.pointer_jumping import parent_rows_of

    nodes["active"] = active_column(nodes, parent_rows)
    if "note" not in nodes.columns:
        nodes["note"] = pd.Series(
            np.full(len(nodes), None, dtype=object), dtype=object, index=nodes.index
        )
    else:
        note = nodes["note"].astype(object)
        nodes["note"] = note.where(note.notna(), None)
    if "preferred" not in nodes.columns:
        nodes["preferred"] = np.zeros(len(nodes), dtype=bool)
    else:
        nodes["preferred"] = booleans(nodes["preferred"])
    if notes:
        rows = parent_rows_of(nodes["id"], list(notes))
        found = rows >= 0
        values = list(notes.values())
        note_column = nodes["note"].to_numpy(dtype=object, copy=True)
        preferred_column = nodes["preferred"].to_numpy(copy=True)
        for row, note in zip(
            rows[found], np.array(values, dtype=object)[found], strict=True
        ):
            note_column[row] = note.note
            preferred_column[row] = note.preferred
        # Object dtype: pandas' string dtype would make a missing note NaN.
        nodes["note"] = pd.Series(note_column, dtype=object, index=nodes.index)
        nodes["preferred"] = preferred_column
    return nodes


def active_column(nodes: pd.DataFrame, parent_rows: np.ndarray) -> np.ndarray:
    """Each row's `active`, decided per tree as `mark_tree` decides it."""
    import numpy as np
    import pandas as pd

    given = (
        nodes["active"].notna().to_numpy(dtype=bool)
        if "active" in nodes.columns
        else np.zeros(len(nodes), dtype=bool)
    )
    if given.all() and len(nodes):
        return booleans(nodes["active"]).to_numpy(dtype=bool)
    computed = active_rows(parent_rows, last_rows(nodes["tree_id"]))
    if not given.any():
        return computed
    codes = pd.factorize(nodes["tree_id"])[0]
    said = np.bincount(codes[given], minlength=codes.max() + 1) > 0
    values = booleans(nodes["active"]).to_numpy(dtype=bool)
    return np.where(said[codes], values, computed)


def booleans(values: pd.Series) -> pd.Series:
    """A column as bool, a missing value False."""
    return values.astype(object).where(values.notna(), False).astype(bool)


def last_rows(tree_ids: pd.Series) -> np.ndarray:
    """The last row of each tree (in log order): where it was last used."""
    import numpy as np
    import pandas as pd

    codes = pd.factorize(tree_ids)[0]
    if not len(codes):
        return np.zeros(0, dtype=np.int64)
    return pd.Series(np.arange(len(codes))).groupby(codes).max().to_numpy()


@rule(RECORDS)
def hidden_records(
    records: Sequence[Mapping[str, Any]],
    parents: Mapping[str, str | None],
    notes: Mapping[str, NodeNote] | None,
) -> set[str]:
    """The ids of one tree's records in a hidden branch (by the checked
    `parents`)."""
    hidden = {node for node, note in (notes or {}).items() if note.hidden}
    ids = [record["id"] for record in records]
    if not hidden.intersection(ids):
        return set()
    children: dict[str, list[str]] = {}
    for node in ids:
        parent = parents.get(node)
        if parent is not None:
            children.setdefault(parent, []).append(node)
    found = set()
    waiting = [node for node in ids if node in hidden]
    while waiting:
        node = waiting.pop()
        if node not in found:
            found.add(node)
            waiting.extend(children.get(node, ()))
    return found


@table_form(hidden_records)
def hidden_records_table(
    nodes: pd.DataFrame,
    parent_rows: np.ndarray,
    notes: Mapping[str, NodeNote] | None,
) -> np.ndarray:
    """`hidden_records` of a checked table (its rows' checked `parent_rows`),
    as a bool per row."""
    import numpy as np

    from convgraph.links.pointer_jumping import nearest_marked, parent_rows_of

    hidden = [node for node, note in (notes or {}).items() if note.hidden]
    marked = np.zeros(len(nodes), dtype=bool)
    if hidden:
        rows = parent_rows_of(nodes["id"], hidden)
        marked[rows[rows >= 0]] = True
    return marked if not marked.any() else nearest_marked(parent_rows, marked) >= 0


def active_rows(parent_rows: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Which rows lie on a path from a root to one of `ends` (acyclic links).

    Pointer jumping over the marked set: a round that marks nothing new has
    reached every root.
    """
    import numpy as np

    count = len(parent_rows)
    jump = np.where(parent_rows < 0, np.arange(count), parent_rows)
    active = np.zeros(count, dtype=bool)
    rows = np.unique(np.asarray(ends, dtype=np.int64))
    active[rows] = True
    while len(rows):
        reached = jump[rows]
        new = reached[~active[reached]]
        if not len(new):
            break
        active[new] = True
        rows = np.flatnonzero(active)
        jump = jump[jump]
    return active
