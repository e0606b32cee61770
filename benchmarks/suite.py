"""The benchmark suite of issue 7: convgraph beside its baselines, 1,000 to
1,000,000 responses, three shapes, one run.

For each shape and size it measures, each in a fresh process (`measure`):
forest statistics against a bare fetch of the links; loading one conversation
against a bare fetch of its rows; the per-node operations (path, descendants,
leaves) against the seed's helpers (`baselines`); the same on the message
store against llm's `message_tree` view; and the whole `convgraph path`
command against a bare `python -c pass`. Then the core benchmark of issue 2
and its diagnosis at the largest size, and the other engineers' benchmark
modules (exports, statistics, diffs) if they are there. It prints the table,
the growth from size to size and the targets met or missed, and writes all of
it as JSON.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import bench_core, cache
from benchmarks.measure import Measurement, run_command, run_task
from benchmarks.report import (
    Row,
    Target,
    format_growth,
    format_table,
    format_targets,
    growth,
    machine,
    ratio_text,
    seconds,
    write_json,
)
from benchmarks.synthetic import SHAPES

SIZES = [1_000, 10_000, 100_000, 1_000_000]
QUICK_SIZES = [1_000, 10_000, 100_000]
RESULTS_DIR = Path(__file__).resolve().parent / "results"
#: The other engineers' benchmark modules, run at the end when present.
OTHER_BENCHMARKS = ("bench_export", "bench_html", "bench_stats", "bench_diff")
#: Arguments the suite gives them: one run per figure keeps the whole suite
#: within its half hour (run them alone for their best of three).
OTHER_ARGUMENTS = {
    "bench_export": ["--repeat", "1"],
    "bench_html": ["--repeat", "1"],
    "bench_diff": ["--repeat", "1"],
}


@dataclass
class Options:
    sizes: list[int] = field(default_factory=lambda: list(SIZES))
    shapes: list[str] = field(default_factory=lambda: list(SHAPES))
    store: bool = True
    cli: bool = True
    core: bool = True
    others: bool = True
    repeat: int = 5
    budget: float = 3.0
    timeout: float = 300.0
    baseline_timeout: float = 30.0
    #: A task slower than this is not run again at larger sizes.
    slow: float = 20.0
    data_dir: Path = cache.DATA_DIR
    json_path: Path | None = None
    quick: bool = False


class Suite:
    def __init__(self, options: Options, log=None):
        self.options = options
        self.rows: list[Row] = []
        self.others: dict[str, Any] = {}
        # (section, shape, task) -> why it is not run at larger sizes
        self.given_up: dict[tuple[str, str, str], str] = {}
        self.log = log or (lambda text: print(text, flush=True))

    # -- measuring ---------------------------------------------------------

    def measure(
        self,
        section: str,
        shape: str,
        size: int,
        name: str,
        args: dict[str, Any],
        baseline: bool = False,
    ) -> Measurement:
        """Run one task, unless it timed out or was too slow at a smaller size
        (which keeps the full run within its half hour)."""
        key = (section, shape, name)
        if key in self.given_up:
            return Measurement(
                name,
                status="skipped",
                note=f"{self.given_up[key]}; not run at larger sizes",
            )
        timeout = self.options.baseline_timeout if baseline else self.options.timeout
        measurement = run_task(
            name,
            args,
            repeat=self.options.repeat,
            budget=self.options.budget,
            timeout=timeout,
        )
        if measurement.status == "timeout":
            self.given_up[key] = f"timed out at {size:,}"
        elif (
            measurement.seconds is not None and measurement.seconds > self.options.slow
        ):
            self.given_up[key] = f"took {measurement.seconds:.0f} s at {size:,}"
        return measurement

    def same_tree(
        self,
        first: Measurement,
        section: str,
        shape: str,
        size: int,
        name: str,
        args: dict[str, Any],
        baseline: bool = False,
    ) -> Measurement:
        """Measure `name`, unless `first` (an operation that loads the same
        tree the same way, measured just before) timed out or was too slow:
        then this one would be too, and the run's time is better spent."""
        if first.status == "timeout" or (
            first.seconds is not None and first.seconds > self.options.slow
        ):
            why = (
                "timed out"
                if first.status == "timeout"
                else f"took {first.seconds:.0f} s"
            )
            self.given_up[(section, shape, name)] = f"{first.task} {why} at {size:,}"
            return Measurement(
                name,
                status="skipped",
                note=f"{first.task} on the same tree {why}; not run",
            )
        return self.measure(section, shape, size, name, args, baseline)

    def add(self, row: Row) -> None:
        self.rows.append(row)
        self.log(
            f"  {row.section:12} {row.shape:6} {row.size:>9,} {row.operation:28}"
            f" {seconds(row.convgraph):>9} vs {seconds(row.baseline):>9}"
            f"  {ratio_text(row.ratio)}"
        )

    # -- sections ------------------------------------------------------------

    def legacy(self, shape: str, size: int) -> None:
        db = cache.ensure("legacy", shape, size, self.options.data_dir, self.log)
        target = cache.targets("legacy", shape, size, db)
        plain = {"db": str(db)}
        one = {**plain, "conversation": target.conversation}
        m = self.measure
        self.add(
            Row(
                "forest",
                shape,
                size,
                "statistics",
                m("forest", shape, size, "convgraph.stats", plain),
                m("forest", shape, size, "sqlite.structure", plain, True),
            )
        )
        self.add(
            Row(
                "forest",
                shape,
                size,
                "read forest, no texts",
                m("forest", shape, size, "convgraph.forest_structure", plain),
                m("forest", shape, size, "sqlite.structure", plain, True),
            )
        )
        self.add(
            Row(
                "conversation",
                shape,
                size,
                "load one conversation",
                m("conversation", shape, size, "convgraph.load_tree", one),
                m("conversation", shape, size, "sqlite.conversation", one, True),
                # The deep shape's conversations are one long chain each.
                [f"{target.conversation_size:,} responses in the conversation"]
                if shape == "deep"
                else [],
            )
        )
        # The seed's recursion needs a frame per level of a deep chain.
        recursion = target.conversation_size + 100 if shape == "deep" else 0
        for operation, name, args in (
            ("path", "path", {**plain, "node": target.node}),
            ("descendants of the root", "descendants", {**plain, "node": target.root}),
            ("leaves", "leaves", one),
        ):
            seed_args = dict(args)
            if name == "descendants" and recursion:
                seed_args["recursion"] = recursion
            self.add(
                Row(
                    "per-node",
                    shape,
                    size,
                    operation,
                    m("per-node", shape, size, f"convgraph.{name}", args),
                    m("per-node", shape, size, f"seed.{name}", seed_args, True),
                )
            )

    def store(self, shape: str, size: int) -> None:
        db = cache.ensure("store", shape, size, self.options.data_dir, self.log)
        target = cache.targets("store", shape, size, db)
        plain = {"db": str(db)}
        m = self.measure
        self.add(
            Row(
                "store",
                shape,
                size,
                "statistics",
                m("store", shape, size, "convgraph.stats", plain),
                m("store", shape, size, "sqlite.store_structure", plain, True),
            )
        )
        # All three operations load the same tree (convgraph) or run the same
        # view query (llm): when the first is hopeless, so are the others.
        first: dict[str, Measurement] = {}
        for operation, name, args in (
            ("path", "path", {**plain, "node": target.node}),
            ("descendants of the root", "descendants", {**plain, "node": target.root}),
            ("leaves", "leaves", {**plain, "conversation": target.conversation}),
        ):
            sides = []
            for family, baseline in (("convgraph", False), ("view", True)):
                task = f"{family}.{name}"
                if family in first:
                    found = self.same_tree(
                        first[family], "store", shape, size, task, args, baseline
                    )
                else:
                    found = first[family] = m(
                        "store", shape, size, task, args, baseline
                    )
                sides.append(found)
            self.add(Row("store", shape, size, operation, *sides))

    def cli_path(self, shape: str, size: int, bare: Measurement) -> None:
        db = cache.ensure("legacy", shape, size, self.options.data_dir, self.log)
        target = cache.targets("legacy", shape, size, db)
        self.add(
            Row(
                "cli",
                shape,
                size,
                "convgraph path NODE",
                run_command(
                    "convgraph path",
                    [convgraph_command(), "path", target.node, "--db", str(db)],
                ),
                bare,
            )
        )

    def cli_start(self) -> Measurement:
        bare = run_command("python -c pass", [sys.executable, "-c", "pass"])
        self.add(
            Row(
                "cli",
                "",
                0,
                "convgraph --help",
                run_command("convgraph --help", [convgraph_command(), "--help"]),
                bare,
            )
        )
        return bare

    def run_others(self) -> None:
        """The export, statistics and diff benchmarks of the other issues, as
        their authors wrote them: run as modules, their output kept as is."""
        for name in OTHER_BENCHMARKS:
            if importlib.util.find_spec(f"benchmarks.{name}") is None:
                self.others[name] = {"status": "absent"}
                continue
            argv = [
                sys.executable,
                "-m",
                f"benchmarks.{name}",
                *OTHER_ARGUMENTS.get(name, []),
            ]
            source = Path(
                importlib.util.find_spec(f"benchmarks.{name}").origin
            ).read_text()
            if '"--size"' in source and max(self.options.sizes) < 1_000_000:
                # A shorter run asks the others for its largest size too.
                argv += ["--size", str(max(self.options.sizes))]
            self.log(f"\n== {name} ({' '.join(argv[1:])})")
            started = time.perf_counter()
            try:
                done = subprocess.run(
                    argv,
                    capture_output=True,
                    text=True,
                    timeout=900,
                    cwd=Path(__file__).resolve().parent.parent,
                )
            except subprocess.TimeoutExpired:
                self.others[name] = {"status": "timeout"}
                self.log(f"{name}: killed after 900 s")
                continue
            self.others[name] = {
                "status": "ok" if done.returncode == 0 else f"exit {done.returncode}",
                "seconds": time.perf_counter() - started,
                "output": done.stdout,
                "errors": done.stderr[-2000:],
            }
            self.log(done.stdout.rstrip() or "(no output)")
            if done.returncode:
                self.log(done.stderr.strip()[-800:])

    # -- the run ---------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        options = self.options
        started = time.perf_counter()
        self.log(
            f"convgraph benchmarks: sizes {', '.join(f'{s:,}' for s in options.sizes)};"
            f" shapes {', '.join(options.shapes)}; data in {options.data_dir}"
        )
        bare = self.cli_start() if options.cli else None
        for size in options.sizes:
            for shape in options.shapes:
                self.legacy(shape, size)
                if options.cli:
                    self.cli_path(shape, size, bare)
                if options.store:
                    self.store(shape, size)
        largest = max(options.sizes)
        if options.core:
            self.log("\n== core benchmark (issue 2)")
            for row in bench_core.core_rows(
                largest, data_dir=options.data_dir, log=self.log
            ) + bench_core.diagnosis_rows(
                largest, data_dir=options.data_dir, log=self.log
            ):
                self.rows.append(row)
        if options.others:
            self.run_others()
        document = {
            "started": datetime.now(UTC).isoformat(timespec="seconds"),
            "command": " ".join(["python", "-m", "benchmarks", *sys.argv[1:]]),
            "machine": machine(),
            "options": {
                key: (str(value) if isinstance(value, Path) else value)
                for key, value in options.__dict__.items()
            },
            "seconds": time.perf_counter() - started,
            "rows": [row.as_dict() for row in self.rows],
            "growth": growth(self.rows),
            "targets": [target.as_dict() for target in self.targets()],
            "others": self.others,
        }
        return document

    # -- the targets of issue 7 -----------------------------------------------------

    def find(self, section: str, operation: str, shape: str | None = None, size=None):
        return [
            row
            for row in self.rows
            if row.section == section
            and row.operation == operation
            and (shape is None or row.shape == shape)
            and (size is None or row.size == size)
        ]

    def targets(self) -> list[Target]:
        found = []
        million = 1_000_000
        for row in self.find("forest", "statistics", size=million):
            ratio = row.ratio
            found.append(
                Target(
                    f"forest statistics, {row.shape}, 1,000,000",
                    "at most 2x the bare fetch",
                    ratio_text(ratio),
                    None if ratio is None else ratio <= 2,
                )
            )
            peak = row.convgraph.peak_mb
            found.append(
                Target(
                    f"forest statistics peak memory, {row.shape}, 1,000,000",
                    "under 600 MB",
                    f"{peak:.0f} MB" if peak else "-",
                    None if peak is None else peak < 600,
                )
            )
        for row in self.find("cli", "convgraph path NODE", size=million):
            value = row.convgraph.seconds
            found.append(
                Target(
                    f"convgraph path, {row.shape}, 1,000,000",
                    "under 0.5 s for the whole command",
                    seconds(row.convgraph),
                    None if value is None else value < 0.5,
                )
            )
        for row in self.find("cli", "convgraph --help"):
            if row.convgraph.seconds is not None and row.baseline.seconds is not None:
                over = row.convgraph.seconds - row.baseline.seconds
                found.append(
                    Target(
                        "convgraph --help over python -c pass",
                        "at most 0.25 s",
                        f"{over:.3f} s ({seconds(row.convgraph)} - {seconds(row.baseline)})",
                        over <= 0.25,
                    )
                )
        for row in self.rows:
            if row.section != "per-node" or row.size != 100_000:
                continue
            ratio = row.ratio
            found.append(
                Target(
                    f"{row.operation}, {row.shape}, 100,000, vs the seed",
                    "at least 10x faster",
                    "-"
                    if ratio is None
                    else f"{1 / ratio:.1f}x faster"
                    if ratio < 1
                    else f"{ratio:.1f}x slower",
                    None if ratio is None else ratio <= 0.1,
                )
            )
        for entry in growth(self.rows):
            if entry["section"] in ("cli", "diagnosis", "core"):
                continue
            if not entry["operation"][:1].islower() or "." in entry["operation"]:
                continue  # the baselines' growth is shown, not judged
            # Steps from below 20 ms measure start-up costs and noise, not growth.
            judged = [
                step
                for step, (size, value) in zip(
                    entry["steps"],
                    sorted(entry["seconds"].items(), key=lambda kv: int(kv[0])),
                    strict=False,
                )
                if value >= 0.02
            ]
            if not judged:
                continue
            worst = max(judged)
            found.append(
                Target(
                    f"growth of {entry['section']} {entry['operation']}, {entry['shape']}",
                    "10x the responses, at most about 10x the time",
                    f"worst step {worst:.1f}x",
                    worst <= 12,
                )
            )
        return found


