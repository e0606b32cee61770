"""Every writer of a migrated file lands where its history ends (issue 23.4).

After `convgraph migrate`, an llm older than 0.32 still logs into the file
with a NULL `parent_response_id`, though it sent the whole conversation as
history. The file places such a row itself (the placing trigger of
`convgraph.store.rules`); the reader places the rows written while that rule
was missing (`convgraph.sources.llm.old_writers`, in two forms held to one
answer here); `check` reports the rows it cannot place; convgraph's own
roots stay roots. Raw sqlite3 inserts without the column stand for the old
llm in the quick tests; the slow ones run llm 0.31 and 0.19 themselves
(`tests/old_llm.py`).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convgraph.model.loading import load_path, load_tree
from convgraph.sources.llm import columnar
from convgraph.sources.llm.old_writers import (
    MIGRATION_NAME,
    RECORD_TABLE,
    ROOTS_TABLE,
    Placing,
    place_records,
    place_records_table,
)
from convgraph.store import log_response, migrate
from convgraph.store.delete import delete_node
from convgraph.store.rules import (
    PLACING_TRIGGER,
    TRIGGERS,
    install_rules,
    missing_rules,
)
from tests.databases import (
    LlmLog,
    add_response,
    built_once,
    legacy_database,
    timestamp,
)
from tests.helpers import examples, plain, read_forest, run
from tests.old_llm import OldLlmUnavailable, old_llm
from tests.test_upgraded import assistant_messages, fork_at_message

#: A time after any migration a test makes (the record holds the real time
#: of the migration), and the i-th one after it.
AFTER = "2999-01-01T00:00:00+00:00"


def later(index: int) -> str:
    return f"2999-01-01T00:{index // 60:02d}:{index % 60:02d}.000000+00:00"


def _migrated(path: Path) -> None:
    """Two conversations llm 0.31 logged before the migration, without the
    column: c1 (a1, a2) and c2 (b1); then `convgraph migrate`, which leaves
    them roots (no --link-linear)."""
    conn = legacy_database(path, with_parent=False)
    add_response(conn, "a1", "c1", "first", datetime_utc=timestamp(1))
    add_response(conn, "a2", "c1", "second", datetime_utc=timestamp(2))
    add_response(conn, "b1", "c2", "other", datetime_utc=timestamp(3))
    conn.commit()
    conn.close()
    migrate(path)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return built_once("old writers", _migrated, tmp_path / "logs.db")


def log_old(
    path: Path,
    node: object,
    conversation: object,
    when: object,
    prompt: str = "more",
) -> None:
    """Log a response as llm before 0.32 does: every column but the parent,
    which it does not know."""
    conn = sqlite3.connect(path)
    try:
        conn.execute(
            "insert into responses (id, model, prompt, response, conversation_id,"
            " datetime_utc, options_json) values (?, 'echo', ?, ?, ?, ?, '{}')",
            [node, prompt, f"answer to {prompt}", conversation, when],
        )
        conn.commit()
    finally:
        conn.close()


def stored_parents(path: Path) -> dict[str, str | None]:
    conn = sqlite3.connect(path)
    try:
        return dict(conn.execute("select id, parent_response_id from responses"))
    finally:
        conn.close()


def sql(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path)
    try:
        for statement in statements:
            conn.execute(statement)
        conn.commit()
    finally:
        conn.close()


def drop_placing_rule(path: Path) -> None:
    """The placing trigger gone, as in a file an older convgraph migrated."""
    sql(path, f"drop trigger {PLACING_TRIGGER}")


def read_parents(path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """Each node's parent as every reader gives it: one tree at a time, the
    whole table by rows, and by columns where the fast extra is installed;
    all must agree."""
    with monkeypatch.context() as patch:
        patch.setattr(columnar, "available", lambda: False)
        forest = read_forest(path, text=False)
    by_table = dict(
        zip(forest.nodes["id"], plain(forest.nodes["parent_id"]), strict=True)
    )
    by_tree = {}
    for tree_id in set(forest.nodes["tree_id"]):
        tree = load_tree(tree_id, path)
        by_tree |= {node: next(iter(tree.predecessors(node)), None) for node in tree}
    assert by_tree == by_table
    fast = read_forest(path, text=False)
    assert dict(zip(fast.nodes["id"], plain(fast.nodes["parent_id"]), strict=True)) == (
        by_table
    )
    return {
        node: (None if pd.isna(parent) else parent) for node, parent in by_table.items()
    }


def check_lines(path: Path, status: int = 0) -> list[str]:
    return run("check", "--db", path, expect=status).stdout.splitlines()


# -- the file itself: the placing trigger -------------------------------------------


def test_a_response_logged_without_a_parent_continues_the_one_before(db):
    log_old(db, "a3", "c1", later(1))
    log_old(db, "a4", "c1", later(2))
    log_old(db, "n1", "c3", later(3))  # a new conversation: its first response
    log_old(db, "solo", None, later(4))  # outside any conversation
    assert stored_parents(db) == {
        "a1": None,
        "a2": None,  # logged before the migration: it stays as it was
        "b1": None,
        "a3": "a2",
        "a4": "a3",
        "n1": None,
        "solo": None,
    }
    assert check_lines(db) == ["no problems found"]


def test_the_placing_update_leaves_llms_search_index_whole(db):
    log_old(db, "a3", "c1", later(1), prompt="mangrove")
    conn = sqlite3.connect(db)
    try:
        # FTS5 checks its index against the table, row by row.
        conn.execute(
            "insert into responses_fts (responses_fts) values ('integrity-check')"
        )
        hits = conn.execute(
            "select r.id from responses_fts f join responses r on r.rowid = f.rowid"
            " where responses_fts match 'mangrove'"
        ).fetchall()
        # llm's triggers are newer than the placing one, so SQLite runs them
        # first: the row is in the index before the UPDATE re-indexes it.
        order = [
            row[0]
            for row in conn.execute(
                "select name from sqlite_master where type = 'trigger'"
                " and name in (?, 'responses_ai') order by rowid",
                [PLACING_TRIGGER],
            )
        ]
    finally:
        conn.close()
    assert hits == [("a3",)]
    assert order == [PLACING_TRIGGER, "responses_ai"]


def test_a_placing_trigger_made_anew_after_llms_is_out_of_order_until_migrate(db):
    sql(db, f"drop trigger {PLACING_TRIGGER}", TRIGGERS[PLACING_TRIGGER])
    conn = sqlite3.connect(db)
    assert missing_rules(conn) == [PLACING_TRIGGER]
    conn.close()
    assert check_lines(db, 1) == [
        "missing-rules: the rule that places responses an llm older than 0.32"
        " logs without a parent is missing, so the file leaves them as roots"
        " (convgraph reads them in place): run `convgraph migrate` to put it back"
    ]
    assert run("migrate", "--db", db).stdout.splitlines()[1:] == [
        f"  - create trigger {PLACING_TRIGGER}"
    ]
    conn = sqlite3.connect(db)
    assert missing_rules(conn) == []
    conn.close()
    log_old(db, "a3", "c1", later(1))
    assert stored_parents(db)["a3"] == "a2"


def test_a_rule_put_back_keeps_the_migrations_first_time(db):
    conn = sqlite3.connect(db)
    query = f"select applied_at from {RECORD_TABLE} where name = ?"
    first = conn.execute(query, [MIGRATION_NAME]).fetchone()[0]
    conn.close()
    drop_placing_rule(db)
    log_old(db, "a3", "c1", later(1))
    run("migrate", "--db", db)
    conn = sqlite3.connect(db)
    assert conn.execute(query, [MIGRATION_NAME]).fetchone()[0] == first
    conn.close()
    # The row logged while the rule was missing is still read in place.
    assert load_tree("c1", db).has_edge("a2", "a3")


def hostile_rows(path: Path) -> None:
    """Rows llm never writes, put in with the rules set aside: a NULL id, a
    BLOB id, an integer time, a conversation named by a response id, and a
    response that names as its parent the id the next insert will take."""
    conn = sqlite3.connect(path)
    with conn:
        names = list(TRIGGERS)
        for name in names:
            conn.execute(f"drop trigger {name}")
        conn.execute(
            "insert into responses (id, conversation_id, datetime_utc) values"
            " (null, 'h', ?), (x'00ff', 'h', ?), ('h-int', 'h', 42),"
            " ('shared', null, ?)",
            [later(1), later(2), later(3)],
        )
        conn.execute(
            "insert into responses (id, conversation_id, parent_response_id,"
            " datetime_utc) values ('child', 'd', 'future', ?)",
            [later(4)],
        )
        install_rules(conn)
    conn.close()


def test_the_trigger_never_fails_the_writers_insert(db):
    hostile_rows(db)
    log_old(db, "h-new", "h", later(5))  # after a BLOB id and a NULL one
    log_old(db, "into-shared", "shared", later(6))  # a response's own id
    log_old(db, "future", "d", later(7))  # stored links already name it
    log_old(db, "no-time", "c1", None)
    log_old(db, 7, 8, 9)  # numbers where llm writes text
    conn = sqlite3.connect(db)
    placed = dict(
        conn.execute(
            "select cast(id as text), parent_response_id from responses"
            " where id in ('h-new', 'into-shared', 'future', 'no-time', '7')"
        )
    )
    conn.close()
    assert placed == {
        "h-new": b"\x00\xff",  # the response logged before it, as stored
        "into-shared": "shared",
        "future": None,  # a link from it could close a cycle: left alone
        "no-time": None,  # sorts first in its conversation: a root
        "7": None,  # the first of conversation '8'
    }


@settings(max_examples=examples(40), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.one_of(
                st.none(), st.sampled_from(["r1", "r2", "r3"]), st.binary(max_size=2)
            ),
            st.one_of(st.none(), st.sampled_from(["c", "r1", "d"])),
            st.one_of(st.none(), st.sampled_from([later(1), later(9), "garbage"])),
            st.one_of(st.none(), st.sampled_from(["r1", "r2", "r3", "gone"])),
        ),
        max_size=6,
    ),
    st.one_of(st.none(), st.sampled_from(["c", "r1", "d"])),
    st.one_of(st.none(), st.sampled_from([later(0), later(5), "zzz"])),
)
def test_whatever_the_file_holds_the_writers_insert_succeeds(
    tmp_path_factory, rows, conversation, when
):
    path = built_once("old writers", _migrated, tmp_path_factory.mktemp("h") / "db")
    conn = sqlite3.connect(path)
    with conn:
        for name in TRIGGERS:
            conn.execute(f"drop trigger {name}")
        for values in rows:
            conn.execute(
                "insert or ignore into responses (id, conversation_id, datetime_utc,"
                " parent_response_id) values (?, ?, ?, ?)",
                values,
            )
        install_rules(conn)
    conn.close()
    log_old(path, "new", conversation, when)  # raises if the trigger does


# -- convgraph's own roots stay roots ----------------------------------------------


def test_convgraphs_own_new_root_stays_a_root(db):
    node = log_response(
        db, prompt="again", response="yes", model="echo", conversation_id="c1"
    )
    child = log_response(
        db, prompt="on", response="ok", model="echo", parent_response_id="a2"
    )
    assert stored_parents(db)[node.node_id] is None
    assert stored_parents(db)[child.node_id] == "a2"
    conn = sqlite3.connect(db)
    assert conn.execute(f"select id from {ROOTS_TABLE}").fetchall() == [(node.node_id,)]
    conn.close()
    # Also where the file no longer places anything itself.
    drop_placing_rule(db)
    tree = load_tree("c1", db)
    assert tree.in_degree(node.node_id) == 0


def test_the_children_of_a_deleted_root_stay_roots(db, monkeypatch):
    log_old(db, "a3", "c1", later(1))
    log_old(db, "a4", "c1", later(2))
    drop_placing_rule(db)
    log_old(db, "a5", "c1", later(3))
    # a5's parent, a4, is where the reader placed it.
    delete_node("a3", db, mode="reparent")  # a3's parent is a2: a4 moves up
    delete_node("a2", db, mode="reparent")  # a2 was a root: a4 becomes one
    parents = read_parents(db, monkeypatch)
    assert parents == {"a1": None, "a4": None, "a5": "a4", "b1": None}
    conn = sqlite3.connect(db)
    assert conn.execute(f"select id from {ROOTS_TABLE}").fetchall() == [("a4",)]
    conn.close()


def test_regenerating_a_root_makes_a_root(db):
    result = json.loads(
        run("regenerate", "a2", "-m", "echo", "--db", db, "--json").stdout
    )
    (answer,) = [a["node_id"] for a in result["answers"]]
    assert result["parent_id"] is None
    assert stored_parents(db)[answer] is None
    drop_placing_rule(db)
    assert load_tree("c1", db).in_degree(answer) == 0


# -- the reader: rows written while the rule was missing ---------------------------


def test_the_reader_places_what_the_rule_missed(db, monkeypatch):
    drop_placing_rule(db)
    log_old(db, "a3", "c1", later(1))
    log_old(db, "a4", "c1", later(2))
    log_old(db, "b2", "c2", later(3))
    log_old(db, "n1", "c3", later(4))
    log_old(db, "a2b", "c1", timestamp(5))  # a time before the migration
    assert set(stored_parents(db).values()) == {None}
    assert read_parents(db, monkeypatch) == {
        "a1": None,
        "a2": None,
        "a2b": None,
        "b1": None,
        "a3": "a2b",
        "a4": "a3",
        "b2": "b1",
        "n1": None,
    }
    assert load_path("a4", db) == ["a2b", "a3", "a4"]
    assert run("path", "a4", "--db", db).stdout.split() == ["a2b", "a3", "a4"]
    assert check_lines(db, 1) == [
        "missing-rules: the rule that places responses an llm older than 0.32"
        " logs without a parent is missing, so the file leaves them as roots"
        " (convgraph reads them in place): run `convgraph migrate` to put it back"
    ]


def test_a_row_whose_time_and_id_disagree_with_the_one_before_is_reported(
    db, monkeypatch
):
    """Two `llm -c` at once (llm 0.19 makes a response's id, a ULID, as it
    writes it): the one that began later (its time) finished first (its id
    sorts first)."""
    log_old(db, "a3b", "c1", later(2))
    log_old(db, "a3c", "c1", later(1))
    # The file's rule sees only what was written before each: siblings.
    assert {k: v for k, v in stored_parents(db).items() if k.startswith("a3")} == {
        "a3b": "a2",
        "a3c": "a2",
    }
    copy = db.with_name("missed.db")
    shutil.copy(db, copy)
    sql(
        copy,
        f"drop trigger {PLACING_TRIGGER}",
        "update responses set parent_response_id = null",
    )
    # The reader sees both: a3c before a3b in log order, written after it.
    parents = read_parents(copy, monkeypatch)
    assert (parents["a3c"], parents["a3b"]) == ("a2", None)
    assert check_lines(copy, 1)[0] == (
        "unplaced: a3b was logged after the migration without a parent (an llm"
        " older than 0.32), but a3c, the response before it by time, has an id"
        " that sorts after its own: which was logged first, and so which it"
        " continued, cannot be told; it is read as a root"
    )
    for forest in (
        read_forest(copy, text=False),
        read_forest(copy, text=False, conversation_ids=["c1"]),  # one tree
    ):
        assert [(p.kind, p.node_id, p.conversation_id) for p in forest.problems] == [
            ("unplaced", "a3b", "c1")
        ]


def test_a_file_without_the_migrations_record_is_read_as_stored(tmp_path, monkeypatch):
    """The column added by hand: no moment says when a NULL parent became an
    old llm's, so nothing is placed."""
    conn = legacy_database(tmp_path / "logs.db")
    add_response(conn, "x1", "c", "a", datetime_utc=later(1))
    add_response(conn, "x2", "c", "b", datetime_utc=later(2))
    conn.commit()
    conn.close()
    assert read_parents(tmp_path / "logs.db", monkeypatch) == {"x1": None, "x2": None}


