"""`convgraph migrate`: the parent column added to a legacy database, safely.

Idempotent (a second run leaves the file byte for byte), whole (a process
killed inside any of its short transactions leaves every row as it was,
every link right, and a second run finishes the job), with a backup through
SQLite's backup API, a dry run, and `--link-linear`; it refuses a file llm
has not brought to its schema, lists the broken links it finds, puts back
rules that a rebuild dropped; and llm 0.36 goes on working on the migrated
file.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from llm.migrations import MIGRATIONS

from convgraph.model.loading import load_tree_of_node
from convgraph.store import log_response, migrate
from convgraph.store import transaction as transaction_module
from convgraph.store.migrate import MIGRATION_NAME, RECORD_TABLE
from convgraph.store.rules import INDEX_NAME, TRIGGERS
from tests.databases import LlmLog, add_response, add_tree, legacy_database, timestamp
from tests.helpers import file_digest, read_forest, run

ALL_STEPS = [
    "add column responses.parent_response_id (nullable TEXT, references responses.id)",
    "create index idx_responses_parent_response_id",
    "create index idx_responses_conversation_id",
    *(f"create trigger {name}" for name in TRIGGERS),
    "record the migration in _convgraph_migrations",
]
ROOTS_NOTE = (
    "Note: existing responses get no parent, so each becomes a root of its"
    " conversation; --link-linear keeps them as chains"
)


def linear_database(path: Path) -> Path:
    """Two legacy conversations as llm 0.31 logged them (no parent column),
    with a datetime tie broken by id, and a response outside any
    conversation."""
    conn = legacy_database(path, with_parent=False)
    add_tree(conn, "c1", [("a1", None), ("a2", None), ("a3", None)])
    add_tree(conn, "c2", [("b1", None), ("b2", None)], start=10)
    add_response(conn, "b15", "c2", "tie", datetime_utc=timestamp(10))
    add_response(conn, "solo", None, "alone", datetime_utc=timestamp(20))
    conn.commit()
    conn.close()
    return path


def rows(path: Path, columns: list[str] | None = None) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        if columns is None:
            columns = [row[1] for row in conn.execute("pragma table_info(responses)")]
        names = ", ".join(f'"{name}"' for name in columns)
        return conn.execute(f"select {names} from responses order by id").fetchall()
    finally:
        conn.close()


def schema(path: Path) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "select type, name, tbl_name, sql from sqlite_master order by type, name"
        ).fetchall()
    finally:
        conn.close()


def columns_of(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [row[1] for row in conn.execute("pragma table_info(responses)")]
    finally:
        conn.close()


def parents(path: Path) -> dict[str, str | None]:
    conn = sqlite3.connect(path)
    try:
        return dict(conn.execute("select id, parent_response_id from responses"))
    finally:
        conn.close()


def test_dry_run_says_what_would_change_and_changes_nothing(tmp_path):
    db = linear_database(tmp_path / "logs.db")
    before = file_digest(db)
    result = run("migrate", "--db", db, "--dry-run", "--backup", tmp_path / "b.db")
    assert result.stdout.splitlines() == [
        f"Would back up {db} to {tmp_path / 'b.db'}",
        f"{db} needs migrating: its legacy responses have no parent links",
        f"Would migrate {db}:",
        *(f"  - {step}" for step in ALL_STEPS),
        ROOTS_NOTE,
    ]
    assert file_digest(db) == before
    assert not (tmp_path / "b.db").exists()
    assert sorted(os.listdir(tmp_path)) == ["logs.db"]


def test_migration_adds_a_nullable_column_that_references_responses(tmp_path):
    db = linear_database(tmp_path / "logs.db")
    original = rows(db)
    original_columns = columns_of(db)
    conn = sqlite3.connect(db)
    llm_migrations = conn.execute("select * from _llm_migrations").fetchall()
    conn.close()

    result = run("migrate", "--db", db)
    assert result.stdout.splitlines() == [
        f"Migrated {db}:",
        *(f"  - {step}" for step in ALL_STEPS),
        ROOTS_NOTE,
    ]
    conn = sqlite3.connect(db)
    column = conn.execute("pragma table_info(responses)").fetchall()[-1]
    assert tuple(column)[1:] == ("parent_response_id", "TEXT", 0, None, 0)
    references = [
        tuple(row)[2:5] for row in conn.execute("pragma foreign_key_list(responses)")
    ]
    assert ("responses", "parent_response_id", "id") in references
    index = conn.execute(f"pragma index_info({INDEX_NAME})").fetchall()
    assert [row[2] for row in index] == ["parent_response_id"]
    assert conn.execute(f"select name from {RECORD_TABLE}").fetchall() == [
        (MIGRATION_NAME,)
    ]
    # llm's own migration log is left exactly as it was.
    assert conn.execute("select * from _llm_migrations").fetchall() == llm_migrations
    assert conn.execute("pragma integrity_check").fetchall() == [("ok",)]
    conn.close()
    # Every row keeps every value; the new column is NULL everywhere.
    assert rows(db, original_columns) == original
    assert set(parents(db).values()) == {None}


def test_second_run_changes_nothing_not_even_the_files_bytes(tmp_path):
    db = linear_database(tmp_path / "logs.db")
    run("migrate", "--db", db, "--link-linear")
    before = file_digest(db)
    mtime = db.stat().st_mtime_ns
    for args in (["--link-linear"], []):
        result = run("migrate", "--db", db, *args)
        assert result.stdout == f"{db} is already migrated: nothing to do\n"
    assert file_digest(db) == before
    assert db.stat().st_mtime_ns == mtime
    assert sorted(os.listdir(tmp_path)) == ["logs.db"]
    assert migrate(db).applied is False


def test_link_linear_keeps_every_conversation_the_chain_it_was(tmp_path):
    db = linear_database(tmp_path / "logs.db")
    chains = read_forest(db, text=False).edges
    run("migrate", "--db", db, "--link-linear")
    assert parents(db) == {
        "a1": None,
        "a2": "a1",
        "a3": "a2",
        "b1": None,
        "b15": "b1",  # the same datetime as b1: after it, by id
        "b2": "b15",
        "solo": None,
    }
    # convgraph now reads the column, and sees the very same trees.
    linked = read_forest(db, text=False).edges
    assert linked.to_dict("records") == chains.to_dict("records")


def test_link_linear_leaves_llms_search_index_as_it_was(tmp_path):
    db = linear_database(tmp_path / "logs.db")
    conn = sqlite3.connect(db)
    fts_trigger = conn.execute(
        "select sql from sqlite_master where name = 'responses_au'"
    ).fetchone()
    conn.close()
    run("migrate", "--db", db, "--link-linear")
    conn = sqlite3.connect(db)
    assert (
        conn.execute(
            "select sql from sqlite_master where name = 'responses_au'"
        ).fetchone()
        == fts_trigger
    )
    conn.execute("insert into responses_fts (responses_fts) values ('integrity-check')")
    hits = conn.execute(
        "select r.id from responses_fts f join responses r on r.rowid = f.rowid"
        " where responses_fts match 'alone'"
    ).fetchall()
    assert hits == [("solo",)]
    # And the trigger still works for the next update.
    conn.execute("update responses set response = 'renamed' where id = 'a1'")
    conn.commit()
    assert (
        conn.execute(
            "select rowid from responses_fts where responses_fts match 'renamed'"
        ).fetchall()
        == conn.execute("select rowid from responses where id = 'a1'").fetchall()
    )
    conn.close()


def test_backup_is_a_copy_of_the_database_before_the_migration(tmp_path):
    db = linear_database(tmp_path / "logs.db")
    original_schema = schema(db)
    original = rows(db)
    copy = tmp_path / "before.db"
    result = run("migrate", "--db", db, "--backup", copy)
    assert result.stdout.splitlines()[0] == f"Backed up {db} to {copy}"
    assert schema(copy) == original_schema
    assert rows(copy) == original
    assert "parent_response_id" in columns_of(db)


def test_backup_never_overwrites_a_file(tmp_path):
    db = linear_database(tmp_path / "logs.db")
    taken = tmp_path / "taken.db"
    taken.write_text("mine")
    before = file_digest(db)
    result = run("migrate", "--db", db, "--backup", taken, expect=2)
    assert result.stderr == (
        f"Error: backup file {taken} already exists; nothing was changed\n"
    )
    assert taken.read_text() == "mine"
    assert file_digest(db) == before


def test_seeds_bare_column_gets_the_rest(seed_db):
    """The original notes' experiment (docs/design.md#where-it-started) added
    the column with a bare ALTER TABLE:
    the migration adds only the index, the rules and the record."""
    links = parents(seed_db)
    result = run("migrate", "--db", seed_db)
    assert result.stdout.splitlines() == [
        f"Migrated {seed_db}:",
        *(f"  - {step}" for step in ALL_STEPS[1:]),
        "Note: responses.parent_response_id was added without REFERENCES; the"
        " triggers hold it to the same rule (its parent must exist)",
    ]
    assert parents(seed_db) == links


def test_link_linear_never_overwrites_a_tree(seed_db):
    before = file_digest(seed_db)
    result = run("migrate", "--db", seed_db, "--link-linear", expect=2)
    assert result.stderr == (
        "Error: 15 responses already have a parent: --link-linear would"
        " overwrite the tree; nothing was changed\n"
    )
    assert file_digest(seed_db) == before


def test_an_outdated_rule_is_replaced(tmp_path):
    db = linear_database(tmp_path / "logs.db")
    migrate(db)
    conn = sqlite3.connect(db)
    conn.execute("drop trigger convgraph_children_on_delete")
    conn.execute(
        "create trigger convgraph_children_on_delete before delete on responses"
        " begin select 1; end"
    )
    conn.commit()
    conn.close()
    result = run("migrate", "--db", db)
    assert result.stdout.splitlines() == [
        f"Migrated {db}:",
        "  - create trigger convgraph_children_on_delete",
    ]
    conn = sqlite3.connect(db)
    sql = conn.execute(
        "select sql from sqlite_master where name = 'convgraph_children_on_delete'"
    ).fetchone()[0]
    conn.close()
    assert sql == TRIGGERS["convgraph_children_on_delete"]


def test_databases_without_legacy_tables_are_one_line_errors(tmp_path):
    store_only = tmp_path / "store.db"
    conn = sqlite3.connect(store_only)
    conn.execute("create table turns (id text)")
    conn.close()
    result = run("migrate", "--db", store_only, expect=2)
    assert result.stderr == (
        f"Error: {store_only} has no legacy responses table: nothing to migrate"
        " (the message store keeps its tree in messages.parent_hash)\n"
    )
    missing = tmp_path / "missing.db"
    result = run("migrate", "--db", missing, expect=2)
    assert result.stderr == f"Error: no database file at {missing}\n"
    assert not missing.exists()


def test_a_database_locked_by_another_writer(tmp_path, monkeypatch):
    """After the busy timeout: one line, nothing changed; the other writer's
    work is not lost, and the migration goes through once it is done."""
    monkeypatch.setattr(transaction_module, "WRITE_BUSY_TIMEOUT_SECONDS", 0.2)
    db = linear_database(tmp_path / "logs.db")
    original_schema = schema(db)
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("begin immediate")
    writer.execute(
        "insert into responses (id, conversation_id, prompt) values ('late', 'c1', 'x')"
    )
    result = run("migrate", "--db", db, expect=2)
    assert result.stderr == (
        f"Error: {db} is locked by another writer (waited 0.2 s);"
        " nothing was changed, try again when it is free\n"
    )
    writer.execute("commit")
    writer.close()
    assert schema(db) == original_schema
    assert "late" in {row[0] for row in rows(db, ["id"])}
    run("migrate", "--db", db)
    assert "parent_response_id" in columns_of(db)
    assert "late" in parents(db)


# -- llm's own migrations ----------------------------------------------------


def before_llm_schemas(path: Path) -> Path:
    """A logs.db as llm left it before its migration m014_schemas (llm 0.22
    and older): llm's own migrations, run up to m013."""
    import sqlite_utils
    from llm.migrations import ensure_migrations_table

    db = sqlite_utils.Database(path)
    ensure_migrations_table(db)
    for migration in MIGRATIONS:
        if migration.__name__ == "m014_schemas":
            break
        migration(db)
        db["_llm_migrations"].insert({"name": migration.__name__, "applied_at": "-"})
    db.conn.execute(
        "insert into responses (id, conversation_id, prompt, options_json)"
        " values ('old', 'c-old', 'from llm 0.22', '{}')"
    )
    db.conn.commit()
    db.close()
    return path


