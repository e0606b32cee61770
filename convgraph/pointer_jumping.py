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

numpy is imported inside the functions: the forest module imports this one,
and the command line imports the forest module without wanting numpy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import numpy as np


class Climb(NamedTuple):
    """What `climb` found for every node."""

    #: The node's value combined with its ancestors' (None when no values
    #: were given).
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
    """Carry values and marks up every node's path to its root, by pointer
    jumping.

    Each node's pointer starts at its parent; a row past the last node is a
    sentinel that every root points at, holding the identity value and no
    mark, and pointing at itself. After each round, a node's total combines
    the values from the node up to (not including) the node its pointer has
    reached, its nearest mark is the first one on that stretch, and the
    pointer then jumps as far again.

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
        One bool per node: the nodes that `nearest` looks for.

    Returns
    -------
    Climb
        `totals` (shaped like `values`) and `nearest` (row numbers, -1 where
        no marked node lies on the path).

    Notes
    -----
    A node whose parents go round a cycle never reaches a root: the rounds
    stop after log2(n) + 1, by when its pointer has passed every ancestor
    it has, so `nearest` finds no root above it (see `reaches_root`); its
    totals mean nothing.

    Examples
    --------
    >>> import numpy as np
    >>> parents = np.array([-1, 0, 1, 0])
    >>> found = climb(parents, np.array([1, 10, 100, 1000]),
    ...     marked=np.array([False, True, False, False]))
    >>> found.totals.tolist(), found.nearest.tolist()
    ([1, 11, 111, 1001], [-1, 1, 1, -1])
    """
    import numpy as np

    count = len(parent_rows)
    pointer = np.append(np.where(parent_rows >= 0, parent_rows, count), count)
    totals = None
    if values is not None:
        combine = np.add if combine is None else combine
        identity = np.zeros((1, *values.shape[1:]), values.dtype)
        totals = np.concatenate([values, identity])
    nearest = None
    if marked is not None:
        nearest = np.append(np.where(marked, np.arange(count), -1), -1)
    for _ in range(math.ceil(math.log2(max(count, 2))) + 1):
        if (pointer == count).all():
            break
        if totals is not None:
            totals = combine(totals, totals[pointer])
        if nearest is not None:
            nearest = np.where(nearest >= 0, nearest, nearest[pointer])
        pointer = pointer[pointer]
    return Climb(
        None if totals is None else totals[:count],
        None if nearest is None else nearest[:count],
    )


def path_totals(
    parent_rows: np.ndarray,
    values: np.ndarray,
    combine: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
) -> np.ndarray:
    """Each node's value combined with the values of all its ancestors
    (`climb`'s totals): for a leaf, the total of its branch.

    Examples
    --------
    >>> import numpy as np
    >>> path_totals(np.array([-1, 0, 1, 0]), np.array([1, 10, 100, 1000]))
    array([   1,   11,  111, 1001])
    """
    totals = climb(parent_rows, values, combine).totals
    assert totals is not None
    return totals


def nearest_marked(parent_rows: np.ndarray, marked: np.ndarray) -> np.ndarray:
    """For each node, the nearest marked row among itself and its ancestors,
    or -1 where there is none (`climb`'s nearest).

    Examples
    --------
    >>> import numpy as np
    >>> nearest_marked(np.array([-1, 0, 1, -1]), np.array([False, True, False, True]))
    array([-1,  1,  1,  3])
    """
    nearest = climb(parent_rows, marked=marked).nearest
    assert nearest is not None
    return nearest


def root_pointers(parent_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each node's root row and depth (a root is 0), for acyclic links.

    Examples
    --------
    >>> import numpy as np
    >>> roots, depths = root_pointers(np.array([-1, 0, 1, -1, 3]))
    >>> roots.tolist(), depths.tolist()
    ([0, 0, 0, 3, 3], [0, 1, 2, 0, 1])
    """
    import numpy as np

    linked = parent_rows >= 0
    found = climb(parent_rows, linked.astype(np.int64), marked=~linked)
    assert found.nearest is not None and found.totals is not None
    return found.nearest, found.totals


def reaches_root(parent_rows: np.ndarray) -> np.ndarray:
    """Which nodes have a root above them (the others hang off a cycle).

    Examples
    --------
    >>> import numpy as np
    >>> reaches_root(np.array([-1, 0, 3, 2])).tolist()
    [True, True, False, False]
    """
    nearest = nearest_marked(parent_rows, parent_rows < 0)
    return nearest >= 0
