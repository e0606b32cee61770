"""The reading commands, driven through click's CliRunner on real files."""

import csv
import io
import json
import sqlite3
import subprocess
import sys

import pytest

from tests.databases import add_response, add_tree, legacy_database
from tests.helpers import run

SEED_CONVERSATIONS = [
    {
        "tree_id": "linear",
        "name": "prompt linear-root",
        "nodes": 4,
        "roots": 1,
        "leaves": 1,
        "max_depth": 3,
    },
    {
        "tree_id": "branch",
        "name": "prompt branch-root",
        "nodes": 3,
        "roots": 1,
        "leaves": 2,
        "max_depth": 1,
    },
    {
        "tree_id": "complex",
        "name": "prompt complex-root",
        "nodes": 7,
        "roots": 1,
        "leaves": 4,
        "max_depth": 2,
    },
    {
        "tree_id": "multiple-roots",
        "name": "prompt multiple-roots-root1",
        "nodes": 6,
        "roots": 2,
        "leaves": 2,
        "max_depth": 2,
    },
]


def test_conversations_json(seed_db):
    rows = json.loads(run("conversations", "--db", seed_db, "--json").output)
    assert rows == SEED_CONVERSATIONS


def test_conversations_have_the_keys_of_stats(seed_db):
    conversations = json.loads(run("conversations", "-d", seed_db, "--json").stdout)
    stats = json.loads(run("stats", "-d", seed_db, "--json").stdout)
    assert conversations == [
        {key: row[key] for key in conversations[0]} for row in stats
    ]


def test_conversations_table(seed_db):
    assert run("conversations", "--db", seed_db).stdout == (
        "tree_id         name                         nodes  roots  leaves  max_depth\n"
        "linear          prompt linear-root               4      1       1          3\n"
        "branch          prompt branch-root               3      1       2          1\n"
        "complex         prompt complex-root              7      1       4          2\n"
        "multiple-roots  prompt multiple-roots-root1      6      2       2          2\n"
    )
    assert run("conversations", "--db", seed_db, "--table").stdout == (
        run("conversations", "--db", seed_db).stdout
    )


def test_conversations_nl_csv_tsv(seed_db):
    lines = run("conversations", "-d", seed_db, "--nl").stdout.splitlines()
    assert [json.loads(line) for line in lines] == SEED_CONVERSATIONS
    for flag, delimiter in (("--csv", ","), ("--tsv", "\t")):
        text = run("conversations", "-d", seed_db, flag).stdout
        rows = list(csv.DictReader(io.StringIO(text), delimiter=delimiter))
        assert rows == [
            {key: str(value) for key, value in row.items()}
            for row in SEED_CONVERSATIONS
        ]


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
    # The tree, and the conversation that made the call: two keys.
    assert {(n["tree_id"], n["conversation_id"]) for n in drawn} == {
        ("complex", "complex")
    }
    assert drawn[0]["prompt"] == "prompt complex-root"


@pytest.mark.parametrize(
    ("command", "node", "expected"),
    [
        ("path", "complex-g", ["complex-root", "complex-e", "complex-g"]),
        ("children", "complex-root", ["complex-b", "complex-e"]),
        ("siblings", "complex-c", ["complex-d"]),
        # The roots of one conversation are alternatives at its start.
        ("siblings", "multiple-roots-root2", ["multiple-roots-root1"]),
        ("descendants", "complex-e", ["complex-f", "complex-g"]),
        ("roots", "multiple-roots", ["multiple-roots-root1", "multiple-roots-root2"]),
        ("leaves", "complex", ["complex-c", "complex-d", "complex-f", "complex-g"]),
    ],
)
def test_node_list_commands(seed_db, command, node, expected):
    assert json.loads(run(command, node, "--db", seed_db, "--json").output) == expected
    assert run(command, node, "--db", seed_db).output.splitlines() == expected
    nl = run(command, node, "-d", seed_db, "--nl").stdout.splitlines()
    assert [json.loads(line) for line in nl] == expected
    assert run(command, node, "-d", seed_db, "--csv").stdout.splitlines() == [
        "id",
        *expected,
    ]
    assert run(command, node, "-d", seed_db, "--tsv").stdout.splitlines() == [
        "id",
        *expected,
    ]
    assert run(command, node, "-d", seed_db, "--table").stdout.splitlines() == [
        "id",
        *expected,
    ]


