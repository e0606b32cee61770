"""Statistics of a Parquet dataset on Dask, with workers of 1 GB each.

A synthetic forest (conversations of `--tree-size` nodes on average, the
shapes of `benchmarks.synthetic` in turn: linear with retries, bushy, deep)
is written as a Parquet dataset by `convgraph.export.parquet.write_parquet`,
one block of about a million nodes at a time, so that even the writer never
holds the whole forest. Its statistics are then computed on a
`LocalCluster` of `--workers` worker processes of one thread each, each
limited to `--memory-limit`: the conversation table (computed and brought
back: one row per tree), and the node and branch tables (computed on the
workers, only their lengths brought back, as a job too big for one machine
would write them out). For each, the wall time and the peak resident memory
of every worker (its VmHWM, started afresh before each table, so it is
that table's peak; what the worker held before it is printed beside).
Beside them, the conversation table with pandas over pyarrow in one process
(`convgraph stats --db DIR` without --dask), its time and peak memory.

Run with ``python -m benchmarks.bench_dask [--nodes 100000,1000000]``; the
growth to ten million is ``--nodes 1000000,10000000`` (about 1.5 GB of disk
and a few minutes of two cores).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.synthetic import (
    MODELS,
    SHAPES,
    START_MS,
    STEP_MS,
    conversation_sizes,
    parent_index,
)
from convgraph.analysis import datasets as on_dask
from convgraph.analysis.stats import CONVERSATION_INPUTS
from convgraph.contract import INTEGER_ATTRIBUTES, NODE_ATTRIBUTES
from convgraph.export.parquet import write_parquet
from convgraph.model.forest import Forest

#: Nodes per block the dataset is written in.
BLOCK = 1_000_000


def forest_block(first_node: int, first_tree: int, sizes: list[int]) -> Forest:
    """The conversations `first_tree`, ... of `sizes` nodes, whose first node
    is global node `first_node`, as a Forest (no texts)."""
    count = sum(sizes)
    g = np.arange(first_node, first_node + count)
    tree = np.repeat(np.arange(first_tree, first_tree + len(sizes)), sizes)
    starts = np.repeat(np.cumsum([0, *sizes[:-1]]), sizes) + first_node
    local = g - starts
    parents: list[str | None] = []
    for node, k, c in zip(g.tolist(), local.tolist(), tree.tolist(), strict=True):
        found = parent_index(SHAPES[c % len(SHAPES)], k, node)
        parents.append(None if found is None else f"n{node - k + found}")
    ms = START_MS + g.astype(np.int64) * STEP_MS
    times = np.datetime_as_string(
        ms.astype("datetime64[ms]"), unit="us", timezone="UTC"
    )
    tree_ids = pd.Series(tree).map("c{}".format)
    nodes = pd.DataFrame(
        {
            "id": pd.Series(g).map("n{}".format),
            "tree_id": tree_ids,
            "parent_id": pd.Series(parents, dtype=object),
            **dict.fromkeys(NODE_ATTRIBUTES),
            "conversation_id": tree_ids,
            "model": np.asarray(MODELS, dtype=object)[g % len(MODELS)],
            "datetime_utc": times.astype(object),
            "input_tokens": 10 + g % 500,
            "output_tokens": 50 + g % 900,
            "duration_ms": 100 + g % 4000,
            "source": "responses",
        }
    )
    names = {
        f"c{c}": f"conversation {c}" for c in range(first_tree, first_tree + len(sizes))
    }
    return Forest(nodes, names)


def write_dataset(directory: Path, nodes: int, tree_size: int) -> int:
    """Write the synthetic forest of `nodes` nodes; return how many trees."""
    sizes = list(conversation_sizes(nodes, max(1, nodes // tree_size)))
    (directory / "nodes").mkdir(parents=True)
    (directory / "edges").mkdir()
    first_node = first_tree = block = 0
    while first_tree < len(sizes):
        end = first_tree
        held = 0
        while end < len(sizes) and held < BLOCK:
            held += sizes[end]
            end += 1
        forest = forest_block(first_node, first_tree, sizes[first_tree:end])
        part = directory / f"block-{block}"
        write_parquet(forest, part)
        # The block's files join the dataset: its trees are its own, so
        # every tree still lies whole in one file.
        for table in ("nodes", "edges"):
            for path in (part / table).iterdir():
                path.rename(directory / table / f"block-{block:03d}-{path.name}")
        shutil.rmtree(part)
        first_node += held
        first_tree = end
        block += 1
    return len(sizes)


def peak_rss() -> int:
    """This process's peak resident memory in bytes: Linux's VmHWM, which
    starts afresh in a new program (ru_maxrss keeps the forking process's)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status: Linux only")


def reset_peak() -> int:
    """Start this process's peak memory afresh from what it holds now (Linux
    4.0 and later), and return that."""
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")
    return peak_rss()


def on_workers(
    client, task: Callable[[], object]
) -> tuple[float, list[int], list[int]]:
    """Run `task` on the workers: seconds, each worker's peak memory during
    it, and what each held before it."""
    idle = list(client.run(reset_peak).values())
    start = time.perf_counter()
    task()
    seconds = time.perf_counter() - start
    return seconds, list(client.run(peak_rss).values()), idle


PANDAS_RUN = """
import json, sys, time
from benchmarks.bench_dask import peak_rss
from convgraph.analysis.datasets import dataset_conversation_table
start = time.perf_counter()
table = dataset_conversation_table(sys.argv[1])
seconds = time.perf_counter() - start
print(json.dumps([seconds, peak_rss(), len(table)]))
"""


def pandas_run(directory: Path) -> tuple[float, int]:
    """The conversation table with pandas over pyarrow, in a fresh process."""
    printed = subprocess.run(
        [sys.executable, "-c", PANDAS_RUN, str(directory)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    seconds, peak, _ = json.loads(printed)
    return seconds, peak


def mib(values: list[int]) -> str:
    return " ".join(f"{value / 2**20:.0f}" for value in values)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", default="100000,1000000", help="comma-separated")
    parser.add_argument("--tree-size", type=int, default=50)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="1GB")
    parser.add_argument(
        "--keep", metavar="DIR", help="write the datasets here and keep them"
    )
    options = parser.parse_args(argv)
    sizes = [int(size) for size in options.nodes.split(",")]

    from distributed import Client, LocalCluster

    print(
        f"LocalCluster: {options.workers} worker processes, 1 thread and"
        f" {options.memory_limit} each; conversations of {options.tree_size} nodes"
        " on average, shapes linear, bushy, deep in turn"
    )
    header = (
        f"{'nodes':>10} {'trees':>8} {'files':>5} {'write s':>8}  {'table':<13}"
        f" {'dask s':>7} {'worker peak MiB':>16} {'before MiB':>10}"
        f" {'pandas s':>8} {'pandas MiB':>10}"
    )
    print(header)
    print("-" * len(header))
    results: dict[int, dict[str, tuple[float, int]]] = {}
    base = (
        Path(options.keep)
        if options.keep
        else Path(tempfile.mkdtemp(prefix="bench-dask-"))
    )
    try:
        with (
            LocalCluster(
                n_workers=options.workers,
                threads_per_worker=1,
                processes=True,
                memory_limit=options.memory_limit,
                dashboard_address=None,
                silence_logs=40,
            ) as cluster,
            Client(cluster) as client,
        ):
            for size in sizes:
                directory = base / f"forest-{size}"
                if directory.exists():
                    shutil.rmtree(directory)
                start = time.perf_counter()
                trees = write_dataset(directory, size, options.tree_size)
                written = time.perf_counter() - start
                files = len(list((directory / "nodes").iterdir()))
                structure = ["id", "tree_id", "parent_id", "model", *INTEGER_ATTRIBUTES]
                tasks: dict[str, Callable[[], object]] = {
                    "conversations": lambda d=directory: on_dask.conversation_table(
                        on_dask.read_nodes(d)[list(CONVERSATION_INPUTS)]
                    ).compute(),
                    "nodes": lambda d=directory: len(
                        on_dask.node_table(on_dask.read_nodes(d))
                    ),
                    "branches": lambda d=directory, columns=structure: len(
                        on_dask.branch_table(on_dask.read_nodes(d)[columns])
                    ),
                }
                results[size] = {}
                for index, (name, task) in enumerate(tasks.items()):
                    seconds, peaks, idle = on_workers(client, task)
                    results[size][name] = (seconds, max(peaks))
                    start_columns = (
                        f"{size:>10,} {trees:>8,} {files:>5} {written:>8.1f}"
                        if index == 0
                        else " " * 34
                    )
                    pandas_columns = ""
                    if name == "conversations":
                        pandas_seconds, pandas_peak = pandas_run(directory)
                        pandas_columns = (
                            f" {pandas_seconds:>8.2f} {pandas_peak / 2**20:>10.0f}"
                        )
                    print(
                        f"{start_columns}  {name:<13} {seconds:>7.2f} {mib(peaks):>16}"
                        f" {mib(idle):>10}{pandas_columns}",
                        flush=True,
                    )
                if not options.keep:
                    shutil.rmtree(directory)
    finally:
        if not options.keep:
            shutil.rmtree(base, ignore_errors=True)

    for smaller, larger in zip(sizes, sizes[1:], strict=False):
        growth = larger / smaller
        print(f"\ngrowth {smaller:,} -> {larger:,} nodes ({growth:g}x):")
        for name, (seconds, peak) in results[larger].items():
            small_seconds, small_peak = results[smaller][name]
            print(
                f"  {name:<13} time {seconds / small_seconds:.2f}x,"
                f" peak worker memory {peak / small_peak:.2f}x"
            )


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
