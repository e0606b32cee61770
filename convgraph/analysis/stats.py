"""Tree statistics as pandas DataFrames, computed on the forest's tables.

Everything here is vectorized over the whole forest: counts by `numpy.bincount`
and group-bys over integer codes of the node table, depths from
`Forest.depths`, and sums along root-to-leaf paths by pointer jumping
(`convgraph.links.pointer_jumping`).
There is no Python loop per node, no recursion, and no networkx graph per
conversation, so a million-response forest is a few seconds of work. The
columns have real dtypes: `datetime64[us, UTC]` times, nullable `Int64` usage
figures, and categories for the values that repeat.

One rule, two forms: `summary` (one tree's graph) and `summary_table`
(every tree of a table), side by side in `conversation_stats`, importable
from here too.

Each table is computed by a pure function of a node table (`node_table_of`,
`summary_table`, `branch_table_of`): a pandas DataFrame with `id`,
`tree_id`, `parent_id` and the node attributes, holding every tree it touches
whole. The functions of a `Forest` call them on the whole forest's table;
`convgraph.analysis.datasets` calls the very same functions on each partition of a Parquet
dataset (`convgraph.export.parquet`), which holds every tree in one partition,
so a forest beyond one machine is measured by the same code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from convgraph.analysis.conversation_stats import (
    _children_counts,
    _model_codes,
    _split_lists,
    summary_table,
)
from convgraph.analysis.conversation_stats import summary as summary
from convgraph.analysis.conversation_stats import token_shares as token_shares
from convgraph.analysis.conversation_stats import within_totals as within_totals
from convgraph.analysis.tool_stats import may_pass_64_bits
from convgraph.contract import (
    CATEGORY_COLUMNS,
    INTEGER_ATTRIBUTES,
    INTEGER_COLUMNS,
    NODE_COLUMNS,
    PARTS,
    RETRY_COLUMNS,
    TEXT_ATTRIBUTES,
    TOOL_CALLS,
    TOOLS,
    TREE_NAME,
)
from convgraph.contract import CONVERSATION_COLUMNS as CONVERSATION_COLUMNS
from convgraph.links.integrity import EMPTY_CONVERSATION
from convgraph.model.marks import active_column
from convgraph.times import parse_times

if TYPE_CHECKING:
    # numpy, pandas and the pointer jumping on their tables are imported by
    # the functions of tables: `summary` of one tree (`convgraph stats` on a
    # small file) needs none of them (0.3 s of a command's start).
    import numpy as np
    import pandas as pd

    from convgraph.model.forest import Forest

# -- links ----------------------------------------------------------------


def children_counts(forest: Forest) -> np.ndarray:
    """How many children each node has, aligned with `forest.nodes`' rows."""
    return _children_counts(forest.parent_rows)


# -- the tables of a forest -----------------------------------------------


def node_table(forest: Forest) -> pd.DataFrame:
    """One row per node, aligned with `forest.nodes`: its attributes, and its
    place in its tree (`node_table_of` the forest's nodes).

    Columns: `id`, `tree_id` (the conversation tree, as in
    `conversation_table`), `parent_id`, the node attributes of the contract
    (`conversation_id`, `prompt`, `system`, `response`, `parts`,
    `tool_calls`, `tools`, `model`, `datetime_utc`, `input_tokens`,
    `output_tokens`, `duration_ms`, `source`, `active`, `note`,
    `preferred`), then `depth` (a root is 0), `children`, `is_root`,
    `is_leaf`.

    `datetime_utc` is a `datetime64[us, UTC]` (NaT where missing or not a
    time); usage figures and `tool_calls` are nullable `Int64`; `tree_id`,
    `conversation_id`, `model` and `source` are categories. Texts and parts
    are None when the forest was read with `text=False` (`tool_calls` and
    `tools` are read all the same).
    """
    return node_table_of(forest.nodes, forest.parent_rows, forest.depths)


def edge_table(forest: Forest) -> pd.DataFrame:
    """One row per parent -> child link, in the child's log order.

    Columns: `parent`, `child` (node ids) and `tree_id` (the tree, a
    category): the columns of `Forest.edges`.
    """
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
    """One row per conversation tree, in the order of its first node
    (`summary_table` the forest's nodes, with its names).

    Columns: `tree_id`, `name`, `nodes`, `roots`, `leaves`,
    `max_depth`, `branch_points` (nodes with more than one child, and the
    start where the tree has several roots), `branching_factor_avg` and
    `branching_factor_max` (over the nodes that have children, and the start
    with its roots as its children where there are several; 0 where there is
    neither), `first_datetime`, `last_datetime`
    (`datetime64[us, UTC]`), `models` (a list: distinct, in order of first
    use), `input_tokens`, `output_tokens`, `duration_ms` (sums, nullable
    `Int64`: NA where no node of the tree has the figure), `tool_calls` (the
    tool calls its runs made, summed the same way), `tools` (a list: the
    tools called, each once, in the order first called),
    `active_path_length` (the nodes on the active path, the branch last
    used) and `abandoned_branches` (the branches left off it: its leaves
    but a subagent's, `convgraph.analysis.abandoned`).
    A chat export's conversation without a node (`empty-conversation` among
    the forest's problems) is a row of its own after them, with 0 nodes.
    """
    table = summary_table(forest.nodes, forest.names, forest.parent_rows, forest.depths)
    empty = [p.node_id for p in forest.problems if p.kind == EMPTY_CONVERSATION]
    return _with_empty_trees(table, empty, forest.names) if empty else table