# -- the rule's two forms ------------------------------------------------------------

MIGRATED_AT = "2025-09-27T10:00:05.000000+00:00"


@st.composite
def legacy_tables(draw) -> tuple[list[dict], Placing]:
    """Legacy rows of a few conversations in log order, some with stored
    parents, times before and after the migration (and none), ids in and
    out of time order, some deliberate roots."""
    count = draw(st.integers(0, 14))
    ids = draw(
        st.lists(
            st.text("abcdef", min_size=1, max_size=3),
            min_size=count,
            max_size=count,
            unique=True,
        )
    )
    records = []
    for node in ids:
        conversation = draw(st.sampled_from(["c1", "c2", "c3"]))
        when = draw(
            st.one_of(st.none(), st.sampled_from([timestamp(i) for i in range(10)]))
        )
        earlier = [r["id"] for r in records if r["conversation_id"] == conversation]
        parent = (
            draw(st.one_of(st.none(), st.sampled_from(earlier))) if earlier else None
        )
        records.append(
            {
                "id": node,
                "conversation_id": conversation,
                "parent_id": parent,
                "datetime_utc": when,
            }
        )
    records.sort(key=lambda r: (r["datetime_utc"] or "", r["id"]))
    roots = draw(st.sets(st.sampled_from(ids))) if ids else set()
    return records, Placing(MIGRATED_AT, frozenset(roots))


