"""Helpers the test modules call: `run`, the one way tests drive a command
line in process; `file_digest`, to prove that reading changes nothing; and
`examples`, the size of a property test under the loaded hypothesis profile
(the profiles are registered in `conftest.py`)."""

from __future__ import annotations

import hashlib
import traceback
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result
from hypothesis import settings


def examples(count: int) -> int:
    """The number of examples for a property test: `count` under the default
    profile, scaled as the loaded profile scales hypothesis's 100 (so 10 times
    `count` under `thorough`)."""
    return max(1, count * settings().max_examples // 100)


def file_digest(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def run(
    *args: object,
    expect: int | None = 0,
    cli: click.Command | None = None,
    **options: Any,
) -> Result:
    """Invoke a command line in process, as a user would type it.

    Parameters
    ----------
    args:
        The words of the command line; each is passed as ``str(arg)``, so
        paths can be given as they are.
    expect:
        The exit status the command must end with (0 unless given); a
        different one fails the test with the command line, both streams
        and the exception it raised. None checks nothing, for tests that
        look at the status themselves.
    cli:
        The command to invoke: convgraph's group unless given (llm's, for
        the plugin's tests).
    options:
        Passed to ``CliRunner.invoke``: ``input``, ``env``, ``color``,
        ``catch_exceptions``.

    Returns
    -------
    click.testing.Result
        ``stdout`` and ``stderr`` hold each stream alone; ``output`` holds
        both as a terminal shows them.
    """
    __tracebackhide__ = True  # a failure points at the test's call, not here
    if cli is None:
        from convgraph.cli import cli
    words = [str(arg) for arg in args]
    result = CliRunner().invoke(cli, words, **options)
    if expect is not None and result.exit_code != expect:
        pytest.fail(
            f"{cli.name} {' '.join(words)}\n"
            f"exit status {result.exit_code}, expected {expect}\n"
            f"--- stdout ---\n{result.stdout}"
            f"--- stderr ---\n{result.stderr}"
            f"--- exception ---\n{_exception_text(result)}"
        )
    return result


def _exception_text(result: Result) -> str:
    """The traceback of what the command raised, or "none": an exit through
    SystemExit (click's usual way out) has nothing more to say."""
    if result.exc_info is None or isinstance(result.exception, SystemExit):
        return "none\n"
    return "".join(traceback.format_exception(*result.exc_info))
