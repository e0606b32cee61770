"""The benchmark suite: convgraph beside its baselines, every figure on one
harness, in groups a run picks (`GROUPS`).

The `reads` group, 1,000 to 1,000,000 responses in three shapes: for each shape and size: forest statistics against a bare fetch of the links;
one conversation against a bare fetch of its rows; the per-node operations
(path, descendants, leaves) against the seed's helpers (`baselines`); the same
on the message store against llm's `message_tree` view; and the whole
`convgraph path` command against a bare `python -c pass`. At the largest size,
the whole forest with its texts, every statistics table, the `convgraph stats`
command, and what an index or one recursive query would change. The other
groups are planned by `benchmarks.outputs` (export, html, diff),
`benchmarks.writes` (store, fanout, logging), `benchmarks.sources`
(chat-exports, dask) and `benchmarks.searching` (search).

`plan` lists the rows and builds the files they need (cached under
`benchmarks/data/`); `measure` times one side of a row with pyperf in fresh
processes (`python -m benchmarks.tasks`, or `python -m pyperf command` for a
whole command); `main` runs the plan and prints the tables of `report`.
"""

from __future__ import annotations

import importlib
import json
import os
import platform
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from benchmarks import report, synthetic
from benchmarks.report import Measurement, Row

ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = Path(__file__).resolve().parent / "data"
SIZES = (1_000, 10_000, 100_000, 1_000_000)
QUICK_SIZES = (1_000, 10_000, 100_000)
#: Bumped whenever the builders change what they write, so that a cached
#: database is never stale.
BUILD_VERSION = 1
#: Responses per conversation in the linear and bushy shapes; each deep
#: conversation is one chain of DEEP_CHAIN responses.
CONVERSATION_SIZE = 10
DEEP_CHAIN = 10_000


@dataclass(frozen=True)
class Group:
    """What ``python -m benchmarks GROUP`` runs: the rows `planner`
    (``module:function``, given the sizes and the options) lists, at `sizes`
    by default or `quick` with --quick, each a number of `unit`."""

    planner: str
    unit: str
    sizes: tuple[int, ...]
    quick: tuple[int, ...]


GROUPS = {
    "reads": Group("benchmarks.suite:reads_rows", "responses", SIZES, QUICK_SIZES),
    "export": Group("benchmarks.outputs:export_rows", "nodes", (100_000,), (10_000,)),
    "html": Group(
        "benchmarks.outputs:html_rows", "responses", (1_000, 10_000, 100_000), (1_000,)
    ),
    "diff": Group(
        "benchmarks.outputs:diff_rows",
        "characters an answer",
        (10_000, 100_000),
        (10_000,),
    ),
    "store": Group(
        "benchmarks.writes:store_rows", "responses", (10_000, 100_000), (10_000,)
    ),
    "fanout": Group("benchmarks.writes:fanout_rows", "answers", (1, 2, 4, 8), (1, 4)),
    "logging": Group("benchmarks.writes:logging_rows", "turns", (100_000,), (10_000,)),
    "chat-exports": Group("benchmarks.sources:chat_export_rows", "MB", (500,), (20,)),
    "import": Group("benchmarks.importing:import_rows", "MB", (20, 75), (20,)),
    "merge": Group("benchmarks.merging:merge_rows", "conversations", (3_000,), (300,)),
    "agents": Group("benchmarks.agents:agent_rows", "MB", (200, 1000), (50,)),
    "dask": Group(
        "benchmarks.sources:dask_rows", "nodes", (100_000, 1_000_000), (10_000, 100_000)
    ),
    "search": Group(
        "benchmarks.searching:search_rows", "calls", (100_000, 1_000_000), (10_000,)
    ),
    "engine": Group(
        "benchmarks.engine:engine_rows", "responses", (100_000, 1_000_000), (100_000,)
    ),
    "meaning": Group(
        "benchmarks.meaning:meaning_rows", "responses", (100_000, 1_000_000), (10_000,)
    ),
    "startup": Group("benchmarks.startup:startup_rows", "bytes", (0,), (0,)),
    "datasette": Group(
        "benchmarks.datasette_pages:datasette_rows",
        "responses",
        (100_000, 1_000_000),
        (10_000,),
    ),
}


