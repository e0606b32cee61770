"""The groups of sources beyond llm's logs.db: `chat-exports` (a large
ChatGPT export) and `dask` (a Parquet dataset's statistics on Dask).

`chat-exports`: a synthetic `conversations.json` of the size asked for
(written conversation by conversation, never whole in memory: regenerated
answers, edited prompts, hidden system messages and realistic metadata, so
its bytes per node are those of a real export), and the same in a zip; the
whole `convgraph stats --json`, `tree` (the last conversation) and `path`
(its last node) commands on each, timed by ``pyperf command`` with their
peak memory. Beside `stats` on the JSON file, echomine's `stats --json` on
the same file: echomine needs Python 3.12, so it lives in a venv of its own,
its command named in `CONVGRAPH_BENCH_ECHOMINE` (or on PATH); without it the
baseline is skipped with a word.

`dask`: a synthetic forest (conversations of `TREE_SIZE` nodes on average,
the shapes of `benchmarks.synthetic` in turn) written as a Parquet dataset
by `convgraph.export.write_parquet`, a block of about a million nodes at a
time, so that even the writer never holds the whole forest. Its statistics
on a `LocalCluster` of two worker processes of one thread and 1 GB each: the
conversation table (computed and brought back: one row per tree), and the
node and branch tables (computed on the workers, only their lengths brought
back, as a job too big for one machine would write them out). The memory is
the largest peak of a worker during the table (its VmHWM started afresh
before it), what it held before in the figures; beside it, the conversation
table with pandas over pyarrow in one process (`convgraph stats --db DIR`
without --dask).
"""

from __future__ import annotations

import functools
import json
import os
import random
import shutil
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import suite, synthetic, tasks
from benchmarks.report import Measurement, Row

# -- chat-exports ------------------------------------------------------------------

MODELS = ("gpt-4o", "gpt-4o-mini", "o3")
#: What ChatGPT adds to an answer's metadata, for the bytes of a real export.
ANSWER_METADATA = {
    "finish_details": {"type": "stop", "stop_tokens": [200002]},
    "citations": [],
    "content_references": [],
    "is_complete": True,
    "timestamp_": "absolute",
}


#: Where to find echomine's command when it is not on PATH.
ECHOMINE_ENV = "CONVGRAPH_BENCH_ECHOMINE"


def echomine_command() -> str:
    """echomine's command: named in CONVGRAPH_BENCH_ECHOMINE, or on PATH; "" if none."""
    return os.environ.get(ECHOMINE_ENV) or shutil.which("echomine") or ""


#: One conversation in this many (where it can) ends with the person gone
#: back to an answer the conversation had left behind.
REVISIT_EVERY = 4
#: The version of the export the builder writes, in its cached file's name.
EXPORT_BUILD = 2
#: The version of the dataset `write_dataset` writes (2: with the parts and
#: the tool calls), in its cached folder's name.
DATASET_BUILD = 2


