"""Which trees a time, model or source filter keeps, in both forms.

A filter (`TreeFilter`) names a time range (`since`, `until`, both
inclusive), model globs (`fnmatch`, case as written) and sources
(`responses`, `turns`, `chatgpt`, ...). A node matches when it lies in the
range, was answered by a model a glob matches and comes from a named source
(each part only where given); a tree is in when any of its nodes matches, and
is kept whole. A node without a time is in no range, one without a model
matches no glob. The rule has two forms side by side, one differential
property test for the pair (tests/test_rule_agreement.py): `node_matches` on one
node's attributes and `tree_is_in` on one DiGraph (for the commands that read
one tree), and `node_matches_table` on a whole nodes table, vectorized (the glob
is matched once per model name, not per row), with `select_trees` giving the
`Forest` of the trees that are in. Every form compares a node's time as `convgraph.times` reads it, a moment
from year 1 to 9999 to the microsecond (`parse_time`, `parse_times`,
`epoch_microseconds`), so a node dated 0001-01-01 (Go's zero time) or 9999
is kept or left out alike by every command; a bound given as a naive time
is UTC, as a stored time without an offset is.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from convgraph.links.rules import NODE, TREE, rule, table_form
from convgraph.times import parse_time

if TYPE_CHECKING:
    import networkx as nx
    import numpy as np
    import pandas as pd

    from convgraph.model.forest import Forest


@dataclass(frozen=True)
class TreeFilter:
    """What a node must be for its tree to be kept: each part only where
    given (None or empty: anything).

    Attributes
    ----------
    since, until
        The first and last moment kept (aware times; inclusive).
    models
        `fnmatch` globs, one of which the node's model must match.
    sources
        The sources the node may come from (`contract`'s `source` values).
    """

    since: datetime | None = None
    until: datetime | None = None
    models: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # A naive bound is UTC, as a stored time without an offset is: the
        # forms compare aware moments, which a naive one would not be.
        for name in ("since", "until"):
            bound = getattr(self, name)
            if bound is not None and bound.tzinfo is None:
                object.__setattr__(self, name, bound.replace(tzinfo=UTC))

    def __bool__(self) -> bool:
        """Whether the filter leaves anything out at all."""
        return bool(
            self.since is not None
            or self.until is not None
            or self.models
            or self.sources
        )

    @property
    def timed(self) -> bool:
        """Whether the filter names a time range."""
        return self.since is not None or self.until is not None

    def model_matches(self, model: str | None) -> bool:
        """Whether a model name passes the model globs."""
        if not self.models:
            return True
        if model is None:
            return False
        return any(fnmatch.fnmatchcase(model, glob) for glob in self.models)


@rule(NODE)
def node_matches(node: Mapping[str, Any], where: TreeFilter) -> bool:
    """Whether one node (its attributes: `datetime_utc`, `model`, `source`)
    matches the filter.
    """
    if where.sources and node.get("source") not in where.sources:
        return False
    if not where.model_matches(node.get("model")):
        return False
    if where.timed:
        moment = parse_time(node.get("datetime_utc"))
        if moment is None:
            return False
        if where.since is not None and moment < where.since:
            return False
        if where.until is not None and moment > where.until:
            return False
    return True


@rule(TREE)
def tree_is_in(graph: nx.DiGraph[str], where: TreeFilter) -> bool:
    """Whether one tree is in: any of its nodes matches (`node_matches`)."""
    return any(
        node_matches(attributes, where) for _, attributes in graph.nodes(data=True)
    )


@table_form(node_matches)
def node_matches_table(nodes: pd.DataFrame, where: TreeFilter) -> np.ndarray:
    """`node_matches` of every row of a nodes table at once, as booleans."""
    import numpy as np

    from convgraph.times import parse_times

    keep = np.ones(len(nodes), dtype=bool)
    if where.sources:
        keep &= nodes["source"].isin(where.sources).to_numpy(dtype=bool)
    if where.models:
        # The names are few and the rows many: each name is matched once.
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
    """The rows of the trees that are in (any of their rows matches), as
    booleans: whole trees, in the table's order."""
    matched = nodes["tree_id"][node_matches_table(nodes, where)].unique()
    return nodes["tree_id"].isin(matched).to_numpy(dtype=bool)


def select_trees(forest: Forest, where: TreeFilter) -> Forest:
    """The `Forest` of the trees that are in, each whole; `forest` itself
    where the filter leaves nothing out.

    The trees' marks (active path, notes, preferred answers) are kept as the
    whole file's reading set them; problems stay with the trees they name.
    """
    from convgraph.model.forest import Forest

    if not where:
        return forest
    keep = tree_is_in_table(forest.nodes, where)
    nodes = forest.nodes[keep].reset_index(drop=True)
    kept_ids = set(nodes["id"].tolist())
    tree_ids = set(nodes["tree_id"].tolist())
    names = {key: name for key, name in forest.names.items() if key in tree_ids}
    problems = [problem for problem in forest.problems if problem.node_id in kept_ids]
    calls = {call: node for call, node in forest.calls.items() if node in kept_ids}
    selected = Forest(nodes, names, problems, None, calls)
    selected.hidden = {tree: n for tree, n in forest.hidden.items() if tree in tree_ids}
    return selected