@settings(max_examples=examples(300), deadline=None)
@given(legacy_tables(), st.randoms(use_true_random=False))
def test_the_rule_per_tree_and_per_table_agree(table, random):
    records, placing = table
    shuffled = [dict(record) for record in records]
    random.shuffle(shuffled)
    frame = pd.DataFrame(
        shuffled, columns=["id", "conversation_id", "parent_id", "datetime_utc"]
    ).astype({"conversation_id": "category"})
    rows, parents, frame_problems = place_records_table(frame, placing)
    per_tree = [dict(record) for record in records]
    tree_problems = place_records(per_tree, placing)
    placed = dict(zip(frame["id"], frame["parent_id"], strict=True))
    assert {r["id"]: r["parent_id"] for r in per_tree} == {
        node: None if pd.isna(parent) else parent for node, parent in placed.items()
    }
    assert frame_problems == tree_problems
    ids = frame["id"].to_numpy()
    assert dict(zip(ids[rows], ids[parents], strict=True)) == {
        r["id"]: r["parent_id"]
        for r, before in zip(per_tree, records, strict=True)
        if r["parent_id"] != before["parent_id"]
    }
    assert isinstance(rows, np.ndarray)


# -- with the real programs ----------------------------------------------------------


@pytest.fixture(scope="session")
def old31():
    """llm 0.31 with llm-echo 0.4, the last release before the message store."""
    try:
        return old_llm("0.31", "0.4")
    except OldLlmUnavailable as error:
        pytest.skip(str(error))