def test_an_empty_id_list_in_each_format(seed_db):
    for flag, expected in [
        ((), ""),
        (("--json",), "[]\n"),
        (("--nl",), ""),
        (("--csv",), "id\n"),
        (("--tsv",), "id\n"),
        (("--table",), ""),
    ]:
        assert run("children", "complex-c", "-d", seed_db, *flag).stdout == expected


def test_two_output_options_are_one_line_error(seed_db):
    result = run("leaves", "complex", "-d", seed_db, "--json", "--csv", expect=2)
    assert result.stderr == "Error: --json and --csv exclude each other: choose one\n"
    assert result.stdout == ""


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


def test_check_as_records(tmp_path):
    path = tmp_path / "bad.db"
    conn = legacy_database(path)
    add_tree(conn, "c", [("a", None), ("d", "gone"), ("x", "y"), ("y", "x")])
    conn.close()
    assert run("check", "-d", path, "--csv", expect=1).stdout == (
        "kind,node_id,parent_id,conversation_id,message,cycle\n"
        'missing-parent,d,gone,c,"d has parent gone, which does not exist",\n'
        'cycle,x,y,c,x is on a cycle of 2 parent links: x -> y -> x,"x,y"\n'
    )
    assert run("check", "-d", path, "--table", expect=1).stdout == (
        "kind            node_id  parent_id  conversation_id"
        "  message                                         cycle\n"
        "missing-parent  d        gone       c"
        "                d has parent gone, which does not exist\n"
        "cycle           x        y          c"
        "                x is on a cycle of 2 parent links: x -> y -> x  x, y\n"
    )
    lines = run("check", "-d", path, "--nl", expect=1).stdout.splitlines()
    assert [json.loads(line)["cycle"] for line in lines] == [[], ["x", "y"]]


def test_check_of_a_healthy_database_in_each_format(seed_db):
    assert run("check", "-d", seed_db, "--csv").stdout == (
        "kind,node_id,parent_id,conversation_id,message,cycle\n"
    )
    assert run("check", "-d", seed_db, "--nl").stdout == ""
    table = run("check", "-d", seed_db, "--table")
    assert (table.stdout, table.stderr) == ("no problems found\n", "")
    plain = run("check", "-d", seed_db)
    assert (plain.stdout, plain.stderr) == ("no problems found\n", "")


def test_compare_as_records(seed_db):
    records = json.loads(run("compare", "complex-root", "-d", seed_db, "--json").stdout)
    nl = run("compare", "complex-root", "-d", seed_db, "--nl").stdout.splitlines()
    assert [json.loads(line) for line in nl] == records
    assert [record["id"] for record in records] == ["complex-b", "complex-e"]
    text = run("compare", "complex-root", "-d", seed_db, "--csv").stdout
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0]) == list(records[0])
    assert [row["subtree_size"] for row in rows] == ["3", "3"]
    assert json.loads(rows[0]["similarity"]) == records[0]["similarity"]
    table = run("compare", "complex-root", "-d", seed_db, "--table").stdout
    header, first, second = table.splitlines()
    assert header.split() == list(records[0])
    assert first.split()[:2] == ["complex-b", "echo"]


def test_tables_align_wide_characters_by_terminal_cells():
    from convgraph.cli.output import aligned_lines

    lines = list(
        aligned_lines(
            [["name", "nodes"], ["漢字の木", "3"], ["tree 🌳", "12"], ["plain", "1"]],
            left={0},
        )
    )
    assert lines == [
        "name      nodes",
        "漢字の木      3",
        "tree 🌳      12",
        "plain         1",
    ]


def test_tables_measure_cut_names_wide_names_and_controls_alike():
    """A column of names cut by `excerpt` (ASCII and an ellipsis), a wide
    name cut alike, and a control character shown as its symbol."""
    from convgraph.cli.output import aligned_lines

    lines = list(
        aligned_lines(
            [["name", "n"], ["abc…", "1"], ["漢字…", "2"], ["a\x1bb", "13"]],
            left={0},
        )
    )
    assert lines == ["name    n", "abc…    1", "漢字…   2", "a␛b    13"]


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
            f"Error: {empty_sqlite} has no llm tables (no responses or turns with"
            " the columns llm writes)",
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


