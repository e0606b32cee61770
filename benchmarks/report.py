"""The suite's results: rows of convgraph beside its baseline, as a printed
table, a growth table and a list of targets met or missed, and as JSON.

A row is one operation in one database: convgraph's measurement, the
baseline's, and their ratio, always convgraph's time divided by the
baseline's (below 1: convgraph is faster; 0.05 is 20 times faster).
"""

from __future__ import annotations

import json
import math
import platform
import sqlite3
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.measure import Measurement


@dataclass
class Row:
    section: str  # forest, conversation, per-node, store, cli, diagnosis
    shape: str
    size: int
    operation: str
    convgraph: Measurement
    baseline: Measurement | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ratio(self) -> float | None:
        if (
            self.baseline is None
            or self.convgraph.seconds is None
            or not self.baseline.seconds
        ):
            return None
        return self.convgraph.seconds / self.baseline.seconds

    def as_dict(self) -> dict[str, Any]:
        return {
            "section": self.section,
            "shape": self.shape,
            "size": self.size,
            "operation": self.operation,
            "convgraph": self.convgraph.as_dict(),
            "baseline": self.baseline.as_dict() if self.baseline else None,
            "ratio": self.ratio,
            "notes": self.notes,
        }


def seconds(m: Measurement | None) -> str:
    if m is None:
        return "-"
    if m.status != "ok":
        return m.status
    value = m.seconds
    if value < 0.001:
        return f"{value * 1e6:.0f} µs"
    if value < 1:
        return f"{value * 1e3:.1f} ms"
    return f"{value:.2f} s"


def megabytes(m: Measurement | None) -> str:
    if m is None or m.peak_mb is None or m.status != "ok":
        return "-"
    return f"{m.peak_mb:.0f}"


def ratio_text(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 1:
        return f"{value:.2f}x"
    return f"{value:.3f}x (1/{1 / value:.0f})" if value < 0.1 else f"{value:.2f}x"


SECTIONS = ("cli", "forest", "conversation", "per-node", "store", "core", "diagnosis")
SHAPE_ORDER = ("", "linear", "bushy", "deep")


def in_reading_order(rows: list[Row]) -> list[Row]:
    """Rows by section, then shape, then size: each block reads as growth."""

    def key(row: Row) -> tuple:
        section = (
            SECTIONS.index(row.section) if row.section in SECTIONS else len(SECTIONS)
        )
        shape = (
            SHAPE_ORDER.index(row.shape)
            if row.shape in SHAPE_ORDER
            else len(SHAPE_ORDER)
        )
        return (section, shape, row.size)

    return sorted(rows, key=key)


def format_table(rows: list[Row]) -> str:
    """The main table: one line per row, in blocks of section and shape."""
    rows = in_reading_order(rows)
    header = (
        "section",
        "shape",
        "size",
        "operation",
        "convgraph",
        "MB",
        "baseline",
        "time",
        "MB",
        "ratio",
    )
    lines = []
    for row in rows:
        lines.append(
            (
                row.section,
                row.shape,
                f"{row.size:,}" if row.size else "",
                row.operation,
                seconds(row.convgraph),
                megabytes(row.convgraph),
                row.baseline.task if row.baseline else "",
                seconds(row.baseline),
                megabytes(row.baseline),
                ratio_text(row.ratio),
            )
        )
    widths = [
        max(len(str(cell)) for cell in column)
        for column in zip(header, *lines, strict=False)
    ]
    right = {2, 4, 5, 7, 8, 9}

    def render(cells) -> str:
        return "  ".join(
            str(cell).rjust(width) if index in right else str(cell).ljust(width)
            for index, (cell, width) in enumerate(zip(cells, widths, strict=False))
        ).rstrip()

    out = [render(header), render("-" * width for width in widths)]
    previous = None
    for row, cells in zip(rows, lines, strict=True):
        if previous is not None and (row.section, row.shape) != previous:
            out.append("")
        previous = (row.section, row.shape)
        out.append(render(cells))
    notes = [
        f"  [{row.section} {row.shape} {row.size:,} {row.operation}] {note}".replace(
            "  0 ", " "
        )
        for row in rows
        for note in _notes(row)
    ]
    if notes:
        out += ["", "notes:", *notes]
    return "\n".join(out)


def _notes(row: Row) -> list[str]:
    found = list(row.notes)
    for m in (row.convgraph, row.baseline):
        if m is not None and m.note:
            found.append(f"{m.task}: {m.note}")
    return found


def growth(rows: list[Row]) -> list[dict[str, Any]]:
    """For each operation and shape measured at several sizes: the time at
    each size, and the factor from each size to the next."""
    series: dict[tuple[str, str, str], dict[int, float]] = {}
    for row in rows:
        for side, m in (("convgraph", row.convgraph), ("baseline", row.baseline)):
            if m is None or m.status != "ok" or not row.size:
                continue
            name = row.operation if side == "convgraph" else m.task
            key = (row.section, row.shape, name)
            series.setdefault(key, {})[row.size] = m.seconds
    found = []
    for (section, shape, name), by_size in series.items():
        sizes = sorted(by_size)
        if len(sizes) < 2:
            continue
        steps = [
            by_size[b] / by_size[a]
            for a, b in zip(sizes, sizes[1:], strict=False)
            if by_size[a] > 0
        ]
        found.append(
            {
                "section": section,
                "shape": shape,
                "operation": name,
                "seconds": {str(size): by_size[size] for size in sizes},
                "steps": steps,
                "size_steps": [b / a for a, b in zip(sizes, sizes[1:], strict=False)],
            }
        )
    return found


def format_growth(entries: list[dict[str, Any]], sizes: list[int]) -> str:
    header = ["section", "shape", "operation", *[f"{s:,}" for s in sizes], "x per 10x"]
    lines = []
    for entry in entries:
        by_size = {int(k): v for k, v in entry["seconds"].items()}
        cells = [entry["section"], entry["shape"], entry["operation"]]
        for size in sizes:
            value = by_size.get(size)
            cells.append("-" if value is None else seconds(_fake(value)))
        cells.append(
            " ".join(
                f"{step ** (1 / math.log10(size_step)):.1f}"
                for step, size_step in zip(
                    entry["steps"], entry["size_steps"], strict=False
                )
            )
        )
        lines.append(cells)
    widths = [
        max(len(str(c)) for c in column) for column in zip(header, *lines, strict=False)
    ]
    out = []
    for cells in [header, ["-" * w for w in widths], *lines]:
        out.append(
            "  ".join(
                str(c).rjust(w) if i >= 3 else str(c).ljust(w)
                for i, (c, w) in enumerate(zip(cells, widths, strict=False))
            ).rstrip()
        )
    return "\n".join(out)


def _fake(value: float) -> Measurement:
    return Measurement("", seconds=value)


@dataclass
class Target:
    name: str
    goal: str
    measured: str
    met: bool | None  # None: not measured in this run
    where: str = ""

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def format_targets(targets: list[Target]) -> str:
    out = []
    for target in targets:
        verdict = {True: "MET ", False: "MISS", None: "n/a "}[target.met]
        line = f"  {verdict} {target.name}: {target.measured} (goal: {target.goal})"
        if target.where:
            line += f" [{target.where}]"
        out.append(line)
    return "\n".join(out)


def machine() -> dict[str, Any]:
    import os

    return {
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
    }


def write_json(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, default=str) + "\n")
