"""Helpers the test modules call: `run`, the one way tests drive a command
line in process; `run_on_read_only_mount`, a command line in a process that
may write nothing; `file_digest`, to prove that reading changes nothing;
`documented_schemas`, the JSON Schemas a document of docs/ gives;
`wait_until`, for a state another process or thread reaches; and
`examples`, the size of a property test under the loaded hypothesis profile
(the profiles are registered in `conftest.py`).

No test asserts how long anything takes (the benchmarks measure that): a
machine busy with other work makes any bound in seconds fail now and then.
`SAFETY_SECONDS` only turns a hang into a failure."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result
from hypothesis import settings


def plain(column: Any) -> list[Any]:
    """A table column's values as Python values, None where missing: the
    nodes table's strings are Arrow's, where a missing value is pd.NA
    (`convgraph.contract.STRING_COLUMNS`)."""
    values = column.astype(object)
    return values.where(values.notna(), None).tolist()


def printed(function: Callable[..., object], *arguments: Any) -> str:
    """What `function(*arguments)` writes when a click command runs it."""

    @click.command()
    def run() -> None:
        function(*arguments)

    result = CliRunner().invoke(run)
    assert result.exception is None
    return result.output


def examples(count: int) -> int:
    """The number of examples for a property test: `count` under the default
    profile, scaled as the loaded profile scales hypothesis's 100 (so 10 times
    `count` under `thorough`)."""
    return max(1, count * settings().max_examples // 100)


#: The repository's root: docs/ and examples/ are beside tests/.
ROOT = Path(__file__).resolve().parent.parent
#: How long a test waits for a process or thread that must end, or for a
#: state it must reach, before it fails instead of hanging: a safety limit
#: far above any wait on a busy machine, never a measure of speed.
SAFETY_SECONDS = 300


def wait_until(condition: Callable[[], object], what: str, poll: float = 0.01) -> None:
    """Return once `condition()` is true, looking every `poll` seconds: a
    handshake with another process or thread. A condition still false after
    `SAFETY_SECONDS` fails the test, saying `what` never happened."""
    __tracebackhide__ = True
    deadline = time.monotonic() + SAFETY_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"after {SAFETY_SECONDS} s, still not: {what}")
        time.sleep(poll)


def file_digest(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@functools.cache
def documented_schemas(document: str) -> dict[str, dict]:
    """The JSON Schemas that `docs/<document>` gives in its ```json blocks,
    by `$id`, each checked first against its own metaschema (draft
    2020-12). Read once per session; a test must not change them."""
    import jsonschema

    text = (ROOT / "docs" / document).read_text()
    found = {}
    for block in re.findall(r"```json\n(.*?)```", text, flags=re.S):
        schema = json.loads(block)
        jsonschema.Draft202012Validator.check_schema(schema)
        found[schema["$id"]] = schema
    return found


def run_on_read_only_mount(
    directory: Path, mounted: Path, *words: object
) -> subprocess.CompletedProcess[str]:
    """`python -m convgraph WORDS` in a process of its own, with `directory`
    bind-mounted read-only on `mounted` (an empty directory): a private
    mount namespace (`unshare -rm`, as root or in a user namespace), where
    not even root may write a file below `mounted`. The test skips where no
    such namespace can be made. Returns the finished process, its streams
    as text."""
    unshare = shutil.which("unshare")
    probe = subprocess.run(
        [unshare or "unshare", "-rm", "true"], capture_output=True, check=False
    )
    if unshare is None or probe.returncode != 0:
        pytest.skip("no private mount namespace here (unshare -rm)")
    command = shlex.join([sys.executable, "-m", "convgraph", *map(str, words)])
    mount = shlex.join(["mount", "--bind", "-o", "ro", str(directory), str(mounted)])
    return subprocess.run(
        [unshare, "-rm", "sh", "-c", f"{mount} && exec {command}"],
        capture_output=True,
        text=True,
        check=False,
    )


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


#: The variables that tell a program its terminal's size, ahead of the
#: terminal itself: pytest-xdist's workers export `COLUMNS=80`, a user's
#: shell may export anything.
TERMINAL_VARIABLES = ("COLUMNS", "LINES")


def terminal_environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """`env` (else this process's environment) without `TERMINAL_VARIABLES`:
    a child started on a terminal of a known size measures that terminal."""
    chosen = dict(os.environ if env is None else env)
    for name in TERMINAL_VARIABLES:
        chosen.pop(name, None)
    return chosen


def default_signals() -> None:
    """In a child before it runs (`preexec_fn`): SIGINT and SIGTERM back to
    their defaults. A suite started from a background job (`... &` in a
    script, `nohup`, a CI runner) runs with SIGINT ignored, and a child
    inherits that: a test that sends a signal means the default."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)


class OnATerminal:
    """What `run_on_a_terminal` saw: the bytes the pseudo-terminal received, the
    other stream's bytes (a pipe), and the exit status."""

    def __init__(self, shown: bytes, piped: bytes, status: int) -> None:
        self.shown = shown
        self.piped = piped
        self.status = status


def run_on_a_terminal(
    *words: object,
    stream: str = "stdout",
    size: tuple[int, int] = (24, 80),
    env: dict[str, str] | None = None,
) -> OnATerminal:
    """`python -m convgraph WORDS` with `stream` ("stdout", "stderr" or
    "both") on a new pseudo-terminal of `size` (lines, columns), set as a
    terminal sets it, and the other stream (if any) on a pipe, read once the
    terminal is closed (enough for the few kilobytes a test's command
    prints). The terminal is the one size says: `COLUMNS` and `LINES` of
    the caller's environment (or of `env`) are not passed on."""
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", *size, 0, 0))
    process = subprocess.Popen(
        [sys.executable, "-m", "convgraph", *map(str, words)],
        stdout=slave if stream in ("stdout", "both") else subprocess.PIPE,
        stderr=slave if stream in ("stderr", "both") else subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=terminal_environment(env),
        preexec_fn=default_signals,
    )
    os.close(slave)
    received = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        received.append(data)
    os.close(master)
    pipe = process.stderr if stream == "stdout" else process.stdout
    piped = b"" if pipe is None else pipe.read()
    return OnATerminal(b"".join(received), piped, process.wait())


def read_forest(db: Any, **options: Any) -> Any:
    """`Forest.read` of a path through the handle (closed after), or of a
    `Source` already open."""
    import convgraph
    from convgraph import Forest
    from convgraph.sources import Source

    if isinstance(db, Source):
        return Forest.read(db, **options)
    with convgraph.open(db) as logs:
        return Forest.read(logs.source, **options)
