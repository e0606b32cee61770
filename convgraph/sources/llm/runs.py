"""A tool chain is one step of the user's: the calls of a run folded into one
node (docs/design.md#the-node-contract), in list and table form.

llm logs each call of a tool chain as a row; the readers flag (`RUN`) a call
sent only tool results. A flagged call whose parent is a call of its tree
carries on that call's run, unless the chain of such links goes round a
cycle. A call ends a node where no call carries on its run or another call
goes on from it, so a forked run ends one node per branch. The node's id is
its last call's (so `llm -c` goes on from the run's end); `merge_run` gives
the rest. Inner calls are mapped to the first ending node holding them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from convgraph.contract import INTEGER_ATTRIBUTES, PARENT_ROWS, PARTS, TOOL_CALLS, TOOLS
from convgraph.links.rules import RECORDS, rule, table_form
from convgraph.parts import ASSISTANT, USER, Part, is_plain
from convgraph.parts import text as text_part
from convgraph.sources.source import log_order, sort_log_order

if TYPE_CHECKING:
    import pandas as pd

RUN = "_run"
TOOL_NAMES = "_tool_names"

FROM_HEAD = ("parent_id", "prompt", "system")


def call_parts(call: dict[str, Any]) -> list[Part]:
    """One call's parts, or its prompt and answer as text parts."""
    if call.get(PARTS) is not None:
        return list(call[PARTS])
    found = []
    if call.get("prompt"):
        found.append(text_part(USER, call["prompt"]))
    if call.get("response"):
        found.append(text_part(ASSISTANT, call["response"]))
    return found


def tools_of(names: Iterable[Any]) -> str | None:
    """The tools called, each once, in first-call order, joined by ", ";
    None where none has a name."""
    found = dict.fromkeys(name for name in names if isinstance(name, str))
    return ", ".join(found) or None


def merge_run(calls: Sequence[dict[str, Any]], text: bool = True) -> dict[str, Any]:
    """One node from its run's calls, head first: the head's parent, prompt
    and system; answers joined by a blank line; every call's parts; usage
    summed; the last call's model and the latest time."""
    head, last = calls[0], calls[-1]
    node = {key: value for key, value in last.items() if key not in (RUN, TOOL_NAMES)}
    for key in FROM_HEAD:
        node[key] = head.get(key)
    names = [name for call in calls for name in call.get(TOOL_NAMES) or ()]
    node[TOOLS] = tools_of(names)
    if len(calls) == 1:
        return node
    answers = [call.get("response") for call in calls]
    node["response"] = (
        None
        if all(answer is None for answer in answers)
        else "\n\n".join(answer for answer in answers if answer)
    )
    if text:
        parts = [part for call in calls for part in call_parts(call)]
        node[PARTS] = None if is_plain(parts) else parts
    counts = [call.get(TOOL_CALLS) for call in calls]
    node[TOOL_CALLS] = None if None in counts else sum(counts)
    node["datetime_utc"] = next(
        (call["datetime_utc"] for call in reversed(calls) if call.get("datetime_utc")),
        None,
    )
    for key in INTEGER_ATTRIBUTES:
        values = [call.get(key) for call in calls if call.get(key) is not None]
        node[key] = sum(values) if values else None
    return node


