"""What the user types and reads back on the command line: every number by one bounded
rule (`convgraph.errors.number`), error lines wrapped to the terminal."""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any

import click

from convgraph.errors import BadNumber, number
from convgraph.text import terminal_text


class Number(click.ParamType[int]):
    """A whole number from `least` to `most`, typed in ASCII digits."""

    name = "integer"

    def __init__(self, least: int = 0, most: int = 10**9):
        self.least, self.most = least, most

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> int:
        try:
            return number(str(value), self.least, self.most)
        except BadNumber as error:
            self.fail(str(error), param, ctx)


#: What click writes before a `ClickException`'s message.
ERROR = "Error: "


def error_lines(lines: list[str]) -> str:
    """An error's lines shown safely, each wrapped to the terminal where
    stderr is one (its first after `ERROR`)."""
    from convgraph.cli.output import is_terminal, wrapped

    shown = [terminal_text(line) for line in lines]
    if not is_terminal(sys.stderr):
        return "\n".join(shown)
    try:
        # stderr's own terminal: stdout (which shutil asks) may be a pipe.
        width = os.get_terminal_size(sys.stderr.fileno()).columns
    except (OSError, ValueError, AttributeError):
        width = shutil.get_terminal_size().columns
    out = wrapped(ERROR + shown[0], width)
    out[0] = out[0].removeprefix(ERROR)
    for line in shown[1:]:
        out += wrapped(line, width)
    return "\n".join(out)


def say_written(path: str) -> None:
    """Say on stderr the file (or folder) an output went to, as `search` says
    where its index is; nothing for a device or a pipe."""
    from convgraph.cli.output import say
    from convgraph.writing import written_in_place

    if os.path.isdir(path):
        say(f"wrote {path}")
    elif not written_in_place(path):
        say(f"wrote {path} ({os.path.getsize(path):,} bytes)")
