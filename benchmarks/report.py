"""The suite's results as text, for every group: the comparison table, the
growth table and the targets met or missed.

A row is one operation in one database (or export, dataset, page): convgraph's
measurement beside its baseline's, and their ratio, always convgraph's mean
time divided by the baseline's (below 1: convgraph is faster; 0.05 is 20
times faster). The figures a task reports beside its time follow the table
as notes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchmarks.suite import Task


@dataclass
class Measurement:
    """What pyperf measured of one task: the mean and standard deviation of
    its values (one call each, every worker a fresh process), the largest
    peak resident memory of those processes, and the figures the task
    reported beside its time (`benchmarks.tasks.figure`)."""

    task: str
    status: str = "ok"  # ok, timeout, error, skipped
    mean: float | None = None
    stdev: float | None = None
    values: list[float] = field(default_factory=list)
    peak_mb: float | None = None
    note: str = ""
    figures: dict[str, float] = field(default_factory=dict)


@dataclass
class Row:
    """One operation beside its baseline. `convgraph` and `baseline` name
    what to measure (see `benchmarks.suite.Task`); the measurements are filled
    in by the run."""

    section: str  # reads: cli, forest, conversation, per-node, store, core, diagnosis
    shape: str
    size: int
    operation: str
    convgraph: Task
    baseline: Task | None = None
    notes: list[str] = field(default_factory=list)
    measured: Measurement | None = None
    measured_baseline: Measurement | None = None

    @property
    def ratio(self) -> float | None:
        """convgraph's mean time over the baseline's, when both were measured."""
        ours, theirs = self.measured, self.measured_baseline
        if ours is None or theirs is None or ours.mean is None or not theirs.mean:
            return None
        return ours.mean / theirs.mean


def seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 0.001:
        return f"{value * 1e6:.0f} µs"
    if value < 1:
        return f"{value * 1e3:.1f} ms"
    return f"{value:.2f} s"


def timing(m: Measurement | None) -> str:
    """A measurement's mean, or why there is none."""
    if m is None:
        return "-"
    return seconds(m.mean) if m.status == "ok" else m.status


def megabytes(m: Measurement | None) -> str:
    return "-" if m is None or m.peak_mb is None else f"{m.peak_mb:.0f}"


def number(value: float) -> str:
    """A figure: whole above 100, else three significant digits."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def figures_text(m: Measurement) -> str:
    return ", ".join(f"{name} {number(value)}" for name, value in m.figures.items())


def ratio_text(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 0.1:
        return f"{value:.3f}x (1/{1 / value:.0f})"
    return f"{value:.2f}x"


def aligned(header: list[str], lines: list[list[str]], right: set[int]) -> list[str]:
    """Columns padded to their widest cell; the `right` ones right-aligned."""
    widths = [max(map(len, column)) for column in zip(header, *lines, strict=True)]

    def render(cells: list[str]) -> str:
        return "  ".join(
            cell.rjust(width) if index in right else cell.ljust(width)
            for index, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return [render(header), render(["-" * width for width in widths])] + [
        render(cells) for cells in lines
    ]


def format_table(rows: list[Row]) -> str:
    """One line per row, a blank line between blocks of section and shape,
    then the rows' notes."""
    header = ["section", "shape", "size", "operation", "convgraph", "MB"]
    header += ["baseline", "time", "MB", "ratio"]
    lines = [
        [
            row.section,
            row.shape,
            f"{row.size:,}" if row.size else "",
            row.operation,
            timing(row.measured),
            megabytes(row.measured),
            row.measured_baseline.task if row.measured_baseline else "",
            timing(row.measured_baseline),
            megabytes(row.measured_baseline),
            ratio_text(row.ratio),
        ]
        for row in rows
    ]
    rendered = aligned(header, lines, right={2, 4, 5, 7, 8, 9})
    out = rendered[:2]
    for index, row in enumerate(rows):
        if index and (row.section, row.shape) != (
            rows[index - 1].section,
            rows[index - 1].shape,
        ):
            out.append("")
        out.append(rendered[2 + index])
    notes = []
    shown: set[int] = set()  # a shared measurement's figures once
    for row in rows:
        size = f"{row.size:,}" if row.size else ""
        where = " ".join(x for x in (row.section, row.shape, size, row.operation) if x)
        where = f"  [{where}]"
        notes += [f"{where} {note}" for note in row.notes]
        for m in (row.measured, row.measured_baseline):
            if m is None:
                continue
            figures = "" if id(m) in shown else figures_text(m)
            shown.add(id(m))
            notes += [f"{where} {m.task}: {text}" for text in (m.note, figures) if text]
    return "\n".join(out + (["", "notes:", *notes] if notes else []))


