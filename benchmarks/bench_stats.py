"""The statistics benchmark (issue 4): `convgraph stats` on a million responses.

On the core benchmark's database, a synthetic llm 0.31 logs.db of 1,000,000
responses in 100,000 conversations (the seed's `parent_response_id`; mostly
linear conversations with retries, from `benchmarks.synthetic`), it times what
`convgraph stats` does: read the forest without its texts, check its links,
compute `conversation_table`, each stage on its own, and beside it a bare
sqlite3 fetch of `id, parent_response_id, conversation_id` in the same run.
The time is given as a ratio to that fetch (goal: at most 2x). Every
measurement runs in a fresh Python process, whose peak resident memory
(`resource.getrusage`, which sees numpy's and pandas' own allocations where
tracemalloc does not) is the figure for memory (goal: under 600 MB). The
other tables (nodes, edges, branches) and the whole command are measured too.

Run it with ``python -m benchmarks.bench_stats [--size N] [--runs R]``; the
database is built once into `benchmarks/data/` (about 10 s and 1 GB for a
million responses) and reused.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import synthetic

ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = Path(__file__).resolve().parent / "data"
SIZE = 1_000_000
#: Responses per conversation, as in the core benchmark.
CONVERSATION_SIZE = 10
TIME_GOAL = 2.0
MEMORY_GOAL_MB = 600

FETCH_SQL = "select id, parent_response_id, conversation_id from responses"


# -- the child side: one task, one process -----------------------------------


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def task_fetch(db: str) -> dict[str, float]:
    import sqlite3

    started = time.perf_counter()
    conn = sqlite3.connect(f"{Path(db).resolve().as_uri()}?mode=ro", uri=True)
    rows = conn.execute(FETCH_SQL).fetchall()
    seconds = time.perf_counter() - started
    conn.close()
    return {"fetch": seconds, "rows": len(rows)}


def task_stats(db: str, every_table: bool = False) -> dict[str, float]:
    """What `convgraph stats` does, stage by stage (imports not timed)."""
    import pandas  # noqa: F401  (imported before the clock starts)

    from convgraph import stats
    from convgraph.forest import Forest
    from convgraph.sources import open_logs

    times: dict[str, float] = {}
    started = time.perf_counter()
    with open_logs(db) as logs:
        nodes, names = logs.read_forest(text=False)
    times["read"] = time.perf_counter() - started
    mark = time.perf_counter()
    forest = Forest(nodes, names)
    del nodes
    times["check"] = time.perf_counter() - mark
    mark = time.perf_counter()
    table = stats.conversation_table(forest)
    times["conversation_table"] = time.perf_counter() - mark
    times["total"] = time.perf_counter() - started
    times["rows"] = len(table)
    if every_table:
        for name in ("node_table", "edge_table", "branch_table"):
            mark = time.perf_counter()
            getattr(stats, name)(forest)
            times[name] = time.perf_counter() - mark
    return times


def child(task: str, db: str) -> None:
    if task == "fetch":
        result = task_fetch(db)
    elif task == "stats":
        result = task_stats(db)
    elif task == "tables":
        result = task_stats(db, every_table=True)
    else:
        raise SystemExit(f"unknown task {task!r}")
    result["peak_mb"] = _peak_mb()
    print(json.dumps(result))


# -- the parent side ---------------------------------------------------------


def run_child(task: str, db: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_stats", "--child", task, str(db)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.splitlines()[-1])


def run_command(db: Path) -> dict[str, float]:
    """`convgraph stats --format csv --quiet` as a user runs it: wall clock
    from start to exit, imports included; peak memory of that process."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "convgraph", "stats", "--db", str(db)]
        + ["--format", "csv", "--quiet"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    if status != 0:
        raise RuntimeError(f"convgraph stats exited with status {status}")
    return {"command": seconds, "peak_mb": usage.ru_maxrss / 1024}


def database(size: int, conversations: int, shape: str) -> Path:
    path = DATA_DIR / f"stats-legacy-{shape}-{size}-{conversations}.db"
    if not path.exists():
        started = time.perf_counter()
        partial = path.with_suffix(".partial")
        synthetic.build_legacy(partial, size, conversations, shape)
        os.replace(partial, path)
        print(
            f"built {path.name} in {time.perf_counter() - started:.1f} s"
            f" ({path.stat().st_size / 2**20:,.0f} MB)"
        )
    return path


def median_of(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=SIZE, help="responses")
    parser.add_argument(
        "--conversations", type=int, help="default: one per 10 responses"
    )
    parser.add_argument("--shape", choices=synthetic.SHAPES, default="linear")
    parser.add_argument("--db", type=Path, help="measure this file instead")
    parser.add_argument("--runs", type=int, default=3, help="processes per task")
    parser.add_argument(
        "--child", nargs=2, metavar=("TASK", "DB"), help=argparse.SUPPRESS
    )
    options = parser.parse_args(argv)
    if options.child:
        child(*options.child)
        return

    conversations = options.conversations or max(1, options.size // CONVERSATION_SIZE)
    db = options.db or database(options.size, conversations, options.shape)
    print(f"database: {db} ({db.stat().st_size / 2**20:,.0f} MB)")
    print(f"each task in {options.runs} fresh processes; medians\n")

    # Interleave the tasks run by run, so a busy machine slows them alike.
    results: dict[str, list[dict[str, float]]] = {
        "fetch": [],
        "stats": [],
        "tables": [],
        "command": [],
    }
    for _ in range(options.runs):
        results["fetch"].append(run_child("fetch", db))
        results["stats"].append(run_child("stats", db))
        results["tables"].append(run_child("tables", db))
        results["command"].append(run_command(db))
    fetch, stats, tables, command = (median_of(results[key]) for key in results)

    base = fetch["fetch"]
    lines = [
        ("sqlite3 fetch of id, parent, conversation", base, fetch["peak_mb"]),
        ("stats: read the forest, no texts", stats["read"], None),
        ("stats: check the links", stats["check"], None),
        ("stats: conversation_table", stats["conversation_table"], None),
        ("stats: total (Forest + table)", stats["total"], stats["peak_mb"]),
        ("node_table (after the above)", tables["node_table"], None),
        ("edge_table", tables["edge_table"], None),
        ("branch_table", tables["branch_table"], None),
        ("all four tables, peak", None, tables["peak_mb"]),
        (
            "convgraph stats --format csv (command)",
            command["command"],
            command["peak_mb"],
        ),
    ]
    print(f"{'task':<44}{'seconds':>9}{'x fetch':>9}{'peak MB':>9}")
    for label, seconds, peak in lines:
        shown_seconds = f"{seconds:9.2f}" if seconds is not None else " " * 9
        ratio = f"{seconds / base:9.2f}" if seconds is not None else " " * 9
        shown_peak = f"{peak:9.0f}" if peak is not None else ""
        print(f"{label:<44}{shown_seconds}{ratio}{shown_peak}")
    print(f"\n{int(fetch['rows']):,} responses, {int(stats['rows']):,} conversations")
    ratio = stats["total"] / base
    print(
        f"goal, time <= {TIME_GOAL:g}x fetch: {ratio:.2f}x"
        f" ({'met' if ratio <= TIME_GOAL else 'missed'});"
        f" goal, peak < {MEMORY_GOAL_MB} MB: {stats['peak_mb']:.0f} MB"
        f" ({'met' if stats['peak_mb'] < MEMORY_GOAL_MB else 'missed'})"
    )


if __name__ == "__main__":
    main()
