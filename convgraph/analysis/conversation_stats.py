"""A conversation's statistics (`contract.CONVERSATION_COLUMNS`) in the rule's
two forms: `summary` of one tree's records (plain Python) and `summary_table`,
one row per tree of a node table.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from convgraph.analysis.abandoned import (
    abandoned_nodes,
    abandoned_nodes_table,
    abandoned_work_nodes,
    abandoned_work_nodes_table,
    tree_records,
)
from convgraph.analysis.tool_stats import (
    may_pass_64_bits,
    split_lists,
    sums_per_tree,
    tree_tool_totals,
    tree_tool_totals_table,
)
from convgraph.contract import (
    CACHE_ATTRIBUTES,
    CONVERSATION_COLUMNS,
    INTEGER_ATTRIBUTES,
    RETRY_COLUMNS,
    TOOL_CALLS,
    TOOLS,
    TREE_NAME,
)
from convgraph.links.rules import RECORDS, rule, table_form
from convgraph.model.marks import active_column
from convgraph.times import parse_time, time_bounds

if TYPE_CHECKING:
    # Imported by the table functions: `summary` of one tree needs none.
    import numpy as np
    import pandas as pd

    from convgraph.analysis.abandoned import Tree


def _children_counts(parent_rows: np.ndarray) -> np.ndarray:
    import numpy as np

    return np.bincount(parent_rows[parent_rows >= 0], minlength=len(parent_rows))


def _links(
    nodes: pd.DataFrame, parent_rows: np.ndarray | None, depths: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """`parent_rows` and `depths`, found from the ids where not given."""
    from convgraph.links.pointer_jumping import parent_rows_of, root_pointers

    if parent_rows is None:
        parent_rows = parent_rows_of(nodes["id"], nodes["parent_id"])
    if depths is None:
        depths = root_pointers(parent_rows)[1]
    return parent_rows, depths


@rule(RECORDS)
def summary(tree: Tree, tree_id: Any = None, name: Any = None) -> dict[str, Any]:
    """One conversation's statistics (`CONVERSATION_COLUMNS`): `summary_table`'s
    row for one tree, given as its records (`abandoned.Tree`) or its graph,
    which names itself. Times are as stored, where the table reads them as times.
    """
    if not isinstance(tree, Sequence):
        tree_id, name = tree.graph.get("tree_id"), tree.graph.get("name")
    records = tree_records(tree)
    children = Counter(record["parent_id"] for record in records)
    roots = children.pop(None, 0)
    # The start of a tree with several roots is one more branch point.
    counts = [*children.values(), *([roots] if roots > 1 else [])]
    stats = {
        "tree_id": tree_id,
        "name": name,
        "nodes": len(records),
        "roots": roots,
        "leaves": len(records) - len(children),
        "max_depth": max(_depths(records), default=0),
        "branch_points": sum(count > 1 for count in counts),
        "branching_factor_avg": sum(counts) / len(counts) if counts else 0.0,
        "branching_factor_max": max(counts, default=0),
        **_totals(records),
        **tree_tool_totals(records),
        "active_path_length": sum(1 for record in records if record.get("active")),
        "abandoned_branches": len(abandoned_nodes(records)),
    }
    left = set(abandoned_work_nodes(records))
    part = whole = 0  # missing counts 0
    for key in ("input_tokens", "output_tokens"):
        values = (r.get(key) for r in records if r["id"] in left)
        spent = sum(value for value in values if value is not None)
        stats[f"abandoned_{key}"] = None if stats[key] is None else spent
        part, whole = part + (stats[f"abandoned_{key}"] or 0), whole + (stats[key] or 0)
    stats["abandoned_share"] = float(part) / float(whole) if whole > 0 else None
    return {key: stats[key] for key in CONVERSATION_COLUMNS}


def _depths(records: Sequence[Mapping[str, Any]]) -> Iterable[int]:
    """The depth of every node a root reaches; a walk up stops at a node
    already known, or met twice (a hand-made graph's cycle: no depth)."""
    parent_of = {record["id"]: record["parent_id"] for record in records}
    depth: dict[Any, int | None] = {}
    for node in parent_of:
        walked: dict[Any, None] = {}
        while node is not None and node not in depth and node not in walked:
            walked[node] = None
            node = parent_of.get(node)
        above = -1 if node is None else depth.get(node)
        for level, passed in enumerate(reversed(walked), 1):
            depth[passed] = None if above is None else above + level
    return [level for level in depth.values() if level is not None]


def _totals(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """`model.tree.node_totals` of records: earliest and latest time as stored,
    models in node order, usage sums (None where no node has a figure)."""
    times = [
        (moment, text)
        for record in records
        if (moment := parse_time(text := record.get("datetime_utc"))) is not None
    ]
    totals: dict[str, Any] = {
        "first_datetime": min(times, key=itemgetter(0))[1] if times else None,
        "last_datetime": max(times, key=itemgetter(0))[1] if times else None,
        "models": list(dict.fromkeys(m for r in records if (m := r.get("model")))),
    }
    for key in INTEGER_ATTRIBUTES:
        known = [value for r in records if (value := r.get(key)) is not None]
        totals[key] = sum(known) if known or not records else None
    return totals


def empty_summary(tree_id: Any, name: Any) -> dict[str, Any]:
    """`summary` of a tree without a node (a chat export's empty conversation)."""
    row: dict[str, Any] = dict.fromkeys(CONVERSATION_COLUMNS, 0)
    row |= dict.fromkeys(("first_datetime", "last_datetime"), None)
    row |= dict.fromkeys((*INTEGER_ATTRIBUTES, *RETRY_COLUMNS), None)
    extra = {"branching_factor_avg": 0.0, "models": [], TOOLS: [], TOOL_CALLS: 0}
    return row | extra | {"tree_id": tree_id, "name": name}


@table_form(summary)
def summary_table(
    nodes: pd.DataFrame,
    names: Mapping[Any, Any] | None = None,
    parent_rows: np.ndarray | None = None,
    depths: np.ndarray | None = None,
) -> pd.DataFrame:
    """`conversation_table` of a node table holding its trees whole (as
    `node_table_of` takes it), one row per tree in the order of its first
    row. Without `names`, a `tree_name` column gives them where there is one.
    """
    import numpy as np
    import pandas as pd

    parent_rows, depths = _links(nodes, parent_rows, depths)
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
    # The children of a tree's parents add up to its nodes less its roots.
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
    for column, values in tree_tool_totals_table(nodes).items():
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
    for column in CACHE_ATTRIBUTES:
        if column in nodes.columns:
            table[column] = sums_per_tree(nodes[column], codes, trees)
    return table


def within_totals(total: Any, part: Any) -> Any:
    """A part's sums, 0 where it has none, missing where the total is."""
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
    """The abandoned share of every tree at once, as nullable `Float64`."""
    import numpy as np
    import pandas as pd

    def counted(columns: list[Any]) -> np.ndarray:
        # Summed as integers, then made floats, as `summary` does: the two
        # forms divide the same numbers.
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
    """Each tree's name from `names`, else its first row's `tree_name`."""
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
    """Each node's model as a code (-1 for none, as is "", as `summary`
    counts it), and the models."""
    import numpy as np
    import pandas as pd

    codes, found = pd.factorize(models, sort=False)
    names = found.to_numpy(dtype=object)
    empty = np.flatnonzero(names == "")
    if len(empty):
        codes = np.where(codes == empty[0], -1, codes - (codes > empty[0]))
        names = np.delete(names, empty[0])
    return codes, names


def _models_per_tree(
    models: pd.Series, tree_codes: np.ndarray, trees: int
) -> list[list[Any]]:
    """Each tree's distinct models in order of first use."""
    import numpy as np
    import pandas as pd

    codes, names = _model_codes(models)
    used = codes >= 0
    pairs = tree_codes[used].astype(np.int64) * max(len(names), 1) + codes[used]
    # Distinct (tree, model) pairs in order of first use.
    first_uses = pd.unique(pairs)
    trees_of, models_of = np.divmod(first_uses, max(len(names), 1))
    order = np.argsort(trees_of, kind="stable")
    flat = names[models_of[order]].tolist()
    return split_lists(flat, np.bincount(trees_of, minlength=trees))
