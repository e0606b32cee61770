"""The statistics of `convgraph.analysis.stats` on Dask, for forests beyond one machine.

A Parquet dataset written by `convgraph export --format parquet`
(`convgraph.export.parquet`; read by `convgraph.sources.parquet`) holds every
tree whole in one file, and each file is one row group, so a Dask DataFrame
read from its `nodes/` folder (`read_nodes`, or
`dask.dataframe.read_parquet(DIR / "nodes")`) holds every
tree whole in one partition. `node_table`, `conversation_table` and
`branch_table` then call the pure functions of `convgraph.analysis.stats`
(`node_table_of`, `conversation_table_of`, `branch_table_of`) on each
partition with `map_partitions`: the same code as the pandas path, so the
computed tables equal the pandas ones row for row (in partition order rather
than log order). A Dask DataFrame from elsewhere must hold its trees whole
too, each tree's rows in log order.

`dataset_conversation_table` is what `convgraph stats --db DIR [--dask
SCHEDULER]` prints: pandas over pyarrow, or the same function on Dask. dask
and distributed are imported only inside the functions that use them (the
`dask` extra: `pip install 'convgraph[dask]'`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from convgraph.contract import CONVERSATION_COLUMNS
from convgraph.errors import ConvgraphError
from convgraph.sources import parquet
from convgraph.sources.parquet import NODES

if TYPE_CHECKING:
    import dask.dataframe as dd
    import pandas as pd
    from distributed import Client

#: The `--dask` value that starts a cluster on this machine.
LOCAL = "local"


def read_nodes(directory: str | os.PathLike[str]) -> dd.DataFrame:
    """A Parquet dataset's node table as a Dask DataFrame, one partition per
    file (so one partition per hash bucket of trees, each tree whole)."""
    import dask.dataframe as dd

    return dd.read_parquet(Path(directory) / NODES, split_row_groups=False)


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
    partition (`convgraph.analysis.stats.conversation_table_of`): one row per tree,
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
    from convgraph.analysis.stats import conversation_table_of

    return _per_partition(nodes, conversation_table_of)


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

    from convgraph.analysis.stats import CONVERSATION_INPUTS, conversation_table_of

    named = list(conversation_ids)
    tree_ids = parquet.tree_ids_of(directory, named) if named else None
    columns = list(CONVERSATION_INPUTS)
    if scheduler is None:
        nodes = parquet.read_nodes(directory, tree_ids, columns)
        table = conversation_table_of(nodes)
    else:
        with connect(scheduler):
            nodes = read_nodes(directory)
            # A dataset written before a column was added lacks it.
            nodes = nodes[[column for column in columns if column in nodes.columns]]
            if tree_ids is not None:
                nodes = nodes[nodes["tree_id"].isin(tree_ids)]
            table = conversation_table(nodes).compute()
    tree_column = CONVERSATION_COLUMNS[0]  # each row's tree
    if tree_ids is not None:
        position = pd.Index(table[tree_column]).get_indexer(tree_ids)
        table = table.iloc[position]
    else:
        table = table.sort_values(
            ["first_datetime", tree_column], na_position="last", kind="stable"
        )
    return table.reset_index(drop=True)


def _per_partition(
    nodes: dd.DataFrame, function: Callable[[pd.DataFrame], pd.DataFrame]
) -> dd.DataFrame:
    # The function of an empty partition (Dask's meta: the columns and
    # dtypes, no rows) tells Dask the result's columns and dtypes without
    # computing anything.
    return nodes.map_partitions(function, meta=function(nodes._meta))


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
