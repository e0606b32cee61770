"""What a fan-out shows: the live progress of its requests on a terminal,
and afterwards the new nodes, the failures and the `compare` table.

The live display is one line per request (waiting, streaming, done, failed,
with tokens and time), redrawn in place with two plain ANSI sequences on
stderr, and only when stderr is a terminal: piped or captured output gets
no display, so what a script reads never holds cursor movements. The final
report goes to stdout; each failure is one line on stderr.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from typing import IO, TYPE_CHECKING

import click

from convgraph.text import cell_width, counted, pad, terminal_text

if TYPE_CHECKING:
    from convgraph.fanout import Job
    from convgraph.store.branch import FanOut

#: At most this often, in seconds, is the display redrawn for a new chunk
#: (a state change redraws at once).
REDRAW_SECONDS = 0.1


def progress_line(job: Job, label_width: int) -> str:
    """One request's line: its label, state, then what it has produced and
    how long it took (or why it failed).

    Examples
    --------
    >>> from convgraph.fanout import Job, Request
    >>> job = Job(Request("echo", 1, "hi", []), "echo", state="done",
    ...           output_tokens=12, started=1.0, ended=1.25)
    >>> progress_line(job, 6)
    'echo    done       12 tokens  0.2 s'
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
    yield from generate_compare_lines(result.comparison())


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
