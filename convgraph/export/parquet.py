"""A forest as a Parquet dataset that Dask, Spark and pyarrow read.

`write_parquet(forest, directory)` writes two tables: `directory/nodes/`,
the node table of `convgraph.analysis.stats.node_table` (with `tree_id`,
`parent_id` and each node's depth, children, is_root and is_leaf), each
node's `parts` as its JSON text, `calls`, the ids of the calls its run folds
(a list of strings, empty where none: `convgraph.export.common.CALLS`), plus
`tree_name`, the name of the node's tree; and `directory/edges/`, the table
of `convgraph.analysis.stats.edge_table`; times are kept to the microsecond,
as llm logs them and as Spark reads them. Each is cut into files
`part-NNNNN.parquet` by a hash bucket of the tree id, so every tree lies
whole in one file, and the edges of a tree in the file of the same number;
`convgraph.analysis.datasets` reads one file as one partition and measures it
with the statistics' own per-partition functions. The bucket is a keyed
SipHash (`pandas.util.hash_array` with a fixed key), the same in every
process and on every machine, unlike Python's salted `hash`. The dataset
appears whole or not at all: it is written into a directory beside its final
name and renamed there at the end. Reading a dataset back is a source's job:
`convgraph.sources.parquet`.

pandas and numpy are imported at the top, as by every module whose job is
tables; pyarrow (the `parquet` extra) only inside the functions that write,
so the module imports without it.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from convgraph.analysis.stats import edge_table, node_table
from convgraph.contract import CATEGORY_COLUMNS, PARTS, PLACE_ATTRIBUTES, TREE_NAME
from convgraph.errors import ExportError
from convgraph.export.common import CALLS, calls_by_node
from convgraph.sources.parquet import EDGES, NODES

if TYPE_CHECKING:
    import pyarrow as pa

    from convgraph.model.forest import Forest

#: How many nodes a partition holds on average when the writer is not told
#: how many partitions to make: small enough for a worker of 1 GB to measure
#: one with room to spare, large enough that a million nodes is few files.
NODES_PER_PARTITION = 250_000

#: The key of the tree ids' hash (16 bytes): fixed, so a tree's bucket is the
#: same wherever and whenever the dataset is written.
HASH_KEY = "convgraph-trees1"

PART_NAME = "part-{:05d}.parquet"


def tree_buckets(tree_ids: Iterable[Any], partitions: int) -> np.ndarray:
    """The partition (0 to `partitions` - 1) of each tree id: a stable hash."""
    codes, unique = pd.factorize(pd.Series(list(tree_ids), dtype=object))
    # Hash each distinct id once: a forest has far fewer trees than nodes.
    texts = np.asarray([str(tree_id) for tree_id in unique], dtype=object)
    hashes = pd.util.hash_array(texts, hash_key=HASH_KEY, categorize=False)
    return (hashes % np.uint64(partitions)).astype(np.int64)[codes]


def dataset_nodes(forest: Forest) -> pd.DataFrame:
    """The node table the dataset holds: `convgraph.analysis.stats.node_table` of the
    forest, each node's `parts` as their JSON text (one string column, which
    every reader of Parquet takes, whatever a tool's arguments hold; None for
    a node that is only its prompt and answer), an agent's project and git
    branch where the source gives them (`PLACE_ATTRIBUTES`), `calls`, the
    ids of the calls each node's run folds (`Forest.calls` by
    `common.calls_by_node`, the rule of every export; an empty list where
    none), and `tree_name`, the name of each node's tree (a category)."""
    table = node_table(forest)
    table[PARTS] = parts_as_json(table[PARTS])
    for name in PLACE_ATTRIBUTES:
        if name in forest.nodes.columns:
            table[name] = forest.nodes[name]
    folded = calls_by_node(forest.calls)
    table[CALLS] = pd.Series(
        [folded.get(node, []) for node in table["id"].tolist()],
        index=table.index,
        dtype=object,
    )
    names = [forest.names.get(tree_id) for tree_id in table["tree_id"].tolist()]
    table[TREE_NAME] = pd.Categorical(names)
    return table


def parts_as_json(parts: pd.Series) -> pd.Series:
    """A column of parts lists as their JSON texts (None stays None)."""
    texts = [
        json.dumps(value, ensure_ascii=False, default=str)
        if isinstance(value, list)
        else None
        for value in parts.tolist()
    ]
    return pd.Series(texts, index=parts.index, dtype=object)


