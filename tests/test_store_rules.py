"""The tree's rules, as the database enforces them after `convgraph migrate`.

Raw sqlite3 writes stand for every other writer (llm, the sqlite3 shell,
Datasette): the triggers must refuse them, not only convgraph's own API.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convgraph.model.loading import load_tree
from convgraph.store import NotMigrated, RuleViolation, log_response, migrate
from convgraph.store.responses import new_response_id
from convgraph.store.rules import TRIGGERS
from tests.databases import add_tree, legacy_database, migrated_complex
from tests.helpers import read_forest

SELF = "convgraph: a response cannot be its own parent"
MISSING = "convgraph: parent_response_id names no response"
CROSS = "convgraph: the parent response is in another conversation"
CYCLE = "convgraph: the parent link would close a cycle"
REPLACED = "convgraph: a response with children cannot be replaced (update it instead)"
HAS_CHILDREN = (
    "convgraph: a response with children cannot be deleted"
    " (convgraph delete --reparent or --cascade)"
)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return migrated_complex(tmp_path / "logs.db")


def refused(path: Path, sql: str, params: list | tuple = ()) -> str:
    """Run one raw write; return the database's refusal."""
    conn = sqlite3.connect(path)
    try:
        with pytest.raises(sqlite3.IntegrityError) as error:
            conn.execute(sql, params)
        return str(error.value)
    finally:
        conn.close()


def write(path: Path, sql: str, params: list | tuple = ()) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.execute(sql, params)
        conn.commit()
    finally:
        conn.close()


def parents(path: Path) -> dict[str, str | None]:
    conn = sqlite3.connect(path)
    try:
        return dict(
            conn.execute("select id, parent_response_id from responses order by id")
        )
    finally:
        conn.close()


INSERT = (
    "insert into responses (id, conversation_id, parent_response_id, prompt)"
    " values (?, ?, ?, 'p')"
)


def test_migration_installs_exactly_the_five_triggers(db):
    conn = sqlite3.connect(db)
    names = [
        row[0]
        for row in conn.execute(
            "select name from sqlite_master where type = 'trigger'"
            " and name like 'convgraph%' order by name"
        )
    ]
    conn.close()
    assert names == sorted(TRIGGERS)


def test_insert_with_parent_in_another_conversation_is_refused(db):
    assert refused(db, INSERT, ["new", "other", "b"]) == CROSS
    # A NULL conversation is a conversation of its own, as readers see it.
    assert refused(db, INSERT, ["new", None, "b"]) == CROSS


def test_insert_naming_itself_as_parent_is_refused(db):
    assert refused(db, INSERT, ["new", "t", "new"]) == SELF


def test_insert_with_a_parent_that_does_not_exist_is_refused(db):
    assert refused(db, INSERT, ["new", "t", "nobody"]) == MISSING


def test_update_that_closes_a_cycle_is_refused(db):
    # root -> b -> c: making c the parent of root closes root -> b -> c -> root.
    assert (
        refused(db, "update responses set parent_response_id = 'c' where id = 'root'")
        == CYCLE
    )
    assert (
        refused(db, "update responses set parent_response_id = 'b' where id = 'b'")
        == SELF
    )
    assert parents(db)["root"] is None


def test_insert_or_replace_that_closes_a_cycle_is_refused(db):
    # Replacing b with a row whose parent is its own child c: b has children,
    # so the replace itself is refused.
    assert (
        refused(
            db,
            "insert or replace into responses (id, conversation_id,"
            " parent_response_id) values ('b', 't', 'c')",
        )
        == REPLACED
    )
    assert parents(db)["b"] == "root"


def test_null_parents_and_valid_children_are_allowed(db):
    write(db, INSERT, ["second-root", "t", None])
    write(db, INSERT, ["new", "t", "g"])
    write(db, "update responses set parent_response_id = 'second-root' where id = 'e'")
    write(db, "update responses set parent_response_id = null where id = 'b'")
    stored = parents(db)
    assert (stored["new"], stored["e"], stored["b"], stored["second-root"]) == (
        "g",
        "second-root",
        None,
        None,
    )


def test_moving_a_child_to_another_conversation_is_refused(db):
    # g's parent e stays in "t".
    assert (
        refused(db, "update responses set conversation_id = 'other' where id = 'g'")
        == CROSS
    )


def test_a_response_with_children_keeps_its_id_and_conversation(db):
    assert (
        refused(db, "update responses set id = 'renamed' where id = 'e'")
        == "convgraph: a response with children keeps its id"
    )
    write(db, "update responses set parent_response_id = null where id = 'b'")
    # b is now a root, but c and d still hang from it.
    assert (
        refused(db, "update responses set conversation_id = 'other' where id = 'b'")
        == "convgraph: a response with children stays in its conversation"
    )


