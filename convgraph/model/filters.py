"""Which trees a time, model or source filter keeps, in both forms.

A tree is kept whole when any of its nodes matches. A node without a time is
in no range, one without a model matches no glob. Every form compares times as
`convgraph.times` reads them (years 1 to 9999), so a node dated 0001-01-01
(Go's zero time) is kept or left out alike by every command.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from convgraph.contract import ORIGIN
from convgraph.links.rules import NODE, TREE, rule, table_form
from convgraph.times import parse_time

if TYPE_CHECKING:
    import networkx as nx
    import numpy as np
    import pandas as pd

    from convgraph.model.forest import Forest


@dataclass(frozen=True)
class TreeFilter:
    """What a node must be for its tree to be kept (None or empty: anything):
    within `since`..`until` (inclusive), a model one of the `fnmatch` globs
    `models` matches, from one of `sources` (an app's, or by `ORIGIN`).
    """

    since: datetime | None = None
    until: datetime | None = None
    models: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # A naive bound is UTC, as a stored time without an offset is.
        for name in ("since", "until"):
            bound = getattr(self, name)
            if bound is not None and bound.tzinfo is None:
                object.__setattr__(self, name, bound.replace(tzinfo=UTC))

    def __bool__(self) -> bool:
        return bool(
            self.since is not None
            or self.until is not None
            or self.models
            or self.sources
        )

    @property
    def timed(self) -> bool:
        return self.since is not None or self.until is not None

    def model_matches(self, model: str | None) -> bool:
        if not self.models:
            return True
        if model is None:
            return False
        return any(fnmatch.fnmatchcase(model, glob) for glob in self.models)


@rule(NODE)
def node_matches(node: Mapping[str, Any], where: TreeFilter) -> bool:
    """Whether one node's attributes match the filter."""
    sources = where.sources
    if (
        sources
        and node.get("source") not in sources
        and node.get(ORIGIN) not in sources
    ):
        return False
    if not where.model_matches(node.get("model")):
        return False
    if where.timed:
        if (moment := parse_time(node.get("datetime_utc"))) is None:
            return False
        if where.since is not None and moment < where.since:
            return False
        if where.until is not None and moment > where.until:
            return False
    return True


@rule(TREE)
def tree_is_in(graph: nx.DiGraph[str], where: TreeFilter) -> bool:
    """Whether any node of one tree matches."""
    return any(
        node_matches(attributes, where) for _, attributes in graph.nodes(data=True)
    )


@table_form(node_matches)
def node_matches_table(nodes: pd.DataFrame, where: TreeFilter) -> np.ndarray:
    """`node_matches` of every row, as booleans."""
    import numpy as np

    from convgraph.times import parse_times

    keep = np.ones(len(nodes), dtype=bool)
    if where.sources:
        apps = nodes["source"].isin(where.sources)
        if ORIGIN in nodes.columns:
            apps |= nodes[ORIGIN].isin(where.sources)
        keep &= apps.to_numpy(dtype=bool)
    if where.models:
        # Each name is matched once, not per row.
        names = nodes["model"].dropna().unique()
        passing = [name for name in names if where.model_matches(str(name))]
        keep &= nodes["model"].isin(passing).to_numpy(dtype=bool)
    if where.timed:
        moments = parse_times(nodes["datetime_utc"])
        timed = moments.notna().to_numpy(dtype=bool, copy=True)
        if where.since is not None:
            timed &= (moments >= where.since).to_numpy(dtype=bool)
        if where.until is not None:
            timed &= (moments <= where.until).to_numpy(dtype=bool)
        keep &= timed
    return keep


@table_form(tree_is_in)
def tree_is_in_table(nodes: pd.DataFrame, where: TreeFilter) -> np.ndarray:
    """The rows of the trees that are in, as booleans."""
    matched = nodes["tree_id"][node_matches_table(nodes, where)].unique()
    return nodes["tree_id"].isin(matched).to_numpy(dtype=bool)


def select_trees(forest: Forest, where: TreeFilter) -> Forest:
    """The `Forest` of the trees that are in; their marks as the whole
    file's reading set them."""
    from convgraph.model.forest import Forest

    if not where:
        return forest
    nodes = forest.nodes[tree_is_in_table(forest.nodes, where)].reset_index(drop=True)
    kept_ids = set(nodes["id"].tolist())
    tree_ids = set(nodes["tree_id"].tolist())
    names = {key: name for key, name in forest.names.items() if key in tree_ids}
    problems = [problem for problem in forest.problems if problem.node_id in kept_ids]
    calls = {call: node for call, node in forest.calls.items() if node in kept_ids}
    selected = Forest(nodes, names, problems, None, calls)
    selected.hidden = {tree: n for tree, n in forest.hidden.items() if tree in tree_ids}
    return selected