@pytest.fixture(scope="session")
def old19():
    """llm 0.19 with llm-echo 0.2."""
    try:
        return old_llm("0.19", "0.2")
    except OldLlmUnavailable as error:
        pytest.skip(str(error))


def logged(db: Path) -> list[str]:
    """The legacy responses' ids in the order they were written."""
    conn = sqlite3.connect(db)
    try:
        return [
            row[0] for row in conn.execute("select id from responses order by rowid")
        ]
    finally:
        conn.close()


def conversation_of(db: Path, node: str) -> str:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(
            "select conversation_id from responses where id = ?", [node]
        ).fetchone()[0]
    finally:
        conn.close()


@pytest.mark.slow
@pytest.mark.parametrize("rule", ["in the file", "missing"])
def test_llm_031_goes_on_in_a_migrated_file(old31, tmp_path, monkeypatch, rule):
    """llm 0.31 continues a conversation (`-c`) after `convgraph migrate`:
    the file places each response itself, or, where the placing rule is
    missing (a file an older convgraph migrated), the reader does."""
    old31.run(tmp_path, "-m", "echo", "first question")
    old31.run(tmp_path, "-m", "echo", "-c", "second question")
    db = tmp_path / "logs.db"
    run("migrate", "--db", db, "--link-linear")
    if rule == "missing":
        drop_placing_rule(db)
    old31.run(tmp_path, "-m", "echo", "-c", "third question")
    echo = json.loads(old31.run(tmp_path, "-m", "echo", "-c", "fourth question"))
    old31.run(tmp_path, "-m", "echo", "another conversation")
    old31.run(tmp_path, "-m", "echo", "-c", "and on")
    r1, r2, r3, r4, o1, o2 = logged(db)
    # What llm sent: the whole conversation, in the order logged.
    assert [p["prompt"] for p in echo["previous"]] == [
        "first question",
        "second question",
        "third question",
    ]
    expected = {r1: None, r2: r1, r3: r2, r4: r3, o1: None, o2: o1}
    if rule == "in the file":
        assert stored_parents(db) == expected
        assert check_lines(db) == ["no problems found"]
    else:
        assert stored_parents(db) == {**expected, r3: None, r4: None, o2: None}
        assert check_lines(db, 1)[0].startswith("missing-rules: the rule that places")
    assert read_parents(db, monkeypatch) == expected
    # Put back, the rule places what llm logs next in the file itself.
    run("migrate", "--db", db)
    old31.run(tmp_path, "-m", "echo", "-c", "--cid", conversation_of(db, r1), "fifth")
    assert stored_parents(db)[logged(db)[-1]] == r4


