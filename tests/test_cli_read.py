"""The reading commands, driven through click's CliRunner on real files."""

import json
import sqlite3
import subprocess
import sys

import pytest
from conftest import run
from databases import add_tree, legacy_database


def test_conversations_json(seed_db):
    rows = json.loads(run("conversations", "--db", seed_db, "--json").output)
    assert rows == [
        {
            "id": "linear",
            "name": "prompt linear-root",
            "nodes": 4,
            "roots": 1,
            "leaves": 1,
            "depth": 3,
        },
        {
            "id": "branch",
            "name": "prompt branch-root",
            "nodes": 3,
            "roots": 1,
            "leaves": 2,
            "depth": 1,
        },
        {
            "id": "complex",
            "name": "prompt complex-root",
            "nodes": 7,
            "roots": 1,
            "leaves": 4,
            "depth": 2,
        },
        {
            "id": "multiple-roots",
            "name": "prompt multiple-roots-root1",
            "nodes": 6,
            "roots": 2,
            "leaves": 2,
            "depth": 2,
        },
    ]


def test_conversations_table(seed_db):
    lines = run("conversations", "--db", seed_db).output.splitlines()
    assert lines[0].split() == ["id", "name", "nodes", "roots", "leaves", "depth"]
    assert lines[3].split() == ["complex", "prompt", "complex-root", "7", "1", "4", "2"]
    assert len(lines) == 5


def test_tree_of_one_conversation(seed_db):
    output = run("tree", "branch", "--db", seed_db).output
    assert output == (
        "branch  prompt branch-root\n"
        "branch-root  prompt branch-root\n"
        "├── branch-b  prompt branch-b\n"
        "└── branch-c  prompt branch-c\n"
    )


def test_tree_of_every_conversation(seed_db):
    output = run("tree", "--db", seed_db).output
    titles = [
        line
        for line in output.splitlines()
        if line.startswith(("linear ", "branch ", "complex ", "multiple-roots "))
    ]
    assert titles == [
        "linear  prompt linear-root",
        "branch  prompt branch-root",
        "complex  prompt complex-root",
        "multiple-roots  prompt multiple-roots-root1",
    ]
    assert "    ├── complex-f  prompt complex-f" in output.splitlines()


def test_tree_json_lists_nodes_in_drawing_order(seed_db):
    drawn = json.loads(run("tree", "complex", "--db", seed_db, "--json").output)
    assert [(n["id"], n["parent_id"], n["depth"]) for n in drawn] == [
        ("complex-root", None, 0),
        ("complex-b", "complex-root", 1),
        ("complex-c", "complex-b", 2),
        ("complex-d", "complex-b", 2),
        ("complex-e", "complex-root", 1),
        ("complex-f", "complex-e", 2),
        ("complex-g", "complex-e", 2),
    ]
    assert drawn[0]["conversation_id"] == "complex"
    assert drawn[0]["prompt"] == "prompt complex-root"


@pytest.mark.parametrize(
    ("command", "node", "expected"),
    [
        ("path", "complex-g", ["complex-root", "complex-e", "complex-g"]),
        ("children", "complex-root", ["complex-b", "complex-e"]),
        ("siblings", "complex-c", ["complex-d"]),
        ("descendants", "complex-e", ["complex-f", "complex-g"]),
        ("roots", "multiple-roots", ["multiple-roots-root1", "multiple-roots-root2"]),
        ("leaves", "complex", ["complex-c", "complex-d", "complex-f", "complex-g"]),
    ],
)
def test_node_list_commands(seed_db, command, node, expected):
    assert json.loads(run(command, node, "--db", seed_db, "--json").output) == expected
    assert run(command, node, "--db", seed_db).output.splitlines() == expected


def test_check_finds_nothing_in_a_healthy_database(seed_db):
    result = run("check", "--db", seed_db, "--json")
    assert json.loads(result.stdout) == []


def test_check_reports_problems_with_exit_status_1(tmp_path):
    path = tmp_path / "bad.db"
    conn = legacy_database(path)
    add_tree(conn, "c", [("a", None), ("b", "b"), ("d", "gone")])
    conn.close()
    problems = json.loads(run("check", "--db", path, "--json", expect=1).output)
    assert [(p["kind"], p["node_id"], p["parent_id"]) for p in problems] == [
        ("self-parent", "b", "b"),
        ("missing-parent", "d", "gone"),
    ]
    assert problems[0] == {
        "kind": "self-parent",
        "node_id": "b",
        "parent_id": "b",
        "conversation_id": "c",
        "message": "b is its own parent",
        "cycle": [],
    }
    text = run("check", "--db", path, expect=1).output.splitlines()
    assert text == [
        "self-parent: b is its own parent",
        "missing-parent: d has parent gone, which does not exist",
    ]


def test_default_database_is_llms_own(seed_db, monkeypatch):
    monkeypatch.setenv("LLM_USER_PATH", str(seed_db.parent))
    seed_db.rename(seed_db.parent / "logs.db")
    assert run("leaves", "branch").output.splitlines() == ["branch-b", "branch-c"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["path", "nope"], "Error: no node with id 'nope'"),
        (["leaves", "nope"], "Error: no conversation with id 'nope'"),
        (["tree", "linear", "nope"], "Error: no conversation with id 'nope'"),
    ],
)
def test_unknown_ids_are_one_line_errors(seed_db, args, message):
    result = run(*args, "--db", seed_db, expect=2)
    assert result.output.strip() == message


def test_bad_files_are_one_line_errors(tmp_path):
    text_file = tmp_path / "text.db"
    text_file.write_text("hello " * 1000)
    empty_sqlite = tmp_path / "empty.db"
    sqlite3.connect(empty_sqlite).execute("create table t (x)").connection.close()
    cases = [
        (
            tmp_path / "missing.db",
            f"Error: no database file at {tmp_path / 'missing.db'}",
        ),
        (
            text_file,
            f"Error: {text_file} is not an SQLite database (file is not a database)",
        ),
        (
            empty_sqlite,
            f"Error: {empty_sqlite} has no llm tables (neither responses nor turns)",
        ),
    ]
    for path, message in cases:
        for command in (["conversations"], ["path", "x"], ["check"], ["tree"]):
            result = run(*command, "--db", path, expect=2)
            assert result.output.strip() == message


def test_errors_print_no_traceback_from_a_real_process(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "convgraph", "path", "x", "--db", tmp_path / "none.db"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == f"Error: no database file at {tmp_path / 'none.db'}\n"


def test_llm_fork_database_through_the_cli(llm_fork_db):
    first, second, third = llm_fork_db["turns"]
    fork_first, fork_second = llm_fork_db["fork_turns"]
    db = llm_fork_db["path"]
    assert json.loads(run("path", fork_second, "--db", db, "--json").output) == [
        first,
        fork_first,
        fork_second,
    ]
    assert json.loads(run("siblings", second, "--db", db, "--json").output) == [
        fork_first
    ]
    assert json.loads(
        run("leaves", llm_fork_db["fork"], "--db", db, "--json").output
    ) == [
        third,
        fork_second,
    ]