def test_a_childless_root_may_change_conversation_and_id(db):
    write(db, "update responses set conversation_id = 't' where id = 'lone'")
    write(db, "update responses set id = 'lone2' where id = 'lone'")
    assert parents(db)["lone2"] is None


def test_replacing_a_parent_into_another_conversation_is_refused(db):
    assert (
        refused(
            db,
            "insert or replace into responses (id, conversation_id) values ('e', 'other')",
        )
        == REPLACED
    )


def test_update_or_replace_onto_a_parent_is_refused(db):
    """REPLACE deletes the row it collides with without firing delete
    triggers: renaming lone onto b would delete b and hand its children to a
    response of another conversation."""
    before = parents(db)
    for sql in (
        "update or replace responses set id = 'b' where id = 'lone'",
        "update or replace responses set id = 'b', conversation_id = 't'"
        " where id = 'lone'",
        "update or replace responses set id = 'e' where id = 'g'",
    ):
        assert refused(db, sql) == REPLACED
    # A plain UPDATE onto a parent's id is refused too (it broke UNIQUE before).
    assert refused(db, "update responses set id = 'b' where id = 'lone'") == REPLACED
    assert parents(db) == before


def test_insert_or_replace_onto_a_parent_is_refused(db):
    before = parents(db)
    assert (
        refused(
            db,
            "insert or replace into responses (id, conversation_id, prompt)"
            " values ('b', 't', 'new')",
        )
        == REPLACED
    )
    assert (
        refused(db, "replace into responses (id, conversation_id) values ('root', 't')")
        == REPLACED
    )
    assert parents(db) == before


def test_sqlite_utils_replace_onto_a_parent_is_refused_and_update_works(db):
    import sqlite_utils

    database = sqlite_utils.Database(db)
    with pytest.raises(sqlite3.IntegrityError) as error:
        database["responses"].insert(
            {"id": "b", "conversation_id": "t", "prompt": "new"}, replace=True
        )
    assert str(error.value) == REPLACED
    database["responses"].update("b", {"prompt": "edited"})
    # A leaf has no children to lose: replacing it stays allowed.
    database["responses"].insert(
        {"id": "g", "conversation_id": "t", "parent_response_id": "e", "prompt": "g2"},
        replace=True,
    )
    database.close()
    conn = sqlite3.connect(db)
    prompts = dict(conn.execute("select id, prompt from responses"))
    conn.close()
    assert (prompts["b"], prompts["g"]) == ("edited", "g2")
    assert parents(db)["c"] == "b"
    assert read_forest(db, text=False).problems == []


def test_deleting_a_response_with_children_is_refused(db):
    assert refused(db, "delete from responses where id = 'b'") == HAS_CHILDREN
    write(db, "delete from responses where id = 'c'")
    assert "c" not in parents(db)


def test_a_refused_write_leaves_the_transaction_usable(db):
    """RAISE(ABORT) undoes the one statement; the writer's transaction goes on."""
    conn = sqlite3.connect(db)
    conn.execute(INSERT, ["ok-1", "t", "g"])
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute(INSERT, ["bad", "t", "nobody"])
    conn.execute(INSERT, ["ok-2", "t", "ok-1"])
    conn.commit()
    conn.close()
    stored = parents(db)
    assert (stored["ok-1"], stored["ok-2"], "bad" in stored) == ("g", "ok-1", False)


def test_cycle_check_ends_on_a_cycle_already_in_the_table(tmp_path):
    """Older rows may hold a cycle (written before the migration): the
    trigger's walk still ends, and its answer is right."""
    path = tmp_path / "logs.db"
    conn = legacy_database(path, with_parent=True)
    add_tree(conn, "t", [("x", "y"), ("y", "x"), ("z", None)])
    conn.close()
    migrate(path)
    write(path, INSERT, ["w", "t", "x"])  # the walk goes x, y and stops
    write(path, "update responses set parent_response_id = 'w' where id = 'z'")
    assert refused(path, INSERT, ["v", "t", "v"]) == SELF
    stored = parents(path)
    assert (stored["w"], stored["z"], "v" in stored) == ("x", "w", False)


