"""Usage over time: the forest's figures grouped by day, week, month or
model, and what they cost.

`usage_table` groups the nodes table (pandas groupby, never a walk) by any
of the keys of `GROUPINGS`, each a function of the nodes table (a day, an
ISO week and a month are of the node's time in UTC): a new key is one more
entry there. Per group: the conversations with a node in it, the nodes, the
branch points (a node with more than one child counts in its own group; a
tree's start with several roots counts with its first root), the abandoned
branches (a leaf off the active path, not a subagent's, counts in its own
group: `convgraph.analysis.abandoned`), tokens in and
out, and the cost. The cost comes from the `genai-prices` package (the
`usage` extra): each model's price on the day (UTC) a node was logged, for
its input and output tokens (the input's cache reads and writes, where an
agent's session counts them, at the model's cache rates); a model whose
prices are linear is priced once per model and day, a tiered one node by
node. A model the package does not
know has no cost: its groups' cost is null where nothing else in them is
priced, and `Costs.unknown` names it, never a guess. A token count that
is negative or more than any request holds (`MOST_TOKENS`) has no cost
either: `count_problems` reports it (`convgraph check`), and the sums
count it as it is, exactly (`convgraph.analysis.tool_stats.sums_per_tree`:
Python's integers where a sum could pass 64 bits). Beside each total, what
the branches the user left spent (`convgraph.analysis.abandoned.
abandoned_work_nodes_table`): their tokens, their cost and their share of the
tokens, per group here and per tree in `tree_costs` (`stats --cost`) and
`graph_costs` (one tree's graph). `in_range_table` is `stats
--nodes-in-range`: the conversations table with the node figures counted
over the nodes a filter matches. The charts draw every label as text
(never matplotlib's mathtext) and a table of nothing as an empty chart.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from convgraph.analysis.abandoned import (
    abandoned_nodes_table,
    abandoned_work_nodes,
    abandoned_work_nodes_table,
)
from convgraph.analysis.stats import (
    children_counts,
    conversation_table,
    token_shares,
    within_totals,
)
from convgraph.analysis.tool_stats import sums_per_tree
from convgraph.contract import COST_COLUMNS, RETRY_COLUMNS
from convgraph.links.integrity import IMPOSSIBLE_COUNT, Problem
from convgraph.model.filters import TreeFilter, node_matches_table, select_trees
from convgraph.model.marks import active_column
from convgraph.times import parse_times
from convgraph.writing import written

if TYPE_CHECKING:
    import networkx as nx

    from convgraph.model.forest import Forest

#: The figures of a usage row, after its keys, in order.
USAGE_COLUMNS = (
    "conversations",
    "nodes",
    "branch_points",
    "abandoned_branches",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "abandoned_input_tokens",
    "abandoned_output_tokens",
    "abandoned_cost_usd",
    "abandoned_share",
)

#: The most tokens one node may count: far more than any model's context
#: holds, even over a long tool chain folded into one node, so a count above
#: it is damage, not use; and a million nodes of it still sum inside 64 bits.
MOST_TOKENS = 10**12

#: The token counts a node may have: the contract's, and an agent's cache
#: reads and writes where its table has them.
TOKEN_COLUMNS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
)


def impossible_rows(nodes: pd.DataFrame) -> np.ndarray:
    """Booleans over the rows of a nodes table: a node with a token count
    below 0 or above `MOST_TOKENS`, which no request counts.

    Examples
    --------
    >>> nodes = pd.DataFrame({"output_tokens": [1, 2, 3, 4],
    ...     "input_tokens": pd.array([5, -1, None, 2**63 - 1], dtype="Int64")})
    >>> impossible_rows(nodes).tolist()
    [False, True, False, True]
    """
    found = np.zeros(len(nodes), dtype=bool)
    for column in TOKEN_COLUMNS:
        if column in nodes.columns:
            values = nodes[column].astype("Int64")
            found |= (
                ((values < 0) | (values > MOST_TOKENS))
                .fillna(False)
                .to_numpy(dtype=bool)
            )
    return found


def count_problems(nodes: pd.DataFrame) -> list[Problem]:
    """A problem (`IMPOSSIBLE_COUNT`) for each node of `impossible_rows`,
    in the table's order, naming the count: what `convgraph check` says.

    Examples
    --------
    >>> nodes = pd.DataFrame({"id": ["a", "b"], "conversation_id": ["c", "c"],
    ...     "input_tokens": [5, -1], "output_tokens": [1, 2]})
    >>> [problem.message for problem in count_problems(nodes)]
    ['b counts input_tokens -1: no request does; it has no cost']
    """
    problems = []
    for row in np.flatnonzero(impossible_rows(nodes)).tolist():
        record = nodes.iloc[row]
        counts = [
            f"{column} {int(record[column])}"
            for column in TOKEN_COLUMNS
            if column in nodes.columns
            and pd.notna(record[column])
            and not 0 <= int(record[column]) <= MOST_TOKENS
        ]
        node_id = str(record["id"])
        conversation = record.get("conversation_id")
        problems.append(
            Problem(
                IMPOSSIBLE_COUNT,
                node_id,
                None,
                None if pd.isna(conversation) else str(conversation),
                f"{node_id} counts {', '.join(counts)}: no request does;"
                " it has no cost",
            )
        )
    return problems


def _times(nodes: pd.DataFrame) -> pd.Series:
    # Naive UTC: pandas warns when an aware time becomes a period.
    return parse_times(nodes["datetime_utc"]).dt.tz_localize(None)


def _per_day(
    nodes: pd.DataFrame, label: Callable[[pd.DatetimeIndex], list[str]]
) -> pd.Series:
    """A label of each node's day (UTC), made once per distinct day: a
    million nodes fall on a few thousand days. None for a node without a
    time."""
    codes, days = pd.factorize(_times(nodes).dt.floor("D"))
    labels = np.array([*label(pd.DatetimeIndex(days)), None], dtype=object)
    # factorize gives -1 for a missing time: the None at the end.
    return pd.Series(labels[codes], index=nodes.index, dtype=object)


def _day(nodes: pd.DataFrame) -> pd.Series:
    return _per_day(nodes, lambda days: list(days.strftime("%Y-%m-%d")))


def _week(nodes: pd.DataFrame) -> pd.Series:
    # ISO year and week: 2027-01-01 lies in 2026-W53. Four digits of year,
    # as a day's and a month's have, so the labels sort as the weeks do.
    return _per_day(
        nodes,
        lambda days: [
            f"{day.isocalendar()[0]:04d}-W{day.isocalendar()[1]:02d}" for day in days
        ],
    )


def _month(nodes: pd.DataFrame) -> pd.Series:
    return _per_day(nodes, lambda days: list(days.strftime("%Y-%m")))


def _model(nodes: pd.DataFrame) -> pd.Series:
    return nodes["model"].astype(object)


def _project(nodes: pd.DataFrame) -> pd.Series:
    # An agent's working directory (sources.agent_files.AGENT_ATTRIBUTES);
    # no other source has the column.
    if "project" not in nodes.columns:
        return pd.Series(None, index=nodes.index, dtype=object)
    return nodes["project"].astype(object)


#: The keys usage can be grouped by: each a label per row of a nodes table
#: (None where a node has none: no time, no model, no project).
GROUPINGS: dict[str, Callable[[pd.DataFrame], pd.Series]] = {
    "day": _day,
    "week": _week,
    "month": _month,
    "model": _model,
    "project": _project,
}


@dataclass
class Costs:
    """Each node's cost in US dollars (NaN where it has none) and the models
    the price table does not know."""

    per_node: np.ndarray
    unknown: list[str] = field(default_factory=list)


def node_costs(nodes: pd.DataFrame) -> Costs:
    """Each node's cost from `genai-prices`: the price of its model on the day
    it was logged (UTC; today's where it has no time), for its input and
    output tokens, the input's tokens read from the cache and written to it
    priced at the model's cache rates where the table has them (an agent's
    `cache_read_tokens`, `cache_write_tokens`: counted in `input_tokens`,
    as the package counts them). NaN for a node without a model or without
    tokens, or whose model the package does not know (named in `unknown`).

    Raises
    ------
    ImportError
        `genai-prices` is not installed (the `usage` extra).
    """
    from genai_prices.types import TieredPrices

    costs = np.full(len(nodes), np.nan)
    tokens_in = nodes["input_tokens"].astype("Int64")
    tokens_out = nodes["output_tokens"].astype("Int64")
    # A count no request has is no price's to answer for (a tiered price
    # refuses a negative one): no cost, and `count_problems` says why.
    priced = (
        nodes["model"].notna() & (tokens_in.notna() | tokens_out.notna())
    ).to_numpy(dtype=bool) & ~impossible_rows(nodes)
    rows = np.flatnonzero(priced)
    if not len(rows):
        return Costs(costs)
    frame = pd.DataFrame(
        {
            "model": nodes["model"].astype(object).to_numpy()[rows],
            "day": _day(nodes).to_numpy()[rows],
            "input": tokens_in.fillna(0).to_numpy(dtype=np.int64)[rows],
            "output": tokens_out.fillna(0).to_numpy(dtype=np.int64)[rows],
            **_cache_tokens(nodes, tokens_in, rows),
            "row": rows,
        }
    )
    unknown: list[str] = []
    for (model, day), group in frame.groupby(["model", "day"], dropna=False):
        moment = (
            datetime.fromisoformat(day).replace(tzinfo=UTC)
            if isinstance(day, str)
            else None
        )

        price = functools.partial(_price, str(model), moment)
        try:
            probe = price(1_000_000, 0)
        except LookupError:
            if model not in unknown:
                unknown.append(str(model))
            continue
        values = vars(probe.model_price)
        linear = not values.get("requests_kcount") and not any(
            isinstance(value, TieredPrices) for value in values.values()
        )
        if linear:
            # Linear in the tokens: a few prices a million tokens serve the
            # whole group; a cached token is an input token priced apart.
            base = price(0, 0).total_price
            per_in = float(probe.total_price - base) / 1e6
            per_out = float(price(0, 1_000_000).total_price - base) / 1e6
            million = (1_000_000, 0)
            per_read = float(price(*million, 1_000_000).total_price - base) / 1e6
            per_write = float(price(*million, 0, 1_000_000).total_price - base) / 1e6
            costs[group["row"].to_numpy()] = (
                float(base)
                + group["input"].to_numpy() * per_in
                + group["output"].to_numpy() * per_out
                + group["read"].to_numpy() * (per_read - per_in)
                + group["write"].to_numpy() * (per_write - per_in)
            )
        else:
            for row, *tokens in zip(
                group["row"],
                group["input"],
                group["output"],
                group["read"],
                group["write"],
                strict=True,
            ):
                total: Decimal = price(*map(int, tokens)).total_price
                costs[row] = float(total)
    return Costs(costs, sorted(unknown))


def _cache_tokens(
    nodes: pd.DataFrame, tokens_in: pd.Series, rows: np.ndarray
) -> dict[str, np.ndarray]:
    """The priced rows' tokens read from the cache and written to it (0
    where the table has none), no more than their input tokens (the
    package refuses more; a damaged file may say more)."""
    room = tokens_in.fillna(0).to_numpy(dtype=np.int64)[rows]
    found = {}
    for key, column in (("read", "cache_read_tokens"), ("write", "cache_write_tokens")):
        if column in nodes.columns:
            # Int64 first: a tree read by id has them as objects.
            values = nodes[column].astype("Int64").fillna(0)
            counts = np.minimum(values.to_numpy(dtype=np.int64)[rows], room)
        else:
            counts = np.zeros(len(rows), dtype=np.int64)
        found[key] = np.maximum(counts, 0)
        room = room - found[key]
    return found


def _price(
    model: str,
    moment: datetime | None,
    tokens_in: int,
    tokens_out: int,
    cache_read: int = 0,
    cache_write: int = 0,
) -> Any:
    """The package's price of one request's tokens (`tokens_in` counting
    the cache's reads and writes)."""
    from genai_prices import Usage, calc_price

    return calc_price(
        Usage(
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            cache_read_tokens=cache_read or None,
            cache_write_tokens=cache_write or None,
        ),
        model_ref=model,
        genai_request_timestamp=moment,
    )


def usage_table(
    forest: Forest,
    by: Sequence[str],
    costs: Costs | None = None,
    rows: np.ndarray | None = None,
) -> pd.DataFrame:
    """The forest's usage grouped by the keys `by` names (of `GROUPINGS`),
    one row per group that has nodes, sorted by its keys (a group without a
    key, a node without a time or model, last).

    Columns: the keys, then `USAGE_COLUMNS`; `cost_usd` is null where no node
    of the group has a price. `costs` is `node_costs(forest.nodes)` where the
    caller has it already (to say which models are unknown). `rows` (booleans
    over the nodes, as `node_matches_table` gives them) counts only those nodes:
    each is still a branch point or an abandoned branch as its whole tree
    makes it.

    Raises
    ------
    KeyError
        A key is not one of `GROUPINGS`.
    """
    nodes = forest.nodes
    keys = list(by)
    for key in keys:
        if key not in GROUPINGS:
            raise KeyError(key)
    if costs is None:
        costs = node_costs(nodes)
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
    left = abandoned_work_nodes_table(nodes, parent_rows, active)
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
            "cost_usd": costs.per_node,
            "left": left,
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
    cost = frame["cost_usd"].to_numpy(dtype=float)
    table["cost_usd"] = _cost_sums(cost, codes, count)
    table["abandoned_cost_usd"] = _cost_sums(np.where(spent, cost, 0.0), codes, count)
    table.loc[table["cost_usd"].isna(), "abandoned_cost_usd"] = np.nan
    table["abandoned_share"] = token_shares(parts, totals)
    for column in ("conversations", "nodes", "branch_points", "abandoned_branches"):
        table[column] = table[column].astype(np.int64)
    for key in keys:
        table[key] = table[key].astype(object).where(table[key].notna(), None)
    return table[[*keys, *USAGE_COLUMNS]]


def _cost_sums(costs: np.ndarray, codes: np.ndarray, groups: int) -> np.ndarray:
    """Each group's sum of costs (NaN: no price), NaN where none of its
    rows has a price."""
    priced = ~np.isnan(costs)
    sums = np.zeros(groups)
    np.add.at(sums, codes[priced], costs[priced])
    counted = np.bincount(codes[priced], minlength=groups)
    return np.where(counted > 0, sums, np.nan)


def in_range_table(forest: Forest, where: TreeFilter) -> pd.DataFrame:
    """The conversations table of the trees a filter keeps, with the figures
    of their nodes (`nodes`, the times, `models`, the usage sums, tool calls
    and tools) counted over the nodes it matches alone; the shape (roots,
    leaves, depth, branch points, active path) stays the whole tree's.
    """
    kept = select_trees(forest, where)
    table = conversation_table(kept)
    matched = kept.nodes[node_matches_table(kept.nodes, where)].reset_index(drop=True)
    from convgraph.analysis.stats import summary_table

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
        "tool_calls",
        "tools",
        *RETRY_COLUMNS,
    ]
    order = table["tree_id"]
    for column in figures:
        table[column] = alone[column].reindex(order).array
    return table


