"""Progress on a terminal's stderr: `ProgressBar` for the library's
`(phase, done, total)` callbacks, and the fan-out's live lines."""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from typing import IO, TYPE_CHECKING, Any

import click

from convgraph.cli.output import is_terminal
from convgraph.text import cell_width, counted, pad, terminal_text

if TYPE_CHECKING:
    from convgraph.store.branch import FanOut
    from convgraph.store.fanout import Job

#: Seconds between redraws for a new chunk (a state change redraws at once).
REDRAW_SECONDS = 0.1


def progress_line(job: Job, label_width: int) -> str:
    """One request's line: label, state, output so far, time or failure."""
    state = job.state
    if state == "failed" or state == "stopped":
        detail = job.reason or ""
    elif state == "done" and job.output_tokens is not None:
        detail = f"{job.output_tokens} tokens"
    elif state in ("streaming", "done"):
        detail = counted(job.chunks, "chunk")
    else:
        detail = ""
    elapsed = job.elapsed
    timing = "" if elapsed is None or state == "failed" else f"  {elapsed:.1f} s"
    line = f"{pad(terminal_text(job.label), label_width)}  {state:<9}  {detail}{timing}"
    return line.rstrip()


class LiveProgress:
    """The live display (`on_change`): redraws in place on a terminal only."""

    def __init__(self, stream: IO[str] | None = None):
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = is_terminal(self.stream)
        self.drawn = 0
        self.last: tuple[str, ...] = ()
        self.last_time = 0.0

    def __call__(self, jobs: list[Job]) -> None:
        if not self.enabled:
            return
        states = tuple(job.state for job in jobs)
        now = time.monotonic()
        if states == self.last and now - self.last_time < REDRAW_SECONDS:
            return
        self.last, self.last_time = states, now
        width = max(cell_width(terminal_text(job.label)) for job in jobs)
        columns = max(20, shutil.get_terminal_size().columns - 1)
        # No wider than the terminal, so moving up by the line count lands.
        lines = [progress_line(job, width)[:columns] for job in jobs]
        up = f"\x1b[{self.drawn}F" if self.drawn else ""
        self.stream.write(up + "".join(f"\x1b[2K{line}\n" for line in lines))
        self.stream.flush()
        self.drawn = len(lines)


def fan_out_record(result: FanOut) -> dict[str, object]:
    """A fan-out's JSON: parent, answers, failures, and the compare records."""
    comparison = result.comparison() if result.answers else None
    return {
        "parent_id": result.parent_id,
        "answers": [answer.to_dict() for answer in result.answers],
        "failures": [failure.to_dict() for failure in result.failures],
        "interrupted": result.interrupted,
        "compare": comparison.to_dicts() if comparison is not None else [],
    }


def generate_fan_out_lines(result: FanOut) -> Iterator[str]:
    """The report for a person: a line per new node, then `compare`'s table."""
    from convgraph.cli.diff import generate_compare_lines
    from convgraph.cli.output import table_width

    if not result.answers:
        return
    models = [terminal_text(answer.model) for answer in result.answers]
    width = max(map(cell_width, models))
    for answer, model in zip(result.answers, models, strict=True):
        yield terminal_text(
            f"node {answer.node_id}  {pad(model, width)}"
            f"  conversation {answer.conversation_id}"
        )
    yield ""
    yield from generate_compare_lines(result.comparison(), width=table_width())


def failure_lines(result: FanOut) -> Sequence[str]:
    """A line per request without an answer, and one if Ctrl-C stopped it."""
    lines = [terminal_text(failure.message) for failure in result.failures]
    if result.interrupted:
        lines.append(f"interrupted: {counted(len(result.answers), 'answer')} kept")
    return lines


def echo_failures(result: FanOut) -> None:
    for line in failure_lines(result):
        click.echo(line, err=True)


#: Seconds before a bar shows: shorter work shows nothing.
DELAY_SECONDS = 1.0
DELAY_VARIABLE = "CONVGRAPH_PROGRESS_DELAY"


