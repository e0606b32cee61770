"""Tree statistics as pandas DataFrames, computed on the forest's tables.

Everything here is vectorized over the whole forest: counts by `numpy.bincount`
and group-bys over integer codes of the node table, depths from
`Forest.depths`, and sums along root-to-leaf paths by pointer jumping
(`convgraph.links.pointer_jumping`).
There is no Python loop per node, no recursion, and no networkx graph per
conversation, so a million-response forest is a few seconds of work. The
columns have real dtypes: `datetime64[us, UTC]` times, nullable `Int64` usage
figures, and categories for the values that repeat.

One rule, two forms: `summary` gives one tree's statistics from its graph
(plain Python, for one conversation), `summary_table` the same
figures for every tree of a table, one row each. They stand side by side
below, and one property test holds them to the same answers. Only the
tables' functions import pandas, so `summary` answers for a small file
(`convgraph stats` under `SMALL_INPUT_BYTES`) without it.

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

from convgraph.analysis.abandoned import (
    abandoned_nodes,
    abandoned_nodes_table,
    abandoned_work_nodes,
    abandoned_work_nodes_table,
)
from convgraph.analysis.tool_stats import (
    may_pass_64_bits,
    sums_per_tree,
    tree_tool_totals,
    tree_tool_totals_table,
)
from convgraph.contract import (
    CATEGORY_COLUMNS,
    CONVERSATION_COLUMNS,
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
from convgraph.links.integrity import EMPTY_CONVERSATION
from convgraph.links.rules import TREE, rule, table_form
from convgraph.model.marks import active_column
from convgraph.times import parse_times, time_bounds

if TYPE_CHECKING:
    # numpy, pandas and the pointer jumping on their tables are imported by
    # the functions of tables: `summary` of one tree (`convgraph stats` on a
    # small file) needs none of them (0.3 s of a command's start).
    import networkx as nx
    import numpy as np
    import pandas as pd

    from convgraph.model.forest import Forest

# -- links ----------------------------------------------------------------


def children_counts(forest: Forest) -> np.ndarray:
    """How many children each node has, aligned with `forest.nodes`' rows.

    Examples
    --------
    >>> import pandas as pd
    >>> from convgraph.contract import NODE_ATTRIBUTES
    >>> from convgraph.model.forest import Forest
    >>> nodes = pd.DataFrame({"id": ["r", "a", "b"], "tree_id": "t",
    ...     "parent_id": [None, "r", "r"], **dict.fromkeys(NODE_ATTRIBUTES)})
    >>> forest = Forest(nodes, {})
    >>> children_counts(forest).tolist()
    [2, 0, 0]
    """
    return _children_counts(forest.parent_rows)


def _children_counts(parent_rows: np.ndarray) -> np.ndarray:
    import numpy as np

    return np.bincount(parent_rows[parent_rows >= 0], minlength=len(parent_rows))


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

    Examples
    --------
    >>> import pandas as pd
    >>> from convgraph.contract import NODE_ATTRIBUTES
    >>> from convgraph.model.forest import Forest
    >>> nodes = pd.DataFrame({"id": ["r", "a", "b"], "tree_id": "t",
    ...     "parent_id": [None, "r", "r"], **dict.fromkeys(NODE_ATTRIBUTES)})
    >>> forest = Forest(nodes, {})
    >>> node_table(forest)[["id", "depth", "children", "is_root", "is_leaf"]]
      id  depth  children  is_root  is_leaf
    0  r      0         2     True    False
    1  a      1         0    False     True
    2  b      1         0    False     True
    """
    return node_table_of(forest.nodes, forest.parent_rows, forest.depths)