def growth(rows: list[Row]) -> list[dict[str, Any]]:
    """For each operation (and each baseline) measured at several sizes of
    one shape: the mean time, and the peak memory, at each size."""
    series: dict[tuple[str, str, str], dict[int, float]] = {}
    memory: dict[tuple[str, str, str], dict[int, float]] = {}
    for row in rows:
        for name, m in ((row.operation, row.measured), (None, row.measured_baseline)):
            if m is None or m.mean is None or not row.size:
                continue
            key = (row.section, row.shape, name or m.task)
            series.setdefault(key, {})[row.size] = m.mean
            if m.peak_mb is not None:
                memory.setdefault(key, {})[row.size] = m.peak_mb
    return [
        {
            "section": section,
            "shape": shape,
            "operation": name,
            "seconds": by_size,
            "peak_mb": memory.get((section, shape, name), {}),
        }
        for (section, shape, name), by_size in series.items()
        if len(by_size) > 1
    ]


def per_tenfold(by_size: dict[int, float]) -> list[float]:
    """The factor by which the time grows for each 10x the size, from each
    size to the next."""
    sizes = sorted(by_size)
    return [
        (by_size[b] / by_size[a]) ** (1 / math.log10(b / a))
        for a, b in zip(sizes, sizes[1:], strict=False)
    ]


def format_growth(entries: list[dict[str, Any]]) -> str:
    sizes = sorted({size for entry in entries for size in entry["seconds"]})
    header = ["section", "shape", "operation", *[f"{s:,}" for s in sizes]]
    lines = [
        [entry["section"], entry["shape"], entry["operation"]]
        + [seconds(entry["seconds"].get(size)) for size in sizes]
        + [" ".join(f"{f:.1f}" for f in per_tenfold(entry["seconds"]))]
        for entry in entries
    ]
    right = set(range(3, len(header) + 1))
    return "\n".join(aligned([*header, "x per 10x"], lines, right))


