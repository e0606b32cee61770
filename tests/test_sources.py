"""Every generation of llm's database reads into the same trees."""

import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from convgraph import DatabaseError, UnknownConversation
from convgraph.links.integrity import Problem
from convgraph.model import tree as ops
from convgraph.model.loading import load_tree, load_tree_of_node, read_tree
from convgraph.sources import open_logs
from tests.databases import LlmLog, add_response, legacy_database, timestamp
from tests.helpers import (
    SAFETY_SECONDS,
    file_digest,
    read_forest,
    run,
    run_on_read_only_mount,
    wait_until,
)

# -- legacy, linear (llm before 0.32) -----------------------------------------


@pytest.fixture
def linear_db(tmp_path):
    path = tmp_path / "linear.db"
    conn = legacy_database(path, with_parent=False)
    # Logged out of id order on purpose: the chain follows datetime_utc.
    add_response(conn, "r3", "c1", "third", datetime_utc=timestamp(3))
    add_response(conn, "r1", "c1", "first", datetime_utc=timestamp(1))
    add_response(conn, "r2", "c1", "second", datetime_utc=timestamp(2))
    # Same time: the id breaks the tie.
    add_response(conn, "s2", "c2", "tie b", datetime_utc=timestamp(5))
    add_response(conn, "s1", "c2", "tie a", datetime_utc=timestamp(5))
    # Logged outside any conversation: a conversation of its own.
    add_response(conn, "lone", None, "no conversation", datetime_utc=timestamp(9))
    conn.commit()
    conn.close()
    return path


def test_linear_legacy_conversation_is_a_chain_in_log_order(linear_db):
    tree = load_tree("c1", linear_db)
    assert list(tree.edges) == [("r1", "r2"), ("r2", "r3")]
    assert list(load_tree("c2", linear_db).edges) == [("s1", "s2")]


def test_response_without_conversation_is_its_own_tree(linear_db):
    tree = load_tree("lone", linear_db)
    assert list(tree.nodes) == ["lone"]
    assert tree.nodes["lone"]["conversation_id"] == "lone"


def test_linear_forest_matches_the_per_tree_reads(linear_db):
    forest = read_forest(linear_db)
    assert forest.tree_ids == ["c1", "c2", "lone"]
    assert forest.edges.values.tolist() == [
        ["r1", "r2", "c1"],
        ["r2", "r3", "c1"],
        ["s1", "s2", "c2"],
    ]
    for tree_id in forest.tree_ids:
        from_forest = forest.tree(tree_id)
        from_file = load_tree(tree_id, linear_db)
        assert list(from_forest.edges) == list(from_file.edges)
        assert dict(from_forest.nodes(data=True)) == dict(from_file.nodes(data=True))


def test_forest_of_named_conversations_reads_only_those(seed_db, llm_fork_db):
    forest = read_forest(seed_db, conversation_ids=["complex", "linear", "complex"])
    assert forest.tree_ids == ["complex", "linear"]
    assert sorted(forest.edges.itertuples(index=False)) == sorted(
        [(p, c, "complex") for p, c in load_tree("complex", seed_db).edges]
        + [(p, c, "linear") for p, c in load_tree("linear", seed_db).edges]
    )
    assert forest.nodes["prompt"].notna().all()
    assert (
        read_forest(seed_db, text=False, conversation_ids=["linear"])
        .nodes["prompt"]
        .isna()
        .all()
    )
    # A fork's thread id names the whole tree, under the original thread's id.
    forked = read_forest(llm_fork_db["path"], conversation_ids=[llm_fork_db["fork"]])
    assert forked.tree_ids == [llm_fork_db["thread"]]
    assert len(forked) == 5
    seen = []
    read_forest(
        seed_db,
        conversation_ids=["linear"],
        progress=lambda *report: seen.append(report),
    )
    assert seen == [
        ("reading conversations", 0, 1),
        ("reading conversations", 1, 1),
        ("checking parent links", 0, None),
    ]
    with pytest.raises(UnknownConversation, match="'nope'"):
        read_forest(seed_db, conversation_ids=["linear", "nope"])


def test_generations_are_detected(linear_db, seed_db, llm_fork_db):
    with open_logs(linear_db) as logs:
        assert logs.generations == ["responses"]
    with open_logs(seed_db) as logs:
        assert logs.generations == ["responses+parent"]
    with open_logs(llm_fork_db["path"]) as logs:
        # llm 0.36 still creates the legacy tables, empty.
        assert logs.generations == ["responses", "message-store"]


# -- the message store, written by llm 0.36 itself ------------------------------


