"""Coding agents' work per session or per project, grouped (pandas groupby,
never a walk) from the columns an agent's sessions add to the nodes table;
a forest of any other source gives an empty table."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from convgraph.analysis.abandoned import abandoned_nodes_table, subagent_rows

if TYPE_CHECKING:
    from convgraph.model.forest import Forest

#: What `agent_table` can group by, and the column each names.
GROUP_KEYS = {"session": "tree_id", "project": "project"}

#: The figures of a row of `agent_table`, after its key, in order.
AGENT_COLUMNS = tuple(
    "sessions turns sidechains rewinds tool_calls tool_errors tools"  # noqa: SIM905 (words)
    " input_tokens cache_read_tokens cache_write_tokens output_tokens"
    " first_datetime last_datetime".split()
)

#: The summed integer figures.
_SUMS = tuple(
    "tool_calls tool_errors input_tokens cache_read_tokens"  # noqa: SIM905 (words)
    " cache_write_tokens output_tokens".split()
)


def agent_table(forest: Forest, by: str = "session") -> pd.DataFrame:
    """One row per session (`by="session"`, keyed `tree_id`) or project
    (`by="project"`), with `AGENT_COLUMNS`, in first-come order; rewinds are the
    branches left off the active path; `tools` each tool with its calls, most called
    first; sums missing where no node tells. Raises ValueError for another `by`."""
    if by not in GROUP_KEYS:
        raise ValueError(f"agent_table groups by session or project, not {by!r}")
    key = GROUP_KEYS[by]
    nodes = forest.nodes
    if "project" not in nodes.columns:
        return pd.DataFrame(columns=[key, *AGENT_COLUMNS])
    main = ~subagent_rows(nodes)
    active = nodes["active"].to_numpy(dtype=bool)
    table = pd.DataFrame(
        {
            key: nodes[key].astype(object).to_numpy(),
            "tree_id": nodes["tree_id"].astype(object).to_numpy(),
            "turn": main,
            "rewind": abandoned_nodes_table(nodes, forest.parent_rows, active),
            "sidechain": nodes["sidechain"].to_numpy(),
            "datetime_utc": nodes["datetime_utc"].to_numpy(),
            # Int64: a tree read by id has the agents' figures as objects.
            **{name: nodes[name].astype("Int64") for name in _SUMS},
        }
    )
    # Nodes without a key (a project not said) make a group of their own.
    table[key] = table[key].where(table[key].notna(), "")
    groups = table.groupby(key, sort=False)
    result = pd.DataFrame(
        {
            "sessions": groups["tree_id"].nunique(),
            "turns": groups["turn"].sum(),
            "sidechains": groups["sidechain"].nunique(),
            "rewinds": groups["rewind"].sum(),
            **{name: groups[name].sum(min_count=1) for name in _SUMS},
            "first_datetime": groups["datetime_utc"].min(),
            "last_datetime": groups["datetime_utc"].max(),
        }
    )
    result["tools"] = _tool_lists(nodes, table[key], result.index)
    result = result.reset_index().rename(columns={"index": key})
    result[key] = result[key].where(result[key] != "", None)
    for name in ("sessions", "turns", "sidechains", "rewinds"):
        result[name] = result[name].astype(np.int64)
    for name in (key, "tools", "first_datetime", "last_datetime"):
        values = result[name].astype(object)
        result[name] = values.where(values.notna(), None)
    return result.loc[:, [key, *AGENT_COLUMNS]]


def _tool_lists(
    nodes: pd.DataFrame, keys: pd.Series, order: pd.Index
) -> list[str | None]:
    """Each group's tools with their calls ("Bash 12, Read 3"), or None."""
    uses = nodes["tool_uses"].to_numpy()
    labels = keys.to_numpy()
    held = np.flatnonzero(pd.notna(uses)).tolist()
    long = pd.DataFrame(
        [
            (labels[row], name, count)
            for row in held
            for name, count in uses[row].items()
        ],
        columns=["key", "tool", "calls"],
    )
    totals = long.groupby(["key", "tool"], sort=False)["calls"].sum()
    found: dict[object, str] = {}
    for group, calls in totals.groupby(level=0, sort=False):
        ranked = calls.droplevel(0).sort_values(ascending=False, kind="stable")
        found[group] = ", ".join(f"{tool} {count}" for tool, count in ranked.items())
    return [found.get(group) for group in order]