def test_siblings_of_a_regenerated_first_answer(tmp_path):
    from tests.chat_exports import chatgpt_branches, write_json

    export = write_json(tmp_path / "conversations.json", [chatgpt_branches()])
    assert run("siblings", "a1", "--db", export).stdout.splitlines() == ["a1b"]
    assert run("siblings", "a1b", "--db", export).stdout.splitlines() == ["a1"]
    assert run("siblings", "a2", "--db", export).stdout.splitlines() == ["a2e"]


def test_siblings_of_a_second_start_logged_by_llm(tmp_path):
    from tests.test_tree import llm_two_starts

    built = llm_two_starts(tmp_path)
    first, second, again = built["turns"]
    db = built["path"]
    assert json.loads(run("siblings", again, "--db", db, "--json").output) == [first]
    assert json.loads(run("siblings", first, "--db", db, "--json").output) == [again]
    assert json.loads(run("siblings", second, "--db", db, "--json").output) == []


def _query_command():
    """A command of convgraph's class that runs one query on a file, to let
    SQLite's own errors reach the command class."""
    import click

    from convgraph.cli.options import command

    @command()
    @click.argument("path")
    @click.argument("sql")
    def query(path: str, sql: str) -> None:
        conn = sqlite3.connect(path, timeout=0)
        try:
            conn.execute(sql).fetchall()
        finally:
            conn.close()

    return query


def test_expected_database_errors_are_one_line(tmp_path):
    query = _query_command()
    path = tmp_path / "held.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("create table t (x)")
    holder.execute("begin exclusive")
    try:
        held = run(path, "select * from t", cli=query, expect=2)
    finally:
        holder.execute("rollback")
        holder.close()
    assert held.stderr == "Error: database error: database is locked\n"
    text_file = tmp_path / "text.db"
    text_file.write_text("hello " * 1000)
    garbage = run(text_file, "select 1 from t", cli=query, expect=2)
    assert garbage.stderr == "Error: database error: file is not a database\n"
    unique = tmp_path / "unique.db"
    conn = sqlite3.connect(unique)
    conn.execute("create table u (x unique)")
    conn.execute("insert into u values (1)")
    conn.commit()
    conn.close()
    refused = run(unique, "insert into u values (1)", cli=query, expect=2)
    assert refused.stderr == (
        "Error: the database refused the change: UNIQUE constraint failed: u.x\n"
    )


def test_other_database_errors_are_bugs_and_show(tmp_path):
    # A query convgraph should never send is its own bug, not the user's:
    # the command class lets it through for a traceback.
    query = _query_command()
    path = tmp_path / "ok.db"
    sqlite3.connect(path).execute("create table t (x)").connection.close()
    result = run(path, "select nope from t", cli=query, expect=1)
    assert isinstance(result.exception, sqlite3.OperationalError)
    assert str(result.exception) == "no such column: nope"


def test_tree_hints_at_check_where_links_are_broken(tmp_path, seed_db):
    path = tmp_path / "broken.db"
    conn = legacy_database(path)
    add_response(conn, "r", "c", "hi", datetime_utc="2025-09-27T10:00:00")
    add_response(
        conn, "a", "c", "on", parent="gone", datetime_utc="2025-09-27T10:00:01"
    )
    add_response(conn, "b", "c", "self", parent="b", datetime_utc="2025-09-27T10:00:02")
    conn.commit()
    conn.close()
    hint = (
        "Note: 2 problems in this file's links (a broken link is drawn as a"
        " root): convgraph check lists them\n"
    )
    for words in ([], ["c"], ["--json"], ["c", "--json"]):
        result = run("tree", *words, "--db", path)
        assert result.stderr == hint, words
    assert (
        run("tree", "--db", path).stdout == "c  hi\n├── r  hi\n├── a  on\n└── b  self\n"
    )
    # A file without problems: nothing on stderr.
    assert run("tree", "--db", seed_db).stderr == ""
    assert run("tree", "complex", "--db", seed_db).stderr == ""