def tree_costs(forest: Forest, costs: Costs | None = None) -> pd.DataFrame:
    """Each tree's cost and the cost of its branches left (`COST_COLUMNS`,
    US dollars; null where no node of the tree has a price, 0 for the
    branches left where the tree has one and they have none), one row per
    tree with its `tree_id`, in the conversations table's order. `costs` is
    `node_costs(forest.nodes)` where the caller has it already.

    Raises
    ------
    ImportError
        `genai-prices` is not installed (the `usage` extra).
    """
    nodes = forest.nodes
    if costs is None:
        costs = node_costs(nodes)
    codes, tree_ids = pd.factorize(nodes["tree_id"], sort=False)
    left = abandoned_work_nodes_table(
        nodes, forest.parent_rows, active_column(nodes, forest.parent_rows)
    )
    whole = _cost_sums(costs.per_node, codes, len(tree_ids))
    spent = _cost_sums(np.where(left, costs.per_node, 0.0), codes, len(tree_ids))
    return pd.DataFrame(
        {
            "tree_id": pd.Series(tree_ids, dtype="str"),
            COST_COLUMNS[0]: whole,
            COST_COLUMNS[1]: np.where(np.isnan(whole), np.nan, spent),
        }
    )


def with_costs(
    table: pd.DataFrame, forest: Forest, costs: Costs | None = None
) -> pd.DataFrame:
    """A conversations table (`conversation_table` of `forest`, or a part of
    it) with `tree_costs`' columns after its own: null for a tree without a
    node (a chat export's empty conversation)."""
    found = tree_costs(forest, costs).set_index("tree_id")
    order = table["tree_id"].astype(str)
    return table.assign(
        **{column: found[column].reindex(order).to_numpy() for column in COST_COLUMNS}
    )


