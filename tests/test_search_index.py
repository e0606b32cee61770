"""The search index as a cache (issues 37 and 39): where it lies (nothing
beside the user's file, `--index DIR`, the cache where a place cannot be
written), one writer at a time (two processes), a damaged or foreign index
built again with one line, no partial directory after SIGTERM or Ctrl-C,
and the index used only for the data it was built from: llm itself logging
(only the new tree read again), a deletion and a new row at the same rowid,
a migration, a file replaced at the same path.
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from convgraph.search import search
from convgraph.search.index import (
    INDEX_SUFFIX,
    META_FILE,
    index_path,
    open_index,
)
from convgraph.sources import open_logs
from convgraph.store import migrate
from tests.databases import LlmLog, add_response, legacy_database, timestamp
from tests.helpers import default_signals, file_digest, read_forest, run
from tests.test_search import FOREST, hit_ids


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(directory))
    return directory


def forest_file(path: Path, with_parent: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = legacy_database(path, with_parent=with_parent)
    for index, (tree, node, parent, prompt, response) in enumerate(FOREST):
        add_response(
            conn,
            node,
            tree,
            prompt,
            parent=parent if with_parent else None,
            response=response,
            datetime_utc=timestamp(index),
            model="gpt-4o" if tree == "t" else "echo",
        )
    conn.commit()
    conn.close()
    return path


@pytest.fixture
def forest_db(tmp_path: Path) -> Path:
    path = forest_file(tmp_path / "data" / "logs.db")
    migrate(path)
    return path


def how_opened(db: Path, phases: list | None = None) -> str:
    """What opening the index did: "" (current), "updated" or "built";
    `phases` gets what it told its progress callback."""

    def progress(phase: str, done: int, total: int | None) -> None:
        if phases is not None:
            phases.append((phase, done, total))

    with open_logs(db) as logs, open_index(logs, progress=progress) as index:
        return index.built


def leftovers(cache: Path) -> list[str]:
    """What lies in the cache directory beside the indexes and their locks."""
    return sorted(
        path.name
        for path in (cache / "convgraph" / "search").iterdir()
        if not path.name.endswith((INDEX_SUFFIX, ".lock"))
    )


# -- where it lies -----------------------------------------------------------


def test_nothing_is_written_beside_the_searched_file(forest_db, cache):
    before = sorted(path.name for path in forest_db.parent.iterdir())
    result = run("search", "--db", forest_db, "zebra")
    assert result.stdout.splitlines()[1] == "   What about the zebra park?"
    assert sorted(path.name for path in forest_db.parent.iterdir()) == before
    index = index_path(forest_db)
    assert index.parent == cache / "convgraph" / "search"
    assert (index / META_FILE).is_file()
    # The line that says where the index went, on the first search only.
    assert result.stderr == f"search index written to {index}\n"
    assert run("search", "--db", forest_db, "zebra").stderr == ""
    assert leftovers(cache) == []


def test_index_dir_puts_it_where_the_user_says(forest_db, tmp_path, cache):
    place = tmp_path / "my-indexes"
    result = run("search", "--db", forest_db, "--index", place, "quokka", "--nl")
    assert '"id":"c"' in result.stdout.replace(" ", "")
    (index,) = place.glob(f"*{INDEX_SUFFIX}")
    assert index == index_path(forest_db, place)
    assert not (cache / "convgraph").exists()


def test_an_index_dir_that_cannot_be_written_falls_back_to_the_cache(
    forest_db, tmp_path, cache
):
    place = tmp_path / "not-a-directory"
    place.write_text("a file where a directory should be")
    result = run("search", "--db", forest_db, "--index", place, "quokka")
    assert result.stderr.splitlines()[0] == (
        f"cannot write in {place}: the search index goes to the cache"
    )
    assert result.stdout.splitlines()[0].startswith("1.  t  c  depth 1")
    assert index_path(forest_db).is_dir()


def test_no_writable_place_at_all_is_one_line(forest_db, tmp_path, monkeypatch):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache should be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    result = run("search", "--db", forest_db, "zebra", expect=2)
    assert result.stderr.startswith("Error: cannot write the search index in ")
    assert result.stderr.count("\n") == 1


def test_a_file_replaced_at_the_same_path_gets_an_index_of_its_own(
    forest_db, tmp_path, cache
):
    assert hit_ids(forest_db, "zebra") == ["b"]
    first = index_path(forest_db)
    other = forest_file(tmp_path / "other.db")
    conn = sqlite3.connect(other)
    conn.execute("update responses set prompt = 'What about the yak park?'")
    conn.commit()
    conn.close()
    os.replace(other, forest_db)
    assert index_path(forest_db) != first
    assert hit_ids(forest_db, "zebra") == []
    assert len(hit_ids(forest_db, "yak")) == len(FOREST)
    # The old identity's index is gone with it.
    assert not first.exists()


# -- one writer at a time ----------------------------------------------------


def test_two_first_searches_at_once_share_one_build(forest_db, cache):
    command = [sys.executable, "-m", "convgraph", "search", "--db", str(forest_db)]
    processes = [
        subprocess.Popen(
            [*command, word, "--nl"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "XDG_CACHE_HOME": str(cache)},
        )
        for word in ("zebra", "quokka", "zebra", "quokka")
    ]
    outputs = [process.communicate(timeout=120) for process in processes]
    assert [process.returncode for process in processes] == [0, 0, 0, 0]
    ids = ['"id": "b"' in out or '"id":"b"' in out for out, _ in outputs]
    assert ids == [True, False, True, False]
    # One build wrote the index; the others found it current.
    written = [err for _, err in outputs if err.startswith("search index written")]
    assert len(written) == 1
    assert leftovers(cache) == []
    assert how_opened(forest_db) == ""


# -- damage --------------------------------------------------------------------


def test_a_damaged_index_is_built_again_with_one_line(forest_db, cache):
    assert hit_ids(forest_db, "zebra") == ["b"]
    index = index_path(forest_db)
    # Every file of the index overwritten in its middle.
    for file in index.iterdir():
        if file.name != META_FILE and file.stat().st_size > 64:
            with file.open("r+b") as handle:
                handle.seek(file.stat().st_size // 2)
                handle.write(os.urandom(32))
    result = run("search", "--db", forest_db, "zebra")
    assert result.stdout.splitlines()[0].startswith("1.  t  b  depth 1  abandoned")
    assert f"the search index {index} is damaged: building it again" in (
        result.stderr.splitlines()
    )
    assert run("search", "--db", forest_db, "zebra").stderr == ""


@pytest.mark.parametrize("damage", ["segments gone", "meta garbage", "foreign"])
def test_a_broken_or_foreign_index_is_built_again(forest_db, cache, damage):
    assert hit_ids(forest_db, "zebra") == ["b"]
    index = index_path(forest_db)
    if damage == "segments gone":
        for file in index.iterdir():
            if file.name != META_FILE and file.name != "meta.json":
                file.unlink()
    elif damage == "meta garbage":
        (index / "meta.json").write_bytes(os.urandom(100))
    else:
        shutil.rmtree(index)
        index.mkdir()
        (index / "logs.db.convgraph-search.db").write_text("an FTS5 index of old")
    result = run("search", "--db", forest_db, "zebra")
    assert result.stdout.splitlines()[0].startswith("1.  t  b")
    assert result.stderr.count("\n") in (1, 2)
    assert result.stderr.splitlines()[-1] == f"search index written to {index}"
    assert leftovers(cache) == []


# -- no partial directory survives ---------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupted_build_leaves_no_partial_directory(tmp_path, cache, signum):
    from benchmarks import synthetic

    db = tmp_path / "big.db"
    synthetic.build_legacy(db, 60_000, 6_000, "linear")
    before = file_digest(db)
    process = subprocess.Popen(
        [sys.executable, "-m", "convgraph", "search", "--db", str(db), "branch"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "XDG_CACHE_HOME": str(cache)},
        preexec_fn=default_signals,
    )
    search_dir = cache / "convgraph" / "search"
    for _ in range(6000):  # until the build has its partial directory
        if search_dir.exists() and any(search_dir.glob("*.partial")):
            break
        if process.poll() is not None:
            pytest.fail("the build ended before it could be interrupted")
        time.sleep(0.01)
    process.send_signal(signum)
    _, err = process.communicate(timeout=60)
    # The way out of every command (convgraph.cli.way_out): one line.
    assert process.returncode == {signal.SIGTERM: 143, signal.SIGINT: 130}[signum]
    assert "Traceback" not in err
    assert err.count("\n") == 1
    assert list(search_dir.glob("*.partial")) == []
    assert file_digest(db) == before
    # The next search builds it whole.
    assert len(search(db, "branch")) == 20


# -- used only for the data it was built from ----------------------------------


def test_llm_logging_more_reads_only_the_new_tree(tmp_path, cache):
    with LlmLog(tmp_path) as log:
        first = log.prompt("Tell me about narwhals")
        other = log.prompt("Tell me about badgers")
        assert hit_ids(log.path, "narwhals") == [first]
        second = log.prompt(
            "Narwhals again", continue_conversation=log.thread_of(first)
        )
        phases: list = []
        assert how_opened(log.path, phases) == "updated"
        # One tree read again, by name: the narwhals' conversation.
        assert ("reading conversations", 1, 1) in phases
        assert how_opened(log.path) == ""
        hits = {hit.id: (hit.depth, hit.active) for hit in search(log.path, "narwhals")}
        assert hits == {first: (0, True), second: (1, True)}
        assert hit_ids(log.path, "badgers") == [other]


def test_a_deletion_then_a_new_row_at_the_same_rowid_is_seen(forest_db):
    # The newest response deleted, then one more logged: same largest rowid
    # and count as before, other ids.
    assert hit_ids(forest_db, "pelican") == ["esc"]
    run("delete", "--db", forest_db, "esc")
    conn = sqlite3.connect(forest_db)
    add_response(
        conn,
        "e",
        "u",
        "What about the aquarium?",
        parent="ru",
        response="Open late.",
        datetime_utc=timestamp(20),
        model="echo",
    )
    conn.commit()
    (rowid,) = conn.execute("select rowid from responses where id = 'e'").fetchone()
    conn.close()
    assert rowid == len(FOREST)  # the deleted row's rowid, used again
    assert hit_ids(forest_db, "pelican") == []
    assert hit_ids(forest_db, "aquarium") == ["e"]
    (hit,) = search(forest_db, "aquarium")
    assert (hit.depth, hit.active) == (3, True)


def test_a_migration_is_seen(tmp_path):
    db = forest_file(tmp_path / "logs.db", with_parent=False)
    before = {hit.id: hit.depth for hit in search(db, "museum")}
    assert before == {"c": 2, "d": 3}  # a legacy conversation is a chain
    migrate(db)
    depths = dict(zip(*_ids_and_depths(db), strict=True))
    after = {hit.id: hit.depth for hit in search(db, "museum")}
    assert after == {"c": depths["c"], "d": depths["d"]}
    assert how_opened(db) == ""


def _ids_and_depths(db: Path) -> tuple[list[str], list[int]]:
    forest = read_forest(db, text=False)
    return forest.nodes["id"].tolist(), forest.depths.tolist()


def test_a_note_renews_the_stamp_without_reading_again(forest_db):
    # The first note makes its table (a change of schema: built again),
    # the second only writes a row of it.
    run("note", "--db", forest_db, "c", "the museum answer")
    assert hit_ids(forest_db, "tickets") == ["d"]
    run("note", "--db", forest_db, "d", "the tickets answer")
    assert how_opened(forest_db) == "updated"
    assert how_opened(forest_db) == ""
    assert hit_ids(forest_db, "tickets") == ["d"]


def test_a_chat_export_is_indexed_again_when_it_changes(tmp_path):
    from tests.chat_exports import chatgpt_branches, write_json

    export = write_json(tmp_path / "conversations.json", [chatgpt_branches()])
    assert hit_ids(export, "burrito") == ["a1b"]
    assert how_opened(export) == ""
    changed = chatgpt_branches()
    changed["mapping"]["u2"]["message"]["content"]["parts"] = ["Simpler, ocelot?"]
    write_json(export, [changed])
    assert hit_ids(export, "ocelot") == ["a2"]


def test_a_read_only_index_dir_falls_back_to_the_cache(forest_db, tmp_path, cache):
    from tests.helpers import run_on_read_only_mount

    place = tmp_path / "indexes"
    run("search", "--db", forest_db, "--index", place, "zebra")
    mounted = tmp_path / "mounted"
    mounted.mkdir()
    before = {path.name: path.stat().st_mtime_ns for path in place.rglob("*")}
    done = run_on_read_only_mount(
        place, mounted, "search", "--db", forest_db, "--index", mounted, "zebra"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1] == "   What about the zebra park?"
    assert done.stderr.splitlines()[0] == (
        f"cannot write in {mounted}: the search index goes to the cache"
    )
    assert {path.name: path.stat().st_mtime_ns for path in place.rglob("*")} == before
    assert index_path(forest_db).is_dir()
