"""Export a 100,000-node forest in every format, beside networkx's own writers.

    python -m benchmarks.bench_export [--nodes 100000] [--repeat 3]

The forest is built in memory: conversation DiGraphs of the node contract
(every attribute filled, since networkx's GraphML writer refuses None), with
prompts and responses of realistic length and branching trees. Each format is
written to a file by convgraph, and by networkx's writer for that format on
the same graphs (their union, for the writers that take one graph):

| format | networkx |
| --- | --- |
| dot | `nx_pydot.to_pydot(G).to_string()` |
| graphml | `nx.write_graphml(G, path)` (lxml's writer where lxml is installed) |
| json | `json.dumps(nx.node_link_data(G, edges="edges"))` |
| tree-json | `json.dumps(nx.tree_data(tree, root))` for each conversation |
| mermaid | (networkx has no Mermaid writer) |

Time is the best of `--repeat` runs; peak memory is tracemalloc's, in a run
of its own (tracemalloc slows allocation down). tracemalloc sees Python's
allocations only: the memory lxml's C writer uses is not counted. Ratios are
convgraph over networkx: below 1, convgraph is faster or leaner.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import tempfile
import time
import tracemalloc
from collections.abc import Callable

import networkx as nx

from convgraph.export import FORMATS

WORDS = [
    "tree",
    "branch",
    "leaf",
    "root",
    "graph",
    "node",
    "edge",
    "path",
    "depth",
    "model",
    "prompt",
    "answer",
    "fork",
    "conversation",
    "retry",
    "compare",
    "token",
    "forest",
    "cluster",
    "layout",
    "export",
    "parse",
    "the",
    "a",
    "of",
    "to",
    "and",
    "in",
    "is",
    "it",
    "that",
    "for",
    "on",
    "with",
    "as",
    "by",
    "this",
    "be",
    "are",
]
MODELS = ("gpt-4o", "gpt-4o-mini", "claude-3.5-sonnet", "echo", "llama-3.1-8b")


def sentence(chooser: random.Random, words: int) -> str:
    return " ".join(chooser.choice(WORDS) for _ in range(words))


def build_forest(nodes: int, per_tree: int = 100, seed: int = 7) -> list[nx.DiGraph]:
    """`nodes` nodes in conversations of `per_tree`: each node's parent is
    mostly the one before it, sometimes an earlier one (a branch)."""
    chooser = random.Random(seed)
    forest = []
    made = 0
    while made < nodes:
        size = min(per_tree, nodes - made)
        tree_id = f"01jconv{len(forest):07d}"
        tree = nx.DiGraph(conversation_id=tree_id, name=sentence(chooser, 5))
        ids = []
        for index in range(size):
            node = f"01jnode{made + index:09d}"
            tree.add_node(
                node,
                conversation_id=tree_id,
                prompt=sentence(chooser, 30),
                system=sentence(chooser, 8),
                response=sentence(chooser, 120) + "\n\n" + sentence(chooser, 40),
                model=chooser.choice(MODELS),
                datetime_utc=f"2025-09-27T10:{index // 60:02d}:{index % 60:02d}.000000+00:00",
                input_tokens=chooser.randint(5, 3000),
                output_tokens=chooser.randint(5, 3000),
                duration_ms=chooser.randint(50, 60000),
                source="responses",
            )
            if ids:
                parent = ids[-1] if chooser.random() < 0.8 else chooser.choice(ids)
                tree.add_edge(parent, node)
            ids.append(node)
        forest.append(tree)
        made += size
    return forest


def networkx_writers(
    forest: list[nx.DiGraph],
) -> dict[str, list[tuple[str, Callable[[str], None]]]]:
    """networkx's writers for each format, by name, each writing `path`."""
    from networkx.drawing import nx_pydot

    union = nx.union_all(forest)

    def dot(path: str) -> None:
        with open(path, "w", encoding="utf-8") as file:
            file.write(nx_pydot.to_pydot(union).to_string())

    def graphml(path: str) -> None:
        nx.write_graphml(union, path)

    def graphml_etree(path: str) -> None:
        nx.write_graphml_xml(union, path)

    def node_link(path: str) -> None:
        with open(path, "w", encoding="utf-8") as file:
            file.write(json.dumps(nx.node_link_data(union, edges="edges")))

    def tree_data(path: str) -> None:
        with open(path, "w", encoding="utf-8") as file:
            for tree in forest:
                [root] = [node for node, degree in tree.in_degree() if degree == 0]
                file.write(json.dumps(nx.tree_data(tree, root)))
                file.write("\n")

    return {
        "dot": [("to_pydot().to_string()", dot)],
        "graphml": [
            ("write_graphml (lxml)", graphml),
            ("write_graphml_xml", graphml_etree),
        ],
        "json": [("node_link_data+dumps", node_link)],
        "tree-json": [("tree_data+dumps", tree_data)],
    }


def seconds(write: Callable[[str], None], path: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        write(path)
        best = min(best, time.perf_counter() - start)
    return best


def peak_mib(write: Callable[[str], None], path: str) -> float:
    gc.collect()
    tracemalloc.start()
    try:
        write(path)
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--formats",
        default="dot,graphml,json,tree-json,mermaid",
        help="comma-separated",
    )
    options = parser.parse_args(argv)

    forest = build_forest(options.nodes)
    edges = sum(tree.number_of_edges() for tree in forest)
    print(
        f"forest: {options.nodes:,} nodes, {edges:,} edges, {len(forest):,} conversations;"
        f" best of {options.repeat} runs (pydot: 1)"
    )
    baselines = networkx_writers(forest)
    header = (
        f"{'format':<10} {'networkx writer':<24} {'convgraph s':>11} {'networkx s':>10}"
        f" {'time ratio':>10} {'convgraph MiB':>13} {'networkx MiB':>12}"
        f" {'memory ratio':>12} {'file MiB':>8}"
    )
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as directory:
        ours_path = os.path.join(directory, "convgraph")
        theirs_path = os.path.join(directory, "networkx")
        for name in options.formats.split(","):
            exporter = FORMATS[name]

            def ours(path: str, write=exporter.write) -> None:
                write(forest, path)

            ours_time = seconds(ours, ours_path, options.repeat)
            ours_memory = peak_mib(ours, ours_path)
            size = os.path.getsize(ours_path) / 2**20
            start = f"{name:<10}"
            for label, theirs in baselines.get(name, [("(none)", None)]):
                if theirs is None:
                    print(
                        f"{start} {label:<24} {ours_time:>11.2f} {'—':>10} {'—':>10}"
                        f" {ours_memory:>13.1f} {'—':>12} {'—':>12} {size:>8.1f}"
                    )
                    continue
                repeat = 1 if name == "dot" else options.repeat
                theirs_time = seconds(theirs, theirs_path, repeat)
                theirs_memory = peak_mib(theirs, theirs_path)
                # lxml writes in C, where tracemalloc does not look.
                hidden = "lxml" in label
                memory = "(C)" if hidden else f"{theirs_memory:.1f}"
                memory_ratio = "—" if hidden else f"{ours_memory / theirs_memory:.2f}"
                print(
                    f"{start} {label:<24} {ours_time:>11.2f} {theirs_time:>10.2f}"
                    f" {ours_time / theirs_time:>10.2f} {ours_memory:>13.1f}"
                    f" {memory:>12} {memory_ratio:>12} {size:>8.1f}",
                    flush=True,
                )
                start = " " * 10


if __name__ == "__main__":
    main()
