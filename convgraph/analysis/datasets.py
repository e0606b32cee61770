"""The statistics of `convgraph.analysis.stats` on Dask, for forests beyond one machine.

A Parquet dataset written by `convgraph export --format parquet`
(`convgraph.export.parquet`; read by `convgraph.sources.parquet`) holds every
tree whole in one file, and each file is one row group, so a Dask DataFrame
read from its `nodes/` folder (`read_nodes`, or
`dask.dataframe.read_parquet(DIR / "nodes")`) holds every
tree whole in one partition. `node_table`, `conversation_table` and
`branch_table` then call the pure functions of `convgraph.analysis.stats`
(`node_table_of`, `summary_table`, `branch_table_of`) on each
partition with `map_partitions`: the same code as the pandas path, so the
computed tables equal the pandas ones row for row (in partition order rather
than log order). A Dask DataFrame from elsewhere must hold its trees whole
too, each tree's rows in log order.

Each partition is checked first, as a file of the dataset is on the pandas
path (`convgraph.sources.parquet.checked_nodes`: values of the wrong type
read as missing, repeated rows and broken links dropped, the rows of a tree
an earlier partition holds left out), so a tampered dataset gives the same
answers on both. `dataset_conversation_table` is what `convgraph stats --db
DIR [--dask SCHEDULER]` prints: pandas over pyarrow, or the same function on
Dask; `dataset_problems` is what `convgraph check --db DIR` reports. dask
and distributed are imported only inside the functions that use them (the
`dask` extra: `pip install 'convgraph[dask]'`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from convgraph.contract import CONVERSATION_COLUMNS, PARENT_ROWS
from convgraph.errors import ConvgraphError, DatabaseError
from convgraph.sources import parquet

if TYPE_CHECKING:
    import dask.dataframe as dd
    import pandas as pd
    from distributed import Client

    from convgraph.links.integrity import Problem

#: The `--dask` value that starts a cluster on this machine.
LOCAL = "local"


def read_nodes(
    directory: str | os.PathLike[str],
    columns: list[str] | None = None,
    tree_ids: list[str] | None = None,
) -> dd.DataFrame:
    """A Parquet dataset's node table as a Dask DataFrame, one partition per
    file (so one partition per hash bucket of trees, each tree whole), each
    file read by pyarrow on its own as the pandas path reads it
    (`convgraph.sources.parquet.read_file`): a file whose column holds
    another type than the others' reads, its values of the wrong type then
    missing, instead of failing the whole computation. `columns` and
    `tree_ids` as `read_file` takes them.

    Raises
    ------
    DatabaseError
        The folder holds no Parquet files (one that cannot be read fails
        the computation with the same error).
    """
    import dask
    import dask.dataframe as dd

    files = parquet.dataset_files(directory)
    meta = parquet.read_file(files[0], columns, empty=True)
    # The columns as pandas reads them: Dask would make every object column
    # pyarrow strings, the lists of `parts` and the all-None notes among them.
    with dask.config.set({"dataframe.convert-string": False}):
        return dd.from_map(
            parquet.read_file, files, columns=columns, tree_ids=tree_ids, meta=meta
        )


def node_table(nodes: dd.DataFrame) -> dd.DataFrame:
    """`convgraph.analysis.stats.node_table` of a dataset's nodes, partition by
    partition (`convgraph.analysis.stats.node_table_of`).

    Examples
    --------
    >>> import dask.dataframe as dd, pandas as pd
    >>> from convgraph.contract import NODE_ATTRIBUTES
    >>> nodes = pd.DataFrame({"id": ["r", "a"], "tree_id": "t",
    ...     "parent_id": [None, "r"], **dict.fromkeys(NODE_ATTRIBUTES)})
    >>> table = node_table(dd.from_pandas(nodes, npartitions=1)).compute()
    >>> table[["id", "depth", "is_leaf"]]
      id  depth  is_leaf
    0  r      0    False
    1  a      1     True
    """
    from convgraph.analysis.stats import node_table_of

    return _per_partition(nodes, node_table_of)


def conversation_table(nodes: dd.DataFrame) -> dd.DataFrame:
    """`convgraph.analysis.stats.conversation_table` of a dataset's nodes, partition by
    partition (`convgraph.analysis.stats.summary_table`): one row per tree,
    named from the dataset's `tree_name` column.

    Examples
    --------
    >>> import dask.dataframe as dd, pandas as pd
    >>> from convgraph.contract import NODE_ATTRIBUTES
    >>> nodes = pd.DataFrame({"id": ["r", "a", "s"], "tree_id": ["t", "t", "u"],
    ...     "parent_id": [None, "r", None], **dict.fromkeys(NODE_ATTRIBUTES)})
    >>> ddf = dd.from_pandas(nodes, npartitions=1)
    >>> conversation_table(ddf).compute()[["tree_id", "nodes", "leaves"]]
      tree_id  nodes  leaves
    0       t      2       1
    1       u      1       1
    """
    from convgraph.analysis.stats import summary_table

    return _per_partition(nodes, summary_table)


def branch_table(nodes: dd.DataFrame) -> dd.DataFrame:
    """`convgraph.analysis.stats.branch_table` of a dataset's nodes, partition by
    partition (`convgraph.analysis.stats.branch_table_of`): one row per leaf."""
    from convgraph.analysis.stats import branch_table_of

    return _per_partition(nodes, branch_table_of)


def dataset_conversation_table(
    directory: str | os.PathLike[str],
    conversation_ids: Iterable[str] = (),
    scheduler: str | None = None,
) -> pd.DataFrame:
    """`convgraph.analysis.stats.conversation_table` of a Parquet dataset written by
    `convgraph.export.parquet`, with pandas over pyarrow in this process or,
    given a Dask scheduler, on Dask: the same function either way.

    Parameters
    ----------
    directory
        The dataset: a folder holding `nodes/`.
    conversation_ids
        Only the trees these ids name (a tree id, or the conversation id of
        one of its nodes), in the order named; every tree when empty, in the
        order of their first times (then ids).
    scheduler
        None for pandas on this process; "local" for a Dask `LocalCluster`
        on this machine, or a scheduler's address (``tcp://HOST:8786``).

    Raises
    ------
    UnknownConversation
        An id names no tree of the dataset.
    ExportError
        The folder is not such a dataset.
    """
    import pandas as pd

    from convgraph.analysis.stats import CONVERSATION_INPUTS, summary_table

    named = list(conversation_ids)
    tree_ids = parquet.tree_ids_of(directory, named) if named else None
    columns = list(CONVERSATION_INPUTS)
    if scheduler is None:
        nodes = parquet.read_dataset(directory, tree_ids, columns)[0]
        table = _of_checked(summary_table, nodes)
    else:
        with connect(scheduler):
            lazy = read_nodes(directory, columns, tree_ids)
            # Which file holds each tree, from the ids alone: one partition
            # a file, as `lazy` has.
            ids = read_nodes(directory, ["id", "tree_id"], tree_ids)
            held = ids.map_partitions(_trees_held, meta=HELD_META)
            table = _computed(_per_partition(lazy, summary_table, held))
    tree_column = CONVERSATION_COLUMNS[0]  # each row's tree
    if tree_ids is not None:
        position = pd.Index(table[tree_column]).get_indexer(tree_ids)
        table = table.iloc[position]
    else:
        table = table.sort_values(
            ["first_datetime", tree_column], na_position="last", kind="stable"
        )
    return table.reset_index(drop=True)


def dataset_problems(directory: str | os.PathLike[str]) -> list[Problem]:
    """What is broken in a Parquet dataset, and left out or dropped when it
    is read (`convgraph.sources.parquet.checked_nodes`), file by file.

    Raises
    ------
    DatabaseError
        A file cannot be read as Parquet, or its node table has no ids.
    """
    from convgraph.analysis.stats import CONVERSATION_INPUTS

    return parquet.read_dataset(directory, columns=list(CONVERSATION_INPUTS))[1]


def _per_partition(
    nodes: dd.DataFrame,
    function: Callable[..., pd.DataFrame],
    held: dd.DataFrame | None = None,
) -> dd.DataFrame:
    """`function` of each partition, checked as `checked_nodes` checks a
    dataset's file; the rows of a tree that an earlier partition holds are
    left out, so a tree split over several (a tampered dataset) counts once.

    Which partition holds each tree first is computed here, at once (the
    rest stays lazy), from `held` (the trees each partition holds, as
    `_trees_held` gives them, of a frame cut as `nodes` is), else from
    `nodes` itself. Not from a few of its columns: Dask may cut a frame of
    fewer columns into other partitions (it joins small files)."""
    import dask

    first: Any = {}
    if nodes.npartitions > 1:  # one partition holds every tree whole
        if held is None:
            held = nodes.map_partitions(_trees_held, meta=HELD_META)
        found = _computed(held)
        first = dask.delayed(
            found.groupby("tree_id")["partition"].min().to_dict(), pure=True
        )
    # The function of an empty partition (Dask's meta: the columns and
    # dtypes, no rows) tells Dask the result's columns and dtypes without
    # computing anything.
    meta = _of_checked(function, parquet.checked_nodes(nodes._meta)[0])
    return nodes.map_partitions(_checked, function, first, meta=meta)


#: What `_trees_held` gives: each tree a partition holds, and the partition.
HELD_META = {"tree_id": object, "partition": "int64"}


def _trees_held(part: pd.DataFrame, partition_info: dict | None = None) -> pd.DataFrame:
    """The trees a partition holds, with the partition's number."""
    import pandas as pd

    number = partition_info["number"] if partition_info else 0
    trees = parquet.trees_held(part)
    return pd.DataFrame(
        {
            "tree_id": pd.Series(trees, dtype=object),
            "partition": pd.Series([number] * len(trees), dtype="int64"),
        }
    )