def test_fork_is_a_branch_of_the_tree_it_came_from(llm_fork_db):
    first, second, third = llm_fork_db["turns"]
    fork_first, fork_second = llm_fork_db["fork_turns"]
    tree = load_tree(llm_fork_db["thread"], llm_fork_db["path"])
    assert tree.graph["tree_id"] == llm_fork_db["thread"]
    assert tree.graph["name"] == "What is a tree?"
    assert sorted(tree.edges) == sorted(
        [
            (first, second),
            (second, third),
            (first, fork_first),
            (fork_first, fork_second),
        ]
    )
    assert ops.children(tree, first) == [second, fork_first]
    assert ops.leaves(tree) == [third, fork_second]


def test_any_thread_id_names_the_whole_tree(llm_fork_db):
    whole = load_tree(llm_fork_db["thread"], llm_fork_db["path"])
    from_fork = load_tree(llm_fork_db["fork"], llm_fork_db["path"])
    assert list(from_fork.edges) == list(whole.edges)
    assert from_fork.graph["tree_id"] == llm_fork_db["thread"]


def test_turn_attributes_come_from_turns_and_parts(llm_fork_db):
    fork_first, fork_second = llm_fork_db["fork_turns"]
    tree = load_tree_of_node(fork_second, llm_fork_db["path"])
    node = tree.nodes[fork_second]
    assert node["conversation_id"] == llm_fork_db["fork"]
    assert node["prompt"] == "Is every tree a graph?"
    assert node["system"] is None
    assert node["model"] == "echo"
    assert node["source"] == "turns"
    # The echo model answers with the prompt it was given, as JSON.
    assert '"prompt": "Is every tree a graph?"' in node["response"]
    assert isinstance(node["input_tokens"], int)
    assert tree.nodes[fork_first]["prompt"] == "What is a graph, then?"


def test_message_store_forest_matches_the_tree(llm_fork_db):
    forest = read_forest(llm_fork_db["path"])
    assert forest.tree_ids == [llm_fork_db["thread"]]
    whole = load_tree(llm_fork_db["thread"], llm_fork_db["path"])
    from_forest = forest.tree(llm_fork_db["thread"])
    assert sorted(from_forest.edges) == sorted(whole.edges)
    assert dict(from_forest.nodes(data=True)) == dict(whole.nodes(data=True))
    assert forest.problems == []


def test_system_prompt_and_fragments_are_resolved(tmp_path):
    with LlmLog(tmp_path) as log:
        fragment = tmp_path / "notes.txt"
        fragment.write_text("FRAGMENT TEXT " * 20)
        log.cli("-m", "echo", "-s", "Be brief.", "-f", str(fragment), "Summarise:")
        turn = log.latest_turn()
        tree = load_tree_of_node(turn, log.path)
    node = tree.nodes[turn]
    assert node["system"] == "Be brief."
    assert node["prompt"] == ("FRAGMENT TEXT " * 20) + "\nSummarise:"


def test_separate_conversations_are_separate_trees(tmp_path):
    with LlmLog(tmp_path) as log:
        first = log.prompt("one")
        second = log.prompt("two")
        forest = read_forest(log.path)
    assert len(forest.tree_ids) == 2
    assert forest.edges.empty
    assert set(forest.nodes["id"]) == {first, second}


def forked_back(directory):
    """A logs.db of llm's with a cycle of forks made by hand: a thread and
    its fork, each `forked_from` the other. Returns (path, thread, fork,
    first turn, fork's turn)."""
    with LlmLog(directory) as log:
        first = log.prompt("What is a tree?")
        thread = log.thread_of(first)
        fork, fork_turn = log.fork(first, "What is a graph, then?")
    conn = sqlite3.connect(log.path)
    conn.execute("update threads set forked_from = ? where id = ?", [fork, thread])
    conn.commit()
    conn.close()
    return log.path, thread, fork, first, fork_turn


def test_a_cycle_of_forks_is_one_tree_whichever_thread_names_it(tmp_path):
    path, thread, fork, first, fork_turn = forked_back(tmp_path)
    smallest = min(thread, fork)  # stands for the original thread
    from_thread = load_tree(thread, path)
    from_fork = load_tree(fork, path)
    for tree in (from_thread, from_fork):
        assert tree.graph["tree_id"] == smallest
        assert list(tree.edges) == [(first, fork_turn)]
    assert dict(from_thread.nodes(data=True)) == dict(from_fork.nodes(data=True))
    assert load_tree_of_node(fork_turn, path).graph["tree_id"] == smallest
    forest = read_forest(path)
    assert forest.tree_ids == [smallest]
    assert list(forest.tree(smallest).edges) == [(first, fork_turn)]


