"""The `meaning` group (issue 49): `convgraph similar`'s vectors on the suite's
linear legacy forests of N responses.

Rows, for each size:

- the first build: the file read and every prompt and response embedded by
  WordLlama into an empty store, the ready vectors written
  (`meaning.node_vectors` on an empty cache), once, with the process's peak
  memory and CPU seconds, beside WordLlama's own bare loop on the same texts
  (`WordLlamaInference.embed(texts, norm=True)`, the texts read untimed; the
  goal: at most 3x); its store then seeds the shared one of the rows below;
- the ready vectors made again from a store that holds every text (nothing
  embedded: the streaming build's own cost), with CPU seconds and peak memory;
- the ready vectors after llm logged one more call (the other trees' rows
  copied, that call's appended), CPU and peak memory counted from the end of
  the untimed first build;
- a `similar --text` query on current vectors, after start-up (the goal: at
  most 0.5 s), with the memory above its setup, and two recalls@10: float16
  rows against float32 on 20,000 of the file's texts, and the search as made
  (two steps above `store.EXACT_ROWS` rows) against an exact scan;
- `similar NODE` on a node in the middle of the file (the same goal).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import suite, tasks
from benchmarks.report import Row
from benchmarks.searching import _append, _cache, _workdir

#: The query of the query row, and how many rows the recall is measured on.
QUERY = "how do branches of a conversation differ"
RECALL_QUERIES = 100
RECALL_CORPUS = 20_000
SHARED_CACHE = "meaning-cache"


@tasks.task("meaning.build", timer=True)
def _build(db: str) -> Callable[[int], float]:
    """Every text embedded into an empty store, the ready vectors written."""
    import shutil

    from convgraph.meaning.store import meaning_directory

    timer = _vectors_timed(db, lambda: _cache(_workdir()))

    def time_it(loops: int) -> float:
        total = timer(loops)
        # The rows below embed nothing where the shared store has the texts.
        shared = Path(db).parent / SHARED_CACHE / "convgraph" / "meaning"
        if not (shared / "wordllama.db").exists():
            shared.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(meaning_directory() / "wordllama.db", shared / "x.part")
            os.replace(shared / "x.part", shared / "wordllama.db")
        return total

    return time_it


@tasks.task("meaning.ready", timer=True)
def _ready(db: str) -> Callable[[int], float]:
    """The ready vectors made again from a store that holds every text."""
    import shutil

    from convgraph.meaning.store import index_path, meaning_directory

    _cache(Path(db).parent / SHARED_CACHE)
    ready = index_path(Path(db), meaning_directory()).with_suffix(".wordllama")

    return _vectors_timed(db, lambda: shutil.rmtree(ready, ignore_errors=True))


@tasks.task("wordllama.bare", timer=True)
def _bare(db: str) -> Callable[[int], float]:
    """WordLlama's own loop on the same texts (read untimed), normalised."""
    from convgraph.meaning.model import _inference
    from convgraph.model.forest import Forest
    from convgraph.sources import open_logs

    with open_logs(db) as source:
        nodes = Forest.read(source, texts=("prompt", "response")).nodes
    texts = [
        text
        for pair in zip(
            nodes["prompt"].fillna(""), nodes["response"].fillna(""), strict=True
        )
        for text in pair
        if text and not text.isspace()
    ]
    del nodes
    inference = _inference()
    inference.tokenizer.no_truncation()  # WordLlama's own setting

    def time_it(loops: int) -> float:
        total = 0.0
        for _ in range(loops):
            started, cpu = time.perf_counter(), time.process_time()
            inference.embed(texts, norm=True)
            total += time.perf_counter() - started
            tasks.figure("CPU s", time.process_time() - cpu)
            tasks.figure("MB peak", tasks.peak_mb())
        tasks.figure("texts", len(texts))
        return total

    return time_it


@tasks.task("meaning.update", timer=True)
def _update(db: str) -> Callable[[int], float]:
    """The ready vectors made again after one call appended (untimed) to a copy,
    whose texts the shared store holds once the first copy is made."""
    import shutil

    from convgraph.meaning import node_vectors
    from convgraph.sources import open_logs

    work = _workdir()
    _cache(Path(db).parent / SHARED_CACHE)
    copy = work / "logs.db"
    shutil.copyfile(db, copy)
    with open_logs(copy) as source:
        node_vectors(source)  # built, untimed

    return _vectors_timed(copy, lambda: _append(copy, 1))


