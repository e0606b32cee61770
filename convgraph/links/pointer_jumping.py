"""Questions about every node's ancestors, answered for the whole forest at once.

A forest's parent links are one integer array, `parent_rows` (the row of each
node's parent, -1 for a root). `climb` answers two kinds of question about
every node's path up to its root with pointer jumping (Wyllie's list
ranking): a total along the path (how deep, how many tokens, which models)
and the nearest marked node on it (the root, the node that first used a
model). Every round doubles how far each pointer reaches, so a path of
length L takes log2(L) vectorized rounds: a 100,000-deep chain is 17 rounds,
with no Python loop per node and no recursion. `root_pointers`,
`reaches_root`, `path_totals` and `nearest_marked` are its everyday forms.
`parent_rows_of` makes the array from the ids, the one hash of every parent
id that the forest and the statistics of a dataset both need.

This is the table side of the links: it imports numpy and pandas, and only
whole-forest work imports it (the one-tree path walks with
`convgraph.links.integrity.ParentWalk`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pandas as pd


class Climb(NamedTuple):
    """What `climb` found for every node."""

    #: The values combined on the way up (None when no values were given).
    totals: np.ndarray | None
    #: The nearest marked row among the node and its ancestors, -1 for none
    #: (None when no marks were given).
    nearest: np.ndarray | None


def climb(
    parent_rows: np.ndarray,
    values: np.ndarray | None = None,
    combine: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
    marked: np.ndarray | None = None,
) -> Climb:
    """Climb from every node towards its root, by pointer jumping, stopping
    at the nearest marked node (the node itself included) where there is one.

    Each node's pointer starts at its parent; a marked node points at
    itself, and every root that is not marked at a sentinel row past the
    last node, which points at itself and holds the identity value. Each
    round, a node's total takes in the total of the node its pointer has
    reached, and the pointer jumps as far again; the rounds end when no
    pointer moves.

    Parameters
    ----------
    parent_rows
        The row of each node's parent, -1 for a root (`Forest.parent_rows`).
    values
        One value per node (shape ``(n,)``) or one row of values per node
        (shape ``(n, k)``): integers for `numpy.add`, unsigned for bit sets.
    combine
        An associative numpy ufunc whose identity is 0: `numpy.add` (the
        default) for sums along the path, `numpy.bitwise_or` for sets of
        flags.
    marked
        One bool per node: where the climb stops.

    Returns
    -------
    Climb
        `totals` (shaped like `values`): the values combined from the node
        up to, not including, its nearest marked node (up to and including
        its root where no node is marked); `nearest`: the row of the nearest
        marked node, -1 where none is on the path.

    Notes
    -----
    A node whose parents go round a cycle never reaches a root: the rounds
    stop after log2(n) + 1, by when its pointer has passed every ancestor
    it has, so `nearest` finds no root above it (see `reaches_root`); its
    totals mean nothing.
    """
    count = len(parent_rows)
    pointer = np.where(parent_rows >= 0, parent_rows, count)
    if marked is not None:
        pointer = np.where(marked, np.arange(count), pointer)
    pointer = np.append(pointer, count)
    join = np.add if combine is None else combine
    totals = None
    if values is not None:
        identity = np.zeros((1, *values.shape[1:]), values.dtype)
        totals = np.concatenate([values, identity])
        if marked is not None:
            # A marked node's climb ends before it starts: nothing to add.
            totals[np.flatnonzero(marked)] = 0
    for _ in range(math.ceil(math.log2(max(count, 2))) + 1):
        ahead = pointer[pointer]
        if np.array_equal(ahead, pointer):
            break
        if totals is not None:
            totals = join(totals, totals[pointer])
        pointer = ahead
    nearest = None
    if marked is not None:
        reached = pointer[:count]
        # Where the pointer rests on no marked node (the sentinel, or a
        # cycle that the rounds ran out on), none lies on the path.
        is_marked = np.append(marked, False)
        nearest = np.where(is_marked[reached], reached, -1)
    return Climb(
        None if totals is None else totals[:count],
        nearest,
    )


def parent_rows_of(ids: Any, parent_ids: Any) -> np.ndarray:
    """The row of each node's parent: the position in `ids` of each of
    `parent_ids`, -1 where it is None (a root) or names no row.

    Parameters
    ----------
    ids
        Every node's id, one per row, unique (a column, array or list).
    parent_ids
        Each row's parent id, or None (NA and NaN count as None).
    """
    arrow_ids = _arrow_strings(ids)
    if arrow_ids is not None:
        # Arrow's strings hashed by Arrow: no Python object per id.
        import pyarrow as pa
        import pyarrow.compute as pc

        wanted = _arrow_strings(parent_ids)
        if wanted is None:
            try:
                wanted = pa.array(
                    np.asarray(parent_ids, dtype=object),
                    arrow_ids.type,
                    from_pandas=True,
                )
            except (pa.ArrowTypeError, pa.ArrowInvalid):
                wanted = None  # not all text: looked up as Python objects
        if wanted is not None:
            # index_in wants both sides of one type (string or large_string).
            rows = pc.index_in(
                wanted.cast(arrow_ids.type), value_set=arrow_ids.combine_chunks()
            )
            return np.asarray(pc.fill_null(rows, -1).to_numpy(), dtype=np.int64)
    index = pd.Index(np.asarray(ids, dtype=object))
    parents = np.array(parent_ids, dtype=object)
    has_parent = pd.notna(parents)
    parents[~has_parent] = None  # NaN and NA as None: no id is missing
    rows = index.get_indexer(parents)
    return np.where(has_parent, rows, -1).astype(np.int64)


def path_totals(
    parent_rows: np.ndarray,
    values: np.ndarray,
    combine: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
) -> np.ndarray:
    """Each node's value combined with the values of all its ancestors
    (`climb`'s totals): for a leaf, the total of its branch.
    """
    totals = climb(parent_rows, values, combine).totals
    assert totals is not None
    return totals


def nearest_marked(parent_rows: np.ndarray, marked: np.ndarray) -> np.ndarray:
    """For each node, the nearest marked row among itself and its ancestors,
    or -1 where there is none (`climb`'s nearest).
    """
    nearest = climb(parent_rows, marked=marked).nearest
    assert nearest is not None
    return nearest


def root_pointers(parent_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each node's root row and depth (a root is 0), for acyclic links."""
    # Roots are marked, so the climb stops at each node's root and its total
    # counts the links on the way: one per node passed below the root.
    linked = parent_rows >= 0
    found = climb(parent_rows, np.ones(len(parent_rows), np.int64), marked=~linked)
    assert found.nearest is not None and found.totals is not None
    return found.nearest, found.totals


def reaches_root(parent_rows: np.ndarray) -> np.ndarray:
    """Which nodes have a root above them (the others hang off a cycle)."""
    nearest = nearest_marked(parent_rows, parent_rows < 0)
    return nearest >= 0


def ids_at_rows(ids: Any, rows: np.ndarray) -> Any:
    """The id at each of `rows`, missing where a row is -1 (a root): each
    node's parent id from its parent's row, as a column of the ids' own
    dtype (Arrow's strings taken by Arrow, without a Python object per row:
    an `ArrowStringArray` for pandas' `string[pyarrow]`; an object array of
    str and None otherwise).
    """
    arrow = _arrow_strings(ids)
    if arrow is not None:
        import pyarrow as pa

        taken = arrow.take(pa.array(rows, pa.int64(), mask=rows < 0))
        if isinstance(ids, pd.Series):
            ids = ids.array
        if isinstance(ids, pd.arrays.ArrowStringArray):
            # pandas' `string[pyarrow]` (NA for missing); its other string
            # dtype ("str", NaN for missing) kept as the ids had it.
            strings = pd.arrays.ArrowStringArray(taken)
            return strings if strings.dtype == ids.dtype else strings.astype(ids.dtype)
        return pd.arrays.ArrowExtensionArray(taken)
    values = np.asarray(ids, dtype=object)
    return np.where(rows >= 0, values[np.maximum(rows, 0)], None)


def _arrow_strings(values: Any) -> Any:
    """A column of Arrow's strings (`string` or `large_string`: pandas'
    `string[pyarrow]` or an `ArrowDtype` of either) as its Arrow array
    (chunked), else None."""
    if isinstance(values, pd.Series):
        values = values.array
    if isinstance(values, pd.arrays.ArrowExtensionArray):
        import pyarrow as pa

        arrow = pa.chunked_array(values.__arrow_array__())
        if pa.types.is_string(arrow.type) or pa.types.is_large_string(arrow.type):
            return arrow
    return None