def test_a_cycle_of_forks_is_a_problem(tmp_path):
    path, thread, fork, _, _ = forked_back(tmp_path)
    smallest, other = sorted([thread, fork])
    expected = Problem(
        "fork-cycle",
        smallest,
        other,
        smallest,
        f"{smallest} is on a cycle of 2 forks: {smallest} -> {other} -> {smallest}",
        (smallest, other),
    )
    assert read_forest(path).problems == [expected]
    with open_logs(path) as logs:
        assert read_tree(logs, logs.tree_id_of_conversation(fork))[1] == [expected]
    result = run("check", "--db", path, expect=1)
    assert f"fork-cycle: {expected.message}" in result.stdout


# -- one nodes table whatever the source --------------------------------------


def test_nodes_table_has_the_same_columns_and_dtypes_from_every_source(
    seed_db, llm_fork_db, tmp_path
):
    path = tmp_path / "logs.db"
    conn = legacy_database(path, with_parent=False)
    add_response(
        conn, "01aaaaaaaaaaaaaaaaaaaaaaa1", "conv", "hello", datetime_utc=timestamp(1)
    )
    conn.commit()
    conn.close()
    with LlmLog(tmp_path) as log:
        log.prompt("and now?", continue_conversation="conv")
    # The strings of many values are pandas' string[pyarrow], "string" in
    # print (contract.STRING_COLUMNS).
    expected = {
        "id": "string",
        "tree_id": "category",
        "parent_id": "string",
        "conversation_id": "category",
        "prompt": "string",
        "system": "string",
        "response": "string",
        # The run's content (issue 23): its parts, tool calls and tools.
        "parts": "object",
        "tool_calls": "Int64",
        "tools": "object",
        "model": "category",
        "datetime_utc": "string",
        "input_tokens": "Int64",
        "output_tokens": "Int64",
        "duration_ms": "Int64",
        "source": "category",
        # The branch attributes, attached after reading (contract.py).
        "active": "bool",
        "note": "object",
        "preferred": "bool",
    }
    files = {"legacy": seed_db, "message store": llm_fork_db["path"], "upgraded": path}
    for source, db in files.items():
        for text in (True, False):
            nodes = read_forest(db, text=text).nodes
            dtypes = {column: str(dtype) for column, dtype in nodes.dtypes.items()}
            assert dtypes == expected, (source, text)
        named = read_forest(db, conversation_ids=[nodes["tree_id"][0]]).nodes
        dtypes = {column: str(dtype) for column, dtype in named.dtypes.items()}
        assert dtypes == expected, (source, "named")
    upgraded = read_forest(path).nodes
    assert upgraded["source"].tolist() == ["responses", "turns"]
    assert upgraded["tree_id"].tolist() == ["conv", "conv"]


# -- upgraded databases: both generations -------------------------------------


def test_llm_continuing_a_legacy_conversation_joins_the_two(tmp_path):
    path = tmp_path / "logs.db"
    conn = legacy_database(path, with_parent=False)
    add_response(
        conn, "01aaaaaaaaaaaaaaaaaaaaaaa1", "conv", "hello", datetime_utc=timestamp(1)
    )
    add_response(
        conn, "01aaaaaaaaaaaaaaaaaaaaaaa2", "conv", "again", datetime_utc=timestamp(2)
    )
    conn.commit()
    conn.close()
    with LlmLog(tmp_path) as log:
        new_turn = log.prompt("and now?", continue_conversation="conv")
        tree = load_tree("conv", log.path)
        forest = read_forest(log.path)
    assert list(tree.edges) == [
        ("01aaaaaaaaaaaaaaaaaaaaaaa1", "01aaaaaaaaaaaaaaaaaaaaaaa2"),
        ("01aaaaaaaaaaaaaaaaaaaaaaa2", new_turn),
    ]
    assert [tree.nodes[n]["source"] for n in tree] == [
        "responses",
        "responses",
        "turns",
    ]
    assert tree.nodes[new_turn]["prompt"] == "and now?"
    assert forest.tree_ids == ["conv"]
    assert sorted(forest.tree("conv").edges) == sorted(tree.edges)


def test_a_record_in_both_generations_is_read_once(tmp_path):
    with LlmLog(tmp_path) as log:
        turn = log.prompt("only once")
    conn = sqlite3.connect(log.path)
    thread = conn.execute("select thread_id from turns").fetchone()[0]
    conn.execute(
        "insert into conversations (id, name, model) values (?, 'x', 'echo')", [thread]
    )
    conn.execute(
        "insert into responses (id, model, prompt, response, conversation_id,"
        " datetime_utc) select id, model, 'legacy copy', 'x', thread_id, datetime_utc"
        " from turns"
    )
    conn.commit()
    conn.close()
    tree = load_tree(thread, log.path)
    assert list(tree.nodes) == [turn]
    assert tree.nodes[turn]["source"] == "turns"
    assert tree.nodes[turn]["prompt"] == "only once"
    assert read_forest(log.path).nodes["id"].tolist() == [turn]


