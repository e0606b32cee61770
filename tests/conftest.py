"""Fixtures and helpers shared by the test modules: the seed database, a
logs.db written by llm itself, a file digest to prove reading changes
nothing, and `run`, the one way tests drive a command line in process."""

from __future__ import annotations

import hashlib
import sys
import traceback
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result
from hypothesis import settings

sys.path.insert(0, str(Path(__file__).parent))

from databases import (  # noqa: E402
    COMPLEX,
    LlmLog,
    add_tree,
    legacy_database,
    seed_database,
)

from convgraph.store import migrate  # noqa: E402

# Hypothesis profiles. No deadline: the machine may be busy, and speed is
# measured by the benchmarks, never by a test. `pytest --hypothesis-profile
# thorough` tries ten times as many examples of every property that sizes
# itself with `examples`. (Registering "default" changes the loaded profile
# unless the command line chose another, which this leaves alone.)
settings.register_profile("default", deadline=None)
settings.register_profile("thorough", deadline=None, max_examples=1000)


def examples(count: int) -> int:
    """The number of examples for a property test: `count` under the default
    profile, scaled as the loaded profile scales hypothesis's 100 (so 10 times
    `count` under `thorough`)."""
    return max(1, count * settings().max_examples // 100)


@pytest.fixture
def seed_db(tmp_path: Path) -> Path:
    """The seed's four scenarios in a legacy database with parent_response_id."""
    return seed_database(tmp_path / "seed.db")


@pytest.fixture(scope="session")
def llm_fork_db(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A logs.db written by llm 0.36 itself: a conversation of three prompts
    (`llm -m echo`, then `--cid` twice) and a fork at its first answer,
    continued twice. Session-scoped: tests must only read it."""
    directory = tmp_path_factory.mktemp("llm")
    with LlmLog(directory) as log:
        first = log.prompt("What is a tree?")
        thread = log.thread_of(first)
        second = log.prompt("And a forest?", continue_conversation=thread)
        third = log.prompt("Give an example", continue_conversation=thread)
        fork, fork_first = log.fork(first, "What is a graph, then?")
        fork_second = log.prompt("Is every tree a graph?", continue_conversation=fork)
    return {
        "path": log.path,
        "thread": thread,
        "fork": fork,
        "turns": [first, second, third],
        "fork_turns": [fork_first, fork_second],
    }


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


# -- the databases that branching writes into ---------------------------------


@pytest.fixture
def store(tmp_path: Path):
    """A conversation of two prompts, logged by llm 0.36 with echo."""
    with LlmLog(tmp_path) as log:
        first = log.prompt("What is a tree?")
        conversation = log.thread_of(first)
        second = log.prompt("And a forest?", continue_conversation=conversation)
        yield log, conversation, first, second


@pytest.fixture
def legacy(tmp_path: Path) -> Path:
    """The seed's complex tree in conversation "t", migrated, with a system
    prompt on its root."""
    path = tmp_path / "logs.db"
    conn = legacy_database(path, with_parent=True)
    add_tree(conn, "t", COMPLEX)
    conn.execute("update responses set system = 'You like trees' where id = 'root'")
    conn.commit()
    conn.close()
    migrate(path)
    return path