@pytest.mark.slow
def test_cycle_check_on_a_deep_chain(tmp_path):
    """A 20,000-deep chain: the walk is a recursive query, not recursion."""
    path = tmp_path / "logs.db"
    conn = legacy_database(path, with_parent=True)
    conn.executemany(
        "insert into responses (id, conversation_id, parent_response_id) values (?, 'deep', ?)",
        [(f"n{i}", f"n{i - 1}" if i else None) for i in range(20_000)],
    )
    conn.commit()
    conn.close()
    migrate(path)
    assert (
        refused(
            path, "update responses set parent_response_id = 'n19999' where id = 'n0'"
        )
        == CYCLE
    )
    write(path, INSERT, ["tip", "deep", "n19999"])
    assert parents(path)["tip"] == "n19999"


# -- log_response -----------------------------------------------------------


def test_log_response_writes_a_root_in_a_new_conversation(db):
    logged = log_response(
        db, prompt="Why trees?", response="Because.", model="echo", input_tokens=2
    )
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    row = dict(
        conn.execute(
            "select * from responses where id = ?", [logged.node_id]
        ).fetchone()
    )
    conversation = dict(
        conn.execute(
            "select * from conversations where id = ?", [logged.conversation_id]
        ).fetchone()
    )
    conn.close()
    assert len(logged.node_id) == 26 and logged.node_id == logged.node_id.lower()
    assert {
        key: row[key]
        for key in (
            "prompt",
            "response",
            "model",
            "conversation_id",
            "parent_response_id",
            "input_tokens",
            "options_json",
        )
    } == {
        "prompt": "Why trees?",
        "response": "Because.",
        "model": "echo",
        "conversation_id": logged.conversation_id,
        "parent_response_id": None,
        "input_tokens": 2,
        "options_json": "{}",
    }
    assert conversation == {
        "id": logged.conversation_id,
        "name": "Why trees?",
        "model": "echo",
    }


def test_log_response_child_goes_in_its_parents_conversation(db):
    logged = log_response(
        db, prompt="more", response="yes", model="echo", parent_response_id="g"
    )
    assert logged.conversation_id == "t"
    tree = load_tree("t", db)
    assert list(tree.predecessors(logged.node_id)) == ["g"]


def test_log_response_translates_the_triggers_refusals(db):
    with pytest.raises(RuleViolation) as error:
        log_response(
            db,
            prompt="x",
            response="y",
            model="echo",
            parent_response_id="b",
            conversation_id="other",
            response_id="bad",
        )
    assert str(error.value) == (
        "cannot log response 'bad' with parent 'b': the parent response is in another conversation"
    )
    with pytest.raises(RuleViolation) as error:
        log_response(
            db, prompt="x", response="y", model="echo", parent_response_id="nobody"
        )
    assert str(error.value) == "cannot log a child of 'nobody': no response has that id"
    with pytest.raises(RuleViolation) as error:
        log_response(db, prompt="x", response="y", model="echo", response_id="g")
    assert str(error.value) == "cannot log response 'g': that id is taken"
    # Nothing was left behind: no conversation row for the refused write.
    conn = sqlite3.connect(db)
    assert conn.execute("select count(*) from responses").fetchone()[0] == 8
    assert conn.execute("select id from conversations order by id").fetchall() == [
        ("other",),
        ("t",),
    ]
    conn.close()


def test_log_response_needs_the_migration_for_a_parent(tmp_path, seed_db):
    bare = tmp_path / "bare.db"
    legacy_database(bare, with_parent=False).close()
    with pytest.raises(NotMigrated) as error:
        log_response(
            bare, prompt="x", response="y", model="echo", parent_response_id="a"
        )
    assert str(error.value) == (
        "the database has no parent_response_id column yet: run `convgraph migrate`"
    )
    # A root needs no migration: it is a plain legacy row.
    assert log_response(bare, prompt="x", response="y", model="echo").conversation_id
    # A bare ALTER TABLE (the original notes' experiment) has the column but
    # not the rules.
    with pytest.raises(NotMigrated) as error:
        log_response(
            seed_db,
            prompt="x",
            response="y",
            model="echo",
            parent_response_id="linear-c",
        )
    assert str(error.value).startswith(
        "the database has parent_response_id but not convgraph's rules (7 triggers missing)"
    )


def test_log_response_joins_the_callers_transaction(db):
    conn = sqlite3.connect(db)
    conn.execute(
        "insert into conversations (id, name, model) values ('mine', 'm', 'echo')"
    )
    first = log_response(
        conn, prompt="a", response="b", model="echo", conversation_id="mine"
    )
    with pytest.raises(RuleViolation):
        log_response(
            conn,
            prompt="a",
            response="b",
            model="echo",
            parent_response_id="b",
            conversation_id="mine",
        )
    second = log_response(
        conn, prompt="c", response="d", model="echo", parent_response_id=first.node_id
    )
    assert conn.in_transaction  # still the caller's, uncommitted
    conn.rollback()
    conn.close()
    assert first.node_id not in parents(db) and second.node_id not in parents(db)