@pytest.mark.slow
def test_llm_019_goes_on_in_a_migrated_file(old19, old31, tmp_path, monkeypatch):
    old19.run(tmp_path, "-m", "echo", "first question")
    old19.run(tmp_path, "-m", "echo", "-c", "second question")
    old31.run(tmp_path, "logs", "status")  # llm's own schema first (m014)
    db = tmp_path / "logs.db"
    run("migrate", "--db", db)  # no --link-linear: r1 and r2 stay roots
    old19.run(tmp_path, "-m", "echo", "-c", "third question")
    old19.run(tmp_path, "-m", "echo", "-c", "fourth question")
    r1, r2, r3, r4 = logged(db)
    expected = {r1: None, r2: None, r3: r2, r4: r3}
    assert stored_parents(db) == expected
    drop_placing_rule(db)
    sql(db, "update responses set parent_response_id = null")
    assert read_parents(db, monkeypatch) == expected


def grow(directory: Path, old19, old31, rule: bool) -> dict[str, str]:
    """A file grown as a long-time user's is: llm 0.19, convgraph migrate,
    convgraph branch, regenerate and note, llm 0.31 -c, llm 0.36 -c and
    LogStore.fork, llm 0.19 -c again. `rule` False: the placing rule is
    dropped right after the migration. Returns the nodes by name."""
    db = directory / "logs.db"
    old19.run(directory, "-m", "echo", "first question")
    old19.run(directory, "-m", "echo", "-c", "second question")
    old19.run(directory, "-m", "echo", "-c", "third question")
    old19.run(directory, "-m", "echo", "elsewhere")
    r1, r2, r3, b1 = logged(db)
    a, b = conversation_of(db, r1), conversation_of(db, b1)
    old31.run(directory, "logs", "status")
    run("migrate", "--db", db, "--link-linear")
    if not rule:
        drop_placing_rule(db)
    x1 = json.loads(run("branch", r2, "branch question", "--db", db, "--json").stdout)
    g1 = json.loads(run("regenerate", r1, "--db", db, "--json").stdout)
    run("note", r3, "the long way", "--db", db)
    echo = json.loads(old31.run(directory, "-m", "echo", "-c", "--cid", a, "fourth"))
    old31.run(directory, "-m", "echo", "-c", "--cid", b, "elsewhere again")
    *_, r4, b2 = logged(db)
    with LlmLog(directory) as log:
        t5 = log.prompt("fifth", continue_conversation=a)
    rebuilt = assistant_messages(db, t5)
    _, tf1 = fork_at_message(db, rebuilt[1], a, "forked at the second answer")
    old19.run(directory, "-m", "echo", "-c", "--cid", a, "sixth")
    r6 = logged(db)[-1]
    # llm 0.31 sent the whole conversation, the regenerated root last.
    assert [p["prompt"] for p in echo["previous"]] == [
        "first question",
        "second question",
        "third question",
        "branch question",
        "first question",
    ]
    return {
        "r1": r1,
        "r2": r2,
        "r3": r3,
        "x1": x1["node_id"],
        "g1": g1["answers"][0]["node_id"],
        "r4": r4,
        "t5": t5,
        "tf1": tf1,
        "r6": r6,
        "b1": b1,
        "b2": b2,
        "a": a,
        "b": b,
    }


