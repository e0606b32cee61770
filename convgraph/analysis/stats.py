"""Tree statistics as pandas DataFrames, vectorized over the forest's tables.

No loop per node, no recursion, no graph per tree. Each table is a function
of a node table holding its trees whole (`node_table_of`, `summary_table`,
`branch_table_of`), which `convgraph.analysis.datasets` runs per partition.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from convgraph.analysis.conversation_stats import (
    _children_counts,
    _links,
    _model_codes,
    empty_summary,
    summary_table,
)
from convgraph.analysis.conversation_stats import summary as summary
from convgraph.analysis.conversation_stats import token_shares as token_shares
from convgraph.analysis.conversation_stats import within_totals as within_totals
from convgraph.analysis.tool_stats import may_pass_64_bits, split_lists
from convgraph.contract import (
    CATEGORY_COLUMNS,
    INTEGER_ATTRIBUTES,
    INTEGER_COLUMNS,
    NODE_COLUMNS,
    PARTS,
    TEXT_ATTRIBUTES,
    TOOL_CALLS,
    TOOLS,
    TREE_NAME,
)
from convgraph.contract import CONVERSATION_COLUMNS as CONVERSATION_COLUMNS
from convgraph.links.integrity import EMPTY_CONVERSATION
from convgraph.model.marks import active_column, booleans
from convgraph.times import parse_times

if TYPE_CHECKING:
    # Imported by the table functions: `summary` of one tree needs none.
    import numpy as np
    import pandas as pd

    from convgraph.model.forest import Forest


def children_counts(forest: Forest) -> np.ndarray:
    """How many children each node has, aligned with `forest.nodes`' rows."""
    return _children_counts(forest.parent_rows)


def node_table(forest: Forest) -> pd.DataFrame:
    """One row per node, aligned with `forest.nodes`: the contract's columns
    (`NODE_COLUMNS`), then `depth` (a root is 0), `children`, `is_root`,
    `is_leaf`. Times are `datetime64[us, UTC]`, usage and `tool_calls`
    nullable `Int64`; texts and parts None when read with `text=False`.
    """
    return node_table_of(forest.nodes, forest.parent_rows, forest.depths)


def edge_table(forest: Forest) -> pd.DataFrame:
    """One row per link, in the child's log order: `parent`, `child`, `tree_id`."""
    import numpy as np
    import pandas as pd

    children = np.flatnonzero(forest.parent_rows >= 0)
    ids = forest.nodes["id"].to_numpy()
    return pd.DataFrame(
        {
            "parent": pd.Series(ids[forest.parent_rows[children]], dtype="str"),
            "child": pd.Series(ids[children], dtype="str"),
            "tree_id": pd.Categorical(forest.nodes["tree_id"].to_numpy()[children]),
        }
    )


def conversation_table(forest: Forest) -> pd.DataFrame:
    """One row per conversation tree, in the order of its first node (the
    columns: docs/guide/measure.md); a chat export's conversation without a
    node is a row after them, with 0 nodes.
    """
    table = summary_table(forest.nodes, forest.names, forest.parent_rows, forest.depths)
    empty = [p.node_id for p in forest.problems if p.kind == EMPTY_CONVERSATION]
    return _with_empty_trees(table, empty, forest.names) if empty else table


def _with_empty_trees(
    table: pd.DataFrame, tree_ids: list[str], names: Mapping[Any, Any]
) -> pd.DataFrame:
    """`table` with `empty_summary`'s row for each tree without a node."""
    import pandas as pd

    rows = [empty_summary(tree, names.get(tree)) for tree in tree_ids]
    empty = pd.DataFrame(rows, columns=table.columns, dtype=object)
    return pd.concat([table, empty.astype(table.dtypes.to_dict())], ignore_index=True)


def branch_table(forest: Forest) -> pd.DataFrame:
    """One row per root-to-leaf path, in the log order of leaves: `tree_id`,
    `leaf_id`, `root_id`, `length` (nodes), usage summed along it (nullable
    `Int64`, NA where no node has the figure), `models` (distinct, root first).
    """
    return branch_table_of(forest.nodes, forest.parent_rows)


def node_table_of(
    nodes: pd.DataFrame,
    parent_rows: np.ndarray | None = None,
    depths: np.ndarray | None = None,
) -> pd.DataFrame:
    """`node_table` of a node table (log order) holding its trees whole,
    aligned with it; `parent_rows` and `depths` are found when not given.
    """
    parent_rows, depths = _links(nodes, parent_rows, depths)
    counts = _children_counts(parent_rows)
    # A shallow copy: copy-on-write keeps the caller's own table as it is.
    table = nodes.loc[:, [c for c in NODE_COLUMNS if c in nodes.columns]].copy(
        deep=False
    )
    table["active"] = active_column(nodes, parent_rows)
    if "note" not in table.columns:
        table["note"] = None
    has = "preferred" in nodes.columns
    table["preferred"] = booleans(nodes["preferred"]) if has else False
    # A dataset written before the run's content was in the contract.
    for column in (PARTS, TOOLS, TOOL_CALLS):
        if column not in table.columns:
            table[column] = None
    table = table.loc[:, list(NODE_COLUMNS)]
    for column in ("id", "parent_id"):
        table[column] = table[column].astype("str")
    for column in CATEGORY_COLUMNS:
        table[column] = table[column].astype("category")
    for column in (*TEXT_ATTRIBUTES, TOOLS):
        texts = table[column]
        if texts.dtype != object:
            # A reader's string dtype (Dask's) as the contract's str or None.
            table[column] = texts.astype(object).where(texts.notna(), None)
    table["datetime_utc"] = parse_times(nodes["datetime_utc"])
    for column in INTEGER_COLUMNS:
        table[column] = table[column].astype("Int64").array
    table["depth"] = depths
    table["children"] = counts
    table["is_root"] = parent_rows < 0
    table["is_leaf"] = counts == 0
    return table