def test_new_response_ids_sort_in_the_order_they_were_made():
    ids = [new_response_id() for _ in range(1000)]
    assert ids == sorted(ids) and len(set(ids)) == 1000


# -- every write, held to the rules -----------------------------------------

NODES = [f"n{i}" for i in range(6)]
CONVERSATIONS = ["c1", "c2"]

operations = st.lists(
    st.one_of(
        st.tuples(
            st.just("insert"),
            st.sampled_from(NODES),
            st.sampled_from(CONVERSATIONS),
            st.one_of(st.none(), st.sampled_from(NODES + ["ghost"])),
        ),
        st.tuples(
            st.just("parent"),
            st.sampled_from(NODES),
            st.one_of(st.none(), st.sampled_from(NODES + ["ghost"])),
        ),
        st.tuples(
            st.just("move"), st.sampled_from(NODES), st.sampled_from(CONVERSATIONS)
        ),
        st.tuples(st.just("delete"), st.sampled_from(NODES)),
    ),
    max_size=25,
)


def allowed(
    state: dict[str, tuple[str, str | None]],
    node: str,
    conversation: str,
    parent: str | None,
) -> bool:
    """Whether (node in conversation, with parent) keeps `state` a forest."""
    if parent is None:
        return True
    if parent == node or parent not in state or state[parent][0] != conversation:
        return False
    seen = set()
    current: str | None = parent
    while current is not None and current not in seen:
        if current == node:
            return False
        seen.add(current)
        current = state[current][1] if current in state else None
    return True


def placed(
    state: dict[str, tuple[str, str | None]], node: str, conversation: str
) -> str | None:
    """The parent the placing rule gives a row inserted without one: the
    response before it in its conversation (log order; these rows have no
    time, so by id), unless stored links already name it as their parent."""
    if any(parent == node for _, parent in state.values()):
        return None
    before = [n for n, (c, _) in state.items() if c == conversation and n < node]
    return max(before, default=None)


_TEMPLATE: list[bytes] = []


def _empty_migrated(factory) -> bytes:
    """The bytes of an empty migrated database, made once."""
    if not _TEMPLATE:
        path = factory.mktemp("template") / "logs.db"
        legacy_database(path, with_parent=False).close()
        migrate(path)
        _TEMPLATE.append(path.read_bytes())
    return _TEMPLATE[0]


@pytest.mark.slow
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(operations)
def test_any_sequence_of_raw_writes_keeps_the_table_a_forest(tmp_path_factory, ops):
    """Model-based: each raw write is accepted exactly when the rules allow
    it, and convgraph then reads the table without a single problem."""
    path = tmp_path_factory.mktemp("rules") / "logs.db"
    path.write_bytes(_empty_migrated(tmp_path_factory))
    conn = sqlite3.connect(path, isolation_level=None)
    state: dict[str, tuple[str, str | None]] = {}
    for op in ops:
        kind, node = op[0], op[1]
        if kind == "insert":
            conversation, parent = op[2], op[3]
            expected = node not in state and allowed(state, node, conversation, parent)
            sql, params = INSERT, [node, conversation, parent]
            after = (conversation, parent or placed(state, node, conversation))
        elif kind == "parent":
            if node not in state:
                continue
            parent = op[2]
            expected = allowed(state, node, state[node][0], parent)
            sql = "update responses set parent_response_id = ? where id = ?"
            params, after = [parent, node], (state[node][0], parent)
        elif kind == "move":
            if node not in state:
                continue
            conversation = op[2]
            has_children = any(p == node for _, p in state.values())
            expected = (conversation == state[node][0] or not has_children) and allowed(
                state, node, conversation, state[node][1]
            )
            sql = "update responses set conversation_id = ? where id = ?"
            params, after = [conversation, node], (conversation, state[node][1])
        else:
            if node not in state:
                continue
            expected = not any(p == node for n, (_, p) in state.items() if n != node)
            sql, params, after = "delete from responses where id = ?", [node], None
        try:
            conn.execute(sql, params)
            accepted = True
        except sqlite3.IntegrityError:
            accepted = False
        assert accepted == expected, (op, state)
        if accepted:
            if after is None:
                del state[node]
            else:
                state[node] = after
    stored = {
        row[0]: (row[1], row[2])
        for row in conn.execute(
            "select id, conversation_id, parent_response_id from responses"
        )
    }
    conn.close()
    assert stored == state
    assert read_forest(path, text=False).problems == []
