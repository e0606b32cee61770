"""What a conversation's runs did with tools, in the rule's two forms.

A node's `tool_calls` is an integer (None where the source cannot tell), its
`tools` the names it called joined by ", "; a tree sums the first (None where
no node can tell) and lists the second, each name once, in first-call order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from convgraph.contract import TOOL_CALLS, TOOLS
from convgraph.links.rules import RECORDS, rule, table_form

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd


def tool_list(tools: Any) -> list[str]:
    """A node's `tools` (the names joined by ", ") as a list of names."""
    if not isinstance(tools, str):
        return []
    return [name for name in tools.split(", ") if name]


@rule(RECORDS)
def tree_tool_totals(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One tree's `tool_calls` and `tools`, from its node records."""
    calls = [count for r in records if (count := r.get(TOOL_CALLS)) is not None]
    names = (name for r in records for name in tool_list(r.get(TOOLS)))
    return {
        TOOL_CALLS: sum(calls) if calls else None,
        TOOLS: list(dict.fromkeys(names)),
    }


@table_form(tree_tool_totals)
def tree_tool_totals_table(nodes: pd.DataFrame) -> dict[str, Any]:
    """Every tree's `tree_tool_totals`, trees in the order of their first row."""
    import pandas as pd

    tree_codes, tree_ids = pd.factorize(nodes["tree_id"], sort=False)
    trees = len(tree_ids)
    missing = pd.Series(None, index=nodes.index, dtype=object)
    calls = nodes[TOOL_CALLS] if TOOL_CALLS in nodes.columns else missing
    tools = nodes[TOOLS] if TOOLS in nodes.columns else missing
    # Most llm logs have no tool calls: nothing to split or number.
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
    """Each tree's sum of `column` (trees numbered by `codes`), NA where no
    row has a figure: nullable `Int64`, or Python's integers (None for NA)
    where a sum could pass 64 bits, never a sum wrapped round.
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
    leave int64, reckoned in Python's integers (numpy's would wrap)."""
    if not len(values):
        return False
    largest = max(int(values.max()), -int(values.min()))
    return largest * int(counted.max(initial=0)) > 2**63 - 1


def _tools_per_tree(
    tools: pd.Series, tree_codes: np.ndarray, trees: int
) -> list[list[str]]:
    """Each tree's tools, each once, in the order first called: each distinct
    text split once, then the distinct (tree, tool) pairs in order of use."""
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
    # A name first appears with the first text that holds it.
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
    return split_lists(found, np.bincount(trees_of, minlength=trees))


def split_lists(flat: list[Any], counts: np.ndarray) -> list[list[Any]]:
    """`flat` cut into consecutive lists of `counts[i]` items."""
    import numpy as np

    if len(flat) == len(counts) and (counts == 1).all():
        return [[item] for item in flat]
    ends = np.cumsum(counts).tolist()
    starts = [0, *ends][: len(ends)]
    return [flat[start:end] for start, end in zip(starts, ends, strict=True)]