def _with_empty_trees(
    table: pd.DataFrame, tree_ids: list[str], names: Mapping[Any, Any]
) -> pd.DataFrame:
    """`table` with a row for each tree that has no node: 0 nodes, no times,
    no models or tools, usage NA (0 tool calls)."""
    import pandas as pd

    rows = {}
    for column in table.columns:
        dtype = table[column].dtype
        if column == "tree_id":
            values: Any = pd.Series(tree_ids, dtype=dtype)
        elif column == "name":
            values = pd.Series([names.get(tree) for tree in tree_ids], dtype=object)
        elif column in ("models", TOOLS):
            values = pd.Series([[] for _ in tree_ids], dtype=object)
        elif column == TOOL_CALLS:
            values = pd.Series([0] * len(tree_ids), dtype=dtype)
        elif (
            isinstance(dtype, pd.DatetimeTZDtype)
            or str(dtype) == "Int64"
            or column in INTEGER_COLUMNS
            or column in RETRY_COLUMNS
        ):
            values = pd.Series([None] * len(tree_ids), dtype=dtype)
        else:
            values = pd.Series([0] * len(tree_ids), dtype=dtype)
        rows[column] = values
    return pd.concat([table, pd.DataFrame(rows)], ignore_index=True)


def branch_table(forest: Forest) -> pd.DataFrame:
    """One row per root-to-leaf path (a branch), in the log order of leaves
    (`branch_table_of` the forest's nodes).

    Columns: `tree_id` (the tree, a category), `leaf_id`, `root_id`,
    `length` (how many nodes the branch holds: the leaf's depth + 1),
    `input_tokens`, `output_tokens`, `duration_ms` (sums along the branch,
    nullable `Int64`: NA where no node of the branch has the figure) and
    `models` (a list: the distinct models of the branch, in the order the
    branch first used them, from the root down).
    """
    return branch_table_of(forest.nodes, forest.parent_rows)


# -- the tables of a node table (one partition, or the whole forest) ------


def node_table_of(
    nodes: pd.DataFrame,
    parent_rows: np.ndarray | None = None,
    depths: np.ndarray | None = None,
) -> pd.DataFrame:
    """`node_table` of a node table holding its trees whole: the columns of
    `NODE_COLUMNS` in the table's dtypes, then `NODE_FIGURES` computed.

    Parameters
    ----------
    nodes
        `id`, `tree_id`, `parent_id` and the node attributes, one row per
        node in log order (a `Forest`'s nodes, or a partition of a Parquet
        dataset, whose other columns are left out).
    parent_rows, depths
        The links as `Forest.parent_rows` and `Forest.depths` hold them;
        found from `id` and `parent_id` when not given.

    Returns
    -------
    pandas.DataFrame
        Aligned with `nodes` (the same index).
    """
    from convgraph.links.pointer_jumping import parent_rows_of, root_pointers

    if parent_rows is None:
        parent_rows = parent_rows_of(nodes["id"], nodes["parent_id"])
    if depths is None:
        depths = root_pointers(parent_rows)[1]
    counts = _children_counts(parent_rows)
    # A shallow copy: copy-on-write keeps the caller's own table as it is.
    # A table without the branch attributes (a dataset written before them)
    # gets them: the active path found from the links, no notes.
    table = nodes.loc[:, [c for c in NODE_COLUMNS if c in nodes.columns]].copy(
        deep=False
    )
    table["active"] = active_column(nodes, parent_rows)
    if "note" not in table.columns:
        table["note"] = None
    table["preferred"] = (
        nodes["preferred"].astype(object).where(nodes["preferred"].notna(), False)
        if "preferred" in nodes.columns
        else False
    )
    table["preferred"] = table["preferred"].astype(bool)
    # A dataset written before the run's content was in the contract: no
    # parts, and no telling how many tools were called.
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
            # A reader's string dtype (Dask's, from Parquet) as the
            # contract's texts: str or None.
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
    """`branch_table` of a node table holding its trees whole, one row per
    leaf in the order of the table's rows.
    """
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

    # One accumulation for all usage figures: their values (NA as 0) and how
    # many nodes of the path have each, to tell a sum of 0 from no figure.
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


# -- a Parquet dataset ----------------------------------------------------

#: The columns of a dataset's node table that `summary_table` reads:
#: no texts, which are most of the bytes (`convgraph.analysis.datasets` reads these).
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


# -- helpers --------------------------------------------------------------


def _models_per_branch(
    models: pd.Series, parent_rows: np.ndarray, leaves: np.ndarray
) -> list[list[Any]]:
    """The distinct models on each leaf's branch, in the order the branch
    first used them (root first), as lists aligned with `leaves`.

    Which models a branch holds is a bit set OR-ed along the path by pointer
    jumping. A node introduces its model when the bit is not yet set above
    it; walking a leaf's introducing ancestors upwards takes one vectorized
    step per model of the branch, not one per node.
    """
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
    # Rows: leaves; columns: root first. Finished walks padded with -1 at the
    # start after the flip, so the valid codes of a row are its tail.
    found = np.column_stack(steps)[:, ::-1]
    valid = found >= 0
    flat = names[found[valid]].tolist()
    return _split_lists(flat, valid.sum(axis=1))