class ProgressBar:
    """The `(phase, done, total)` callback for long work: a bar on stderr,
    only on a terminal (or `enabled`), only after `delay` seconds (None:
    `DELAY_VARIABLE` or `DELAY_SECONDS`), erased when the `with` block ends;
    `in_bytes` shows counts as kB, MB, GB."""

    def __init__(
        self,
        in_bytes: bool = False,
        stream: IO[str] | None = None,
        delay: float | None = None,
        enabled: bool | None = None,
    ):
        self.in_bytes = in_bytes
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = is_terminal(self.stream) if enabled is None else enabled
        self.delay = _delay() if delay is None else delay
        self._lock = threading.Lock()
        self._latest: tuple[str, int, int | None] | None = None
        self._phase: str | None = None
        self._display: Any = None  # rich's Progress, once shown
        self._task: Any = None
        self._timer: threading.Timer | None = None
        self._started = time.monotonic()
        self._closed = False

    def __enter__(self) -> ProgressBar:
        self._started = time.monotonic()
        if self.enabled and self.delay > 0:
            # A phase reporting once then working long still gets its bar.
            self._timer = threading.Timer(self.delay, self._show_latest)
            self._timer.daemon = True
            self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop and erase the bar."""
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
            if self._display is not None:
                self._display.stop()
                self._display = None

    def __call__(self, phase: str, done: int, total: int | None) -> None:
        if not self.enabled:
            return
        with self._lock:
            if self._closed:
                return
            self._latest = (phase, done, total)
            if self._display is None:
                if time.monotonic() - self._started < self.delay:
                    return
                self._show()
            self._draw(phase, done, total)

    def _show_latest(self) -> None:
        with self._lock:
            if self._closed or self._display is not None or self._latest is None:
                return
            self._show()
            self._draw(*self._latest)

    def _show(self) -> None:
        self._display = _rich_progress(self.stream, self.in_bytes)
        self._display.start()

    def _draw(self, phase: str, done: int, total: int | None) -> None:
        display = self._display
        if phase != self._phase or self._task is None:
            if self._task is not None:
                display.remove_task(self._task)
            self._task = display.add_task(phase, total=total, completed=done)
            self._phase = phase
            display.refresh()  # each phase is seen, however short
        else:
            display.update(self._task, completed=done, total=total)


def _delay() -> float:
    value = os.environ.get(DELAY_VARIABLE)
    try:
        return float(value) if value else DELAY_SECONDS
    except ValueError:
        return DELAY_SECONDS


def _rich_progress(stream: IO[str], in_bytes: bool) -> Any:
    """rich's `Progress` on `stream`, erased when stopped (rich imported here)."""
    from rich.console import Console
    from rich.filesize import decimal
    from rich.progress import (
        BarColumn,
        Progress,
        ProgressColumn,
        Task,
        TaskProgressColumn,
        TextColumn,
    )
    from rich.table import Column
    from rich.text import Text

    def amount(value: float) -> str:
        if in_bytes:
            return decimal(int(value))
        if value < 10_000:
            return str(int(value))
        size, suffix = next(
            (size, suffix)
            for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k"))
            if value >= size
        )
        return f"{value / size:.1f}{suffix}"

    class Counts(ProgressColumn):
        def render(self, task: Task) -> Text:
            if task.total is None:
                took = f"{task.elapsed or 0:.0f} s"
                if task.completed:  # a count without a total: the count
                    took = f"{amount(task.completed)}  {took}"
                return Text(took, style="progress.elapsed")
            counts = f"{amount(task.completed)}/{amount(task.total)}"
            rate = f"  {amount(task.speed)}/s" if task.speed else ""
            return Text(counts + rate, style="progress.download")

    class TimeLeft(ProgressColumn):
        def render(self, task: Task) -> Text:
            left = task.time_remaining
            if task.total is None or left is None:
                return Text("")
            minutes, seconds = divmod(int(left), 60)
            return Text(f"{minutes}:{seconds:02d} left", style="progress.remaining")

    return Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(bar_width=None),
        TaskProgressColumn(),
        Counts(table_column=Column(no_wrap=True)),
        TimeLeft(table_column=Column(no_wrap=True)),
        console=Console(file=stream, force_terminal=True, highlight=False),
        refresh_per_second=5,
        transient=True,
        redirect_stdout=False,
        redirect_stderr=False,
    )