# -- reading never writes -----------------------------------------------------


def test_reading_leaves_the_file_byte_identical(llm_fork_db, seed_db):
    for path in (llm_fork_db["path"], seed_db):
        before = file_digest(path)
        forest = read_forest(path)
        for tree_id in forest.tree_ids:
            load_tree(tree_id, path)
        assert file_digest(path) == before
        assert not path.with_name(path.name + "-journal").exists()


def test_read_only_connection_refuses_writes(seed_db):
    with open_logs(seed_db) as logs, pytest.raises(sqlite3.OperationalError):
        logs.conn.execute("delete from responses")


def test_reading_while_llm_holds_a_write_transaction(seed_db):
    writer = sqlite3.connect(seed_db, isolation_level=None)
    writer.execute("begin immediate")
    add_response(writer, "linear-d", "linear", "written meanwhile", parent="linear-c")
    try:
        # The reader sees the last committed state; it does not wait or fail.
        assert load_tree("linear", seed_db).number_of_nodes() == 4
    finally:
        writer.execute("commit")
        writer.close()
    assert load_tree("linear", seed_db).number_of_nodes() == 5


#: Another process: takes the file's exclusive lock, as a writer does while
#: it commits, runs the statements it is given inside that transaction (with
#: a one-page cache, so that their changes spill to the file and its
#: journal), says so, and commits when a line comes on its stdin.
LOCKER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("pragma cache_size = 1")
conn.execute("begin exclusive")
for statement in sys.argv[2:]:
    conn.execute(statement)