def write_parquet(
    forest: Forest,
    directory: str | os.PathLike[str],
    *,
    partitions: int | None = None,
    force: bool = False,
) -> Path:
    """Write the forest as a Parquet dataset, `directory/nodes/` and
    `directory/edges/`, every tree whole in one partition of each.

    Parameters
    ----------
    forest
        The trees to write (`Forest.read`, with or without texts).
    directory
        Where the dataset goes: a folder that does not exist yet or is
        empty (or, with `force`, one whose contents are replaced).
    partitions
        How many hash buckets of tree ids to cut the tables into; by
        default one per `NODES_PER_PARTITION` nodes. A bucket no tree falls
        into has no file.
    force
        Replace a directory that is not empty.

    Returns
    -------
    Path
        `directory`.

    Raises
    ------
    ExportError
        `directory` is a file, or a directory that is not empty and `force`
        is false, or it cannot be written.
    """
    target = Path(directory)
    _check_target(target, force)
    if partitions is None:
        partitions = max(1, math.ceil(len(forest.nodes) / NODES_PER_PARTITION))
    if partitions < 1:
        raise ExportError(f"partitions must be 1 or more, not {partitions}")

    nodes = dataset_nodes(forest)
    edges = edge_table(forest)
    node_buckets = tree_buckets(nodes["tree_id"].to_numpy(), partitions)
    edge_buckets = tree_buckets(edges["tree_id"].to_numpy(), partitions)
    # Buckets that hold nodes; an empty forest still gets one (empty) file
    # of each table, so that the dataset has its schema.
    used = np.unique(node_buckets) if len(nodes) else np.array([0])

    parent = target.absolute().parent
    try:
        partial = Path(
            tempfile.mkdtemp(dir=parent, prefix=f".{target.name}.", suffix=".partial")
        )
    except OSError as error:
        raise ExportError(f"cannot write {target}: {error.strerror}") from None
    try:
        _write_table(nodes, node_buckets, used, partial / NODES)
        _write_table(edges, edge_buckets, used, partial / EDGES)
        # mkdtemp makes the folder private; give it the mode a new folder
        # gets under the user's umask.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(partial, 0o777 & ~umask)
        _move_into_place(partial, target)
    except OSError as error:
        shutil.rmtree(partial, ignore_errors=True)
        raise ExportError(f"cannot write {target}: {error.strerror}") from None
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return target


# -- the steps of writing ------------------------------------------------------


def _check_target(target: Path, force: bool) -> None:
    if target.exists() and not target.is_dir():
        raise ExportError(f"cannot write {target}: it is a file, not a directory")
    if target.is_dir() and not force and any(target.iterdir()):
        raise ExportError(
            f"refusing to write {target}: the directory is not empty"
            " (--force replaces it)"
        )


def _write_table(
    table: pd.DataFrame, buckets: np.ndarray, used: np.ndarray, folder: Path
) -> None:
    """One Parquet file per used bucket, its rows in the table's order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir()
    # One schema for every file: a column that is empty in one bucket (all
    # None) keeps the type it has in the others.
    schema = pa.Schema.from_pandas(table, preserve_index=False)
    if CALLS in table.columns:
        # Lists of ids, whether or not any node folds a call (all empty
        # lists would infer a list of nulls).
        field = schema.get_field_index(CALLS)
        schema = schema.set(field, pa.field(CALLS, pa.list_(pa.string())))
    order = np.argsort(buckets, kind="stable")
    bounds = np.searchsorted(buckets[order], np.append(used, used + 1))
    starts, ends = bounds[: len(used)], bounds[len(used) :]
    for bucket, start, end in zip(used.tolist(), starts, ends, strict=True):
        part = table.iloc[order[start:end]].reset_index(drop=True)
        for column in (*CATEGORY_COLUMNS, TREE_NAME):
            if column in part.columns:
                # Each file's dictionary holds its own trees, not all of them.
                part[column] = part[column].cat.remove_unused_categories()
        # One row group per file: no reader can cut a file, and a tree with
        # it, into two partitions.
        pq.write_table(
            _arrow_table(part, schema),
            folder / PART_NAME.format(bucket),
            row_group_size=max(1, len(part)),
            # Microseconds, as llm logs them: Spark reads no nanoseconds.
            coerce_timestamps="us",
            allow_truncated_timestamps=True,
        )


def _arrow_table(part: pd.DataFrame, schema: pa.Schema) -> pa.Table:
    import pyarrow as pa

    return pa.Table.from_pandas(part, schema=schema, preserve_index=False)


def _move_into_place(partial: Path, target: Path) -> None:
    """Rename the finished dataset to its name; what was there (an empty
    folder, or with --force any folder) goes only once the new one is in."""
    if not target.exists():
        os.rename(partial, target)
        return
    old = Path(
        tempfile.mkdtemp(dir=partial.parent, prefix=f".{target.name}.", suffix=".old")
    )
    os.rename(target, old / "dataset")
    try:
        os.rename(partial, target)
    except OSError:
        with contextlib.suppress(OSError):
            os.rename(old / "dataset", target)
        raise
    shutil.rmtree(old, ignore_errors=True)
