"""The core benchmark (issue 2): reading a million-response legacy logs.db.

On a synthetic llm 0.31 database of 1,000,000 responses in 100,000
conversations (the seed's `parent_response_id` column, mostly linear
conversations with retries), each figure beside a bare sqlite3 fetch of the
same rows: loading one conversation (`convgraph.load_tree`), loading the whole
forest (`convgraph.Forest.read`, with and without texts), and the peak memory
of each, every measurement in a fresh process. The diagnosis rows show what
bounds the one-conversation figures: the same reads on a copy of the file
with the indexes llm never creates, and a node's path found by one recursive
query up the primary key instead of reading its conversation.

Run alone with ``python -m benchmarks.bench_core [--size N]``; the suite
(``python -m benchmarks``) runs the same rows.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks import cache
from benchmarks.measure import run_task
from benchmarks.report import Row, format_table, write_json

CORE_SIZE = 1_000_000


def core_rows(
    size: int = CORE_SIZE,
    shape: str = "linear",
    *,
    data_dir: Path = cache.DATA_DIR,
    repeat: int = 5,
    budget: float = 4.0,
    timeout: float = 300.0,
    log=print,
) -> list[Row]:
    """One conversation and the whole forest, beside bare fetches."""
    db = cache.ensure("legacy", shape, size, data_dir, log)
    target = cache.targets("legacy", shape, size, db)
    common = {"repeat": repeat, "budget": budget, "timeout": timeout}
    plain = {"db": str(db)}
    one = {**plain, "conversation": target.conversation}
    rows = [
        Row(
            "core",
            shape,
            size,
            "load one conversation",
            run_task("convgraph.load_tree", one, **common),
            run_task("sqlite.conversation", one, **common),
            [f"{target.conversation_size} responses; no index on conversation_id"],
        ),
        Row(
            "core",
            shape,
            size,
            "load forest (with texts)",
            run_task("convgraph.forest", plain, **common),
            run_task("sqlite.all", plain, **common),
        ),
        Row(
            "core",
            shape,
            size,
            "load forest (structure)",
            run_task("convgraph.forest_structure", plain, **common),
            run_task("sqlite.structure", plain, **common),
        ),
    ]
    for row in rows:
        log(_progress(row))
    return rows


def diagnosis_rows(
    size: int = CORE_SIZE,
    shape: str = "linear",
    *,
    data_dir: Path = cache.DATA_DIR,
    repeat: int = 5,
    budget: float = 4.0,
    timeout: float = 120.0,
    log=print,
) -> list[Row]:
    """What an index, or a query up the primary key, would change."""
    db = cache.ensure("legacy", shape, size, data_dir, log)
    indexed = cache.ensure("legacy-indexed", shape, size, data_dir, log)
    target = cache.targets("legacy", shape, size, db)
    common = {"repeat": repeat, "budget": budget, "timeout": timeout}
    rows = [
        Row(
            "diagnosis",
            shape,
            size,
            "load one conversation, indexed copy",
            run_task(
                "convgraph.load_tree",
                {"db": str(indexed), "conversation": target.conversation},
                **common,
            ),
            run_task(
                "sqlite.conversation",
                {"db": str(indexed), "conversation": target.conversation},
                **common,
            ),
            [
                "copy with the indexes convgraph migrate makes (conversation_id,"
                " parent_response_id): both sides search the index"
            ],
        ),
        Row(
            "diagnosis",
            shape,
            size,
            "path of one node vs one recursive query",
            run_task("convgraph.path", {"db": str(db), "node": target.node}, **common),
            run_task("sqlite.path_cte", {"db": str(db), "node": target.node}, **common),
            ["a recursive CTE up the primary key reads only the path"],
        ),
    ]
    for row in rows:
        log(_progress(row))
    return rows


def _progress(row: Row) -> str:
    from benchmarks.report import ratio_text, seconds

    return (
        f"  {row.section} {row.shape} {row.size:,} {row.operation}:"
        f" {seconds(row.convgraph)} vs {seconds(row.baseline)}"
        f" ({ratio_text(row.ratio)})"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_core", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--size", type=int, default=CORE_SIZE)
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)
    rows = core_rows(args.size) + diagnosis_rows(args.size)
    print()
    print(format_table(rows))
    if args.json:
        write_json(args.json, {"rows": [row.as_dict() for row in rows]})


if __name__ == "__main__":
    main()
