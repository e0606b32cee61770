"""Progress on a terminal: `ProgressBar`, the `(phase, done, total)`
callback the commands give the library (drawn on stderr by rich, only on a
terminal, only after `DELAY_SECONDS`, erased at the end), and the
fan-out's live lines, redrawn in place on a terminal's stderr alone, so
what a script reads never holds cursor movements.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from typing import IO, TYPE_CHECKING, Any

import click

from convgraph.text import cell_width, counted, pad, terminal_text

if TYPE_CHECKING:
    from convgraph.store.branch import FanOut
    from convgraph.store.fanout import Job

#: At most this often, in seconds, is the display redrawn for a new chunk
#: (a state change redraws at once).
REDRAW_SECONDS = 0.1


def progress_line(job: Job, label_width: int) -> str:
    """One request's line: its label, state, then what it has produced and
    how long it took (or why it failed).
    """
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
    """The live display: give it as `on_change`; it redraws its lines in
    place on a terminal and does nothing elsewhere."""

    def __init__(self, stream: IO[str] | None = None):
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = _is_terminal(self.stream)
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
        # Lines no wider than the terminal, so that moving the cursor up by
        # the number of lines lands back on the first.
        lines = [progress_line(job, width)[:columns] for job in jobs]
        up = f"\x1b[{self.drawn}F" if self.drawn else ""
        self.stream.write(up + "".join(f"\x1b[2K{line}\n" for line in lines))
        self.stream.flush()
        self.drawn = len(lines)


def _is_terminal(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def fan_out_record(result: FanOut) -> dict[str, object]:
    """The JSON document of a fan-out: the parent, the new answers and the
    failures in the order asked, and the compare records of the answers and
    their siblings (empty when nothing was logged)."""
    comparison = result.comparison() if result.answers else None
    return {
        "parent_id": result.parent_id,
        "answers": [answer.to_dict() for answer in result.answers],
        "failures": [failure.to_dict() for failure in result.failures],
        "interrupted": result.interrupted,
        "compare": comparison.to_dicts() if comparison is not None else [],
    }


def generate_fan_out_lines(result: FanOut) -> Iterator[str]:
    """The report for a person: one line per new node, then the `compare`
    table of it and its siblings."""
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
    """One line per request that gave no answer, and a last one when Ctrl-C
    stopped the run."""
    lines = [terminal_text(failure.message) for failure in result.failures]
    if result.interrupted:
        kept = len(result.answers)
        lines.append(f"interrupted: {counted(kept, 'answer')} kept")
    return lines


def echo_failures(result: FanOut) -> None:
    """Print `failure_lines` on stderr."""
    for line in failure_lines(result):
        click.echo(line, err=True)


#: How long work goes on, in seconds, before its bar is shown: work shorter
#: than this shows nothing.
DELAY_SECONDS = 1.0
#: The environment variable that sets that delay (tests set 0).
DELAY_VARIABLE = "CONVGRAPH_PROGRESS_DELAY"


class ProgressBar:
    """The `(phase, done, total)` callback the commands give long work: a bar
    on stderr, shown only on a terminal and only after `delay` seconds,
    erased when the `with` block ends.

    Each new phase replaces the bar's line: its name (which says what is
    counted: "reading responses", "building trees"), then, where it has a
    total, the bar, the share done, the count, the rate and the time left;
    without a total, a moving bar, the count so far and the time the phase
    has taken.

    Parameters
    ----------
    in_bytes
        The counts are bytes: shown as kB, MB and GB.
    stream
        Where the bar is drawn (stderr).
    delay
        Seconds before the bar shows; None reads `DELAY_VARIABLE`, else
        `DELAY_SECONDS`.
    enabled
        Whether to draw at all; None: when `stream` is a terminal.
    """

    def __init__(
        self,
        in_bytes: bool = False,
        stream: IO[str] | None = None,
        delay: float | None = None,
        enabled: bool | None = None,
    ):
        self.in_bytes = in_bytes
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = _is_terminal(self.stream) if enabled is None else enabled
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
            # A phase that reports once and then works for long (linking a
            # million rows) still gets its bar when the delay is up.
            self._timer = threading.Timer(self.delay, self._show_latest)
            self._timer.daemon = True
            self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop and erase the bar (nothing is left on the screen)."""
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
        """The timer's end: show the phase under way, if any."""
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
            # A task per phase: its rate and time left are its own.
            if self._task is not None:
                display.remove_task(self._task)
            self._task = display.add_task(phase, total=total, completed=done)
            self._phase = phase
            display.refresh()  # each phase is seen, however short
        else:
            display.update(self._task, completed=done, total=total)


def _delay() -> float:
    """The delay `DELAY_VARIABLE` sets, or `DELAY_SECONDS`."""
    value = os.environ.get(DELAY_VARIABLE)
    try:
        return float(value) if value else DELAY_SECONDS
    except ValueError:
        return DELAY_SECONDS


def _rich_progress(stream: IO[str], in_bytes: bool) -> Any:
    """rich's `Progress` on `stream`, erased when stopped, with the columns
    of `ProgressBar`. rich is imported here, only when a bar is shown."""
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
        # Short figures, so that the line fits 80 columns.
        if value < 10_000:
            return str(int(value))
        size, suffix = next(
            (size, suffix)
            for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k"))
            if value >= size
        )
        return f"{value / size:.1f}{suffix}"

    class Counts(ProgressColumn):
        """done/total and the rate, or the time taken without a total."""

        def render(self, task: Task) -> Text:
            if task.total is None:
                took = f"{task.elapsed or 0:.0f} s"
                if task.completed:  # a count without a total: the count
                    took = f"{amount(task.completed)}  {took}"
                return Text(took, style="progress.elapsed")
            counts = f"{amount(task.completed)}/{amount(task.total)}"
            speed = task.speed
            rate = f"  {amount(speed)}/s" if speed else ""
            return Text(counts + rate, style="progress.download")

    class TimeLeft(ProgressColumn):
        """The time left, where a total and a rate tell it."""

        def render(self, task: Task) -> Text:
            left = task.time_remaining
            if task.total is None or left is None:
                return Text("")
            minutes, seconds = divmod(int(left), 60)
            return Text(f"{minutes}:{seconds:02d} left", style="progress.remaining")

    console = Console(file=stream, force_terminal=True, highlight=False)
    return Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(bar_width=None),
        TaskProgressColumn(),
        Counts(table_column=Column(no_wrap=True)),
        TimeLeft(table_column=Column(no_wrap=True)),
        console=console,
        # Five redraws a second: smooth enough, and under 1% of a core.
        refresh_per_second=5,
        transient=True,
        redirect_stdout=False,
        redirect_stderr=False,
    )