class ExportWriter:
    """Synthetic ChatGPT conversations, one at a time, by the test suite's
    builders (`tests/chat_exports.py`).

    Some answers are regenerated and some prompts edited, and the
    conversation goes on from the new one; in one conversation in
    `REVISIT_EVERY`, where the first alternative left behind lies two
    exchanges or more above the end, the person then went back to it: the
    app's current message (`current_node`) is that older answer, so the
    branch last used is neither the one logged last nor the longest."""

    def __init__(self, seed: int = 14):
        self.rng = random.Random(seed)
        # Its own stream: the texts and shapes are those of every build.
        self.revisits = random.Random(seed + 1)
        #: The last answer of the conversation written last.
        self.last_tip = ""
        # A megabyte of word salad to cut messages from.
        self.block = " ".join(self.rng.choices(synthetic.WORDS, k=170_000))
        self.serial = self.clock = 0

    def _id(self) -> str:
        self.serial += 1
        return f"{self.serial:08x}-5e1f-4c2b-9a7d-{self.rng.getrandbits(48):012x}"

    def _text(self, low: int, high: int) -> str:
        length = self.rng.randint(low, high)
        start = self.rng.randrange(0, len(self.block) - length)
        return self.block[start : start + length]

    def conversation(self) -> dict[str, Any]:
        """One conversation: 5 to 40 exchanges, some answers regenerated and
        some prompts edited, the last branch current or, now and then, an
        older alternative (see the class)."""
        from tests.chat_exports import gpt_conversation, gpt_message, gpt_preamble

        root, system = self._id(), self._id()
        nodes = gpt_preamble(root, system)

        def add(parent: str, role: str, low: int, high: int) -> str:
            self.clock += self.rng.randint(5, 90)
            node, text = self._id(), self._text(low, high)
            model = self.rng.choice(MODELS) if role == "assistant" else None
            message = gpt_message(node, role, text, at=self.clock, model=model)
            if model:
                message["metadata"].update(ANSWER_METADATA)
            nodes.append((node, parent, message))
            return node

        tip = system
        exchanges = self.rng.randint(5, 40)
        # The answers left behind, with the exchange they answered.
        behind: list[tuple[int, str]] = []
        for exchange in range(exchanges):
            prompt = add(tip, "user", 40, 600)
            answer = add(prompt, "assistant", 300, 2500)
            roll = self.rng.random()
            if roll < 0.12:  # regenerated: go on from the new answer
                behind.append((exchange, answer))
                answer = add(prompt, "assistant", 300, 2500)
            elif roll < 0.20:  # edited prompt: go on from the edit
                behind.append((exchange, answer))
                answer = add(add(tip, "user", 40, 600), "assistant", 300, 2500)
            tip = answer
        current = self.last_tip = tip
        if self.revisits.randrange(REVISIT_EVERY) == 0 and behind:
            exchange, older = behind[0]
            if exchanges - 1 - exchange >= 2:
                current = older  # the person went back to it
        title = self._text(10, 40).strip().capitalize()
        return gpt_conversation(
            self._id(), title, nodes, current, default_model="gpt-4o"
        )


def write_export(path: Path, size_mb: float, seed: int = 14) -> dict[str, Any]:
    """Write a `conversations.json` of about `size_mb` megabytes; return what
    it holds (conversations, messages, the last conversation and its tip)."""
    writer = ExportWriter(seed)
    written = conversations = messages = 0
    with open(path, "w", encoding="utf-8") as out:
        out.write("[")
        while written < size_mb * 1_000_000:
            conversation = writer.conversation()
            text = (", " if conversations else "") + json.dumps(
                conversation, ensure_ascii=False
            )
            out.write(text)
            written += len(text)
            conversations += 1
            messages += len(conversation["mapping"])
        out.write("]")
    return {
        "conversations": conversations,
        "messages": messages,
        "last_conversation": conversation["id"],
        # The last answer logged (which the person may have left since).
        "last_node": writer.last_tip,
    }


