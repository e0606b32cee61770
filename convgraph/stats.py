"""Tree statistics as pandas DataFrames, computed on the forest's tables.

Everything here is vectorized over the whole forest: group-bys over the node
table and the depths that `Forest.depths` finds by pointer jumping. No Python
loop per node, no recursion, and no networkx graph per conversation, so a
million-response forest is a few seconds of work.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from convgraph.forest import Forest


def children_counts(forest: Forest):
    """How many children each node has, aligned with `forest.nodes`' rows."""
    import numpy as np

    linked = forest.parent_rows[forest.parent_rows >= 0]
    return np.bincount(linked, minlength=len(forest.nodes))


def conversation_table(forest: Forest) -> pd.DataFrame:
    """One row per conversation tree, in the order of its first node.

    Columns: `conversation_id`, `name`, `nodes`, `roots`, `leaves`,
    `max_depth`, `branch_points` (nodes with more than one child),
    `branching_factor_avg` and `branching_factor_max` (over the nodes that
    have children; 0 where none has), `first_datetime`, `last_datetime`,
    `models` (distinct, in order of first use), `input_tokens`,
    `output_tokens`, `duration_ms` (sums).
    """
    import pandas as pd

    nodes = forest.nodes
    counts = children_counts(forest)
    work = pd.DataFrame(
        {
            "conversation_id": nodes["tree_id"],
            "is_root": forest.parent_rows < 0,
            "is_leaf": counts == 0,
            "depth": forest.depths,
            "is_branch_point": counts > 1,
            "children": pd.Series(counts).where(counts > 0),
            "datetime": pd.to_datetime(nodes["datetime_utc"], utc=True, format="ISO8601"),
            "input_tokens": nodes["input_tokens"],
            "output_tokens": nodes["output_tokens"],
            "duration_ms": nodes["duration_ms"],
        }
    )
    grouped = work.groupby("conversation_id", sort=False)
    table = grouped.agg(
        nodes=("is_root", "size"),
        roots=("is_root", "sum"),
        leaves=("is_leaf", "sum"),
        max_depth=("depth", "max"),
        branch_points=("is_branch_point", "sum"),
        branching_factor_avg=("children", "mean"),
        branching_factor_max=("children", "max"),
        first_datetime=("datetime", "min"),
        last_datetime=("datetime", "max"),
        input_tokens=("input_tokens", lambda s: s.sum(min_count=1)),
        output_tokens=("output_tokens", lambda s: s.sum(min_count=1)),
        duration_ms=("duration_ms", lambda s: s.sum(min_count=1)),
    )
    table["branching_factor_avg"] = table["branching_factor_avg"].fillna(0.0)
    table["branching_factor_max"] = table["branching_factor_max"].fillna(0).astype("int64")
    models = (
        nodes.loc[nodes["model"].notna(), ["tree_id", "model"]]
        .drop_duplicates()
        .groupby("tree_id", sort=False)["model"]
        .agg(list)
    )
    table["models"] = table.index.map(models).map(
        lambda found: found if isinstance(found, list) else []
    )
    table.insert(0, "name", table.index.map(lambda tree_id: forest.names.get(tree_id)))
    return table.reset_index()