@dataclass
class Options:
    #: The groups to run, and their sizes (each group's own by default).
    groups: list[str] = field(default_factory=lambda: ["reads"])
    sizes: list[int] | None = None
    quick: bool = False
    shapes: list[str] = field(default_factory=lambda: list(synthetic.SHAPES))
    store: bool = True
    cli: bool = True
    core: bool = True
    #: pyperf: worker processes per measurement, values per worker (after
    #: one warm-up call that pays for first-call imports).
    processes: int = 2
    values: int = 2
    #: Seconds a worker process may take for convgraph's side and for a
    #: baseline's; a task that times out is not run again at larger sizes.
    timeout: int = 300
    baseline_timeout: int = 60
    data_dir: Path = DATA_DIR
    json_path: Path | None = None
    #: Also time the statistics with the columnar reader turned off.
    row_readers: bool = False


@dataclass(frozen=True)
class Task:
    """One side of a row: a task of `benchmarks.tasks` with its parameters,
    or (``command=True``) a whole command, `params` being its argv; `once`:
    one call in one process (for a baseline that takes minutes)."""

    name: str
    params: tuple[str, ...] = ()
    command: bool = False
    once: bool = False


def task(name: str, **params: Any) -> Task:
    return Task(name, tuple(f"{key}={value}" for key, value in params.items()))


def once(spec: Task) -> Task:
    return replace(spec, once=True)


def command(name: str, *argv: str) -> Task:
    return Task(name, argv, command=True)


# -- the databases -------------------------------------------------------------------