def chat_export_rows(sizes: list[int], options: suite.Options) -> list[Row]:
    """The `chat-exports` group: the commands on an export of each size in
    MB, as JSON and as a zip."""
    found = []
    for size in sizes:
        stem = (
            options.data_dir
            / f"chatgpt-{size}mb-v{suite.BUILD_VERSION}-e{EXPORT_BUILD}"
        )
        source = stem.with_suffix(".json")

        def build(info: Path, source: Path = source, size: int = size) -> None:
            held = write_export(source, size)
            with zipfile.ZipFile(source.with_suffix(".zip"), "w") as archive:
                archive.write(source, "conversations.json", zipfile.ZIP_DEFLATED)
            info.write_text(json.dumps(held))

        held = json.loads(suite.cached(stem.with_suffix(".info"), build).read_text())
        # `python -m convgraph` from the checkout (pyperf runs commands in
        # it): the console script would import the installed copy.
        convgraph, echomine = [sys.executable, "-m", "convgraph"], echomine_command()
        for path in (source, source.with_suffix(".zip")):
            shape, where = path.suffix[1:], ["-d", str(path)]
            commands = {
                "stats (every conversation)": ["stats", "--json", "-q", *where],
                "tree (the last conversation)": [
                    "tree",
                    *where,
                    held["last_conversation"],
                ],
                "path (the last node)": ["path", held["last_node"], *where],
            }
            for operation, argv in commands.items():
                name = f"convgraph {argv[0]}"
                spec = suite.command(name, *convgraph, *argv)
                found.append(Row("chat export", shape, size, operation, spec))
            stats = found[-len(commands)]
            if shape == "json":  # echomine reads no zip
                stats.baseline = suite.command(
                    "echomine stats",
                    echomine or "echomine",
                    "stats",
                    "--json",
                    str(path),
                )
                stats.notes.append("baseline: echomine's `stats --json`")
            if shape == "json" and not echomine:
                stats.measured_baseline = Measurement(
                    "echomine stats",
                    "skipped",
                    note=f"no echomine: name it in {ECHOMINE_ENV}",
                )
            megabytes = path.stat().st_size / 1e6
            found[-1].notes.append(
                f"{megabytes:,.0f} MB: {held['conversations']:,} conversations,"
                f" {held['messages']:,} messages"
            )
    return found


# -- dask --------------------------------------------------------------------------

#: Nodes per conversation on average; per block the dataset is written in.
TREE_SIZE = 50
BLOCK = 1_000_000


def forest_block(first_node: int, first_tree: int, sizes: list[int]) -> Any:
    """The conversations `first_tree`, ... of `sizes` nodes, whose first node
    is global node `first_node`, as a Forest (no texts)."""
    import numpy as np
    import pandas as pd

    from convgraph import Forest
    from convgraph.contract import NODE_ATTRIBUTES

    count = sum(sizes)
    g = np.arange(first_node, first_node + count)
    tree = np.repeat(np.arange(first_tree, first_tree + len(sizes)), sizes)
    local = g - np.repeat(np.cumsum([0, *sizes[:-1]]), sizes) - first_node
    parents: list[str | None] = []
    for node, k, c in zip(g.tolist(), local.tolist(), tree.tolist(), strict=True):
        found = synthetic.parent_index(synthetic.SHAPES[c % 3], k, node)
        parents.append(None if found is None else f"n{node - k + found}")
    ms = synthetic.START_MS + g.astype(np.int64) * synthetic.STEP_MS
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
            "model": np.asarray(synthetic.MODELS, dtype=object)[g % 4],
            "datetime_utc": times.astype(object),
            "input_tokens": 10 + g % 500,
            "output_tokens": 50 + g % 900,
            "duration_ms": 100 + g % 4000,
            "source": "responses",
        }
    )
    trees = range(first_tree, first_tree + len(sizes))
    return Forest(nodes, {f"c{c}": f"conversation {c}" for c in trees})


