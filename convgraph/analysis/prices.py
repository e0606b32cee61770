"""What the forest's tokens cost, from `genai-prices` (the `usage` extra):
each model's price on the day (UTC) a node was logged, cache reads and writes
at the model's cache rates. A model the package does not know has no cost
(`Costs.unknown` names it), nor has a count no request holds (`count_problems`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from convgraph.analysis.abandoned import (
    abandoned_work_nodes,
    abandoned_work_nodes_table,
)
from convgraph.contract import COST_COLUMNS
from convgraph.links.integrity import IMPOSSIBLE_COUNT, Problem
from convgraph.model.marks import active_column
from convgraph.times import parse_times

if TYPE_CHECKING:
    import networkx as nx

    from convgraph.model.forest import Forest

#: More than any context holds, even over a tool chain: a count above is damage.
MOST_TOKENS = 10**12

#: The contract's token counts, and an agent's cache reads and writes.
TOKEN_COLUMNS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
)


def impossible_rows(nodes: pd.DataFrame) -> np.ndarray:
    """Booleans over a nodes table's rows: a token count below 0 or above `MOST_TOKENS`."""
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
    """An `IMPOSSIBLE_COUNT` problem for each row of `impossible_rows`, in order."""
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
        tree = None if pd.isna(conversation) else str(conversation)
        message = (
            f"{node_id} counts {', '.join(counts)}: no request does; it has no cost"
        )
        problems.append(Problem(IMPOSSIBLE_COUNT, node_id, None, tree, message))
    return problems


def _times(nodes: pd.DataFrame) -> pd.Series:
    # Naive UTC: pandas warns when an aware time becomes a period.
    times: pd.Series = parse_times(nodes["datetime_utc"]).dt.tz_localize(None)
    return times


def per_day(
    nodes: pd.DataFrame, label: Callable[[pd.DatetimeIndex], list[str]]
) -> pd.Series:
    """A label of each node's day (UTC), made once per distinct day; None without a time."""
    codes, days = pd.factorize(_times(nodes).dt.floor("D"))
    labels = np.array([*label(pd.DatetimeIndex(days)), None], dtype=object)
    # factorize gives -1 for a missing time: the None at the end.
    return pd.Series(labels[codes], index=nodes.index, dtype=object)


def day_labels(nodes: pd.DataFrame) -> pd.Series:
    """Each node's day (UTC) as `YYYY-MM-DD`, None without a time."""
    return per_day(nodes, lambda days: list(days.strftime("%Y-%m-%d")))


@dataclass
class Costs:
    """Each node's cost in US dollars (NaN where it has none) and the models
    the price table does not know."""

    per_node: np.ndarray
    unknown: list[str] = field(default_factory=list)


def node_costs(nodes: pd.DataFrame) -> Costs:
    """Each node's cost in US dollars at its model's price on its day (UTC;
    today's without a time), cache tokens at the cache rates; NaN without a
    model, tokens or a known price (the model named in `unknown`).
    Raises ImportError without `genai-prices`."""
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
            "day": day_labels(nodes).to_numpy()[rows],
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
    """The priced rows' cache reads and writes, at most their input tokens
    (the package refuses more; a damaged file may say more)."""
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


def cost_sums(costs: np.ndarray, codes: np.ndarray, groups: int) -> np.ndarray:
    """Each group's sum of costs, NaN where none of its rows has a price."""
    priced = ~np.isnan(costs)
    sums = np.zeros(groups)
    np.add.at(sums, codes[priced], costs[priced])
    counted = np.bincount(codes[priced], minlength=groups)
    return np.where(counted > 0, sums, np.nan)


def tree_costs(forest: Forest, costs: Costs | None = None) -> pd.DataFrame:
    """Each tree's `COST_COLUMNS` (null where no node has a price), one row per
    tree with its `tree_id`, in the conversations table's order.
    Raises ImportError without `genai-prices`."""
    nodes = forest.nodes
    if costs is None:
        costs = node_costs(nodes)
    codes, tree_ids = pd.factorize(nodes["tree_id"], sort=False)
    left = abandoned_work_nodes_table(
        nodes, forest.parent_rows, active_column(nodes, forest.parent_rows)
    )
    whole = cost_sums(costs.per_node, codes, len(tree_ids))
    spent = cost_sums(np.where(left, costs.per_node, 0.0), codes, len(tree_ids))
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
    """A conversations table with `tree_costs`' columns after its own."""
    found = tree_costs(forest, costs).set_index("tree_id")
    order = table["tree_id"].astype(str)
    return table.assign(
        **{column: found[column].reindex(order).to_numpy() for column in COST_COLUMNS}
    )


def graph_costs(tree: nx.DiGraph[str]) -> dict[str, float | None]:
    """`tree_costs` of one tree's graph, None where it has no price.
    Raises ImportError without `genai-prices`."""
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
