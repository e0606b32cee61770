"""A forest as a Parquet dataset that Dask, Spark and pyarrow read. Reading it back is
`convgraph.sources.parquet`'s job; pyarrow is imported only where a dataset is
written."""

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
from convgraph.contract import (
    CATEGORY_COLUMNS,
    OPTIONAL_ATTRIBUTES,
    ORIGIN,
    PARTS,
    TREE_NAME,
)
from convgraph.errors import ExportError
from convgraph.export.common import CALLS, calls_by_node
from convgraph.sources.parquet import EDGES, NODES

if TYPE_CHECKING:
    from convgraph.model.forest import Forest

#: Nodes a partition holds on average by default: small enough for a modest
#: worker, large enough that a big forest is few files.
NODES_PER_PARTITION = 250_000

#: The tree ids' hash key, fixed so a tree's bucket is the same everywhere.
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
    """The node table the dataset holds: `node_table` of the forest, `parts` as JSON
    text (None for a node that is only prompt and answer), the `OPTIONAL_ATTRIBUTES`
    where given, `calls` (an empty list where none) and `tree_name` (a category)."""
    table = node_table(forest)
    table[PARTS] = parts_as_json(table[PARTS])
    for name in OPTIONAL_ATTRIBUTES:
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
    """Write the forest as `directory/nodes/` and `directory/edges/`, every tree
    whole in one partition of each, and return `directory`; several sources
    read as one are partitioned by source (`nodes/origin=NAME/`, a tree in
    its first node's), `partitions` each. Raises `ExportError` (`directory`
    is a file, is not empty without `force`, or cannot be written)."""
    target = Path(directory)
    _check_target(target, force)
    if partitions is not None and partitions < 1:
        raise ExportError(f"partitions must be 1 or more, not {partitions}")
    nodes = dataset_nodes(forest)
    edges = edge_table(forest)
    parent = target.absolute().parent
    try:
        partial = Path(
            tempfile.mkdtemp(dir=parent, prefix=f".{target.name}.", suffix=".partial")
        )
    except OSError as error:
        raise ExportError(f"cannot write {target}: {error.strerror}") from None
    try:
        if ORIGIN not in nodes.columns:
            _write_tables(nodes, edges, partitions, partial, "")
        else:
            trees = nodes.groupby("tree_id", observed=True, sort=False)[ORIGIN].first()
            for name, held in trees.groupby(trees, observed=True):
                rows = nodes["tree_id"].isin(held.index).to_numpy()
                links = edges["tree_id"].isin(held.index).to_numpy()
                subset = nodes[rows].drop(columns=ORIGIN)
                _write_tables(
                    subset, edges[links], partitions, partial, f"{ORIGIN}={name}"
                )
        # mkdtemp's folder is private: give it the mode the umask gives.
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


def _check_target(target: Path, force: bool) -> None:
    if target.exists() and not target.is_dir():
        raise ExportError(f"cannot write {target}: it is a file, not a directory")
    if target.is_dir() and not force and any(target.iterdir()):
        raise ExportError(
            f"refusing to write {target}: the directory is not empty"
            " (--force replaces it)"
        )


def _write_tables(
    nodes: pd.DataFrame,
    edges: pd.DataFrame,
    partitions: int | None,
    folder: Path,
    partition: str,
) -> None:
    """The nodes and edges in `folder`, each in its table's `partition` folder."""
    if partitions is None:
        partitions = max(1, math.ceil(len(nodes) / NODES_PER_PARTITION))
    node_buckets = tree_buckets(nodes["tree_id"].to_numpy(), partitions)
    edge_buckets = tree_buckets(edges["tree_id"].to_numpy(), partitions)
    # An empty forest still gets one empty file of each table, for the schema.
    used = np.unique(node_buckets) if len(nodes) else np.array([0])
    _write_table(nodes, node_buckets, used, folder / NODES / partition)
    _write_table(edges, edge_buckets, used, folder / EDGES / partition)


def _write_table(
    table: pd.DataFrame, buckets: np.ndarray, used: np.ndarray, folder: Path
) -> None:
    """One Parquet file per used bucket, its rows in the table's order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True)
    # One schema for every file: a column all None in a bucket keeps its type.
    schema = pa.Schema.from_pandas(table, preserve_index=False)
    if CALLS in table.columns:
        # All empty lists would infer a list of nulls.
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
        # One row group a file: no reader cuts a tree into two partitions.
        pq.write_table(
            pa.Table.from_pandas(part, schema=schema, preserve_index=False),
            folder / PART_NAME.format(bucket),
            row_group_size=max(1, len(part)),
            # Microseconds, as llm logs them: Spark reads no nanoseconds.
            coerce_timestamps="us",
            allow_truncated_timestamps=True,
        )


def _move_into_place(partial: Path, target: Path) -> None:
    """Rename the finished dataset to its name; what was there goes only once
    the new one is in."""
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
