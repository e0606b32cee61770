"""A search waiting for another process's hold on the index (issue 48): the
wait is said on stderr and bounded; a holder that is stopped (Ctrl-Z,
SIGSTOP) is named at once with how to go on. Real processes hold the lock:
a first search stopped during its build, and one that holds it running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from convgraph.search import search
from tests.helpers import SAFETY_SECONDS, run
from tests.test_search_index import forest_file

#: A first search that stops itself (SIGSTOP) once its build indexes nodes.
STOPPED_BUILD = """
import os, signal, sys
from convgraph.search import search
stopped = []
def progress(phase, done, total):
    if phase == "indexing nodes" and not stopped:
        stopped.append(True)
        os.kill(os.getpid(), signal.SIGSTOP)
print(len(search(sys.argv[1], "museum", progress=progress)))
"""

#: A process holding the index's lock, running, until its stdin closes.
HOLDER = """
import sys
from convgraph.search.index import _lock, index_path
from convgraph.sources import open_logs
with open_logs(sys.argv[1]) as logs:
    path = index_path(logs.path)
path.parent.mkdir(parents=True)
lock = _lock(path, True, print)
print("held", flush=True)
sys.stdin.read()
"""


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(directory))
    return directory


def child(script: str, db: Path, **options: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, str(db)],
        env=os.environ.copy(),
        stdout=subprocess.PIPE,
        text=True,
        **options,  # type: ignore[call-overload]
    )


def test_a_search_stopped_during_its_build_is_named_with_how_to_go_on(tmp_path):
    db = forest_file(tmp_path / "logs.db")
    first = child(STOPPED_BUILD, db)
    try:
        _, status = os.waitpid(first.pid, os.WUNTRACED)
        assert os.WIFSTOPPED(status)
        result = run("search", "--db", db, "museum", expect=2)
        assert result.stdout == ""
        assert result.stderr.count("\n") == 1
        assert f"is held by process {first.pid}, which is stopped" in result.stderr
        assert f"(fg, or kill -CONT {first.pid})" in result.stderr
        assert result.stderr.endswith("or search with --index DIR\n")
    finally:
        os.kill(first.pid, signal.SIGCONT)
    output, _ = first.communicate(timeout=SAFETY_SECONDS)
    assert (first.returncode, output) == (0, "2\n")
    assert [hit.id for hit in search(db, "museum")] == ["d", "c"]


def test_a_wait_for_a_running_holder_is_said_and_bounded(tmp_path, monkeypatch):
    db = forest_file(tmp_path / "logs.db")
    holder = child(HOLDER, db, stdin=subprocess.PIPE)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "held\n"
        monkeypatch.setenv("CONVGRAPH_INDEX_WAIT", "1")
        result = run("search", "--db", db, "museum", expect=2)
        waiting, error = result.stderr.splitlines()
        assert waiting.startswith(f"waiting for process {holder.pid} to let go")
        assert error.startswith("Error: the search index ")
        assert error.endswith(
            f" is still held by process {holder.pid} after 1 s:"
            " search again when it is done, or with --index DIR"
        )
    finally:
        holder.communicate("", timeout=SAFETY_SECONDS)
    assert holder.returncode == 0
    assert [hit.id for hit in search(db, "museum")] == ["d", "c"]
