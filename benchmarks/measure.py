"""One measurement, one fresh Python process: time and peak memory of a task.

Each task is a setup function (imports, opening nothing that the timed part
should pay for) that returns the operation to time. `run_task` starts
`python -m benchmarks.measure SPEC` for it under GNU time; the child runs the
operation a few times within a time budget and prints its times as JSON, and
GNU time reports the child's own peak resident memory (not the largest of all
children so far, as `RUSAGE_CHILDREN` would, nor inflated by this process's
memory: see `_reap`). `run_command` times a whole command the same way (CLI
start-up), wall clock from start to exit.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

#: task name -> setup(**args) -> operation to time
TASKS: dict[str, Callable[..., Callable[[], Any]]] = {}


def task(name: str) -> Callable:
    def register(setup: Callable[..., Callable[[], Any]]) -> Callable:
        TASKS[name] = setup
        return setup

    return register


@dataclass
class Measurement:
    """The outcome of one task in one child process.

    `seconds` is the figure reported: for a task, the fastest of its runs
    (on a machine shared with other work the fastest run is the one least
    disturbed, and the most reproducible); for a whole command, the median,
    start-up variance being part of what a user waits for. `median` and `best`
    are both kept, and every run's time in `times`. `peak_mb` is the
    child's peak resident memory, `base_mb` its peak before the first run
    (interpreter and imports); `size` a count from the result (rows, ids),
    to check that both sides did the same work.
    """

    task: str
    status: str = "ok"  # ok, timeout, error, skipped
    seconds: float | None = None
    best: float | None = None
    median: float | None = None
    runs: int = 0
    peak_mb: float | None = None
    base_mb: float | None = None
    size: int | None = None
    note: str = ""
    times: list[float] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- the parent side ---------------------------------------------------------


#: GNU time, the launcher that makes each child's peak memory its own.
GNU_TIME = "/usr/bin/time"


def _reap(argv: list[str], timeout: float, env: dict[str, str] | None = None):
    """Run argv to the end; (wall seconds, exit status, peak RSS in MB, stdout,
    stderr, timed out).

    The peak comes from GNU time (``-f %M``) when it is installed: a child
    forked straight from this process would start with this process's
    resident pages counted in its peak (Linux keeps the high-water mark of the
    forked image across exec), so after building a million-row database here
    every child would seem to need as much. Forked from the small `time`
    process instead, the child's peak is its own. Without GNU time, the
    child's rusage from `os.wait4` is used, which carries that error.
    """
    use_time = os.path.exists(GNU_TIME)
    with tempfile.TemporaryFile() as err, tempfile.NamedTemporaryFile("r") as peak_file:
        command = (
            [GNU_TIME, "-f", "%M", "-o", peak_file.name, *argv] if use_time else argv
        )
        start = time.perf_counter()
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=err,
            cwd=ROOT,
            env=env,
            # Its own process group, so that a timeout kills the measured
            # process and not only the `time` launcher.
            start_new_session=True,
        )
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            out = process.stdout.read()
            # wait4, not wait: it hands back this child's own rusage.
            _, status, usage = os.wait4(process.pid, 0)
            wall = time.perf_counter() - start
        finally:
            timer.cancel()
            process.stdout.close()
        process.returncode = os.waitstatus_to_exitcode(status)
        # ru_maxrss and GNU time's %M are in kilobytes on Linux.
        peak_kb = usage.ru_maxrss
        if use_time:
            lines = peak_file.read().split()
            if lines and lines[-1].isdigit():
                peak_kb = int(lines[-1])
        err.seek(0)
        return (
            wall,
            process.returncode,
            peak_kb / 1024,
            out.decode(),
            err.read().decode(errors="replace"),
            killed.is_set(),
        )


def run_task(
    name: str,
    args: dict[str, Any],
    *,
    repeat: int = 5,
    budget: float = 5.0,
    timeout: float = 120.0,
) -> Measurement:
    """Measure task `name` in a fresh process: up to `repeat` runs, fewer when
    they would take more than `budget` seconds in all; killed after
    `timeout` seconds."""
    spec = json.dumps({"task": name, "args": args, "repeat": repeat, "budget": budget})
    wall, status, peak, out, err, timed_out = _reap(
        [sys.executable, "-m", "benchmarks.measure", spec], timeout
    )
    if timed_out:
        return Measurement(name, status="timeout", note=f"killed after {timeout:.0f} s")
    if status != 0:
        last = (err.strip().splitlines() or [f"exit status {status}"])[-1]
        return Measurement(name, status="error", note=last[:200], peak_mb=peak)
    report = json.loads(out.strip().splitlines()[-1])
    times = report["times"]
    return Measurement(
        name,
        seconds=min(times),
        best=min(times),
        median=statistics.median(times),
        runs=len(times),
        peak_mb=round(peak, 1),
        base_mb=round(report["base_mb"], 1),
        size=report["size"],
        note=report.get("note", ""),
        times=times,
    )


def run_command(
    name: str, argv: list[str], *, repeat: int = 7, timeout: float = 60.0
) -> Measurement:
    """Time a whole command, start-up included, `repeat` times (the median
    is reported); each run's peak memory is its own."""
    times, peaks = [], []
    for _ in range(repeat):
        wall, status, peak, _, err, timed_out = _reap(argv, timeout)
        if timed_out:
            return Measurement(
                name, status="timeout", note=f"killed after {timeout:.0f} s"
            )
        if status != 0:
            return Measurement(name, status="error", note=err.strip()[-200:])
        times.append(wall)
        peaks.append(peak)
    return Measurement(
        name,
        seconds=statistics.median(times),
        best=min(times),
        median=statistics.median(times),
        runs=len(times),
        peak_mb=round(max(peaks), 1),
        times=times,
    )


# -- the child side ------------------------------------------------------------


def _peak_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _size(result: Any) -> int | None:
    if result is None:
        return None
    try:
        return len(result)
    except TypeError:
        return None


def child_main(spec_json: str) -> None:
    """Set the task up, run it within its budget, print the times as JSON."""
    # Importing the task definitions registers them, in the module
    # `benchmarks.measure` (run as a script, this file is `__main__`).
    import benchmarks.tasks  # noqa: F401
    from benchmarks.measure import TASKS as registered

    spec = json.loads(spec_json)
    operation = registered[spec["task"]](**spec["args"])
    note = getattr(operation, "note", "")
    base = _peak_mb()
    times: list[float] = []
    started = time.perf_counter()
    size = None
    while True:
        begin = time.perf_counter()
        result = operation()
        elapsed = time.perf_counter() - begin
        times.append(elapsed)
        size = _size(result)
        # Drop the result before the next run, so that two never coexist.
        del result
        spent = time.perf_counter() - started
        if len(times) >= spec["repeat"] or spent + elapsed > spec["budget"]:
            break
    print(json.dumps({"times": times, "size": size, "base_mb": base, "note": note}))


if __name__ == "__main__":
    child_main(sys.argv[1])