#: Where each node of the grown file hangs: under the node whose answer its
#: history ends with.
GROWN = {
    "r1": None,
    "r2": "r1",
    "r3": "r2",
    "x1": "r2",  # convgraph branch
    "g1": None,  # convgraph regenerate of a root: a second start
    "r4": "g1",  # llm 0.31 -c: the whole conversation, g1 logged last
    "t5": "r4",  # llm 0.36 -c: the rebuilt history ends with r4's answer
    "tf1": "r2",  # forked at r2's rebuilt answer
    "r6": "r4",  # llm 0.19 -c: the legacy responses, r4 logged last
    "b1": None,
    "b2": "b1",
}


def right(db: Path, nodes: dict[str, str]) -> int:
    """How many nodes of the grown file hang where `GROWN` says."""
    forest = read_forest(db, text=False)
    parents = dict(zip(forest.nodes["id"], forest.nodes["parent_id"], strict=True))
    assert len(parents) == len(GROWN)
    return sum(
        (None if pd.isna(parents[nodes[name]]) else parents[nodes[name]])
        == (None if parent is None else nodes[parent])
        for name, parent in GROWN.items()
    )


@pytest.mark.slow
@pytest.mark.parametrize("rule", [True, False])
def test_a_file_grown_by_every_writer_places_every_node(
    old19, old31, tmp_path, monkeypatch, rule
):
    nodes = grow(tmp_path, old19, old31, rule)
    db = tmp_path / "logs.db"
    assert right(db, nodes) == len(GROWN)
    for tree_id in (nodes["a"], nodes["b"]):
        tree = load_tree(tree_id, db)
        for name, parent in GROWN.items():
            if nodes[name] in tree:
                found = next(iter(tree.predecessors(nodes[name])), None)
                assert found == (None if parent is None else nodes[parent]), name
    lines = check_lines(db, 0 if rule else 1)
    assert lines == (
        ["no problems found"]
        if rule
        else [
            "missing-rules: the rule that places responses an llm older than 0.32"
            " logs without a parent is missing, so the file leaves them as roots"
            " (convgraph reads them in place): run `convgraph migrate` to put it back"
        ]
    )
    if not rule:
        # Read as convgraph read it before the rule (the stored links
        # alone), the three rows the old llms logged are roots.
        from convgraph.sources.llm import old_writers

        monkeypatch.setattr(old_writers, "read_placing", lambda *args: None)
        assert right(db, nodes) == len(GROWN) - 3
