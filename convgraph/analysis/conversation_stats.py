"""A conversation's statistics in the rule's two forms side by side:
`summary`, one tree's figures from its graph (plain Python, for one
conversation), and `summary_table`, the same figures for every tree of a
node table, one row each (numpy and pandas imported inside it). The columns
are `contract.CONVERSATION_COLUMNS`; `convgraph.analysis.stats` builds its
tables of a forest on them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from convgraph.analysis.abandoned import (
    abandoned_nodes,
    abandoned_nodes_table,
    abandoned_work_nodes,
    abandoned_work_nodes_table,
)
from convgraph.analysis.tool_stats import (
    may_pass_64_bits,
    sums_per_tree,
    tree_tool_totals,
    tree_tool_totals_table,
)
from convgraph.contract import (
    CONVERSATION_COLUMNS,
    INTEGER_ATTRIBUTES,
    TREE_NAME,
)
from convgraph.links.rules import TREE, rule, table_form
from convgraph.model.marks import active_column
from convgraph.times import time_bounds

if TYPE_CHECKING:
    # numpy, pandas and the pointer jumping on their tables are imported by
    # the functions of tables: `summary` of one tree (`convgraph stats` on a
    # small file) needs none of them (0.3 s of a command's start).
    import networkx as nx
    import numpy as np
    import pandas as pd


def _children_counts(parent_rows: np.ndarray) -> np.ndarray:
    import numpy as np

    return np.bincount(parent_rows[parent_rows >= 0], minlength=len(parent_rows))


# -- a conversation's statistics: one tree's graph, or every tree of a table


@rule(TREE)
def summary(tree: nx.DiGraph[str]) -> dict[str, Any]:
    """One conversation's statistics in one dict: `summary_table`'s
    row for one tree, computed on its graph (the summary helper of
    docs/design.md#the-twelve-helpers).

    The keys are `CONVERSATION_COLUMNS`: `tree_id` and `name` (the graph's
    attributes), the tree's shape (`nodes`, `roots`, `leaves`, `max_depth`,
    `branch_points`, `branching_factor_avg`, `branching_factor_max`, which
    count the start where the tree has several roots:
    `convgraph.model.tree.branch_points` and `branching_factor`),
    `convgraph.model.tree.node_totals` over all its nodes (times as llm
    stored them, where the table reads them as times), its `tool_calls` and
    `tools`, and the active path's
    `active_path_length` and `abandoned_branches`. One property test holds
    the two forms to the same figures (tests/test_rule_agreement.py).
    """
    # Here, not above: the tree operations import networkx (0.1 s), which
    # the tables never need.
    from convgraph.model import tree as operations

    levels = operations.depths(tree)
    average, most = operations.branching_factor(tree)
    stats = {
        "tree_id": tree.graph.get("tree_id"),
        "name": tree.graph.get("name"),
        "nodes": tree.number_of_nodes(),
        "roots": len(operations.roots(tree)),
        "leaves": len(operations.leaves(tree)),
        "max_depth": max(levels.values(), default=0),
        "branch_points": len(operations.branch_points(tree)),
        "branching_factor_avg": average,
        "branching_factor_max": most,
        **operations.node_totals(tree),
        **tree_tool_totals(tree),
        # The active path (the branch last used) and the branches left off
        # it (a subagent's leaves are none: `convgraph.analysis.abandoned`).
        "active_path_length": sum(1 for _, on in tree.nodes(data="active") if on),
        "abandoned_branches": len(abandoned_nodes(tree)),
    }
    stats |= _tree_retries(tree, stats)
    return {key: stats[key] for key in CONVERSATION_COLUMNS}


def _tree_retries(tree: nx.DiGraph[str], totals: Mapping[str, Any]) -> dict[str, Any]:
    """`RETRY_COLUMNS` of one tree, whose token totals are `totals`."""
    left = abandoned_work_nodes(tree)
    figures: dict[str, Any] = {}
    for key in ("input_tokens", "output_tokens"):
        values = (tree.nodes[node].get(key) for node in left)
        spent = sum(value for value in values if value is not None)
        figures[f"abandoned_{key}"] = None if totals[key] is None else spent
    figures["abandoned_share"] = _share(
        [figures["abandoned_input_tokens"], figures["abandoned_output_tokens"]],
        [totals["input_tokens"], totals["output_tokens"]],
    )
    return figures


def _share(part: list[int | None], whole: list[int | None]) -> float | None:
    """The share of `whole`'s sum that `part`'s is (missing counting 0),
    as floats divide: None where the whole is not above 0."""
    counted = sum(value or 0 for value in whole)
    if counted <= 0:
        return None
    return float(sum(value or 0 for value in part)) / float(counted)


@table_form(summary)
def summary_table(
    nodes: pd.DataFrame,
    names: Mapping[Any, Any] | None = None,
    parent_rows: np.ndarray | None = None,
    depths: np.ndarray | None = None,
) -> pd.DataFrame:
    """`conversation_table` of a node table holding its trees whole, one row
    per tree in the order of its first row.

    Parameters
    ----------
    nodes
        As `node_table_of` takes it.
    names
        Each tree's name; when None, the `tree_name` column of `nodes` where
        it has one (a Parquet dataset's), else no names.
    parent_rows, depths
        As `node_table_of` takes them.
    """
    import numpy as np
    import pandas as pd

    from convgraph.links.pointer_jumping import parent_rows_of, root_pointers

    if parent_rows is None:
        parent_rows = parent_rows_of(nodes["id"], nodes["parent_id"])
    if depths is None:
        depths = root_pointers(parent_rows)[1]
    codes, tree_ids = pd.factorize(nodes["tree_id"], sort=False)
    trees = len(tree_ids)
    counts = _children_counts(parent_rows)

    def per_tree(mask: np.ndarray) -> np.ndarray:
        return np.bincount(codes[mask], minlength=trees)

    sizes = np.bincount(codes, minlength=trees)
    roots = per_tree(parent_rows < 0)
    parents = per_tree(counts > 0)
    max_depth = np.zeros(trees, dtype=np.int64)
    np.maximum.at(max_depth, codes, depths)
    most_children = np.zeros(trees, dtype=np.int64)
    np.maximum.at(most_children, codes, counts)
    # The start of a tree with several roots is one more branch point, whose
    # children are the roots (docs/design.md#depth-roots-and-branching).
    start = roots > 1
    start_children = np.where(start, roots, 0)
    # Every non-root node is one child of one parent, so the children of a
    # tree's parents add up to its nodes less its roots.
    with np.errstate(divide="ignore", invalid="ignore"):
        average = np.where(
            parents + start > 0,
            (sizes - roots + start_children) / (parents + start),
            0.0,
        )

    first_times, last_times = time_bounds(nodes["datetime_utc"], codes, trees)
    usage = {
        column: sums_per_tree(nodes[column], codes, trees)
        for column in INTEGER_ATTRIBUTES
    }
    table = pd.DataFrame(
        {
            "tree_id": pd.Series(tree_ids, dtype="str"),
            "name": _tree_names(nodes, names, codes, tree_ids),
            "nodes": sizes,
            "roots": roots,
            "leaves": per_tree(counts == 0),
            "max_depth": max_depth,
            "branch_points": per_tree(counts > 1) + start,
            "branching_factor_avg": average,
            "branching_factor_max": np.maximum(most_children, start_children),
            "first_datetime": first_times,
            "last_datetime": last_times,
            "models": pd.Series(
                _models_per_tree(nodes["model"], codes, trees), dtype=object
            ),
        }
    )
    for column in INTEGER_ATTRIBUTES:
        table[column] = usage[column]
    for column, values in tree_tool_totals_table(nodes, codes, trees).items():
        table[column] = values
    active = active_column(nodes, parent_rows)
    table["active_path_length"] = per_tree(active)
    table["abandoned_branches"] = per_tree(
        abandoned_nodes_table(nodes, parent_rows, active)
    )
    left = abandoned_work_nodes_table(nodes, parent_rows, active)
    spent = {}
    for column in ("input_tokens", "output_tokens"):
        part = sums_per_tree(nodes[column].astype("Int64").where(left), codes, trees)
        spent[column] = within_totals(usage[column], part)
        table[f"abandoned_{column}"] = spent[column]
    table["abandoned_share"] = token_shares(
        [spent["input_tokens"], spent["output_tokens"]],
        [usage["input_tokens"], usage["output_tokens"]],
    )
    return table


def within_totals(total: Any, part: Any) -> Any:
    """A part's sums (`sums_per_tree`) where its total has one: 0 where the
    part has none, missing where the total is."""
    import numpy as np
    import pandas as pd

    missing = np.asarray(pd.isna(total), dtype=bool)
    if isinstance(part, pd.arrays.IntegerArray) and isinstance(
        total, pd.arrays.IntegerArray
    ):
        return pd.arrays.IntegerArray(part.fillna(0).to_numpy(np.int64), missing)
    # Python's integers, where a sum passed 64 bits.
    values = [0 if pd.isna(value) else int(value) for value in part]
    return np.array(
        [None if gone else value for value, gone in zip(values, missing, strict=True)],
        dtype=object,
    )


def token_shares(parts: list[Any], wholes: list[Any]) -> pd.arrays.FloatingArray:
    """`_share` of every tree at once (nullable `Float64`): NA where the
    whole is not above 0."""
    import numpy as np
    import pandas as pd

    def counted(columns: list[Any]) -> np.ndarray:
        # Summed as Python's integers would be, then made floats, as
        # `_share` makes them: the two forms divide the same numbers.
        if all(isinstance(c, pd.arrays.IntegerArray) for c in columns):
            sums = sum(c.fillna(0).to_numpy(np.int64) for c in columns)
            if not may_pass_64_bits(
                np.concatenate([c.fillna(0).to_numpy(np.int64) for c in columns]),
                np.array([len(columns)]),
            ):
                return np.asarray(sums, dtype=np.float64)
        rows = zip(
            *[[0 if pd.isna(v) else int(v) for v in c] for c in columns], strict=True
        )
        return np.array([float(sum(row)) for row in rows], dtype=np.float64)

    part, whole = counted(parts), counted(wholes)
    with np.errstate(divide="ignore", invalid="ignore"):
        shares = np.where(whole > 0, part / whole, 0.0)
    return pd.arrays.FloatingArray(shares, ~(whole > 0))


def _tree_names(
    nodes: pd.DataFrame,
    names: Mapping[Any, Any] | None,
    codes: np.ndarray,
    tree_ids: Any,
) -> pd.Series:
    """Each tree's name (None where it has none), aligned with `tree_ids`:
    from `names`, else from the first row of each tree's `tree_name`."""
    import numpy as np
    import pandas as pd

    if names is not None:
        found = [names.get(tree_id) for tree_id in tree_ids.tolist()]
        return pd.Series(found, dtype="object")
    if TREE_NAME not in nodes.columns:
        return pd.Series([None] * len(tree_ids), dtype="object")
    _, first_rows = np.unique(codes, return_index=True)
    values = np.asarray(nodes[TREE_NAME].to_numpy()[first_rows], dtype=object)
    values[pd.isna(values)] = None
    return pd.Series(values, dtype="object")


def _model_codes(models: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Each node's model as an integer code (-1 for none), and the models.

    An empty model id counts as none, as `summary` counts it.
    """
    import numpy as np
    import pandas as pd

    codes, found = pd.factorize(models, sort=False)
    names = found.to_numpy(dtype=object)
    empty = np.flatnonzero(names == "")
    if len(empty):
        # Drop the empty id from the models and renumber the codes after it.
        codes = np.where(codes == empty[0], -1, codes - (codes > empty[0]))
        names = np.delete(names, empty[0])
    return codes, names


def _split_lists(flat: list[Any], counts: np.ndarray) -> list[list[Any]]:
    """`flat` cut into consecutive lists of `counts[i]` items."""
    import numpy as np

    if len(flat) == len(counts) and (counts == 1).all():
        # One model a tree, the common case: no slice to make for each.
        return [[item] for item in flat]
    ends = np.cumsum(counts).tolist()
    starts = [0, *ends][: len(ends)]
    return [flat[start:end] for start, end in zip(starts, ends, strict=True)]


def _models_per_tree(
    models: pd.Series, tree_codes: np.ndarray, trees: int
) -> list[list[Any]]:
    """Each tree's distinct models in order of first use (rows are in log
    order), as lists aligned with the tree codes."""
    import numpy as np
    import pandas as pd

    codes, names = _model_codes(models)
    used = codes >= 0
    pairs = tree_codes[used].astype(np.int64) * max(len(names), 1) + codes[used]
    # Distinct (tree, model) pairs in order of first use: a hash, not a sort.
    first_uses = pd.unique(pairs)
    trees_of, models_of = np.divmod(first_uses, max(len(names), 1))
    # Grouped by tree; within a tree, still in order of first use.
    order = np.argsort(trees_of, kind="stable")
    flat = names[models_of[order]].tolist()
    return _split_lists(flat, np.bincount(trees_of, minlength=trees))