def test_a_file_llm_has_not_brought_to_its_schema_is_refused(tmp_path):
    """llm's m014 rebuilds responses (sqlite-utils transform), which drops
    every trigger on it: migrating first would lose the rules silently."""
    db = before_llm_schemas(tmp_path / "logs.db")
    before = file_digest(db)
    for args in ([], ["--dry-run"]):
        result = run("migrate", "--db", db, *args, expect=2)
        assert result.stderr == (
            f"Error: llm has not yet brought {db} to its current schema (its"
            " migration m014_schemas, which rebuilds the responses table, has"
            " not run): run llm once (0.23 or later; `llm logs status` will do)"
            " and migrate again; nothing was changed\n"
        )
    assert file_digest(db) == before
    # Once llm has run its migrations, the migration goes through.
    with LlmLog(tmp_path) as log:
        log.cli("logs", "status")
    run("migrate", "--db", db)
    assert migrate(db).applied is False


def test_rules_dropped_by_a_rebuild_are_reported_and_put_back(tmp_path):
    """A file convgraph migrated whose responses table was then rebuilt the
    way llm's m014 does it (sqlite-utils transform): check says the rules are
    missing, migrate puts them back."""
    import sqlite_utils

    db = linear_database(tmp_path / "logs.db")
    run("migrate", "--db", db, "--link-linear")
    run("check", "--db", db)
    database = sqlite_utils.Database(db)
    database["responses"].transform()
    database.close()
    result = run("check", "--db", db, expect=1)
    assert result.stdout == (
        "missing-rules: the tree rules are missing (8 of 8 triggers on"
        " responses), so nothing stops a write from breaking the tree:"
        " run `convgraph migrate` to put them back\n"
    )
    result = run("migrate", "--db", db)
    assert result.stdout.splitlines() == [
        f"Migrated {db}:",
        *(f"  - create trigger {name}" for name in TRIGGERS),
    ]
    run("check", "--db", db)
    conn = sqlite3.connect(db)
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("delete from responses where id = 'a1'")
    conn.close()