def graph_costs(tree: nx.DiGraph) -> dict[str, float | None]:
    """`tree_costs` of one tree's graph (`COST_COLUMNS` as keys, None where
    the tree has no price): what the HTML page and the browser show beside a
    tree's `abandoned_share`.

    Raises
    ------
    ImportError
        `genai-prices` is not installed (the `usage` extra).
    """
    ids = list(tree.nodes)
    nodes = pd.DataFrame(
        {
            column: pd.Series(
                [tree.nodes[node].get(column) for node in ids], dtype=dtype
            )
            for column, dtype in (
                ("model", object),
                ("datetime_utc", object),
                ("input_tokens", "Int64"),
                ("output_tokens", "Int64"),
            )
        }
    )
    per_node = node_costs(nodes).per_node
    left = set(abandoned_work_nodes(tree))
    priced = ~np.isnan(per_node)
    if not priced.any():
        return dict.fromkeys(COST_COLUMNS, None)
    spent = sum(
        float(cost)
        for node, cost, known in zip(ids, per_node, priced, strict=True)
        if known and node in left
    )
    return {COST_COLUMNS[0]: float(per_node[priced].sum()), COST_COLUMNS[1]: spent}


#: The keys a chart may spread along its x axis, in order of preference.
TIME_KEYS = ("day", "week", "month")
#: The picture formats `write_chart` writes, by suffix.
CHART_FORMATS = ("png", "svg")


