"""Agents' sessions read in shares, by this process and a worker process
(`agent_workers`): the table of a folder read in two processes is value
for value the table read in one, with and without texts, on the sessions under tests/data/agents and on
a built year of a few hundred sessions (resumed sessions continuing one in
another project, subagents, rewinds); where the shares touch in a way the
parent cannot join, or a worker fails, the read in process gives the same
table or the same error.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from convgraph.errors import DatabaseError
from convgraph.sources import open_logs
from convgraph.sources.agents import workers as agent_workers
from convgraph.sources.agents.files import AGENT_ATTRIBUTES
from convgraph.sources.agents.sessions import AgentSessions
from convgraph.sources.chat.exports import FOREST_COLUMNS
from tests.helpers import run

DATA = Path(__file__).parent / "data" / "agents"
PROJECTS = DATA / "claude-code" / "projects"
PROJECT = PROJECTS / "-home-ada-tree"
CODEX = DATA / "codex" / "sessions"
GEMINI = DATA / "gemini-cli" / "tmp"
NAMES = [*FOREST_COLUMNS, *AGENT_ATTRIBUTES]


def read(
    path: Path, text: bool, parallel: bool, monkeypatch: pytest.MonkeyPatch
) -> tuple[pd.DataFrame, dict, list]:
    """The whole table, the names and the problems of `path`, read by
    workers whatever its size (`parallel`) or in process."""
    with monkeypatch.context() as patch:
        if parallel:
            patch.setattr(agent_workers, "PARALLEL_BYTES", 0)
        else:
            patch.setattr(agent_workers, "WORKERS", 1)
        with open_logs(path) as logs:
            nodes, names = logs.read_forest(text=text)
            return nodes, names, list(logs.record_problems)


def workers_read(path: Path, monkeypatch: pytest.MonkeyPatch) -> object:
    """What `read_in_workers` hands back for `path` (None: read in process)."""
    monkeypatch.setattr(agent_workers, "PARALLEL_BYTES", 0)
    with open_logs(path) as logs:
        assert isinstance(logs, AgentSessions)
        return agent_workers.read_in_workers(logs._module, logs.groups(), False, NAMES)


def assert_same_reads(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for text in (False, True):
        alone, names, problems = read(path, text, False, monkeypatch)
        shared, shared_names, shared_problems = read(path, text, True, monkeypatch)
        pd.testing.assert_frame_equal(shared, alone)
        assert list(shared_names.items()) == list(names.items())
        assert shared_problems == problems


@pytest.mark.parametrize("path", [PROJECTS, PROJECT, CODEX, GEMINI])
def test_workers_read_the_table_read_in_process(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The workers' read is the one taken, not the read in process after it.
    assert workers_read(path, monkeypatch) is not None
    assert_same_reads(path, monkeypatch)


def test_a_resumed_session_in_the_other_share_joins_its_tree(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """s2 resumes s1 (one folder, cut in two runs): each worker reads one,
    and the parent hangs s2's first prompt under s1's leaf, one tree."""
    sizes = agent_workers.group_sizes(
        [("a", [PROJECT / "s1.jsonl"]), ("b", [PROJECT / "s2.jsonl"])]
    )
    with open_logs(PROJECT) as logs:
        assert isinstance(logs, AgentSessions)
        groups = logs.groups()
        parts = agent_workers.shares(groups, agent_workers.group_sizes(groups), 2)
    assert len(parts) == 2 and all(sizes)
    nodes, _, _ = read(PROJECT, False, True, monkeypatch)
    assert nodes["tree_id"].nunique() == 1
    assert_same_reads(PROJECT, monkeypatch)


def test_shares_holding_the_same_messages_are_read_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session copied into another project under another id holds the
    same messages: the workers' shares touch, the parent gives up, and the
    read in process drops the copies as ever."""
    projects = tmp_path / "projects"
    shutil.copytree(PROJECTS, projects)
    copy = projects / "-home-ada-copy"
    copy.mkdir()
    lines = []
    for line in (PROJECT / "s1.jsonl").read_text().splitlines():
        record = json.loads(line)
        if "sessionId" in record:
            record["sessionId"] = "copied-session"
        lines.append(json.dumps(record))
    (copy / "copied.jsonl").write_text("\n".join(lines) + "\n")
    assert workers_read(projects, monkeypatch) is None
    assert_same_reads(projects, monkeypatch)


def test_shares_are_whole_folders_in_order() -> None:
    groups = [
        ("a", [Path("p/a.jsonl")]),
        ("b", [Path("q/b.jsonl")]),
        ("c", [Path("p/c.jsonl")]),
        ("d", [Path("r/d.jsonl")]),
    ]
    assert agent_workers.shares(groups, [10, 25, 10, 5], 2) == [[1], [0, 2, 3]]
    # One folder: runs of about equal bytes.
    one = [(key, [Path("p") / f"{key}.jsonl"]) for key in "abcd"]
    assert agent_workers.shares(one, [10, 10, 10, 10], 2) == [[0, 1], [2, 3]]


