"""Usage over time: the forest's figures grouped (pandas groupby, never a walk)
by any keys of `GROUPINGS`, with what they cost (`convgraph.analysis.prices`)
and what the branches the user left spent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from convgraph.analysis.abandoned import (
    abandoned_nodes_table,
    abandoned_work_nodes_table,
)
from convgraph.analysis.prices import Costs, cost_sums, day_labels, node_costs, per_day
from convgraph.analysis.stats import (
    children_counts,
    conversation_table,
    token_shares,
    within_totals,
)
from convgraph.analysis.tool_stats import sums_per_tree
from convgraph.contract import CACHE_ATTRIBUTES, ORIGIN, RETRY_COLUMNS
from convgraph.model.filters import TreeFilter, node_matches_table, select_trees
from convgraph.model.marks import active_column

if TYPE_CHECKING:
    from convgraph.model.forest import Forest

#: The figures of a usage row, after its keys, in order.
USAGE_COLUMNS = tuple(
    "conversations nodes branch_points abandoned_branches input_tokens"  # noqa: SIM905 (words)
    " output_tokens"
    " cost_usd abandoned_input_tokens abandoned_output_tokens abandoned_cost_usd"
    " abandoned_share".split()
)


def _week(nodes: pd.DataFrame) -> pd.Series:
    # ISO year and week: 2027-01-01 lies in 2026-W53. Four digits of year,
    # as a day's and a month's have, so the labels sort as the weeks do.
    return per_day(
        nodes,
        lambda days: [
            f"{day.isocalendar()[0]:04d}-W{day.isocalendar()[1]:02d}" for day in days
        ],
    )


def _month(nodes: pd.DataFrame) -> pd.Series:
    return per_day(nodes, lambda days: list(days.strftime("%Y-%m")))


def _project(nodes: pd.DataFrame) -> pd.Series:
    # An agent's working directory: no other source has the column.
    if "project" not in nodes.columns:
        return pd.Series(None, index=nodes.index, dtype=object)
    return nodes["project"].astype(object)


def _source(nodes: pd.DataFrame) -> pd.Series:
    # Where several sources are read, the one of them; else the app's.
    return nodes[ORIGIN if ORIGIN in nodes.columns else "source"].astype(object)


#: The keys usage can be grouped by: each a label per row of a nodes table
#: (None where a node has none: no time, no model, no project).
GROUPINGS: dict[str, Callable[[pd.DataFrame], pd.Series]] = {
    "day": day_labels,
    "week": _week,
    "month": _month,
    "model": lambda nodes: nodes["model"].astype(object),
    "project": _project,
    "source": _source,
    # Set by `stats --by topic` from convgraph.meaning (a layer above).
    "topic": lambda nodes: nodes["topic"].astype(object),
}


def usage_table(
    forest: Forest,
    by: Sequence[str],
    costs: Costs | None = None,
    rows: np.ndarray | None = None,
) -> pd.DataFrame:
    """The forest's usage grouped by the keys `by` names (of `GROUPINGS`), a row
    per group with nodes, sorted by its keys (no key last): the keys, then
    `USAGE_COLUMNS`. `costs` where the caller has them; `rows` (booleans over
    the nodes) counts only those, each still marked as its whole tree makes it.
    Raises KeyError for a key not in `GROUPINGS`."""
    nodes = forest.nodes
    keys = list(by)
    if unknown := [key for key in keys if key not in GROUPINGS]:
        raise KeyError(unknown[0])
    costs = node_costs(nodes) if costs is None else costs
    counts = children_counts(forest)
    parent_rows = forest.parent_rows
    active = active_column(nodes, parent_rows)
    # The start of a tree with several roots is a branch point: it counts
    # with the tree's first root.
    roots = parent_rows < 0
    # Trees as integers: counting and comparing them is numpy's work.
    trees = pd.factorize(nodes["tree_id"])[0]
    roots_per_tree = np.bincount(trees[roots], minlength=trees.max(initial=-1) + 1)
    first_of_tree = np.zeros(len(nodes), dtype=bool)
    root_rows = np.flatnonzero(roots)
    first_of_tree[root_rows[np.unique(trees[root_rows], return_index=True)[1]]] = True
    first_root = first_of_tree & (roots_per_tree[trees] > 1)
    frame = pd.DataFrame(
        {
            **{key: GROUPINGS[key](nodes).to_numpy() for key in keys},
            "tree_id": trees,
            "nodes": 1,
            "branch_points": (counts > 1).astype(np.int64) + first_root,
            "abandoned_branches": abandoned_nodes_table(
                nodes, parent_rows, active
            ).astype(np.int64),
            "input_tokens": nodes["input_tokens"].astype("Int64").array,
            "output_tokens": nodes["output_tokens"].astype("Int64").array,
            **{
                column: nodes[column].astype("Int64").array
                for column in CACHE_ATTRIBUTES
                if column in nodes.columns
            },
            "cost_usd": costs.per_node,
            "left": abandoned_work_nodes_table(nodes, parent_rows, active),
        }
    )
    if rows is not None:
        frame = frame[rows]
    groups = frame.groupby(keys, dropna=False, sort=True)
    # Each row's group as an integer, in the groups' sorted order: the
    # token sums are exact (`sums_per_tree`), which a group-by's are not.
    codes = groups.ngroup().to_numpy()
    count = groups.ngroups
    table = pd.DataFrame(
        {
            "conversations": groups["tree_id"].nunique(),
            "nodes": groups["nodes"].sum(),
            "branch_points": groups["branch_points"].sum(),
            "abandoned_branches": groups["abandoned_branches"].sum(),
        }
    ).reset_index()
    spent = frame["left"].to_numpy(dtype=bool)
    totals, parts = [], []
    for column in ("input_tokens", "output_tokens"):
        total = sums_per_tree(frame[column], codes, count)
        part = sums_per_tree(frame[column].where(spent), codes, count)
        table[column] = total
        table[f"abandoned_{column}"] = within_totals(total, part)
        totals.append(total)
        parts.append(table[f"abandoned_{column}"].array)
    cached = [column for column in CACHE_ATTRIBUTES if column in frame.columns]
    for column in cached:
        table[column] = sums_per_tree(frame[column], codes, count)
    cost = frame["cost_usd"].to_numpy(dtype=float)
    table["cost_usd"] = cost_sums(cost, codes, count)
    table["abandoned_cost_usd"] = cost_sums(np.where(spent, cost, 0.0), codes, count)
    table.loc[table["cost_usd"].isna(), "abandoned_cost_usd"] = np.nan
    table["abandoned_share"] = token_shares(parts, totals)
    for column in ("conversations", "nodes", "branch_points", "abandoned_branches"):
        table[column] = table[column].astype(np.int64)
    for key in keys:
        table[key] = table[key].astype(object).where(table[key].notna(), None)
    return table[[*keys, *USAGE_COLUMNS, *cached]]


def in_range_table(forest: Forest, where: TreeFilter) -> pd.DataFrame:
    """The conversations table of the trees `where` keeps, their node figures
    counted over the matching nodes alone; the shape stays the whole tree's."""
    kept = select_trees(forest, where)
    table = conversation_table(kept)
    matched = kept.nodes[node_matches_table(kept.nodes, where)].reset_index(drop=True)
    from convgraph.analysis.conversation_stats import summary_table

    # Each matched node alone, as a root: only its own figures count.
    alone = summary_table(
        matched,
        kept.names,
        np.full(len(matched), -1, dtype=np.int64),
        np.zeros(len(matched), dtype=np.int64),
    ).set_index("tree_id")
    figures = [
        "nodes",
        "first_datetime",
        "last_datetime",
        "models",
        "input_tokens",
        "output_tokens",
        "duration_ms",
        *(column for column in CACHE_ATTRIBUTES if column in table.columns),
        "tool_calls",
        "tools",
        *RETRY_COLUMNS,
    ]
    order = table["tree_id"]
    for column in figures:
        table[column] = alone[column].reindex(order).array
    return table