def _checked(
    part: pd.DataFrame,
    function: Callable[..., pd.DataFrame],
    first: dict[str, int],
    partition_info: dict | None = None,
) -> pd.DataFrame:
    """`function` of one partition once checked (`_per_partition`)."""
    number = partition_info["number"] if partition_info else 0
    earlier = {
        tree: f"partition {first[tree]}"
        for tree in parquet.trees_held(part)
        if first.get(tree, number) < number
    }
    checked = parquet.checked_nodes(part, f"partition {number}", earlier)[0]
    return _of_checked(function, checked)


def _of_checked(
    function: Callable[..., pd.DataFrame], nodes: pd.DataFrame
) -> pd.DataFrame:
    """`function` of checked nodes, given the parent rows the check found."""
    parent_rows = nodes[PARENT_ROWS].to_numpy()
    return function(nodes.drop(columns=PARENT_ROWS), parent_rows=parent_rows)


def _computed(frame: dd.DataFrame | dd.Series) -> pd.DataFrame:
    """`frame.compute()`, a dataset's file that cannot be read (a partition
    read by `read_nodes`) as the one line the pandas path gives."""
    import pyarrow as pa

    try:
        return frame.compute()
    except (OSError, pa.ArrowException) as error:
        raise DatabaseError(f"cannot read the Parquet dataset: {error}") from None


@contextlib.contextmanager
def connect(scheduler: str) -> Iterator[Client]:
    """A Dask client for the time of the block: on a `LocalCluster` of this
    machine's cores (`scheduler` is "local"), or on the scheduler at an
    address (``tcp://HOST:8786``).

    Raises
    ------
    ConvgraphError
        The scheduler cannot be reached.
    """
    from distributed import Client, LocalCluster

    if scheduler == LOCAL:
        # No dashboard: its port may be taken, and nobody looks at it here.
        with (
            LocalCluster(dashboard_address=None, silence_logs=40) as cluster,
            Client(cluster) as client,
        ):
            yield client
        return
    from distributed.comm.addressing import get_address_host_port

    try:
        # An address Dask cannot parse fails here, before a half-made Client
        # complains on stderr as it is collected.
        get_address_host_port(scheduler)
        client = Client(scheduler, timeout="10s")
    except (OSError, TimeoutError, ValueError) as error:
        raise ConvgraphError(
            f"cannot reach the Dask scheduler at {scheduler}: {error}"
        ) from None
    with client:
        yield client