def test_check_says_nothing_of_rules_on_a_file_never_migrated(seed_db, tmp_path):
    run("check", "--db", seed_db)
    run("check", "--db", linear_database(tmp_path / "logs.db"))


# -- broken links already there -------------------------------------------------


def test_migrating_over_broken_links_lists_them(tmp_path):
    """Rows written before the rules may already break them: migrate says so
    and lists them as check does, then adds the rules (which change no row:
    the links stay broken, readers drop them, and no new ones can be made)."""
    db = tmp_path / "logs.db"
    conn = legacy_database(db, with_parent=True)
    add_tree(
        conn,
        "t",
        [("root", None), ("me", "me"), ("orphan", "ghost"), ("x", "y"), ("y", "x")],
    )
    add_tree(conn, "u", [("far", "root")], start=10)
    conn.close()
    before = rows(db)
    check = run("check", "--db", db, expect=1).stdout.splitlines()
    listing = [f"Note: {line}" for line in check]
    dry = run("migrate", "--db", db, "--dry-run")
    result = run("migrate", "--db", db)
    for output in (dry.stdout, result.stdout):
        lines = output.splitlines()
        start = lines.index(
            "Note: 4 responses already break the tree's rules (as `convgraph check`"
            " lists them below); the rules refuse new breaks, these stay as they"
            " are until you fix them"
        )
        assert lines[start + 1 :] == listing
    assert rows(db) == before
    assert len(check) == 4