def write_dataset(directory: Path, nodes: int) -> int:
    """Write the synthetic forest of `nodes` nodes; return how many trees."""
    from convgraph.export import write_parquet

    sizes = list(synthetic.conversation_sizes(nodes, max(1, nodes // TREE_SIZE)))
    (directory / "nodes").mkdir(parents=True)
    (directory / "edges").mkdir()
    first_node = first_tree = block = 0
    while first_tree < len(sizes):
        end, held = first_tree, 0
        while end < len(sizes) and held < BLOCK:
            held, end = held + sizes[end], end + 1
        part = directory / f"block-{block}"
        write_parquet(forest_block(first_node, first_tree, sizes[first_tree:end]), part)
        # The block's files join the dataset: its trees are its own, so
        # every tree still lies whole in one file.
        for table in ("nodes", "edges"):
            for path in (part / table).iterdir():
                path.rename(directory / table / f"block-{block:03d}-{path.name}")
        shutil.rmtree(part)
        first_node, first_tree, block = first_node + held, end, block + 1
    return len(sizes)


@tasks.task("dask.write", timer=True)
def _dask_write(nodes: str) -> Callable[[int], float]:
    """Writing the dataset of `nodes` nodes, into a fresh folder each call."""
    import tempfile

    def time_it(loops: int) -> float:
        total = 0.0
        for _ in range(loops):
            with tempfile.TemporaryDirectory(prefix="convgraph-bench-") as directory:
                started = time.perf_counter()
                write_dataset(Path(directory) / "forest", int(nodes))
                total += time.perf_counter() - started
        return total

    return time_it


@tasks.task("dask.table", timer=True)
def _dask_table(dataset: str, table: str) -> Callable[[int], float]:
    """One statistics table of the dataset on a `LocalCluster` (started in
    the setup); figures: the workers' peak memory during the table (the
    row's MB) and what they held before it, each measured untimed."""
    import atexit

    from distributed import Client, LocalCluster

    from convgraph.analysis import datasets as on_dask
    from convgraph.analysis.stats import CONVERSATION_INPUTS
    from convgraph.contract import INTEGER_ATTRIBUTES

    os.environ.setdefault("PYTHONHASHSEED", "0")  # the same on every worker
    cluster = LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        memory_limit="1GB",
        dashboard_address=None,
        silence_logs=40,
    )
    client = Client(cluster)
    atexit.register(cluster.close)
    atexit.register(client.close)  # first: the last registered runs first
    structure = ["id", "tree_id", "parent_id", "model", *INTEGER_ATTRIBUTES]
    compute: Callable[[], object] = {
        # The columns the table reads (those the dataset has of them).
        "conversations": lambda: on_dask.conversation_table(
            on_dask.read_nodes(dataset, list(CONVERSATION_INPUTS))
        ).compute(),
        "nodes": lambda: len(on_dask.node_table(on_dask.read_nodes(dataset))),
        "branches": lambda: len(
            on_dask.branch_table(on_dask.read_nodes(dataset, structure))
        ),
    }[table]

    def time_it(loops: int) -> float:
        total = 0.0
        for _ in range(loops):
            idle = client.run(tasks.reset_peak).values()
            started = time.perf_counter()
            compute()
            total += time.perf_counter() - started
            tasks.figure("peak_mb", max(client.run(tasks.peak_mb).values()))
            tasks.figure("worker MB before", max(idle))
        return total

    return time_it


@tasks.task("pandas.conversations")
def _pandas_conversations(dataset: str) -> Callable[[], object]:
    """The conversation table with pandas over pyarrow, in this process."""
    from convgraph.analysis.datasets import dataset_conversation_table

    return lambda: dataset_conversation_table(dataset)


def dask_rows(sizes: list[int], options: suite.Options) -> list[Row]:
    """The `dask` group: writing the dataset and each table, at each size."""
    found = []
    for size in sizes:
        name = f"dataset-{size}-t{TREE_SIZE}-v{suite.BUILD_VERSION}-d{DATASET_BUILD}"
        dataset = suite.cached(
            options.data_dir / name, functools.partial(write_dataset, nodes=size)
        )
        files = len(list((dataset / "nodes").iterdir()))

        def table(which: str, dataset: Path = dataset) -> suite.Task:
            return suite.task("dask.table", dataset=dataset, table=which)

        pandas = suite.task("pandas.conversations", dataset=dataset)
        found += [
            Row(
                "dask",
                "",
                size,
                "write the dataset",
                suite.task("dask.write", nodes=size),
            ),
            Row("dask", "", size, "conversation table", table("conversations"), pandas),
            Row("dask", "", size, "node table (its length)", table("nodes")),
            Row("dask", "", size, "branch table (its length)", table("branches")),
        ]
        found[-4].notes.append(f"{size // TREE_SIZE:,} trees in {files} files")
    found[1].notes.append("baseline: pandas over pyarrow in one process")
    return found
