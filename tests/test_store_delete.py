"""`convgraph delete`: the deletion policy (docs/design.md#deleting-a-node).

A node with children is refused unless --children reparent or --children
cascade says what becomes of them (the flags before them, --reparent and
--cascade, still work); --dry-run says what would go and writes nothing; one transaction; nothing is left pointing at a deleted
response; the message store is never touched.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from convgraph.model.loading import load_tree
from convgraph.model.tree import roots
from convgraph.store import DeletionRefused, delete_node, log_response, migrate
from convgraph.store import transaction as transaction_module
from tests.databases import (
    LlmLog,
    add_tree,
    legacy_database,
    migrated_complex,
)
from tests.helpers import file_digest, run


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """The complex tree of the four scenarios in conversation "t" and a
    one-response conversation "other", migrated:

        root -> b -> c, d
             -> e -> f, g
    """
    return migrated_complex(tmp_path / "logs.db")


def edges(path: Path, conversation: str = "t") -> list[tuple[str, str]]:
    return sorted(load_tree(conversation, path).edges)


def ids(path: Path, table: str = "responses", column: str = "id") -> list:
    conn = sqlite3.connect(path)
    try:
        return sorted(
            row[0] for row in conn.execute(f'select "{column}" from "{table}"')
        )
    finally:
        conn.close()


def test_a_node_with_children_is_refused_naming_both_options(db):
    before = file_digest(db)
    result = run("delete", "b", "--db", db, expect=2)
    assert result.stderr == (
        "Error: node b has 2 children (c, d): pass --children reparent to move them"
        " to its parent, or --children cascade to delete its whole subtree; nothing"
        " was deleted\n"
    )
    assert file_digest(db) == before


@pytest.mark.parametrize(
    ("words", "said"),
    [
        (["b", "--children", "cascade"], "Would delete b and its 2 descendants\n"),
        (["b", "--cascade"], "Would delete b and its 2 descendants\n"),
        (
            ["b", "--children", "reparent"],
            "Would delete b\nWould move 2 children to root\n",
        ),
        (["b", "--reparent"], "Would delete b\nWould move 2 children to root\n"),
        (
            ["root", "--children", "reparent"],
            "Would delete root\n2 children would become roots\n",
        ),
        (["g"], "Would delete g\n"),
    ],
)
def test_a_dry_run_says_what_would_go_and_changes_nothing(db, words, said):
    before = file_digest(db)
    result = run("delete", *words, "--dry-run", "--db", db)
    assert result.stdout == said + "Nothing was deleted (--dry-run)\n"
    assert file_digest(db) == before
    assert sorted(load_tree("t", db).edges) == sorted(
        edges(migrated_complex(db.parent / "fresh.db"))
    )


def test_a_dry_run_refuses_what_the_deletion_refuses(db):
    before = file_digest(db)
    refused = run("delete", "b", "--dry-run", "--db", db, expect=2)
    assert refused.stderr.startswith("Error: node b has 2 children (c, d): pass")
    deletion = delete_node("e", db, mode="cascade", dry_run=True)
    assert (deletion.deleted, deletion.dry_run) == (["e", "f", "g"], True)
    assert file_digest(db) == before


def test_children_is_one_choice(db):
    result = run("delete", "b", "--children", "REPARENT", "--db", db)
    assert result.stdout == "Deleted b\nMoved 2 children to root\n"
    result = run("delete", "e", "--children", "cascade", "--db", db)
    assert result.stdout == "Deleted e and its 2 descendants\n"
    assert ids(db) == ["c", "d", "lone", "root"]
    refused = run(
        "delete", "c", "--children", "cascade", "--reparent", "--db", db, expect=2
    )
    assert refused.stderr == (
        "Error: --reparent and --children cascade exclude each other: choose one\n"
    )
    help_text = run("delete", "--help").stdout
    assert "--children [refuse|reparent|cascade]" in help_text
    assert "--reparent" not in help_text.split("Options:")[1]


def test_a_leaf_is_deleted(db):
    assert run("delete", "g", "--db", db).stdout == "Deleted g\n"
    assert "g" not in ids(db)
    assert ("e", "g") not in edges(db)


def test_reparent_moves_the_children_to_the_nodes_parent(db):
    result = run("delete", "b", "--reparent", "--db", db)
    assert result.stdout == "Deleted b\nMoved 2 children to root\n"
    assert edges(db) == [
        ("e", "f"),
        ("e", "g"),
        ("root", "c"),
        ("root", "d"),
        ("root", "e"),
    ]


def test_reparent_of_a_root_makes_its_children_roots(db):
    result = run("delete", "root", "--reparent", "--db", db)
    assert result.stdout == "Deleted root\n2 children became roots\n"
    tree = load_tree("t", db)
    assert roots(tree) == ["b", "e"]
    assert sorted(tree.edges) == [("b", "c"), ("b", "d"), ("e", "f"), ("e", "g")]


def test_cascade_deletes_the_whole_subtree(db):
    result = run("delete", "e", "--cascade", "--db", db)
    assert result.stdout == "Deleted e and its 2 descendants\n"
    assert ids(db) == ["b", "c", "d", "lone", "root"]
    assert edges(db) == [("b", "c"), ("b", "d"), ("root", "b")]


def test_cascade_returns_what_it_deleted(db):
    deletion = delete_node("root", db, mode="cascade")
    assert deletion.deleted == ["root", "b", "e", "c", "d", "f", "g"]
    assert ids(db) == ["lone"]
    # The conversation went with its last response.
    assert ids(db, "conversations") == ["other"]


def test_the_last_response_takes_its_conversation_along(db):
    run("delete", "lone", "--db", db)
    assert ids(db, "conversations") == ["t"]


def test_bad_options_and_unknown_nodes_are_one_line_errors(db):
    result = run("delete", "b", "--reparent", "--cascade", "--db", db, expect=2)
    assert result.stderr == (
        "Error: --reparent and --cascade exclude each other: choose one\n"
    )
    result = run("delete", "nope", "--db", db, expect=2)
    assert result.stderr == "Error: no node with id 'nope'\n"


def test_rows_that_belong_to_deleted_responses_go_too(db):
    """Attachments, fragments, tools: the rows that name a deleted response
    are deleted with it; the shared rows they point to stay; llm's search
    index follows; and no foreign key is left dangling."""
    conn = sqlite3.connect(db)
    conn.executescript(
        """
        insert into attachments (id, type) values ('att', 'image/png');
        insert into fragments (id, hash, content) values (1, 'h1', 'shared text');
        insert into tools (id, hash, name) values (1, 't1', 'search');
        insert into tool_instances (id, plugin, name) values (1, 'p', 'search');
        """
    )
    for node in ("e", "f", "g", "b"):
        conn.execute("insert into prompt_attachments values (?, 'att', 0)", [node])
        conn.execute("insert into prompt_fragments values (?, 1, 0)", [node])
        conn.execute("insert into system_fragments values (?, 1, 0)", [node])
        conn.execute("insert into tool_responses values (1, ?)", [node])
        conn.execute(
            "insert into tool_calls (response_id, tool_id, name) values (?, 1, 'search')",
            [node],
        )
        cursor = conn.execute(
            "insert into tool_results (response_id, tool_id, name, output,"
            " instance_id) values (?, 1, 'search', 'found', 1)",
            [node],
        )
        conn.execute(
            "insert into tool_results_attachments values (?, 'att', 0)",
            [cursor.lastrowid],
        )
    conn.commit()
    conn.close()

    run("delete", "e", "--cascade", "--db", db)

    for table in (
        "prompt_attachments",
        "prompt_fragments",
        "system_fragments",
        "tool_responses",
        "tool_calls",
        "tool_results",
    ):
        assert ids(db, table, "response_id") == ["b"], table
    conn = sqlite3.connect(db)
    assert conn.execute(
        "select r.response_id from tool_results_attachments a"
        " join tool_results r on r.id = a.tool_result_id"
    ).fetchall() == [("b",)]
    assert conn.execute("pragma foreign_key_check").fetchall() == []
    # Shared rows stay.
    assert conn.execute("select count(*) from attachments").fetchone() == (1,)
    assert conn.execute("select count(*) from fragments").fetchone() == (1,)
    # llm's search index no longer finds the deleted prompts.
    conn.execute("insert into responses_fts (responses_fts) values ('integrity-check')")
    found = conn.execute(
        "select r.id from responses_fts f join responses r on r.rowid = f.rowid"
        " where responses_fts match '\"prompt\"' order by r.id"
    ).fetchall()
    conn.close()
    assert found == [("b",), ("c",), ("d",), ("root",)]


def test_a_link_outside_the_tree_stops_the_deletion_and_nothing_changes(tmp_path):
    """Hostile data: x, in another conversation, names c as its parent (the
    link convgraph's reader drops). Deleting c's subtree would leave x
    dangling: the whole deletion is refused, in one transaction."""
    path = tmp_path / "logs.db"
    conn = legacy_database(path, with_parent=True)
    add_tree(conn, "t", [("root", None), ("b", "root"), ("c", "b")])
    add_tree(conn, "other", [("x", "c")], start=5)
    conn.close()
    migrate(path)
    before = sorted(
        sqlite3.connect(path).execute("select * from responses").fetchall(),
        key=repr,
    )
    result = run("delete", "b", "--cascade", "--db", path, expect=2)
    assert result.stderr == (
        "Error: cannot delete b: x (outside the tree convgraph shows, see"
        " `convgraph check`) names it or its subtree as parent; nothing was deleted\n"
    )
    after = sorted(
        sqlite3.connect(path).execute("select * from responses").fetchall(),
        key=repr,
    )
    assert after == before


def test_without_the_column_a_conversation_is_a_chain(tmp_path):
    """Before the migration a response's child is the one logged after it,
    and reparenting is taking it out of the chain."""
    path = tmp_path / "logs.db"
    conn = legacy_database(path, with_parent=False)
    add_tree(conn, "c", [("a1", None), ("a2", None), ("a3", None), ("a4", None)])
    conn.close()
    result = run("delete", "a2", "--db", path, expect=2)
    assert result.stderr.startswith(
        "Error: node a2 has 1 child (a3): pass --children reparent"
    )
    assert run("delete", "a2", "--reparent", "--db", path).stdout == (
        "Deleted a2\nMoved 1 child to a1\n"
    )
    assert edges(path, "c") == [("a1", "a3"), ("a3", "a4")]
    assert run("delete", "a3", "--cascade", "--db", path).stdout == (
        "Deleted a3 and its 1 descendant\n"
    )
    assert ids(path) == ["a1"]


def test_the_message_store_is_never_deleted_from(llm_fork_db, tmp_path):
    path = tmp_path / "logs.db"
    shutil.copyfile(llm_fork_db["path"], path)
    before = file_digest(path)
    turn = llm_fork_db["turns"][2]
    for option in ([], ["--cascade"], ["--reparent"]):
        result = run("delete", turn, *option, "--db", path, expect=2)
        assert result.stderr == (
            f"Error: node {turn} is a turn of llm's message store: its messages are"
            " shared between threads and llm itself never deletes them, so"
            " convgraph does not either\n"
        )
    assert file_digest(path) == before


def test_a_subtree_that_llm_continued_is_not_cascaded(tmp_path):
    """A legacy conversation that llm 0.36 went on with `-c`: its new turn
    hangs from the last legacy response, and convgraph will not delete it."""
    with LlmLog(tmp_path) as log:
        legacy_database(log.path, with_parent=False).close()
        first = log_response(log.path, prompt="one", response="1", model="echo")
        second = log_response(
            log.path,
            prompt="two",
            response="2",
            model="echo",
            conversation_id=first.conversation_id,
        )
        turn = log.prompt("three", continue_conversation=first.conversation_id)
    before = file_digest(log.path)
    with pytest.raises(DeletionRefused) as error:
        delete_node(first.node_id, log.path, mode="cascade")
    assert str(error.value) == (
        f"the subtree of {first.node_id} holds turns of llm's message store"
        f" ({turn}), which convgraph does not delete; nothing was deleted"
    )
    assert file_digest(log.path) == before
    # Taking the last legacy response out of the chain hangs the turn from
    # the one before, as the chain is read.
    deletion = delete_node(second.node_id, log.path, mode="reparent")
    assert (deletion.moved, deletion.new_parent) == ([turn], first.node_id)
    tree = load_tree(first.conversation_id, log.path)
    assert sorted(tree.edges) == [(first.node_id, turn)]


def test_a_locked_database_is_a_one_line_error(db, monkeypatch):
    monkeypatch.setattr(transaction_module, "WRITE_BUSY_TIMEOUT_SECONDS", 0.2)
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("begin immediate")
    result = run("delete", "g", "--db", db, expect=2)
    assert result.stderr == (
        f"Error: {db} is locked by another writer (waited 0.2 s);"
        " nothing was changed, try again when it is free\n"
    )
    writer.execute("rollback")
    writer.close()
    assert "g" in ids(db)