# -- killed while migrating ---------------------------------------------------

BIG = 50_000


@pytest.fixture(scope="module")
def big_database(tmp_path_factory) -> Path:
    """50,000 legacy responses in 2,500 conversations, with llm's search
    index: `migrate --link-linear` links them in more than one transaction."""
    path = tmp_path_factory.mktemp("big") / "logs.db"
    conn = legacy_database(path, with_parent=False)
    conn.executemany(
        "insert into conversations (id, name, model) values (?, ?, 'echo')",
        [(f"c{i:05d}", f"conversation {i}") for i in range(BIG // 20)],
    )
    conn.executemany(
        "insert into responses (id, conversation_id, prompt, response, model,"
        " datetime_utc, options_json) values (?, ?, ?, ?, 'echo', ?, '{}')",
        [
            (
                f"r{i:06d}",
                f"c{i // 20:05d}",
                f"question {i} about trees",
                f"answer {i} " * 8,
                timestamp(i % 3000),
            )
            for i in range(BIG)
        ],
    )
    conn.commit()
    conn.close()
    return path


def _expected_linear(path: Path) -> dict[str, str | None]:
    conn = sqlite3.connect(path)
    try:
        return dict(
            conn.execute(
                "select id, lag(id) over (partition by conversation_id"
                " order by datetime_utc, id) from responses"
            )
        )
    finally:
        conn.close()


def conn_rows(path: Path) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("select * from _llm_migrations").fetchall()
    finally:
        conn.close()


def _digest(table_rows: list[tuple]) -> str:
    return hashlib.sha256(repr(table_rows).encode()).hexdigest()


# Runs a migration (--link-linear) that stops inside the transaction of the
# step named argv[2] (its argv[3]-th run), after that step's writes and before
# its commit, says so, and waits there to be killed.
KILLABLE = """
import sys, time
import convgraph.store
module = sys.modules["convgraph.store.migrate"]
step, nth = sys.argv[2], int(sys.argv[3])
seen = []
def stop_inside(name):
    seen.append(name)
    if name == step and seen.count(name) == nth:
        print("inside the transaction", flush=True)
        time.sleep(600)
module.after_step = stop_inside
module.migrate(sys.argv[1], link_linear=True)
"""

# Where a kill lands: (step, its nth run), and what the file holds after
# SQLite rolls the killed transaction back.
KILL_POINTS = [
    ("add column", 1, "as it was"),
    ("add index", 1, "column"),
    ("add conversation index", 1, "column"),
    ("link", 1, "column"),
    ("link", 2, "partly linked"),
    ("add rules", 1, "linked, no rules"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("step", "nth", "expected"), KILL_POINTS)
def test_killed_inside_each_transaction_the_file_is_whole_and_a_rerun_finishes(
    big_database, tmp_path, step, nth, expected
):
    """Each kill lands inside a transaction that has written (its rollback
    journal is there): SQLite rolls it back, the file holds every row as it
    was, every link it has is right, and `migrate` run again finishes."""
    original_columns = columns_of(big_database)
    original_schema = schema(big_database)
    original_rows = _digest(rows(big_database))
    expected_parents = _expected_linear(big_database)
    path = tmp_path / "logs.db"
    shutil.copyfile(big_database, path)
    process = subprocess.Popen(
        [sys.executable, "-c", KILLABLE, str(path), step, str(nth)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout.readline() == "inside the transaction\n"
        # The transaction has written: its rollback journal is on disk.
        assert Path(f"{path}-journal").stat().st_size > 0
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()

    conn = sqlite3.connect(path)  # read-write: rolls the hot journal back
    assert conn.execute("pragma integrity_check").fetchall() == [("ok",)]
    conn.execute("insert into responses_fts (responses_fts) values ('integrity-check')")
    triggers = {
        row[0]
        for row in conn.execute(
            "select name from sqlite_master where type = 'trigger'"
            " and name like 'convgraph%'"
        )
    }
    conn.close()
    assert _digest(rows(path, original_columns)) == original_rows
    assert triggers == set()
    if expected == "as it was":
        assert schema(path) == original_schema
    else:
        linked = {node: parent for node, parent in parents(path).items() if parent}
        # Every link there is the linear one.
        assert all(expected_parents[node] == parent for node, parent in linked.items())
        wanted = {node for node, parent in expected_parents.items() if parent}
        if expected == "column":
            assert linked == {}
        elif expected == "partly linked":
            assert 0 < len(linked) < len(wanted)
        else:
            assert set(linked) == wanted

    # Run again (an unfinished --link-linear goes on without the option).
    again = ["--link-linear"] if expected == "as it was" else []
    run("migrate", "--db", path, *again)
    assert parents(path) == expected_parents
    conn = sqlite3.connect(path)
    names = {
        row[0]
        for row in conn.execute("select name from sqlite_master where type = 'trigger'")
    }
    recorded = conn.execute(f"select name from {RECORD_TABLE}").fetchall()
    conn.close()
    assert names == set(TRIGGERS) | {"responses_ai", "responses_ad", "responses_au"}
    assert recorded == [(MIGRATION_NAME,)]
    assert migrate(path).applied is False
    assert not Path(f"{path}-journal").exists()


# -- llm goes on working ------------------------------------------------------


def test_llm_still_opens_logs_continues_and_lists_after_the_migration(tmp_path):
    with LlmLog(tmp_path) as log:
        legacy_database(log.path, with_parent=False).close()
        first = log_response(
            log.path, prompt="What is a tree?", response="A graph.", model="echo"
        )
        second = log_response(
            log.path,
            prompt="And a forest?",
            response="Trees.",
            model="echo",
            conversation_id=first.conversation_id,
        )
        run("migrate", "--db", log.path, "--link-linear")
        conn = sqlite3.connect(log.path)
        convgraph_rows = conn.execute("select * from _llm_migrations").fetchall()
        assert len(convgraph_rows) == 24  # llm 0.31's, untouched
        conn.close()

        log.cli("logs", "status")  # opens it, and applies llm 0.36's migrations
        new = log.prompt("A new question")
        continued = log.prompt("Go on", continue_conversation=first.conversation_id)
        listed = json.loads(log.cli("logs", "list", "--json", "-n", "0"))

    assert {row["id"] for row in listed} == {
        first.node_id,
        second.node_id,
        new,
        continued,
    }
    by_id = {row["id"]: row for row in listed}
    assert by_id[second.node_id]["response"] == "Trees."
    assert by_id[continued]["conversation_id"] == first.conversation_id
    conn = sqlite3.connect(log.path)
    names = [row[0] for row in conn.execute("select name from _llm_migrations")]
    conn.close()
    # llm applied its own migrations and nothing in its log is convgraph's.
    assert set(names) == {migration.__name__ for migration in MIGRATIONS}
    assert set(convgraph_rows) <= set(conn_rows(log.path))
    # llm's migrations kept convgraph's rules; the continuation hangs from
    # the legacy conversation's last response.
    assert migrate(log.path).applied is False
    tree = load_tree_of_node(continued, log.path)
    assert list(tree.predecessors(continued)) == [second.node_id]
    assert list(tree.predecessors(second.node_id)) == [first.node_id]


def test_a_database_llm_036_created_migrates_and_llm_goes_on(tmp_path):
    """llm 0.36 creates an empty legacy responses table beside the message
    store: it migrates, and llm's threads are untouched and continue."""
    with LlmLog(tmp_path) as log:
        first = log.prompt("What is a tree?")
        conversation = log.thread_of(first)
        before = load_tree_of_node(first, log.path)
        run("migrate", "--db", log.path)
        second = log.prompt("And a forest?", continue_conversation=conversation)
    tree = load_tree_of_node(second, log.path)
    assert list(tree.edges) == [(first, second)]
    assert tree.nodes[first] == before.nodes[first]
    assert "parent_response_id" in columns_of(log.path)


def test_dry_run_on_a_database_llm_036_made_says_it_needs_nothing(tmp_path):
    """llm 0.36 keeps branches in its message store: `migrate --dry-run`
    says the file needs no migration before listing what one would add to
    its empty legacy table (issue 38.8), and changes nothing."""
    with LlmLog(tmp_path) as log:
        log.prompt("What is a tree?")
    before = file_digest(log.path)
    lines = run("migrate", "--db", log.path, "--dry-run").stdout.splitlines()
    assert lines[:2] == [
        f"{log.path} needs no migration: llm 0.32 and later keeps branches in"
        " its message store, and the legacy responses table is empty; migrating"
        " only prepares that table for an llm older than 0.32",
        f"Would migrate {log.path}:",
    ]
    assert file_digest(log.path) == before
