"""The tables `convgraph stats` gives beside the plain one, each with the
models that have no known price (their cost null, not guessed)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from convgraph.model.filters import TreeFilter
    from convgraph.model.forest import Forest


def trees_table(
    forest: Forest, in_range: TreeFilter | None, with_cost: bool
) -> tuple[pd.DataFrame, list[str]]:
    """The trees' table, over the nodes `in_range` matches where given
    (their shape stays the whole tree's), with `cost_usd` and
    `abandoned_cost_usd` where `with_cost`; and the models without a price."""
    from convgraph.analysis.prices import node_costs, with_costs
    from convgraph.analysis.stats import conversation_table
    from convgraph.analysis.usage import in_range_table
    from convgraph.model.filters import node_matches_table

    if in_range is not None:
        table = in_range_table(forest, in_range)
    else:
        table = conversation_table(forest)
    if not with_cost:
        return table, []
    costs = node_costs(forest.nodes)
    if in_range is not None:
        import numpy as np

        costs.per_node[~node_matches_table(forest.nodes, in_range)] = np.nan
    return with_costs(table, forest, costs), costs.unknown


def usage_report(
    forest: Forest, keys: Sequence[str], in_range: TreeFilter | None
) -> tuple[pd.DataFrame, list[str]]:
    """Usage grouped by `keys`, over the nodes `in_range` matches where
    given; and the models without a price."""
    from convgraph.analysis.prices import node_costs
    from convgraph.analysis.usage import usage_table
    from convgraph.model.filters import node_matches_table

    costs = node_costs(forest.nodes)
    rows = None if in_range is None else node_matches_table(forest.nodes, in_range)
    return usage_table(forest, list(keys), costs, rows), costs.unknown
