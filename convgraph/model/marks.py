"""The branch attributes of every node: the active path, and the user's notes.

A source reads prompts and answers; where a person was last in a tree, and
what they wrote about its branches, is attached afterwards, here, in the
same way for every source. `active` is True on the path from a root to the
branch last used: the chat exports mark it themselves (their current node),
and an llm database by the most recently logged node of each tree (the last
in log order: `datetime_utc`, then id), as `llm -c` goes on from there.
`note` and `preferred` come from convgraph's own table
(read by `convgraph.sources.notes`).

`mark_tree` does it for one DiGraph, walking up from one node; `mark_tree_table`
for a whole nodes table at once, marking every tree's path with pointer
jumping (a 100,000-deep path in 17 vectorized rounds, not a walk per node).

A branch the user hid (`convgraph hide`, a `NodeNote` with `hidden`) is the
hidden node and everything below it; the readers leave hidden branches out
before the marks are set, unless asked to keep them: `hidden_records` finds
them among one tree's records, `hidden_records_table` among a whole table's rows.
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

    Where no node says whether it is active (an llm database), the path from
    the root to the last node in the graph's order (log order) is active;
    where some do (a chat export's current branch), the others are not.
    `notes` set the note and preferred mark of the nodes they name; nodes
    they do not name keep theirs (None and False if none).
    """
    data = graph.nodes
    if all(attributes.get("active") is None for _, attributes in data(data=True)):
        for node in graph:
            data[node]["active"] = False
        on_path = list(graph)[-1] if len(graph) else None
        # A tree from the forest's checked links has no cycle, so this walk
        # ends; it is iterative, whatever the depth.
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
    """Set the `active`, `note` and `preferred` columns of a checked nodes
    table (in log order), in place, and return it.

    An `active` column that the source filled (a chat export's) is kept;
    otherwise each tree's last row and its ancestors are active
    (`active_column`, per tree).
    """
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
        nodes["preferred"] = _booleans(nodes["preferred"])
    if notes:
        # The noted ids' rows, found by Arrow's hash of Arrow's ids.
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
        # An object Series: pandas would read strings and None as its string
        # dtype, a missing note NaN where the contract has None.
        nodes["note"] = pd.Series(note_column, dtype=object, index=nodes.index)
        nodes["preferred"] = preferred_column
    return nodes


def active_column(nodes: pd.DataFrame, parent_rows: np.ndarray) -> np.ndarray:
    """Each row's `active`, as booleans, decided per tree as `mark_tree`
    decides it: where some row of a tree has the table's own `active` (a chat
    export's current branch, or a `Forest`'s marks), the tree's rows keep
    theirs (a missing one is False); a tree without any has the path from its
    root to its last row (log order).
    """
    import numpy as np
    import pandas as pd

    given = (
        nodes["active"].notna().to_numpy(dtype=bool)
        if "active" in nodes.columns
        else np.zeros(len(nodes), dtype=bool)
    )
    if given.all() and len(nodes):
        return _booleans(nodes["active"]).to_numpy(dtype=bool)
    computed = active_rows(parent_rows, last_rows(nodes["tree_id"]))
    if not given.any():
        return computed
    codes = pd.factorize(nodes["tree_id"])[0]
    said = np.bincount(codes[given], minlength=codes.max() + 1) > 0
    values = _booleans(nodes["active"]).to_numpy(dtype=bool)
    return np.where(said[codes], values, computed)


def _booleans(values: pd.Series) -> pd.Series:
    """A column as bool, a missing value False."""
    return values.astype(object).where(values.notna(), False).astype(bool)


def last_rows(tree_ids: pd.Series) -> np.ndarray:
    """The last row of each tree (in the table's order, log order): where
    each tree was last used."""
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
    """The ids of one tree's records that lie in a hidden branch: a node
    whose note says `hidden`, and every node below it by `parents` (the
    checked links).
    """
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
    ids: pd.Series, parent_rows: np.ndarray, notes: Mapping[str, NodeNote] | None
) -> np.ndarray:
    """`hidden_records` of a whole checked table: whether each row lies in
    a hidden branch (its node, or an ancestor, hidden), as booleans.
    """
    import numpy as np

    from convgraph.links.pointer_jumping import nearest_marked, parent_rows_of

    hidden = [node for node, note in (notes or {}).items() if note.hidden]
    marked = np.zeros(len(ids), dtype=bool)
    if hidden:
        rows = parent_rows_of(ids, hidden)
        marked[rows[rows >= 0]] = True
    if not marked.any():
        return marked
    return nearest_marked(parent_rows, marked) >= 0


def active_rows(parent_rows: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Which rows lie on the path from a root to one of the rows `ends`
    (themselves included), for acyclic links (`Forest.parent_rows`).

    Pointer jumping over the marked set: after round k every path is marked
    2**k rows up from its end, and each round doubles every pointer's reach;
    a round that marks nothing new has reached every root.
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