def branch_table_of(
    nodes: pd.DataFrame, parent_rows: np.ndarray | None = None
) -> pd.DataFrame:
    """`branch_table` of a node table holding its trees whole."""
    import numpy as np
    import pandas as pd

    from convgraph.links.pointer_jumping import (
        parent_rows_of,
        path_totals,
        root_pointers,
    )

    if parent_rows is None:
        parent_rows = parent_rows_of(nodes["id"], nodes["parent_id"])
    root_rows, depths = root_pointers(parent_rows)
    leaves = np.flatnonzero(_children_counts(parent_rows) == 0)

    # One climb for all figures, with how many nodes have each: a sum of 0
    # is told from no figure.
    usage = [nodes[column].astype("Int64").array for column in INTEGER_ATTRIBUTES]
    present = np.column_stack(
        [~np.asarray(figures.isna(), dtype=bool) for figures in usage]
    ).reshape(len(nodes), len(usage))
    values = np.column_stack(
        [figures.fillna(0).to_numpy(dtype=np.int64) for figures in usage]
    ).reshape(len(nodes), len(usage))
    figures = np.hstack([values, present.astype(np.int64)])
    exact = may_pass_64_bits(values, depths + 1)
    if exact:
        # A branch's sum could pass 64 bits: Python's integers, not a wrap.
        figures = figures.astype(object)
    totals = path_totals(parent_rows, figures)[leaves]
    ids = nodes["id"].to_numpy()
    table = pd.DataFrame(
        {
            "tree_id": pd.Categorical(nodes["tree_id"].to_numpy()[leaves]),
            "leaf_id": pd.Series(ids[leaves], dtype="str"),
            "root_id": pd.Series(ids[root_rows[leaves]], dtype="str"),
            "length": depths[leaves] + 1,
        }
    )
    width = len(INTEGER_ATTRIBUTES)
    for index, column in enumerate(INTEGER_ATTRIBUTES):
        missing = totals[:, width + index] == 0
        if exact:
            sums = totals[:, index].copy()
            sums[missing] = None
            table[column] = sums
        else:
            table[column] = pd.arrays.IntegerArray(totals[:, index], missing)
    table["models"] = pd.Series(
        _models_per_branch(nodes["model"], parent_rows, leaves), dtype=object
    )
    return table


#: The columns of a dataset that `summary_table` reads: no texts.
CONVERSATION_INPUTS = (
    "id",
    "tree_id",
    "parent_id",
    "model",
    "datetime_utc",
    *INTEGER_ATTRIBUTES,
    TOOL_CALLS,
    TOOLS,
    TREE_NAME,
    "active",
)


def _models_per_branch(
    models: pd.Series, parent_rows: np.ndarray, leaves: np.ndarray
) -> list[list[Any]]:
    """The distinct models on each leaf's branch, root first. A bit set OR-ed
    along the path tells where a node introduces its model; walking a leaf's
    introducers up takes one step per model, not per node."""
    import numpy as np

    from convgraph.links.pointer_jumping import nearest_marked, path_totals

    codes, names = _model_codes(models)
    count = len(codes)
    if not len(names):
        return [[] for _ in leaves]
    words = (len(names) + 63) // 64
    has_model = codes >= 0
    rows = np.flatnonzero(has_model)
    word = codes[rows] // 64
    bits = np.zeros((count, words), dtype=np.uint64)
    bits[rows, word] = np.left_shift(np.uint64(1), (codes[rows] % 64).astype(np.uint64))
    on_path = path_totals(parent_rows, bits, np.bitwise_or)

    above = np.zeros((count, words), dtype=np.uint64)
    linked = parent_rows >= 0
    above[linked] = on_path[parent_rows[linked]]
    introduces = np.zeros(count, dtype=bool)
    introduces[rows] = (above[rows, word] & bits[rows, word]) == 0
    nearest = nearest_marked(parent_rows, introduces)

    # Sentinel row `count`: "no node", its own parent and nearest.
    nearest = np.append(nearest, -1)
    nearest[nearest < 0] = count
    parent_of = np.append(np.where(linked, parent_rows, count), count)
    code_of = np.append(codes, -1)
    steps = []
    current = nearest[leaves]
    while (current != count).any():
        steps.append(code_of[current])
        current = nearest[parent_of[current]]
    if not steps:
        return [[] for _ in leaves]
    # Finished walks are padded with -1: a row's valid codes are its tail.
    found = np.column_stack(steps)[:, ::-1]
    valid = found >= 0
    flat = names[found[valid]].tolist()
    return split_lists(flat, valid.sum(axis=1))