def chart_series(table: pd.DataFrame, measure: str) -> pd.DataFrame:
    """A usage table as a chart draws it: one row per bar (the time key, or
    the first key), one column per series (the model, where the table is
    grouped by a time key and the model; else one column, `measure`), the
    figure `measure` summed, 0 where a bar has none of a series. A missing
    key is "none"."""
    keys = [column for column in table.columns if column not in USAGE_COLUMNS]
    along = next((key for key in TIME_KEYS if key in keys), keys[0])
    others = [key for key in keys if key != along]
    labelled = table.fillna({key: "none" for key in keys})
    values = labelled[measure].astype("Float64").fillna(0).astype(float)
    labelled = labelled.assign(**{measure: values})
    if not others:
        return labelled.groupby(along, sort=True)[[measure]].sum()
    series = labelled[others].astype(str).agg(" ".join, axis=1)
    return (
        labelled.assign(series=series)
        .pivot_table(
            index=along,
            columns="series",
            values=measure,
            aggfunc="sum",
            fill_value=0,
            sort=True,
        )
        .rename_axis(columns=None)
    )


def terminal_chart(
    table: pd.DataFrame, measure: str, width: int, height: int, color: bool = True
) -> str:
    """A stacked bar chart of `chart_series(table, measure)` drawn with
    plotext, `width` by `height` terminal cells, titled with the measure;
    without colour codes where `color` is False; one line saying so for a
    table of nothing.

    Raises
    ------
    ImportError
        plotext is not installed (the `usage` extra).
    """
    import plotext

    frame = chart_series(table, measure)
    if frame.empty:
        # plotext has no picture of no bars (it fails): a chart of nothing
        # is one line that says so.
        return f"{measure}: no usage to draw\n"
    figure = plotext.figure
    figure.clear.all()
    figure.plot_size(width, height)
    figure.title(measure)
    labels = [str(label) for label in frame.index]
    bottom = np.zeros(len(frame))
    for name in frame.columns:
        top = bottom + frame[name].to_numpy(dtype=float)
        bars = figure.bar(labels, bottom.tolist(), top.tolist())
        if len(frame.columns) > 1:
            bars.label(str(name))
        figure.draw(bars)
        bottom = top
    drawn = str(figure.build())
    figure.clear.all()
    return drawn if color else plotext.uncolorize(drawn)


