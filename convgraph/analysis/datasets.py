"""The statistics of `convgraph.analysis.stats` on Dask, for forests beyond one machine.

A Parquet dataset (`convgraph.export.parquet`) holds every tree whole in one
file, a partition each, so `stats`' pure table functions run per partition and
give the pandas tables row for row, each partition checked first as
`sources.parquet` checks a file. dask is imported only where used."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, cast

from convgraph.contract import CONVERSATION_COLUMNS, PARENT_ROWS
from convgraph.errors import ConvgraphError, DatabaseError
from convgraph.sources import parquet

if TYPE_CHECKING:
    import dask.dataframe as dd
    import pandas as pd
    from distributed import Client

    from convgraph.links.integrity import Problem

LOCAL = "local"


def read_nodes(
    directory: str | os.PathLike[str],
    columns: list[str] | None = None,
    tree_ids: list[str] | None = None,
) -> dd.DataFrame:
    """A Parquet dataset's node table as a Dask DataFrame, one partition per file,
    each read as `parquet.read_file` reads it (a column of another type reads as
    missing rather than failing). Raises DatabaseError for a folder without files."""
    import dask
    import dask.dataframe as dd

    files = parquet.dataset_files(directory)
    meta = parquet.read_file(files[0], columns, empty=True)
    # Dask would make every object column pyarrow strings, `parts` among them.
    with dask.config.set({"dataframe.convert-string": False}):
        lazy = dd.from_map(  # type: ignore[no-untyped-call]
            parquet.read_file, files, columns=columns, tree_ids=tree_ids, meta=meta
        )
        return cast("dd.DataFrame", lazy)


def node_table(nodes: dd.DataFrame) -> dd.DataFrame:
    """`stats.node_table` of a dataset's nodes, partition by partition."""
    from convgraph.analysis.stats import node_table_of

    return _per_partition(nodes, node_table_of)


def conversation_table(nodes: dd.DataFrame) -> dd.DataFrame:
    """`stats.conversation_table` of a dataset's nodes, partition by partition."""
    from convgraph.analysis.conversation_stats import summary_table

    return _per_partition(nodes, summary_table)


def branch_table(nodes: dd.DataFrame) -> dd.DataFrame:
    """`stats.branch_table` of a dataset's nodes, partition by partition."""
    from convgraph.analysis.stats import branch_table_of

    return _per_partition(nodes, branch_table_of)


def dataset_conversation_table(
    directory: str | os.PathLike[str],
    conversation_ids: Iterable[str] = (),
    scheduler: str | None = None,
) -> pd.DataFrame:
    """`stats.conversation_table` of a Parquet dataset, by pandas here or on the
    Dask `scheduler` ("local", or an address): the same function either way.

    `conversation_ids` keeps the trees they name (a tree id, or a node's
    conversation id), in that order; else every tree by first time. Raises
    UnknownConversation for an unknown id, ExportError for no such dataset."""
    import pandas as pd

    from convgraph.analysis.conversation_stats import summary_table
    from convgraph.analysis.stats import CONVERSATION_INPUTS

    named = list(conversation_ids)
    tree_ids = parquet.tree_ids_of(directory, named) if named else None
    columns = list(CONVERSATION_INPUTS)
    if scheduler is None:
        nodes = parquet.read_dataset(directory, tree_ids, columns)[0]
        table = _of_checked(summary_table, nodes)
    else:
        with connect(scheduler):
            lazy = read_nodes(directory, columns, tree_ids)
            # Which file holds each tree, from the ids alone.
            ids = read_nodes(directory, ["id", "tree_id"], tree_ids)
            held = ids.map_partitions(_trees_held, meta=HELD_META)  # type: ignore[no-untyped-call]
            table = _computed(_per_partition(lazy, summary_table, held))
    tree_column = CONVERSATION_COLUMNS[0]
    if tree_ids is not None:
        position = pd.Index(table[tree_column]).get_indexer(tree_ids)
        table = table.iloc[position]
    else:
        table = table.sort_values(
            ["first_datetime", tree_column], na_position="last", kind="stable"
        )
    return table.reset_index(drop=True)


def dataset_problems(directory: str | os.PathLike[str]) -> list[Problem]:
    """What `convgraph check --db DIR` reports of a dataset; DatabaseError for a
    file that is no Parquet or has no ids."""
    from convgraph.analysis.stats import CONVERSATION_INPUTS

    return parquet.read_dataset(directory, columns=list(CONVERSATION_INPUTS))[1]


def _per_partition(
    nodes: dd.DataFrame,
    function: Callable[..., pd.DataFrame],
    held: dd.DataFrame | None = None,
) -> dd.DataFrame:
    """`function` of each partition once checked, a tree's rows in a later
    partition than its first left out, so a tree split over several counts once.
    Where each tree first lies comes from `held` (cut as `nodes` is), else from
    `nodes`: Dask may cut a frame of fewer columns into other partitions."""
    from dask.delayed import delayed

    first: Any = {}
    if nodes.npartitions > 1:  # one partition holds every tree whole
        if held is None:
            held = nodes.map_partitions(_trees_held, meta=HELD_META)  # type: ignore[no-untyped-call]
        found = _computed(held)
        first = delayed(
            found.groupby("tree_id")["partition"].min().to_dict(), pure=True
        )
    # The function of Dask's empty meta gives the result's dtypes uncomputed.
    meta = _of_checked(function, parquet.checked_nodes(nodes._meta)[0])
    lazy = nodes.map_partitions(_checked, function, first, meta=meta)  # type: ignore[no-untyped-call]
    return cast("dd.DataFrame", lazy)


HELD_META = {"tree_id": object, "partition": "int64"}


def _trees_held(
    part: pd.DataFrame, partition_info: dict[str, Any] | None = None
) -> pd.DataFrame:
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
    partition_info: dict[str, Any] | None = None,
) -> pd.DataFrame:
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
    """`frame.compute()`, a file that cannot be read as one DatabaseError line."""
    import pyarrow as pa

    try:
        return cast("pd.DataFrame", frame.compute())  # type: ignore[no-untyped-call]
    except (OSError, pa.ArrowException) as error:
        raise DatabaseError(f"cannot read the Parquet dataset: {error}") from None


@contextlib.contextmanager
def connect(scheduler: str) -> Iterator[Client]:
    """A Dask client for the block: a `LocalCluster` ("local") or the scheduler
    at an address. Raises ConvgraphError where it cannot be reached."""
    from distributed import Client, LocalCluster

    if scheduler == LOCAL:
        # No dashboard: its port may be taken, and nobody looks at it here.
        with (
            LocalCluster(dashboard_address=None, silence_logs=40) as cluster,  # type: ignore[no-untyped-call]
            Client(cluster) as client,  # type: ignore[no-untyped-call]
        ):
            yield client
        return
    from distributed.comm.addressing import get_address_host_port

    try:
        # An address Dask cannot parse fails here, before a half-made Client
        # complains on stderr as it is collected.
        get_address_host_port(scheduler)
        client = Client(scheduler, timeout="10s")  # type: ignore[no-untyped-call]
    except (OSError, TimeoutError, ValueError) as error:
        raise ConvgraphError(
            f"cannot reach the Dask scheduler at {scheduler}: {error}"
        ) from None
    with client:
        yield client
