"""What a conversation's runs did with tools: how many tool calls they made
and which tools they called, in the rule's two forms side by side: one
tree's graph (`tree_tool_totals`, for `convgraph.analysis.stats.summary`)
and every tree of a node table at once (`tree_tool_totals_table`, for
`summary_table`, on pandas or a Dask partition), held to the same
answers by tests/test_rule_agreement.py.

A node's `tool_calls` is an integer (None where the source cannot tell) and
its `tools` the names it called, each once in first-call order, joined by
", " (docs/design.md#the-node-contract); a tree sums the first (None, NA in
the table, where no node can tell) and lists the second, each name once, in
the order the tree first called it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from convgraph.contract import TOOL_CALLS, TOOLS
from convgraph.links.rules import TREE, rule, table_form

if TYPE_CHECKING:
    import networkx as nx
    import numpy as np
    import pandas as pd


def tool_list(tools: Any) -> list[str]:
    """A node's `tools` (the names joined by ", ") as a list of names."""
    if not isinstance(tools, str):
        return []
    return [name for name in tools.split(", ") if name]


@rule(TREE)
def tree_tool_totals(tree: nx.DiGraph[str]) -> dict[str, Any]:
    """One tree's tool calls (their sum: None where no node can tell) and
    the tools it called (each once, in the order first called).
    """
    calls = [count for _, count in tree.nodes(data=TOOL_CALLS) if count is not None]
    names = (name for _, text in tree.nodes(data=TOOLS) for name in tool_list(text))
    return {
        TOOL_CALLS: sum(calls) if calls else None,
        TOOLS: list(dict.fromkeys(names)),
    }


@table_form(tree_tool_totals)
def tree_tool_totals_table(
    nodes: pd.DataFrame, tree_codes: np.ndarray, trees: int
) -> dict[str, Any]:
    """Every tree's `tree_tool_totals` at once, aligned with the tree codes
    (`tree_codes[row]` the tree of each row, rows in log order):
    `tool_calls` a nullable Int64 array, `tools` a Series of lists. A table
    without the columns (a dataset written before them) has no calls to
    tell and no tools.
    """
    # Here, not above: one tree's totals (`summary` of a small file) need
    # neither pandas nor numpy.
    import pandas as pd

    missing = pd.Series(None, index=nodes.index, dtype=object)
    calls = nodes[TOOL_CALLS] if TOOL_CALLS in nodes.columns else missing
    tools = nodes[TOOLS] if TOOLS in nodes.columns else missing
    # A file without tool calls (most llm logs) has a million None here:
    # nothing to split or number.
    per_tree = (
        _tools_per_tree(tools, tree_codes, trees)
        if tools.notna().any()
        else [[] for _ in range(trees)]
    )
    return {
        TOOL_CALLS: sums_per_tree(calls, tree_codes, trees),
        TOOLS: pd.Series(per_tree, dtype=object),
    }


def sums_per_tree(
    column: pd.Series, codes: np.ndarray, trees: int
) -> pd.api.extensions.ExtensionArray | np.ndarray:
    """Each tree's sum of `column` (NA where no row of it has a figure;
    trees numbered by `codes`), exact: nullable `Int64`, as pandas'
    group-by sum with `min_count=1` gives it, by numpy in half its time at a
    million rows (the conversation table's usage figures and tool calls);
    Python's integers (an object array, None where no figure) where a sum
    could pass 64 bits, never a sum wrapped round to a negative.
    """
    import numpy as np
    import pandas as pd

    figures = column.astype("Int64").array
    present = ~np.asarray(figures.isna(), dtype=bool)
    values = figures.to_numpy(dtype=np.int64, na_value=0)
    counted = np.bincount(codes[present], minlength=trees)
    if may_pass_64_bits(values, counted):
        sums: list[int | None] = [0] * trees
        for tree, value in zip(
            codes[present].tolist(), values[present].tolist(), strict=True
        ):
            sums[tree] += value
        for tree in np.flatnonzero(counted == 0).tolist():
            sums[tree] = None
        return np.array(sums, dtype=object)
    totals = np.zeros(trees, dtype=np.int64)
    np.add.at(totals, codes, values)
    return pd.arrays.IntegerArray(totals, counted == 0)


def may_pass_64_bits(values: np.ndarray, counted: np.ndarray) -> bool:
    """Whether a sum of `counted` (the most in a group) of `values` could
    leave int64: bounded by the largest magnitude times the largest group,
    in Python's integers (numpy's would wrap in the test itself)."""
    if not len(values):
        return False
    largest = max(int(values.max()), -int(values.min()))
    return largest * int(counted.max(initial=0)) > 2**63 - 1


def _tools_per_tree(
    tools: pd.Series, tree_codes: np.ndarray, trees: int
) -> list[list[str]]:
    """Each tree's tools, each once, in the order first called, as lists
    aligned with the tree codes: each distinct `tools` text is split once,
    then the distinct (tree, tool) pairs found in order of first use (a hash,
    not a sort), as the statistics find each tree's models."""
    import numpy as np
    import pandas as pd

    codes, texts = pd.factorize(tools.astype(object), sort=False)
    split = [tool_list(text) for text in texts.tolist()]
    names, name_codes = np.unique(
        np.asarray([name for found in split for name in found], dtype=object),
        return_inverse=True,
    )
    if not len(names):
        return [[] for _ in range(trees)]
    counts = np.asarray([len(found) for found in split], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    used = codes >= 0
    # The distinct (tree, text) pairs in order of first use, then each
    # text's names in order: a name first appears with the first text
    # that holds it.
    pairs = pd.unique(tree_codes[used].astype(np.int64) * len(texts) + codes[used])
    pair_trees, pair_texts = np.divmod(pairs, len(texts))
    repeat = counts[pair_texts]
    offsets = np.arange(repeat.sum()) - np.repeat(np.cumsum(repeat) - repeat, repeat)
    flat_names = name_codes[np.repeat(starts[pair_texts], repeat) + offsets]
    flat_trees = np.repeat(pair_trees, repeat)
    first_uses = pd.unique(flat_trees * len(names) + flat_names)
    trees_of, names_of = np.divmod(first_uses, len(names))
    order = np.argsort(trees_of, kind="stable")
    found = names[names_of[order]].tolist()
    ends = np.cumsum(np.bincount(trees_of, minlength=trees)).tolist()
    return [found[start:end] for start, end in zip([0, *ends[:-1]], ends, strict=True)]