def write_chart(table: pd.DataFrame, measure: str, path: str) -> None:
    """The chart of `terminal_chart` as a PNG or SVG file (by the path's
    suffix), drawn with matplotlib, without touching pyplot's global state;
    every label as plain text (no mathtext); a table of nothing gives the
    chart's title and axes without a bar.

    Raises
    ------
    ValueError
        The suffix is neither .png nor .svg.
    ImportError
        matplotlib is not installed (the `usage` extra).
    """
    suffix = path.rpartition(".")[2].lower()
    if suffix not in CHART_FORMATS:
        raise ValueError(f"{path}: a chart is written as .png or .svg")
    import matplotlib
    from matplotlib.figure import Figure

    frame = chart_series(table, measure)
    # An SVG keeps its words as text (searchable, readable by a screen
    # reader), not as the outlines of glyphs. Every label is data (a model
    # name, a project's folder) and is drawn as it is written: `$` starts no
    # mathtext, which a name like `my$\frac{$model` would fail to parse.
    settings: dict[str, Any] = {
        "svg.fonttype": "none",
        "text.parse_math": False,
        "text.usetex": False,
    }
    with matplotlib.rc_context(settings):  # type: ignore[arg-type]
        figure = Figure(figsize=(max(6.0, 0.5 * len(frame)), 4.5), layout="constrained")
        axes = figure.subplots()
        if not frame.empty:
            frame.plot.bar(stacked=True, ax=axes, legend=len(frame.columns) > 1)
        axes.set_title(measure)
        axes.set_xlabel(str(frame.index.name))
        # Through the one writer: a regular file replaced whole, a pipe or a
        # device written in place, nothing partial left on an interrupt.
        with written(path) as stream:
            figure.savefig(stream, format=suffix)
