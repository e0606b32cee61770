"""The search index follows each append llm makes by reading its tree alone
(issue 45): a legacy response logged with a parent (by convgraph, or placed
by the migration's trigger under an older llm's row), `llm -c` on a message
store, a fork, a tool-call run, llm continuing a legacy conversation, and
several processes logging at once. The trees read are counted through the
progress callback, never timed.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from convgraph.search import search
from convgraph.search.index import open_index
from convgraph.sources import open_logs
from convgraph.store import migrate
from tests.databases import LlmLog, add_response, timestamp
from tests.test_search_index import forest_file


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(directory))
    return directory


def trees_read(db: Path) -> tuple[str, int | None]:
    """What bringing the index up to date did ("", "updated", "built") and
    how many trees it read, as its progress said (None: it said none)."""
    read: list[int | None] = [None]

    def progress(phase: str, done: int, total: int | None) -> None:
        if phase == "reading conversations":
            read[0] = total

    with open_logs(db) as logs, open_index(logs, progress=progress) as index:
        return index.built, read[0]


def found(db: Path, word: str) -> dict[str, tuple[str, int | None, bool | None]]:
    return {hit.id: (hit.tree_id, hit.depth, hit.active) for hit in search(db, word)}


@pytest.fixture
def migrated(tmp_path: Path) -> Path:
    """The search tests' legacy forest, migrated (the parents' index made)."""
    path = forest_file(tmp_path / "logs.db")
    migrate(path)
    assert trees_read(path)[0] == "built"
    return path


def test_a_legacy_response_logged_with_a_parent_reads_its_tree(migrated):
    conn = sqlite3.connect(migrated)
    add_response(
        conn,
        "e",
        "t",
        "Is there a museum guide?",
        parent="d",
        response="Yes, at the desk.",
        datetime_utc=timestamp(30),
    )
    conn.commit()
    conn.close()
    assert trees_read(migrated) == ("updated", 1)
    assert found(migrated, "guide") == {"e": ("t", 3, True)}
    assert trees_read(migrated) == ("", None)


def test_an_older_llms_response_placed_by_the_trigger_reads_its_tree(migrated):
    # llm before 0.32 names no parent: the migration's trigger gives it the
    # response before it in its conversation.
    conn = sqlite3.connect(migrated)
    conn.execute(
        "insert into responses (id, model, prompt, response, conversation_id,"
        " datetime_utc) values ('old', 'echo', 'And the aquarium?', 'Shut.',"
        " 'u', ?)",
        [timestamp(30)],
    )
    conn.commit()
    (parent,) = conn.execute(
        "select parent_response_id from responses where id = 'old'"
    ).fetchone()
    conn.close()
    assert parent == "esc"
    assert trees_read(migrated) == ("updated", 1)
    assert found(migrated, "aquarium") == {"old": ("u", 4, True)}


def test_two_appends_with_parents_in_two_trees_read_both(migrated):
    conn = sqlite3.connect(migrated)
    add_response(conn, "e", "t", "guide", parent="d", datetime_utc=timestamp(30))
    add_response(conn, "f", "u", "guide", parent="esc", datetime_utc=timestamp(31))
    conn.commit()
    conn.close()
    assert trees_read(migrated) == ("updated", 2)
    assert found(migrated, "guide") == {"e": ("t", 3, True), "f": ("u", 4, True)}


def test_a_link_moved_in_the_older_rows_builds_again(migrated):
    conn = sqlite3.connect(migrated)
    add_response(conn, "e", "t", "guide", parent="d", datetime_utc=timestamp(30))
    conn.commit()
    assert trees_read(migrated) == ("updated", 1)
    conn.execute("update responses set parent_response_id = 'b' where id = 'd'")
    conn.commit()
    conn.close()
    assert trees_read(migrated)[0] == "built"
    assert found(migrated, "tickets") == {"d": ("t", 2, True)}


def test_an_older_row_deleted_with_an_append_builds_again(migrated):
    conn = sqlite3.connect(migrated)
    conn.execute("delete from responses where id = 'b'")
    add_response(conn, "e", "t", "guide", parent="d", datetime_utc=timestamp(30))
    conn.commit()
    conn.close()
    assert trees_read(migrated)[0] == "built"
    assert found(migrated, "zebra") == {}


@pytest.fixture
def store(tmp_path: Path):
    """A message store llm wrote: two conversations, the index built."""
    with LlmLog(tmp_path / "llm") as log:
        log.directory.mkdir()
        first = log.prompt("Tell me about narwhals")
        other = log.prompt("Tell me about badgers")
        assert trees_read(log.path)[0] == "built"
        yield log, first, other


def test_llm_continuing_a_thread_reads_its_tree(store):
    log, first, other = store
    thread = log.thread_of(first)
    second = log.prompt("Narwhals again", continue_conversation=thread)
    assert trees_read(log.path) == ("updated", 1)
    assert found(log.path, "narwhals") == {
        first: (thread, 0, True),
        second: (thread, 1, True),
    }


def test_a_fork_reads_the_tree_it_grows_from(store):
    log, first, other = store
    thread = log.thread_of(first)
    log.prompt("Narwhal tusks", continue_conversation=thread)
    assert trees_read(log.path) == ("updated", 1)
    fork, turn = log.fork(first, "Narwhal songs")
    assert trees_read(log.path) == ("updated", 1)
    hits = found(log.path, "narwhal")
    assert hits[turn] == (thread, 1, True)  # the fork is the branch last used
    assert sorted(hits.values()) == [(thread, 1, False), (thread, 1, True)]


def test_a_tool_call_run_reads_its_tree(store):
    log, first, other = store
    thread = log.thread_of(other)
    turns = log.tool_chain(
        "shout badger",
        [{"name": "shout", "arguments": {"word": "badger"}}],
        "--cid",
        thread,
    )
    assert len(turns) == 2  # the call and its result: one node
    assert trees_read(log.path) == ("updated", 1)
    assert found(log.path, "shout") == {turns[-1]: (thread, 1, True)}


def test_llm_continuing_a_legacy_conversation_reads_its_tree(tmp_path):
    directory = tmp_path / "llm"
    path = forest_file(directory / "logs.db")
    migrate(path)
    with LlmLog(directory) as log:
        log.prompt("Unrelated otters")  # llm's own tables made: built again
        assert trees_read(path)[0] == "built"
        turn = log.prompt("More museum, please", continue_conversation="t")
        assert trees_read(path) == ("updated", 1)
        updated = found(path, "please")
        assert list(updated) == [turn] and updated[turn][0] == "t"
        with open_logs(path) as logs, open_index(logs, rebuild=True):
            pass
        assert found(path, "please") == updated


#: A child process continuing one thread `count` times with llm's own
#: command line; a prompt llm gives up on ("database is locked": two llm
#: processes logging at once) is asked again, as its user would.
CONTINUE = """
import sqlite3, sys, time
from llm.cli import cli
thread, count = sys.argv[1], int(sys.argv[2])
for index in range(count):
    for attempt in range(50):
        try:
            cli.main(["prompt", "-m", "echo", "--cid", thread, f"walrus {index}"],
                     standalone_mode=False)
            break
        except sqlite3.OperationalError as error:
            if "locked" not in str(error):
                raise
            time.sleep(0.05)
"""


def test_several_processes_logging_at_once_read_their_trees(tmp_path):
    with LlmLog(tmp_path) as log:
        threads = [log.thread_of(log.prompt(f"Topic {n}")) for n in range(3)]
        assert trees_read(log.path)[0] == "built"
        before = len(log.turn_ids())
        env = {**os.environ, "LLM_USER_PATH": str(tmp_path)}
        children = [
            subprocess.Popen(
                [sys.executable, "-c", CONTINUE, thread, "3"],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            for thread in threads[:2]
        ]
        ended = [child.communicate(timeout=300) for child in children]
        assert [child.returncode for child in children] == [0, 0], ended
        assert len(log.turn_ids()) == before + 6
        assert trees_read(log.path) == ("updated", 2)
        walruses = found(log.path, "walrus")
        assert sorted({tree for tree, _, _ in walruses.values()}) == sorted(threads[:2])
        assert sorted(depth for _, depth, _ in walruses.values()) == [1, 1, 2, 2, 3, 3]
