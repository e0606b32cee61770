"""Every node's ancestors at once over `parent_rows` (each node's parent row,
-1 for a root), by pointer jumping: log2(depth) vectorized rounds. One tree
walks with `convgraph.links.integrity.ParentWalk` instead, without numpy."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pandas as pd


class Climb(NamedTuple):
    """What `climb` found for every node (None for what was not asked)."""

    totals: np.ndarray | None
    nearest: np.ndarray | None


def climb(
    parent_rows: np.ndarray,
    values: np.ndarray | None = None,
    combine: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
    marked: np.ndarray | None = None,
) -> Climb:
    """Climb from every node towards its root, stopping at the nearest
    marked node (the node itself included). `totals`: `values` (``(n,)`` or ``(n, k)``) combined by `combine`, an
    associative ufunc with identity 0 (default `numpy.add`), up to but not
    including that node (to the root where none is marked); `nearest`: its
    row, or -1. A node above a cycle reaches no root; its totals mean nothing."""
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
        # The sentinel or a cycle the rounds ran out on: nothing marked.
        is_marked = np.append(marked, False)
        nearest = np.where(is_marked[reached], reached, -1)
    return Climb(None if totals is None else totals[:count], nearest)


def parent_rows_of(ids: Any, parent_ids: Any) -> np.ndarray:
    """The position in `ids` (unique) of each of `parent_ids`, -1 where it
    is None, NA or NaN (a root) or names no row."""
    if (arrow_ids := _arrow_strings(ids)) is not None:
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
                wanted = None
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
    """Each node's value combined with all its ancestors' (`climb`'s totals)."""
    totals = climb(parent_rows, values, combine).totals
    assert totals is not None
    return totals


def nearest_marked(parent_rows: np.ndarray, marked: np.ndarray) -> np.ndarray:
    """The nearest marked row at or above each node, or -1."""
    nearest = climb(parent_rows, marked=marked).nearest
    assert nearest is not None
    return nearest


def root_pointers(parent_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each node's root row and depth (a root is 0), for acyclic links."""
    linked = parent_rows >= 0
    found = climb(parent_rows, np.ones(len(parent_rows), np.int64), marked=~linked)
    assert found.nearest is not None and found.totals is not None
    return found.nearest, found.totals


def reaches_root(parent_rows: np.ndarray) -> np.ndarray:
    """Which nodes have a root above them (the others hang off a cycle)."""
    return nearest_marked(parent_rows, parent_rows < 0) >= 0


def ids_at_rows(ids: Any, rows: np.ndarray) -> Any:
    """The id at each of `rows`, missing where a row is -1, in the ids' dtype."""
    if (arrow := _arrow_strings(ids)) is not None:
        import pyarrow as pa

        taken = arrow.take(pa.array(rows, pa.int64(), mask=rows < 0))
        if isinstance(ids, pd.Series):
            ids = ids.array
        if isinstance(ids, pd.arrays.ArrowStringArray):
            # `string[pyarrow]` (NA) or pandas' "str" (NaN), as the ids had it.
            strings = pd.arrays.ArrowStringArray(taken)
            return strings if strings.dtype == ids.dtype else strings.astype(ids.dtype)
        return pd.arrays.ArrowExtensionArray(taken)
    return np.where(rows >= 0, np.asarray(ids, dtype=object)[np.maximum(rows, 0)], None)


def _arrow_strings(values: Any) -> Any:
    """A column of Arrow `string` or `large_string` as its chunked array, else None."""
    if isinstance(values, pd.Series):
        values = values.array
    if isinstance(values, pd.arrays.ArrowExtensionArray):
        import pyarrow as pa

        arrow = pa.chunked_array(values.__arrow_array__())
        if pa.types.is_string(arrow.type) or pa.types.is_large_string(arrow.type):
            return arrow
    return None