@rule(RECORDS)
def fold_runs(
    records: list[dict[str, Any]], text: bool = True
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """One tree's nodes from its calls, and each inner call's node."""
    index = {record["id"]: row for row, record in enumerate(records)}
    parents = [index.get(record["parent_id"], -1) for record in records]
    parents = [-1 if parent == row else parent for row, parent in enumerate(parents)]
    up = [
        parent if record.get(RUN) else -1
        for record, parent in zip(records, parents, strict=True)
    ]
    carried = _reaching_heads(up)
    children = [0] * len(records)
    carrying = [0] * len(records)
    for row, parent in enumerate(parents):
        if parent >= 0:
            children[parent] += 1
            carrying[parent] += carried[row] >= 0
    nodes = []
    calls: dict[str, str] = {}
    for row, record in enumerate(records):
        if carrying[row] and children[row] == carrying[row]:
            continue  # inside a run: a node further down ends it
        run = [row]
        while carried[run[-1]] >= 0:
            run.append(carried[run[-1]])
        run.reverse()
        for inner in run[:-1]:
            calls.setdefault(records[inner]["id"], record["id"])
        nodes.append(merge_run([records[call] for call in run], text))
    if calls:
        nodes.sort(key=log_order)
    return nodes, calls


def _reaching_heads(up: list[int]) -> list[int]:
    """`up` (-1 for none) without the links whose chain goes round a cycle."""
    reaches: list[bool | None] = [None] * len(up)
    for start in range(len(up)):
        walked = []
        on_walk = set()
        row = start
        while reaches[row] is None and up[row] >= 0 and row not in on_walk:
            walked.append(row)
            on_walk.add(row)
            row = up[row]
        found = reaches[row] if reaches[row] is not None else up[row] < 0
        if reaches[row] is None and up[row] < 0:
            reaches[row] = True
        for walked_row in walked:
            reaches[walked_row] = found
    return [link if reaches[row] else -1 for row, link in enumerate(up)]


@table_form(fold_runs)
def fold_runs_table(
    nodes: pd.DataFrame, text: bool = True
) -> tuple[pd.DataFrame, dict[str, str]]:
    """`fold_runs` on the whole table (index 0..n-1); only runs longer than
    one are merged one by one."""
    import numpy as np

    from convgraph.links.pointer_jumping import parent_rows_of, reaches_root

    nodes = _with_tools(nodes)
    flags = nodes[RUN].to_numpy(dtype=bool, na_value=False)
    if not flags.any():
        return nodes.drop(columns=[RUN, TOOL_NAMES]), {}
    count = len(nodes)
    rows = np.arange(count)
    parents = parent_rows_of(nodes["id"], nodes["parent_id"])
    trees = nodes["tree_id"].astype(object).to_numpy()
    same_tree = parents >= 0
    same_tree[same_tree] = trees[parents[same_tree]] == trees[same_tree]
    parents = np.where(same_tree & (parents != rows), parents, -1)
    up = np.where(flags, parents, -1)
    carried = np.where(reaches_root(up), up, -1)
    children = np.bincount(parents[parents >= 0], minlength=count)
    carrying = np.bincount(carried[carried >= 0], minlength=count)
    inside = (carrying > 0) & (children == carrying)
    ends = np.flatnonzero(~inside & (carried >= 0))
    if not len(ends):
        return nodes.drop(columns=[RUN, TOOL_NAMES]), {}
    runs = []
    for end in ends.tolist():
        run = [end]
        while carried[run[-1]] >= 0:
            run.append(int(carried[run[-1]]))
        run.reverse()
        runs.append(run)
    involved = sorted({row for run in runs for row in run})
    record_of = dict(zip(involved, _plain_records(nodes.iloc[involved]), strict=True))
    calls: dict[str, str] = {}
    merged = {}
    for run in runs:  # in the log order of their last calls, as in fold_runs
        end_id = record_of[run[-1]]["id"]
        for inner in run[:-1]:
            calls.setdefault(record_of[inner]["id"], end_id)
        merged[run[-1]] = merge_run([record_of[row] for row in run], text)
    for column in (*FROM_HEAD, "response", PARTS, TOOL_CALLS, TOOLS, "datetime_utc"):
        _set_rows(nodes, column, merged)
    for column in INTEGER_ATTRIBUTES:
        _set_rows(nodes, column, merged)
    # `PARENT_ROWS` are stale once rows are gone: the forest uses the ids.
    nodes = nodes[~inside].drop(columns=[RUN, TOOL_NAMES, PARENT_ROWS], errors="ignore")
    return sort_log_order(nodes), calls


def _with_tools(nodes: pd.DataFrame) -> pd.DataFrame:
    import numpy as np
    import pandas as pd

    named = np.flatnonzero(nodes[TOOL_NAMES].notna().to_numpy())
    if not len(named):  # the readers' `TOOLS` stay as they are, maybe shared
        return nodes
    names = nodes[TOOL_NAMES].to_numpy(dtype=object)
    tools = np.full(len(nodes), None, dtype=object)
    for row in named.tolist():
        tools[row] = tools_of(names[row])
    return nodes.assign(**{TOOLS: pd.Series(tools, index=nodes.index, dtype=object)})


def _plain_records(rows: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as records with plain Python values (NA as None)."""
    records: list[dict[str, Any]] = [
        {str(key): value for key, value in record.items()}
        for record in rows.astype(object).to_dict("records")
    ]
    for record in records:
        for key, value in record.items():
            if value is None or isinstance(value, list):
                continue
            if _missing(value):
                record[key] = None
            elif hasattr(value, "item"):  # a numpy scalar
                record[key] = value.item()
    return records


def _set_rows(
    nodes: pd.DataFrame, column: str, merged: dict[int, dict[str, Any]]
) -> None:
    import pandas as pd

    values = nodes[column].to_numpy(dtype=object, copy=True)
    for row, node in merged.items():
        values[row] = node[column]
    if isinstance(nodes[column].dtype, pd.Int64Dtype):
        nodes[column] = pd.array(values, dtype="Int64")
    else:
        nodes[column] = pd.Series(values, index=nodes.index, dtype=object)


def _missing(value: Any) -> bool:
    import pandas as pd

    return value is None or (not isinstance(value, list) and bool(pd.isna(value)))