def conversations_for(shape: str, size: int) -> int:
    per = DEEP_CHAIN if shape == "deep" else CONVERSATION_SIZE
    return max(1, size // per)


def cached(path: Path, build: Callable[[Path], object]) -> Path:
    """`path`, made by `build(partial)` under a temporary name if missing (a
    file or a folder), so that a build cut short is never taken for one."""
    if path.exists():
        return path
    partial = path.with_name(path.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.unlink(missing_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    build(partial)
    os.replace(partial, path)
    size = f": {path.stat().st_size / 2**20:,.0f} MB" if path.is_file() else ""
    print(f"built {path.name}{size}", flush=True)
    return path


def database(
    kind: str,
    shape: str,
    size: int,
    data_dir: Path = DATA_DIR,
    per_conversation: int | None = None,
) -> Path:
    """The cached database of this kind (``legacy``, ``store``, or
    ``legacy-indexed``: the legacy file with the indexes `convgraph migrate`
    adds), shape and size (in conversations of `per_conversation` responses,
    if given); built, under a temporary name, if missing."""
    if kind not in ("legacy", "store", "legacy-indexed"):
        raise ValueError(f"unknown kind of database {kind!r}")
    per = f"-c{per_conversation}" if per_conversation else ""
    conversations = (
        max(1, size // per_conversation)
        if per_conversation
        else conversations_for(shape, size)
    )

    def build(partial: Path) -> None:
        if kind == "legacy":
            synthetic.build_legacy(partial, size, conversations, shape)
        elif kind == "store":
            synthetic.build_message_store(partial, size, conversations, shape)
        else:
            shutil.copyfile(database("legacy", shape, size, data_dir), partial)
            conn = sqlite3.connect(partial)
            conn.execute("create index by_conversation on responses (conversation_id)")
            conn.execute("create index by_parent on responses (parent_response_id)")
            conn.commit()
            conn.close()

    name = f"{kind}-{shape}-{size}{per}-v{BUILD_VERSION}.db"
    return cached(data_dir / name, build)


@dataclass
class Picks:
    """What the per-node rows ask about: the middle conversation (or original
    thread), its root, its last node (the deepest, in these shapes), and how
    many nodes it holds."""

    conversation: str
    root: str
    node: str
    conversation_size: int


def pick(kind: str, shape: str, size: int, path: Path) -> Picks:
    # The builders write conversations as consecutive blocks in log order,
    # so the rows are found by rowid without reading the table.
    sizes = list(synthetic.conversation_sizes(size, conversations_for(shape, size)))
    middle = len(sizes) // 2
    start, count = sum(sizes[:middle]), sizes[middle]
    table, column = (
        ("turns", "thread_id") if kind == "store" else ("responses", "conversation_id")
    )
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        root, conversation = conn.execute(
            f"select id, {column} from {table} where rowid = ?", [start + 1]
        ).fetchone()
        (node,) = conn.execute(
            f"select id from {table} where rowid = ?", [start + count]
        ).fetchone()
    finally:
        conn.close()
    return Picks(conversation, root, node, count)


# -- the plan ---------------------------------------------------------------------


def convgraph_command() -> str:
    """The `convgraph` console script of this interpreter's environment."""
    beside = Path(sys.executable).parent / "convgraph"
    return (
        str(beside) if beside.exists() else (shutil.which("convgraph") or "convgraph")
    )


BARE_PYTHON = command("python -c pass", sys.executable, "-c", "pass")
#: The per-node rows: operation, task (after ``convgraph.``, ``seed.`` or
#: ``view.``), its parameter, and the `Picks` field that gives its value.
PER_NODE = (
    ("path", "path", "node", "node"),
    ("descendants of the root", "descendants", "node", "root"),
    ("leaves", "leaves", "conversation", "conversation"),
)


def legacy_rows(shape: str, size: int, data_dir: Path) -> list[Row]:
    db = database("legacy", shape, size, data_dir)
    at = pick("legacy", shape, size, db)
    one = {"db": db, "conversation": at.conversation}
    fetch = task("sqlite.structure", db=db)
    found = [
        Row("forest", shape, size, "statistics", task("convgraph.stats", db=db), fetch),
        Row("forest", shape, size, "read forest, no texts",
            task("convgraph.forest_structure", db=db), fetch),
        Row("conversation", shape, size, "load one conversation",
            task("convgraph.load_tree", **one), task("sqlite.conversation", **one),
            [f"{at.conversation_size:,} responses in the conversation"]),
    ]  # fmt: skip
    for operation, name, parameter, known in PER_NODE:
        params = {"db": db, parameter: getattr(at, known)}
        seed = dict(params)
        if name == "descendants" and shape == "deep":
            # The seed's recursion needs a frame per level of a deep chain.
            seed["recursion"] = at.conversation_size + 100
        ours, theirs = task(f"convgraph.{name}", **params), task(f"seed.{name}", **seed)
        found.append(Row("per-node", shape, size, operation, ours, theirs))
    return found


def store_rows(shape: str, size: int, data_dir: Path) -> list[Row]:
    db = database("store", shape, size, data_dir)
    at = pick("store", shape, size, db)
    ours, theirs = task("convgraph.stats", db=db), task("sqlite.store_structure", db=db)
    found = [Row("store", shape, size, "statistics", ours, theirs)]
    for operation, name, parameter, known in PER_NODE:
        params = {"db": db, parameter: getattr(at, known)}
        ours, theirs = (
            task(f"convgraph.{name}", **params),
            task(f"view.{name}", **params),
        )
        found.append(Row("store", shape, size, operation, ours, theirs))
    return found


def cli_path_row(shape: str, size: int, data_dir: Path) -> Row:
    db = database("legacy", shape, size, data_dir)
    node = pick("legacy", shape, size, db).node
    path = command("convgraph path", convgraph_command(), "path", node, "--db", str(db))
    return Row("cli", shape, size, "convgraph path NODE", path, BARE_PYTHON)


def core_rows(shape: str, size: int, data_dir: Path) -> list[Row]:
    """The largest size only: the costly reads, and what would change them."""
    db = database("legacy", shape, size, data_dir)
    indexed = database("legacy-indexed", shape, size, data_dir)
    at = pick("legacy", shape, size, db)
    fetch = task("sqlite.structure", db=db)
    one = {"db": indexed, "conversation": at.conversation}
    path = {"db": db, "node": at.node}
    stats = command("convgraph stats", convgraph_command(), "stats", "--db", str(db))

    planned: list[tuple[str, str, Task, Task, str]] = [
        ("core", "load forest (with texts)", task("convgraph.forest", db=db),
         task("sqlite.all", db=db), "every column convgraph reads, on both sides"),
        ("core", "every stats table", task("convgraph.stats_tables", db=db), fetch,
         "conversations, nodes, edges and branches from one read"),
        ("core", "convgraph stats, whole command", stats, fetch,
         "start-up and printing included"),
        ("diagnosis", "load one conversation, indexed copy",
         task("convgraph.load_tree", **one), task("sqlite.conversation", **one),
         "a copy with the indexes convgraph migrate adds: both sides use them"),
        ("diagnosis", "path of one node vs one recursive query",
         task("convgraph.path", **path), task("sqlite.path_cte", **path),
         "a recursive CTE up the primary key reads only the path"),
    ]  # fmt: skip
    return [
        Row(section, shape, size, operation, ours, theirs, [note])
        for section, operation, ours, theirs, note in planned
    ]


def row_reader_rows(kind: str, shape: str, size: int, data_dir: Path) -> list[Row]:
    """The statistics read by the row readers (sqlite3 tuples, the columnar
    reader turned off), beside the same baseline as the columnar read."""
    db = database(kind, shape, size, data_dir)
    section, baseline = (
        ("store", "sqlite.store_structure")
        if kind == "store"
        else ("forest", "sqlite.structure")
    )
    ours, theirs = task("convgraph.stats_rows", db=db), task(baseline, db=db)
    note = ["the columnar reader turned off"]
    return [Row(section, shape, size, "statistics, row readers", ours, theirs, note)]


def reads_rows(sizes: list[int], options: Options) -> list[Row]:
    """The `reads` group: every row above, for each size and shape."""
    found = []
    if options.cli:
        start = command("convgraph --help", convgraph_command(), "--help")
        found.append(Row("cli", "", 0, "convgraph --help", start, BARE_PYTHON))
    for size in sizes:
        for shape in options.shapes:
            found += legacy_rows(shape, size, options.data_dir)
            if options.row_readers:
                found += row_reader_rows("legacy", shape, size, options.data_dir)
            if options.cli:
                found.append(cli_path_row(shape, size, options.data_dir))
            if options.store:
                found += store_rows(shape, size, options.data_dir)
                if options.row_readers:
                    found += row_reader_rows("store", shape, size, options.data_dir)
    if options.core:
        shape = "linear" if "linear" in options.shapes else options.shapes[0]
        found += core_rows(shape, max(sizes), options.data_dir)
    return found


def sizes_of(group: str, options: Options) -> list[int]:
    """The sizes a group runs at: the options', else its own."""
    spec = GROUPS[group]
    return list(options.sizes or (spec.quick if options.quick else spec.sizes))


def plan(options: Options) -> list[Row]:
    """Every row of the run's groups, in the order it is measured; builds
    the files the rows need."""
    found = []
    for group in options.groups:
        module, function = GROUPS[group].planner.split(":")
        planner = getattr(importlib.import_module(module), function)
        found += planner(sizes_of(group, options), options)
    return found


# -- measuring ------------------------------------------------------------------------


def measure(spec: Task, options: Options, timeout: int) -> Measurement:
    """Time one task (or command) with pyperf, in fresh worker processes,
    each given `timeout` seconds."""
    with tempfile.TemporaryDirectory() as directory:
        output = Path(directory) / "bench.json"
        runs = (1, 1, 0) if spec.once else (options.processes, options.values, 1)
        figures = Path(directory) / "figures.jsonl"
        pyperf_options = [
            f"--processes={runs[0]}",
            f"--values={runs[1]}",
            f"--warmups={runs[2]}",
            # One call per value: the slow operations take seconds, and
            # calibrating loops would cost a process of its own.
            "--loops=1",
            f"--timeout={timeout}",
            "--quiet",
            f"--output={output}",
        ]
        if spec.command:
            argv = ["-m", "pyperf", "command", *pyperf_options, "--", *spec.params]
        else:
            argv = ["-m", "benchmarks.tasks", *pyperf_options, f"--figures={figures}"]
            argv += [spec.name, *spec.params]
        done = subprocess.run(
            [sys.executable, *argv], cwd=ROOT, capture_output=True, text=True
        )
        if done.returncode == 124:  # pyperf's exit status for --timeout
            return Measurement(spec.name, "timeout", note=f"over {timeout} s")
        if done.returncode:
            why = first_error(done.stderr) or f"exit status {done.returncode}"
            return Measurement(spec.name, "error", note=why[:200])
        import pyperf  # type: ignore[import-untyped]

        bench = pyperf.Benchmark.load(str(output))
        found: dict[str, float] = {}
        reported = figures.read_text().splitlines() if figures.exists() else []
        for line in reported:  # one line per worker: keep the largest
            for name, value in json.loads(line).items():
                found[name] = max(value, found.get(name, value))
    values = list(bench.get_values())
    # pyperf keeps each worker's peak RSS in its run's metadata.
    key = "command_max_rss" if spec.command else "mem_max_rss"
    peaks = [run.get_metadata().get(key, 0) for run in bench.get_runs()]
    # A task that measures the memory elsewhere (Dask's workers) says so.
    peak = found.pop("peak_mb", max(peaks) / 2**20 if any(peaks) else None)
    return Measurement(
        spec.name,
        mean=bench.mean(),
        stdev=bench.stdev() if len(values) > 1 else None,
        values=values,
        peak_mb=peak,
        figures=found,
    )


def first_error(stderr: str) -> str:
    """The exception a failed worker raised: the last line of the first
    traceback (pyperf's manager adds its own after it)."""
    lines = stderr.strip().splitlines()
    ends = [i - 1 for i, line in enumerate(lines) if i and line.startswith("Traceback")]
    return (lines[ends[0]] if ends else lines[-1] if lines else "").strip()


def gives_up_with(row: Row, spec: Task) -> tuple[str, str, str]:
    """What a timeout of `spec` rules out at larger sizes: that task in that
    section and shape; for llm's view, all three of its tasks, which run the
    same view query over the same tree."""
    family = "view" if spec.name.startswith("view.") else spec.name
    return (row.section, row.shape, family)


def run(
    rows: list[Row], options: Options, log: Callable[[str], None] = print
) -> list[Row]:
    """Measure both sides of every row (a task shared by rows is measured
    once); fills in the rows' measurements and returns them."""
    done: dict[Task, Measurement] = {}
    given_up: dict[tuple[str, str, str], str] = {}
    for row in rows:
        for side, spec in (
            ("measured", row.convgraph),
            ("measured_baseline", row.baseline),
        ):
            if spec is None or getattr(row, side) is not None:
                continue  # none, or known beforehand (a skipped row)
            key = gives_up_with(row, spec)
            if spec not in done and key in given_up:
                done[spec] = Measurement(spec.name, "skipped", note=given_up[key])
            elif spec not in done:
                # A baseline's own, shorter timeout, unless run once on purpose.
                baseline = side == "measured_baseline" and not spec.once
                timeout = options.baseline_timeout if baseline else options.timeout
                done[spec] = measure(spec, options, timeout)
                if done[spec].status == "timeout":
                    given_up[key] = (
                        f"timed out at {row.size:,}; not run at larger sizes"
                    )
            setattr(row, side, done[spec])
        log(
            f"  {row.section:12} {row.shape:6} {row.size:>9,} {row.operation:40}"
            f" {report.timing(row.measured):>9} vs {report.timing(row.measured_baseline):>9}"
            f"  {report.ratio_text(row.ratio)}"
        )
    return rows


def main(options: Options) -> dict[str, Any]:
    started = time.perf_counter()
    for group in options.groups:
        sizes = ", ".join(f"{size:,}" for size in sizes_of(group, options))
        shapes = f"; shapes {', '.join(options.shapes)}" if group == "reads" else ""
        print(f"{group}: {sizes} {GROUPS[group].unit}{shapes}", flush=True)
    print(f"data in {options.data_dir}", flush=True)
    rows = run(plan(options), options, log=lambda text: print(text, flush=True))
    found_growth = report.growth(rows)
    found_targets = report.targets(rows)
    print(
        f"\n== results: mean time of {options.processes} fresh processes x"
        f" {options.values} calls (pyperf; one warm-up call each); MB is the"
        " largest peak RSS of those processes;\n   ratio = convgraph time /"
        " baseline time (below 1: convgraph is faster)"
    )
    print(report.format_table(rows))
    if found_growth:
        print(
            "\n== growth: mean seconds at each size, and the factor per 10x responses"
        )
        print(report.format_growth(found_growth))
    if found_targets:
        print("\n== targets")
        print(report.format_targets(found_targets))
    document = {
        "command": " ".join(["python", "-m", "benchmarks", *sys.argv[1:]]),
        "machine": {
            "python": platform.python_version(),
            "sqlite": sqlite3.sqlite_version,
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        },
        "seconds": time.perf_counter() - started,
        "rows": [
            {
                "section": row.section,
                "shape": row.shape,
                "size": row.size,
                "operation": row.operation,
                "convgraph": asdict(row.measured) if row.measured else None,
                "baseline": asdict(row.measured_baseline)
                if row.measured_baseline
                else None,
                "ratio": row.ratio,
                "notes": row.notes,
            }
            for row in rows
        ],
        "growth": found_growth,
        "targets": found_targets,
    }
    print(f"\ntotal {(time.perf_counter() - started) / 60:.1f} min")
    if options.json_path:
        options.json_path.parent.mkdir(parents=True, exist_ok=True)
        options.json_path.write_text(json.dumps(document, indent=2) + "\n")
        print(f"written: {options.json_path}")
    return document
