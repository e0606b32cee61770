"""Fixtures shared by the test modules: the seed database (the four scenarios
of docs/design.md#the-four-scenarios), a logs.db written by llm itself, the
stores that branching writes into; and the hypothesis profiles. The helpers
tests call (`run`, `file_digest`, `examples`) are in `tests/helpers.py`."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from convgraph.store import migrate
from tests.databases import (
    COMPLEX,
    LlmLog,
    add_tree,
    built_once,
    legacy_database,
    seed_database,
)
from tests.helpers import ROOT, TERMINAL_VARIABLES

# Hypothesis profiles. No deadline: the machine may be busy, and speed is
# measured by the benchmarks, never by a test. The default draws the same
# examples on every run (derandomized), so the suite and CI give one answer
# for one commit; `pytest --hypothesis-profile thorough` draws new ones at
# random, ten times as many of every property that sizes itself with
# `examples`: the search for new failures, each kept as a test once found.
# (Registering "default" changes the loaded profile unless the command line
# chose another, which this leaves alone.)
settings.register_profile("default", deadline=None, derandomize=True)
settings.register_profile("thorough", deadline=None, max_examples=1000)


def pytest_configure(config: pytest.Config) -> None:
    """Before any worker starts: the bytecode of the package, the tests and
    the benchmarks written once, so that neither the workers nor each
    `python -m convgraph` a test starts compile them again. compileall
    writes it whatever PYTHONDONTWRITEBYTECODE says (CI sets it, and a
    clean clone has none); a checkout that cannot be written is left as it
    is."""
    if hasattr(config, "workerinput"):
        return
    import compileall

    import convgraph

    for folder in (
        Path(convgraph.__file__).parent,
        ROOT / "tests",
        ROOT / "benchmarks",
    ):
        compileall.compile_dir(folder, quiet=2)


@pytest.fixture(scope="session", autouse=True)
def utc_zone() -> Iterator[None]:
    """Every run in UTC (`TZ`, which every convgraph a test starts inherits):
    the outputs for a person show times in the user's zone, and a test
    asserts them as a machine in UTC shows them, wherever it runs. A test
    of another zone sets its own."""
    import time

    before = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if before is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = before
    time.tzset()


@pytest.fixture(scope="session", autouse=True)
def no_terminal_size() -> Iterator[None]:
    """No `COLUMNS` or `LINES` from the caller (pytest-xdist's workers
    export `COLUMNS=80`; a shell may export anything): the outputs fitted to
    a terminal are asserted for the terminal a test sets itself, and every
    other output for no terminal at all."""
    before = {
        name: os.environ.pop(name) for name in TERMINAL_VARIABLES if name in os.environ
    }
    yield
    os.environ.update(before)


@pytest.fixture(scope="session", autouse=True)
def own_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A cache directory of the run's own (`XDG_CACHE_HOME`, which every
    convgraph a test starts inherits): the search indexes tests build never
    land in the user's cache. The older llm releases' environments stay in
    the user's (`tests.old_llm.USER_CACHE`, read before this runs)."""
    import tests.old_llm  # noqa: F401  (reads the user's cache first)

    cache = tmp_path_factory.mktemp("cache")
    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(cache)
    yield cache
    if before is None:
        del os.environ["XDG_CACHE_HOME"]
    else:
        os.environ["XDG_CACHE_HOME"] = before


@pytest.fixture(scope="session", autouse=True)
def own_config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No saved list of sources (`convgraph sources`): a command given no
    --db reads llm's logs.db, whatever the user's configuration says."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CONVGRAPH_CONFIG_DIR", str(tmp_path_factory.mktemp("config")))
        yield


#: The fixtures that make a test slow (`pytest -m "not slow"` leaves it out),
#: whichever module it is in and however it asks for them: a real browser.
#: Other heavy tests carry `@pytest.mark.slow` themselves.
SLOW_FIXTURES = {"browser"}


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark slow every test that uses one of `SLOW_FIXTURES`; then run the
    slow tests first, each module's in its order. The workers steal from
    each other's queue ends (`--dist worksteal`, pyproject), so the last
    tests are quick ones and neither worker waits long for the other."""
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Chromium, one for each module whose tests drive the HTML page (a test
    that uses it is slow: `SLOW_FIXTURES`)."""
    from tests.browser import chromium

    with chromium() as launched:
        yield launched


@pytest.fixture
def open_page(browser: Any) -> Iterator[Callable[..., Any]]:
    """Open a page in `browser` (`tests.html_pages.Pages.open`), every page
    closed after the test."""
    from tests.html_pages import Pages

    pages = Pages(browser)
    yield pages.open
    pages.close()


@pytest.fixture
def seed_db(tmp_path: Path) -> Path:
    """The four scenarios in a legacy database with parent_response_id."""
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
    """The complex tree of the four scenarios in conversation "t", migrated,
    with a system prompt on its root."""
    return built_once("legacy", _legacy, tmp_path / "logs.db")


def _legacy(path: Path) -> None:
    conn = legacy_database(path, with_parent=True)
    add_tree(conn, "t", COMPLEX)
    conn.execute("update responses set system = 'You like trees' where id = 'root'")
    conn.commit()
    conn.close()
    migrate(path)