def convgraph_command() -> str:
    """The `convgraph` console script of this interpreter's environment."""
    beside = Path(sys.executable).parent / "convgraph"
    return (
        str(beside) if beside.exists() else (shutil.which("convgraph") or "convgraph")
    )


def print_report(suite: Suite, document: dict[str, Any]) -> None:
    print()
    print(
        "== results: seconds are the best of up to 5 runs in one fresh process"
        " (CLI: median of 7 whole commands);\n   MB is that process's peak RSS;"
        " ratio = convgraph time / baseline time (below 1: convgraph is faster)"
    )
    print(format_table(suite.rows))
    print()
    sizes = sorted({row.size for row in suite.rows if row.size})
    if len(sizes) > 1:
        print("== growth: seconds at each size, and the factor per 10x responses")
        print(format_growth(document["growth"], sizes))
        print()
    print("== targets (issue 7)")
    print(format_targets(suite.targets()))
    print(f"\ntotal {document['seconds'] / 60:.1f} min")


def main(options: Options) -> dict[str, Any]:
    suite = Suite(options)
    document = suite.run()
    print_report(suite, document)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    paths = [RESULTS_DIR / f"run-{stamp}.json", RESULTS_DIR / "latest.json"]
    if options.json_path:
        paths.append(options.json_path)
    for path in paths:
        write_json(path, document)
    print("written: " + ", ".join(str(path) for path in paths))
    return document
