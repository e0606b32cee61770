"""The fan-out benchmark: N answers of a model that takes d seconds arrive in
about d, not N x d.

On a logs.db that llm 0.36 writes itself (one prompt to the offline echo
model), `convgraph.store.branch.fan_out` asks N answers of a test model that
waits `--delay` seconds before answering (the test suite's own llm plugin,
`tests/plugins/llm_slow_model.py`): once as an async model (run as tasks on
the event loop), once as a synchronous one (each request in a thread of its
own), and once capped at `--parallel 1`, which is the serial N x d. Each
figure is wall-clock seconds for the whole fan-out, logging included, the
best of `--repeat` runs.

Run with ``python -m benchmarks.bench_fanout [--counts 1,2,4,8] [--delay 0.5]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

PLUGINS = Path(__file__).resolve().parent.parent / "tests" / "plugins"


def build(directory: Path) -> tuple[Path, str]:
    """A logs.db holding one echo answer, written by llm; its path and the
    answer's turn id."""
    import llm
    import sqlite_utils
    from llm.migrations import migrate

    path = directory / "logs.db"
    db = sqlite_utils.Database(path)
    migrate(db)
    response = llm.get_model("echo").prompt("What is a tree?")
    response.text()
    response.log_to_db(db)
    turn = next(db.query("select id from turns"))["id"]
    db.close()
    return path, turn


def measure(
    path: Path, node: str, model: str, count: int, parallel: int, repeat: int
) -> float:
    """Best wall-clock seconds of `repeat` fan-outs of `count` answers."""
    from convgraph.store.branch import fan_out

    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        result = fan_out(
            node, "And a forest?", path, models=[model], tries=count, parallel=parallel
        )
        best = min(best, time.perf_counter() - start)
        if not result.ok:
            raise SystemExit(f"the fan-out failed: {result.failures}")
    return best


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="1,2,4,8", help="Answers per fan-out")
    parser.add_argument("--delay", type=float, default=0.5, help="Seconds per answer")
    parser.add_argument("--repeat", type=int, default=3, help="Runs per figure")
    args = parser.parse_args(argv)
    counts = [int(count) for count in args.counts.split(",")]

    sys.path.insert(0, str(PLUGINS))
    from llm_slow_model import SlowModel, registered

    with tempfile.TemporaryDirectory() as directory:
        os.environ["LLM_USER_PATH"] = directory
        path, node = build(Path(directory))
        models = (
            SlowModel("slow-async", delay=args.delay),
            SlowModel("slow-thread", delay=args.delay, asynchronous=False),
        )
        print(
            f"fan-out of N answers, each taking {args.delay:g} s (best of {args.repeat})"
        )
        print(
            f"{'N':>3}  {'async':>8}  {'threads':>8}  {'parallel 1':>10}  {'N x d':>6}"
        )
        with registered(*models):
            for count in counts:
                figures = [
                    measure(path, node, "slow-async", count, count, args.repeat),
                    measure(path, node, "slow-thread", count, count, args.repeat),
                    measure(path, node, "slow-async", count, 1, args.repeat),
                ]
                print(
                    f"{count:>3}  {figures[0]:>7.2f}s  {figures[1]:>7.2f}s"
                    f"  {figures[2]:>9.2f}s  {count * args.delay:>5.2f}s"
                )


if __name__ == "__main__":
    main()