def test_worker_count() -> None:
    big = agent_workers.PARALLEL_BYTES
    assert agent_workers.worker_count([big]) == 1
    assert agent_workers.worker_count([big // 4, big // 4]) == 1
    assert agent_workers.worker_count([big, big]) == min(
        agent_workers.WORKERS, __import__("os").cpu_count() or 1
    )


def test_a_worker_failing_gives_the_error_of_the_read_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session file gone between listing and reading: the worker fails,
    and the read in process raises its one-line error."""
    projects = tmp_path / "projects"
    shutil.copytree(PROJECTS, projects)
    errors = []
    for parallel in (False, True):
        with monkeypatch.context() as patch:
            if parallel:
                patch.setattr(agent_workers, "PARALLEL_BYTES", 0)
            with open_logs(projects) as logs:
                assert isinstance(logs, AgentSessions)
                logs.groups()
                gone = projects / "-home-ada-tree" / "s2.jsonl"
                data = gone.read_bytes()
                gone.unlink()
                with pytest.raises(DatabaseError) as raised:
                    logs.read_forest(text=False)
                gone.write_bytes(data)
        errors.append(str(raised.value))
    assert errors[0] == errors[1]
    assert errors[0] == f"cannot read {gone}: No such file or directory"


def test_progress_counts_the_files_read(monkeypatch: pytest.MonkeyPatch) -> None:
    for parallel in (False, True):
        told: list[tuple[str, int, int | None]] = []
        with monkeypatch.context() as patch:
            if parallel:
                patch.setattr(agent_workers, "PARALLEL_BYTES", 0)
            with open_logs(PROJECTS) as logs:
                logs.read_forest(text=False, progress=lambda *a, to=told: to.append(a))
        assert told[0] == (agent_workers.PHASE, 0, 3)
        assert told[-1] == (agent_workers.PHASE, 3, 3)
        done = [count for _, count, _ in told]
        assert done == sorted(done)


def children() -> set[int]:
    """This process's child processes (from /proc), the ended ones
    waited for already left out."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[1]) == os.getpid() and fields[0] != "Z":
                found.add(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_an_interrupted_read_leaves_no_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while the shares are read (here raised by the progress
    callback): the worker is ended, none left behind."""
    monkeypatch.setattr(agent_workers, "PARALLEL_BYTES", 0)
    before = children()
    seen: list[set[int]] = []

    def interrupt(phase: str, done: int, total: int | None) -> None:
        seen.append(children() - before)
        raise KeyboardInterrupt

    with open_logs(PROJECTS) as logs, pytest.raises(KeyboardInterrupt):
        logs.read_forest(text=False, progress=interrupt)
    # The worker reading the second share was running.
    assert len(seen[0]) == 1
    assert children() - before == set()


def write_year(folder: Path, megabytes: int) -> int:
    """A built `projects` folder (the agents benchmark's): its sessions."""
    from benchmarks.agents import write_year as write

    return write(folder, megabytes)["sessions"]


def test_a_built_year_read_by_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dozens of sessions over 40 projects, a tenth resuming one of
    another project: joined across the shares as in process."""
    projects = tmp_path / "projects"
    assert write_year(projects, 6) > 30
    assert workers_read(projects, monkeypatch) is not None
    assert_same_reads(projects, monkeypatch)


@pytest.mark.slow
def test_a_built_year_of_hundreds_of_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    projects = tmp_path / "projects"
    assert write_year(projects, 45) > 250
    assert workers_read(projects, monkeypatch) is not None
    assert_same_reads(projects, monkeypatch)


@pytest.mark.slow
def test_a_line_too_long_in_a_worker_is_the_commands_one_line_error(
    tmp_path: Path,
) -> None:
    """A folder past `PARALLEL_BYTES` (read by workers as the command reads
    it) with a line longer than convgraph reads: exit 2, one line."""
    projects = tmp_path / "projects"
    shutil.copytree(PROJECTS, projects)
    session = projects / "-home-ada-tree" / "s1.jsonl"
    with session.open("a") as stream:
        stream.write('{"type": "user", "pad": "' + "x" * (70 * 2**20) + '"}\n')
    assert sum(f.stat().st_size for f in projects.rglob("*")) > (
        agent_workers.PARALLEL_BYTES
    )
    result = run("stats", "--db", projects, expect=2)
    assert result.output.splitlines() == [
        f"Error: cannot read {session}: a line is longer than 64 MiB"
        " (convgraph reads none longer)"
    ]