print("locked", flush=True)
sys.stdin.readline()
conn.execute("commit")
"""


@contextmanager
def locked(path: Path, *statements: str) -> Iterator[subprocess.Popen]:
    """`LOCKER` holding `path`'s lock from the start of the block to a line
    written to its stdin, or else to the block's end."""
    locker = subprocess.Popen(
        [sys.executable, "-c", LOCKER, str(path), *statements],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert locker.stdout.readline() == "locked\n"
        yield locker
    finally:
        locker.stdin.close()
        locker.wait(timeout=SAFETY_SECONDS)


def test_reading_waits_for_an_exclusive_lock_to_end(seed_db):
    # Another process locks the whole file, as a writer does while it
    # commits, and holds the lock until told to commit; the read, started in
    # a thread, waits (busy timeout) instead of failing.
    import threading

    outcome = {}

    def read() -> None:
        try:
            outcome["tree"] = load_tree("linear", seed_db)
        except BaseException as error:  # shown by the assertion below
            outcome["error"] = error

    reader = threading.Thread(target=read)
    with locked(seed_db) as locker:
        reader.start()
        # The lock ends only once the read is inside its first query, so the
        # read cannot have come after it: `connect_read_only` holding its
        # connection while this thread runs means the reader left the GIL in
        # that query's SQLite call (no bytecode between the assignment and
        # the call can yield it), which cannot get past the lock.
        wait_until(
            lambda: not reader.is_alive() or in_first_query(reader),
            "the read is inside its first query",
            poll=0.001,
        )
        assert in_first_query(reader), outcome
        locker.stdin.write("commit\n")
        locker.stdin.flush()
        reader.join(timeout=SAFETY_SECONDS)
    assert "error" not in outcome, outcome
    assert outcome["tree"].number_of_nodes() == 4


def in_first_query(reader) -> bool:
    """Whether `reader` is inside convgraph's first query of the database:
    its innermost frame is `connect_read_only` after the connection exists."""
    frame = sys._current_frames().get(reader.ident)
    return (
        frame is not None
        and frame.f_code.co_name == "connect_read_only"
        and frame.f_locals.get("conn") is not None
    )


# -- bad input ----------------------------------------------------------------


def test_missing_file(tmp_path):
    with pytest.raises(DatabaseError, match="no database file at"):
        open_logs(tmp_path / "absent.db")
    assert not (tmp_path / "absent.db").exists()


def test_not_sqlite(tmp_path):
    path = tmp_path / "notes.db"
    path.write_text("not a database at all, just some text " * 100)
    with pytest.raises(DatabaseError, match="is not an SQLite database"):
        open_logs(path)


def test_sqlite_without_llm_tables(tmp_path):
    path = tmp_path / "other.db"
    sqlite3.connect(path).execute("create table things (id)").connection.close()
    with pytest.raises(DatabaseError, match="has no llm tables"):
        open_logs(path)


def test_unknown_conversation(seed_db):
    with pytest.raises(UnknownConversation, match="no conversation with id 'nope'"):
        load_tree("nope", seed_db)


def test_a_hot_journal_is_explained_not_rolled_back(seed_db):
    # A writer killed mid-transaction leaves a hot journal; reading must not
    # roll it back (that would be a write), and says what to do instead.
    script = (
        "import os, signal, sqlite3, sys\n"
        "conn = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "conn.execute('pragma cache_size = 1')\n"
        "conn.execute('begin immediate')\n"
        "conn.execute(\"update responses set prompt = 'x' || prompt\")\n"
        "conn.execute(\"update responses set response = 'y' || response\")\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    subprocess.run([sys.executable, "-c", script, str(seed_db)], check=False)
    journal = seed_db.with_name(seed_db.name + "-journal")
    assert journal.exists()
    before = (file_digest(seed_db), file_digest(journal))
    with pytest.raises(DatabaseError, match="holds an unfinished transaction"):
        open_logs(seed_db)
    assert (file_digest(seed_db), file_digest(journal)) == before


def test_a_live_writer_is_not_taken_for_a_stopped_one(seed_db, monkeypatch):
    # Another process is in the middle of a write and holds the lock past
    # the busy timeout (shortened here): its journal is on disk, but it is
    # alive, so the user is told to retry, not to roll anything back.
    import convgraph.sources.llm.files

    monkeypatch.setattr(convgraph.sources.llm.files, "BUSY_TIMEOUT_SECONDS", 0.2)
    with locked(seed_db, "update responses set prompt = 'x' || prompt"):
        assert seed_db.with_name(seed_db.name + "-journal").exists()
        result = run("stats", "--db", seed_db, expect=2)
    assert result.stderr == (
        f"Error: {seed_db} is being written by another process, which held its"
        " lock for more than 0.2 seconds; try again when it has finished\n"
    )


def test_a_wal_file_in_a_read_only_directory_is_explained(tmp_path):
    # SQLite reads a WAL-mode file only through its -shm file, which it
    # cannot create in a read-only directory (here a read-only bind mount).
    source, mounted = tmp_path / "source", tmp_path / "mounted"
    source.mkdir()
    mounted.mkdir()
    conn = legacy_database(source / "logs.db")
    add_response(conn, "r1", "c1", "hello", datetime_utc=timestamp(1))
    conn.commit()
    assert conn.execute("pragma journal_mode = wal").fetchone() == ("wal",)
    conn.close()
    path = mounted / "logs.db"
    result = run_on_read_only_mount(source, mounted, "stats", "--db", path)
    assert (result.returncode, result.stdout) == (2, ""), result.stderr
    assert result.stderr == (
        f"Error: {path} is in WAL mode, and SQLite can read it only with its"
        f" logs.db-shm file beside it, which it cannot create or open in"
        f" {mounted} (a read-only directory?); read a copy made with its -wal"
        " file in a writable directory\n"
    )


# -- whole tables in short steps (snapshot.Snapshot) -------------------------


def test_a_snapshot_reads_the_rows_up_to_its_start_in_short_steps(tmp_path):
    from convgraph.sources import connect_read_only
    from convgraph.sources.llm.snapshot import FIRST_CHUNK_ROWS, Snapshot

    path = tmp_path / "logs.db"
    conn = legacy_database(path)
    rows = FIRST_CHUNK_ROWS + 500
    for index in range(rows):
        add_response(conn, f"r{index:05d}", "c", f"p{index}")
    conn.commit()
    reader = connect_read_only(path)
    snapshot = Snapshot(reader, ["responses"])
    chunks = snapshot.rows("responses", "r.id", alias="r")
    first = next(chunks)
    assert len(first) == FIRST_CHUNK_ROWS
    # Between two statements no lock is held: a writer appends and commits.
    add_response(conn, "z-late", "c", "appended meanwhile")
    conn.commit()
    rest = [row for chunk in chunks for row in chunk]
    ids = [row[1] for row in first + rest]
    assert ids == [f"r{index:05d}" for index in range(rows)]
    assert not snapshot.changed()  # an append: the rows read still stand

    again = Snapshot(reader, ["responses"])
    assert len([row for chunk in again.rows("responses", "id") for row in chunk]) == (
        rows + 1
    )
    conn.execute("delete from responses where id = 'r00007'")
    conn.commit()
    assert again.changed()  # a row read is gone: read again
    conn.close()
    reader.close()