def edge_table(forest: Forest) -> pd.DataFrame:
    """One row per parent -> child link, in the child's log order.

    Columns: `parent`, `child` (node ids) and `tree_id` (the tree, a
    category): the columns of `Forest.edges`.

    Examples
    --------
    >>> import pandas as pd
    >>> from convgraph.contract import NODE_ATTRIBUTES
    >>> from convgraph.model.forest import Forest
    >>> nodes = pd.DataFrame({"id": ["r", "a", "b"], "tree_id": "t",
    ...     "parent_id": [None, "r", "r"], **dict.fromkeys(NODE_ATTRIBUTES)})
    >>> forest = Forest(nodes, {})
    >>> edge_table(forest)
      parent child tree_id
    0      r     a       t
    1      r     b       t
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

    Examples
    --------
    >>> import pandas as pd
    >>> from convgraph.model.forest import Forest
    >>> nodes = pd.DataFrame({"id": ["r", "a", "b"], "tree_id": "t",
    ...     "parent_id": [None, "r", "r"], "conversation_id": "t", "prompt": None,
    ...     "system": None, "response": None, "model": ["m1", "m2", "m1"],
    ...     "datetime_utc": None, "input_tokens": [1, 2, None],
    ...     "output_tokens": None, "duration_ms": None, "source": "responses"})
    >>> table = conversation_table(Forest(nodes, {"t": "a name"}))
    >>> table[["nodes", "leaves", "branching_factor_max", "input_tokens",
    ...     "output_tokens"]]
       nodes  leaves  branching_factor_max  input_tokens  output_tokens
    0      3       2                     2             3           <NA>
    >>> table.at[0, "models"]
    ['m1', 'm2']
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

    Examples
    --------
    >>> import pandas as pd
    >>> from convgraph.model.forest import Forest
    >>> nodes = pd.DataFrame({"id": ["r", "a", "b"], "tree_id": "t",
    ...     "parent_id": [None, "r", "a"], "conversation_id": "t", "prompt": None,
    ...     "system": None, "response": None, "model": ["m2", "m1", "m2"],
    ...     "datetime_utc": None, "input_tokens": [1, 2, 4],
    ...     "output_tokens": None, "duration_ms": None, "source": "responses"})
    >>> branch_table(Forest(nodes, {})).iloc[0][["leaf_id", "length", "models"]]
    leaf_id           b
    length            3
    models     [m2, m1]
    Name: 0, dtype: object
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

    Examples
    --------
    >>> import pandas as pd
    >>> from convgraph.contract import NODE_ATTRIBUTES
    >>> nodes = pd.DataFrame({"id": ["r", "a", "b"], "tree_id": "t",
    ...     "parent_id": [None, "r", "a"], **dict.fromkeys(NODE_ATTRIBUTES)})
    >>> node_table_of(nodes)[["id", "depth", "children", "is_leaf"]]
      id  depth  children  is_leaf
    0  r      0         1    False
    1  a      1         1    False
    2  b      2         0     True
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


# -- a conversation's statistics: one tree's graph, or every tree of a table


@rule(TREE)
def summary(tree: nx.DiGraph) -> dict[str, Any]:
    """One conversation's statistics in one dict: `summary_table`'s
    row for one tree, computed on its graph (the summary helper of
    docs/design.md#the-twelve-helpers).

    The keys are `CONVERSATION_COLUMNS`: `tree_id` and `name` (the graph's
    attributes), the tree's shape (`nodes`, `roots`, `leaves`, `max_depth`,
    `branch_points`, `branching_factor_avg`, `branching_factor_max`, which
    count the start where the tree has several roots:
    `convgraph.model.tree.branch_points` and `branching_factor`),
    `convgraph.model.tree.node_totals` over all its nodes (times as llm
    stored them, where the table reads them as times), its `tool_calls` and
    `tools`, and the active path's
    `active_path_length` and `abandoned_branches`. One property test holds
    the two forms to the same figures (tests/test_rule_agreement.py).

    Examples
    --------
    >>> from convgraph.model.tree import ConversationTree
    >>> tree = ConversationTree.from_edges([("r", "a"), ("r", "b")],
    ...     {"a": {"model": "echo", "output_tokens": 5}}, name="Trees")
    >>> stats = summary(tree)
    >>> [stats[key] for key in ("nodes", "roots", "leaves", "max_depth",
    ...     "branch_points", "branching_factor_avg", "branching_factor_max")]
    [3, 1, 2, 1, 1, 2.0, 2]
    >>> stats["name"], stats["models"], stats["output_tokens"], stats["input_tokens"]
    ('Trees', ['echo'], 5, None)
    """
    # Here, not above: the tree operations import networkx (0.1 s), which
    # the tables never need.
    from convgraph.model import tree as operations

    levels = operations.depths(tree)
    average, most = operations.branching_factor(tree)
    stats = {
        "tree_id": tree.graph.get("tree_id"),
        "name": tree.graph.get("name"),
        "nodes": tree.number_of_nodes(),
        "roots": len(operations.roots(tree)),
        "leaves": len(operations.leaves(tree)),
        "max_depth": max(levels.values(), default=0),
        "branch_points": len(operations.branch_points(tree)),
        "branching_factor_avg": average,
        "branching_factor_max": most,
        **operations.node_totals(tree),
        **tree_tool_totals(tree),
        # The active path (the branch last used) and the branches left off
        # it (a subagent's leaves are none: `convgraph.analysis.abandoned`).
        "active_path_length": sum(1 for _, on in tree.nodes(data="active") if on),
        "abandoned_branches": len(abandoned_nodes(tree)),
    }
    stats |= _tree_retries(tree, stats)
    return {key: stats[key] for key in CONVERSATION_COLUMNS}


def _tree_retries(tree: nx.DiGraph, totals: Mapping[str, Any]) -> dict[str, Any]:
    """`RETRY_COLUMNS` of one tree, whose token totals are `totals`."""
    left = abandoned_work_nodes(tree)
    figures: dict[str, Any] = {}
    for key in ("input_tokens", "output_tokens"):
        values = (tree.nodes[node].get(key) for node in left)
        spent = sum(value for value in values if value is not None)
        figures[f"abandoned_{key}"] = None if totals[key] is None else spent
    figures["abandoned_share"] = _share(
        [figures["abandoned_input_tokens"], figures["abandoned_output_tokens"]],
        [totals["input_tokens"], totals["output_tokens"]],
    )
    return figures


def _share(part: list[int | None], whole: list[int | None]) -> float | None:
    """The share of `whole`'s sum that `part`'s is (missing counting 0),
    as floats divide: None where the whole is not above 0."""
    counted = sum(value or 0 for value in whole)
    if counted <= 0:
        return None
    return float(sum(value or 0 for value in part)) / float(counted)


@table_form(summary)
def summary_table(
    nodes: pd.DataFrame,
    names: Mapping[Any, Any] | None = None,
    parent_rows: np.ndarray | None = None,
    depths: np.ndarray | None = None,
) -> pd.DataFrame:
    """`conversation_table` of a node table holding its trees whole, one row
    per tree in the order of its first row.

    Parameters
    ----------
    nodes
        As `node_table_of` takes it.
    names
        Each tree's name; when None, the `tree_name` column of `nodes` where
        it has one (a Parquet dataset's), else no names.
    parent_rows, depths
        As `node_table_of` takes them.

    Examples
    --------
    >>> import pandas as pd
    >>> from convgraph.contract import NODE_ATTRIBUTES
    >>> nodes = pd.DataFrame({"id": ["r", "a", "s"], "tree_id": ["t", "t", "u"],
    ...     "parent_id": [None, "r", None], "tree_name": ["one", "one", None],
    ...     **dict.fromkeys(NODE_ATTRIBUTES)})
    >>> summary_table(nodes)[["tree_id", "name", "nodes", "max_depth"]]
      tree_id  name  nodes  max_depth
    0       t   one      2          1
    1       u  None      1          0
    """
    import numpy as np
    import pandas as pd

    from convgraph.links.pointer_jumping import parent_rows_of, root_pointers

    if parent_rows is None:
        parent_rows = parent_rows_of(nodes["id"], nodes["parent_id"])
    if depths is None:
        depths = root_pointers(parent_rows)[1]
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
    # Every non-root node is one child of one parent, so the children of a
    # tree's parents add up to its nodes less its roots.
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
    for column, values in tree_tool_totals_table(nodes, codes, trees).items():
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
    return table


def within_totals(total: Any, part: Any) -> Any:
    """A part's sums (`sums_per_tree`) where its total has one: 0 where the
    part has none, missing where the total is."""
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
    """`_share` of every tree at once (nullable `Float64`): NA where the
    whole is not above 0."""
    import numpy as np
    import pandas as pd

    def counted(columns: list[Any]) -> np.ndarray:
        # Summed as Python's integers would be, then made floats, as
        # `_share` makes them: the two forms divide the same numbers.
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


def branch_table_of(
    nodes: pd.DataFrame, parent_rows: np.ndarray | None = None
) -> pd.DataFrame:
    """`branch_table` of a node table holding its trees whole, one row per
    leaf in the order of the table's rows.

    Examples
    --------
    >>> import pandas as pd
    >>> from convgraph.contract import NODE_ATTRIBUTES
    >>> nodes = pd.DataFrame({"id": ["r", "a", "b"], "tree_id": "t",
    ...     "parent_id": [None, "r", "r"], **dict.fromkeys(NODE_ATTRIBUTES)})
    >>> branch_table_of(nodes)[["leaf_id", "root_id", "length"]]
      leaf_id root_id  length
    0       a       r       2
    1       b       r       2
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


def _tree_names(
    nodes: pd.DataFrame,
    names: Mapping[Any, Any] | None,
    codes: np.ndarray,
    tree_ids: Any,
) -> pd.Series:
    """Each tree's name (None where it has none), aligned with `tree_ids`:
    from `names`, else from the first row of each tree's `tree_name`."""
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
    """Each node's model as an integer code (-1 for none), and the models.

    An empty model id counts as none, as `summary` counts it.
    """
    import numpy as np
    import pandas as pd

    codes, found = pd.factorize(models, sort=False)
    names = found.to_numpy(dtype=object)
    empty = np.flatnonzero(names == "")
    if len(empty):
        # Drop the empty id from the models and renumber the codes after it.
        codes = np.where(codes == empty[0], -1, codes - (codes > empty[0]))
        names = np.delete(names, empty[0])
    return codes, names


def _split_lists(flat: list, counts: np.ndarray) -> list[list]:
    """`flat` cut into consecutive lists of `counts[i]` items."""
    import numpy as np

    if len(flat) == len(counts) and (counts == 1).all():
        # One model a tree, the common case: no slice to make for each.
        return [[item] for item in flat]
    ends = np.cumsum(counts).tolist()
    starts = [0, *ends][: len(ends)]
    return [flat[start:end] for start, end in zip(starts, ends, strict=True)]


def _models_per_tree(models: pd.Series, tree_codes: np.ndarray, trees: int) -> list:
    """Each tree's distinct models in order of first use (rows are in log
    order), as lists aligned with the tree codes."""
    import numpy as np
    import pandas as pd

    codes, names = _model_codes(models)
    used = codes >= 0
    pairs = tree_codes[used].astype(np.int64) * max(len(names), 1) + codes[used]
    # Distinct (tree, model) pairs in order of first use: a hash, not a sort.
    first_uses = pd.unique(pairs)
    trees_of, models_of = np.divmod(first_uses, max(len(names), 1))
    # Grouped by tree; within a tree, still in order of first use.
    order = np.argsort(trees_of, kind="stable")
    flat = names[models_of[order]].tolist()
    return _split_lists(flat, np.bincount(trees_of, minlength=trees))


def _models_per_branch(
    models: pd.Series, parent_rows: np.ndarray, leaves: np.ndarray
) -> list:
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