@tasks.task("meaning.query")
def _query(db: str, cache: str) -> Callable[[], object]:
    """`similar --text` on current vectors. Figures: ``recall@10 f16``, of 100
    queries among 20,000 of the file's texts embedded afresh, the share of the
    float32 top 10 that float16 rows give; ``recall@10 search``, of 100 queries
    (rows of the file), the share of the exact float16 top 10 `nearest` gives
    (on large files, its two steps)."""
    import numpy as np

    from benchmarks.synthetic import prompt_text, response_text
    from convgraph.meaning import nearest, node_vectors, similar
    from convgraph.meaning.model import wordllama_vectors
    from convgraph.meaning.nearest import ROWS
    from convgraph.meaning.store import NodeVectors, _normalised
    from convgraph.sources import open_logs

    _cache(cache)
    source = open_logs(db)
    vectors = node_vectors(source)  # built where it is not yet, untimed
    rng = np.random.default_rng(49)
    picked = rng.choice(10_000_000, RECALL_CORPUS // 2, replace=False)
    texts = [f(int(g)) for g in picked for f in (prompt_text, response_text)]
    full = _normalised(wordllama_vectors(texts))
    half = NodeVectors([], [], [], full.astype(np.float16))
    asked = rng.choice(len(full), RECALL_QUERIES, replace=False)
    truth = np.argsort(-(full @ full[asked].T), axis=0, kind="stable")[:10].T
    found = [{row for row, _ in nearest(half, full[one], 10)} for one in asked]
    tasks.figure("recall@10 f16", _recall(truth, found))
    asked = rng.choice(len(vectors.matrix), RECALL_QUERIES, replace=False)
    queries = np.asarray(vectors.matrix[np.sort(asked)], dtype=np.float32)
    exact = np.empty((len(vectors.matrix), len(queries)), dtype=np.float32)
    for start in range(0, len(exact), ROWS):
        chunk = np.asarray(vectors.matrix[start : start + ROWS], dtype=np.float32)
        exact[start : start + ROWS] = chunk @ queries.T
    truth = np.argsort(-exact, axis=0, kind="stable")[:10].T
    found = [{row for row, _ in nearest(vectors, query, 10)} for query in queries]
    tasks.figure("recall@10 search", _recall(truth, found))
    del exact, vectors, full, half

    def run() -> object:
        hits = similar(source, text=QUERY)
        tasks.figure("hits", len(hits))
        return hits

    return tasks.above_setup(run)


@tasks.task("meaning.query_node")
def _query_node(db: str, cache: str) -> Callable[[], object]:
    """`similar NODE` on current vectors, a node in the middle of the file."""
    from convgraph.meaning import node_vectors, similar
    from convgraph.sources import open_logs

    _cache(cache)
    source = open_logs(db)
    vectors = node_vectors(source)  # built where it is not yet, untimed
    node = vectors.ids[len(vectors.ids) // 2]
    del vectors

    def run() -> object:
        hits = similar(source, node)
        tasks.figure("hits", len(hits))
        return hits

    return tasks.above_setup(run)


def _recall(truth: Any, found: list[set[int]]) -> float:
    return sum(
        len(set(row.tolist()) & one) for row, one in zip(truth, found, strict=True)
    ) / (10 * len(found))


def meaning_rows(sizes: list[int], options: suite.Options) -> list[Row]:
    """The `meaning` group at each size (see the module's docstring)."""
    cache = str(options.data_dir / SHARED_CACHE)
    os.makedirs(cache, exist_ok=True)
    found = []
    for size in sizes:
        db = suite.database("legacy", "linear", size, options.data_dir)
        found += [
            Row(
                "meaning",
                "legacy",
                size,
                "first build (goal: at most 3x WordLlama's loop)",
                suite.once(suite.task("meaning.build", db=db)),
                suite.once(suite.task("wordllama.bare", db=db)),
            ),
            Row(
                "meaning",
                "legacy",
                size,
                "ready vectors again from the store (nothing embedded)",
                suite.once(suite.task("meaning.ready", db=db)),
            ),
            Row(
                "meaning",
                "legacy",
                size,
                "vectors after one more call",
                suite.once(suite.task("meaning.update", db=db)),
            ),
            Row(
                "meaning",
                "legacy",
                size,
                "similar --text (goal: at most 0.5 s)",
                suite.task("meaning.query", db=db, cache=Path(cache)),
            ),
            Row(
                "meaning",
                "legacy",
                size,
                "similar NODE (goal: at most 0.5 s)",
                suite.task("meaning.query_node", db=db, cache=Path(cache)),
            ),
        ]
    return found


def _vectors_timed(
    db: str | Path, before: Callable[[], object]
) -> Callable[[int], float]:
    """A timer of `node_vectors` on `db`, `before` run untimed ahead of each loop;
    each loop's CPU seconds and peak memory printed as figures."""
    from convgraph.meaning import node_vectors
    from convgraph.sources import open_logs

    def time_it(loops: int) -> float:
        total = 0.0
        for _ in range(loops):
            before()
            tasks.reset_peak()
            started, cpu = time.perf_counter(), time.process_time()
            with open_logs(db) as source:
                node_vectors(source)
            total += time.perf_counter() - started
            tasks.figure("CPU s", time.process_time() - cpu)
            tasks.figure("MB peak", tasks.peak_mb())
        return total

    return time_it