# -- targets -------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """A limit on one figure of the rows of `section` and `operation` (at
    `size`, or at every size): ``ratio``, ``peak_mb``, ``seconds`` (convgraph's
    mean) or ``over_baseline`` (convgraph's mean minus the baseline's)."""

    section: str
    operation: str
    figure: str
    limit: float
    size: int | None = None


#: The agents group's whole command (`benchmarks.agents`).
AGENTS_STATS = "convgraph stats --json (a year)"

TARGETS = [
    Target("forest", "statistics", "ratio", 1.0, 1_000_000),
    Target("forest", "statistics", "peak_mb", 400, 1_000_000),
    Target("store", "statistics", "ratio", 1.5, 1_000_000),
    Target("store", "statistics", "peak_mb", 800, 1_000_000),
    Target("core", "load forest (with texts)", "ratio", 1.5, 1_000_000),
    Target("cli", "convgraph path NODE", "over_baseline", 0.2, 1_000_000),
    Target("cli", "convgraph --help", "over_baseline", 0.1),
    # Issue 27's scale: a year of agents' sessions read in at most 1.5 times
    # json.loads of every line (benchmarks.agents), whole and in process.
    *(
        Target("agents", operation, "ratio", 1.5)
        for operation in (AGENTS_STATS, "Forest.read + conversation table")
    ),
    # The engine group (issue 28): whole commands beside a bare fetch.
    Target("legacy", "convgraph stats --json", "ratio", 2.0, 1_000_000),
    Target("legacy", "convgraph stats --json", "peak_mb", 400, 1_000_000),
    Target("store", "convgraph stats --json", "ratio", 1.5, 1_000_000),
    Target("store", "convgraph stats --json", "peak_mb", 800, 1_000_000),
    *(
        Target(kind, f"convgraph {command}", "ratio", 3.0, 1_000_000)
        for kind in ("legacy", "store")
        for command in ("tree", "export --format json")
    ),
    # Any read command on a small file: at most 0.3 s over what it must import.
    Target("startup", "read command over its imports", "over_baseline", 0.3),
    Target("per-node", "path", "ratio", 0.1, 100_000),
    Target("per-node", "descendants of the root", "ratio", 0.1, 100_000),
    Target("per-node", "leaves", "ratio", 0.1, 100_000),
    # A tenth of llm's five-second busy timeout: llm's own logging never
    # comes near giving up on a prompt while convgraph reads.
    *(
        Target("logging", f"longest commit wait, convgraph {read}", "seconds", 0.5)
        for read in ("stats", "tree", "export --format json")
    ),
    # import at least 3x faster than conversation-tk's (benchmarks.importing).
    Target("import", "convgraph import (ChatGPT export)", "ratio", 1 / 3),
]
#: Growth, 10x the responses: at most this factor in time and in peak
#: memory (time judged from 20 ms on: below it, start-up costs and noise
#: dominate).
GROWTH_LIMIT = 10.0


def figure(row: Row, name: str) -> float | None:
    ours, theirs = row.measured, row.measured_baseline
    if name == "ratio":
        return row.ratio
    if name == "peak_mb":
        return ours.peak_mb if ours else None
    if ours is None or ours.mean is None:
        return None
    if name == "seconds":
        return ours.mean
    if name == "over_baseline":
        return (
            None if theirs is None or theirs.mean is None else ours.mean - theirs.mean
        )
    raise ValueError(f"unknown figure {name!r}")


def targets(rows: list[Row]) -> list[dict[str, Any]]:
    """Every target that a row of this run speaks to, met or missed (``met``
    is None where the figure could not be measured)."""
    found = []
    for target in TARGETS:
        for row in rows:
            if (row.section, row.operation) != (target.section, target.operation):
                continue
            if target.size is not None and row.size != target.size:
                continue
            value = figure(row, target.figure)
            where = "".join(
                f", {x}" for x in (row.shape, row.size and f"{row.size:,}") if x
            )
            found.append(
                {
                    "target": f"{row.section} {row.operation}{where}:"
                    f" {target.figure} at most {target.limit:g}",
                    "value": value,
                    "met": None if value is None else value <= target.limit,
                }
            )
    for entry in growth(rows):
        if entry["operation"] not in {row.operation for row in rows}:
            continue  # a baseline's growth is shown, not judged
        by_size = entry["seconds"]
        sizes = sorted(by_size)
        judged = [
            factor
            for size, factor in zip(sizes, per_tenfold(by_size), strict=False)
            if by_size[size] >= 0.02
        ]
        shape = f", {entry['shape']}" if entry["shape"] else ""
        if judged and entry["section"] not in ("cli", "core", "diagnosis"):
            found.append(
                {
                    "target": f"growth of {entry['section']} {entry['operation']}"
                    f"{shape}: at most {GROWTH_LIMIT:g}x per 10x",
                    "value": max(judged),
                    "met": max(judged) <= GROWTH_LIMIT,
                }
            )
            memory = entry["peak_mb"]
            if len(memory) > 1:
                most = max(per_tenfold(memory))
                found.append(
                    {
                        "target": f"memory growth of {entry['section']}"
                        f" {entry['operation']}{shape}:"
                        f" at most {GROWTH_LIMIT:g}x per 10x",
                        "value": most,
                        "met": most <= GROWTH_LIMIT,
                    }
                )
    return found


def format_targets(found: list[dict[str, Any]]) -> str:
    verdicts = {True: "MET ", False: "MISS", None: "n/a "}
    return "\n".join(
        f"  {verdicts[entry['met']]} {entry['target']}:"
        f" {'-' if entry['value'] is None else format(entry['value'], '.3g')}"
        for entry in found
    )
