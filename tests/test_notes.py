"""Branch notes and preferred answers: written to convgraph's own table (in
the llm database, or beside a chat export), one transaction each, read back
by every reader, shown by tree, compare, the exports and the statistics;
llm keeps working with the file."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import networkx as nx
import pytest

from convgraph.analysis.stats import node_table
from convgraph.export import generate_graphml, generate_json, generate_tree_json
from convgraph.export.html import generate_html, read_html
from convgraph.model.loading import load_tree, load_tree_of_node
from convgraph.sources import open_logs
from convgraph.sources.notes import SIDE_FILE_SUFFIX, TABLE, read_notes
from convgraph.store.notes import set_note, set_preferred
from tests import chat_exports as build
from tests.databases import LlmLog
from tests.helpers import file_digest, read_forest, run, run_on_read_only_mount


def llm_tables(path: Path) -> dict[str, list]:
    """Every row of llm's own tables (all but convgraph's)."""
    conn = sqlite3.connect(path)
    try:
        names = [
            row[0]
            for row in conn.execute(
                "select name from sqlite_master where type = 'table' order by name"
            )
            if row[0] != TABLE
        ]
        # Some of llm's tables have no rowid: compare the rows as a set.
        return {
            name: sorted(conn.execute(f"select * from [{name}]").fetchall(), key=repr)
            for name in names
        }
    finally:
        conn.close()


@pytest.fixture
def llm_db(tmp_path: Path) -> dict:
    """llm 0.36 + echo: a prompt, a follow-up, and the follow-up asked again
    from the first answer (a regeneration, logged last)."""
    with LlmLog(tmp_path) as log:
        first = log.prompt("What is a tree?")
        thread = log.thread_of(first)
        second = log.prompt("And a forest?", continue_conversation=thread)
        _, again = log.fork(first, "And a forest?")
    return {
        "log": log,
        "path": log.path,
        "thread": thread,
        "first": first,
        "second": second,
        "again": again,
    }


def test_note_and_prefer_survive_a_reread(llm_db: dict) -> None:
    path, second = llm_db["path"], llm_db["second"]
    before = llm_tables(path)
    result = run("note", second, "the plain question", "--db", path)
    assert result.stdout == f"noted {second} (in {path})\n"
    result = run("prefer", second, "--db", path)
    assert result.stdout == f"{second} is preferred\n"
    # llm's own tables are untouched; convgraph's table holds one row.
    assert llm_tables(path) == before
    tree = load_tree(llm_db["thread"], path)
    assert tree.nodes[second]["note"] == "the plain question"
    assert tree.nodes[second]["preferred"] is True
    assert tree.nodes[llm_db["again"]]["preferred"] is False
    forest = read_forest(path)
    row = forest.nodes.set_index("id").loc[second]
    assert (row["note"], row["preferred"], row["active"]) == (
        "the plain question",
        True,
        False,
    )
    table = node_table(forest).set_index("id")
    assert table.at[second, "note"] == "the plain question"
    assert bool(table.at[llm_db["again"], "active"]) is True


def test_llm_keeps_working_after_a_note(llm_db: dict) -> None:
    path, log = llm_db["path"], llm_db["log"]
    set_note(llm_db["first"], "why", path)
    with log:
        listed = json.loads(log.cli("logs", "--json", "-n", "0"))
        assert {row["id"] for row in listed} >= {llm_db["first"], llm_db["second"]}
        third = log.prompt("Go on", continue_conversation=llm_db["thread"])
    assert third in load_tree(llm_db["thread"], path)
    assert read_notes(open_logs(path)) != {}


def test_prefer_moves_the_mark_and_clear_removes_it(llm_db: dict) -> None:
    path, second, again = llm_db["path"], llm_db["second"], llm_db["again"]
    assert set_preferred(second, db=path) == []
    assert set_preferred(again, db=path) == [second]
    tree = load_tree_of_node(second, path)
    assert (tree.nodes[second]["preferred"], tree.nodes[again]["preferred"]) == (
        False,
        True,
    )
    result = run("prefer", again, "--clear", "--db", path)
    assert result.stdout == f"{again} is no longer preferred\n"
    run("note", again, "x", "--db", path)
    run("note", again, "--clear", "--db", path)
    assert load_tree_of_node(again, path).nodes[again]["note"] is None
    # Nothing recorded any more: no row left.
    conn = sqlite3.connect(path)
    try:
        assert conn.execute(f"select count(*) from {TABLE}").fetchone() == (0,)
    finally:
        conn.close()


def test_notes_are_shown_by_tree_compare_and_the_exports(llm_db: dict) -> None:
    path, first, second = llm_db["path"], llm_db["first"], llm_db["second"]
    set_note(second, "too short", path)
    set_preferred(second, db=path)
    lines = run("tree", llm_db["thread"], "--db", path).stdout.splitlines()
    assert f"├── {second}  And a forest? ★ ✎ too short" in lines
    active = run("tree", llm_db["thread"], "--active", "--db", path).stdout
    assert f"└── {llm_db['again']}  And a forest? ●" in active.splitlines()
    report = run("compare", first, "--db", path).stdout.splitlines()
    assert any(line.startswith(f"1  {second} ★") for line in report)
    assert "1  ✎ too short" in report
    [compared] = [
        row
        for row in json.loads(run("compare", first, "--json", "--db", path).stdout)
        if row["id"] == second
    ]
    assert (compared["note"], compared["preferred"], compared["active"]) == (
        "too short",
        True,
        False,
    )
    tree = load_tree(llm_db["thread"], path)
    node_link = json.loads("\n".join(generate_json(tree)))
    [node] = [node for node in node_link["nodes"] if node["id"] == second]
    assert (node["note"], node["preferred"], node["active"]) == (
        "too short",
        True,
        False,
    )
    nested = json.loads("\n".join(generate_tree_json(tree)))
    [conversation] = nested["children"]
    [root] = conversation["children"]
    assert [child["note"] for child in root["children"]] == ["too short", None]
    graphml = "\n".join(generate_graphml(tree))
    back = nx.read_graphml(io.StringIO(graphml))
    assert back.nodes[second]["note"] == "too short"
    assert back.nodes[second]["preferred"] is True
    [page_tree] = read_html(io.StringIO("\n".join(generate_html(tree))))
    assert page_tree.nodes[second]["note"] == "too short"
    dot = run("export", llm_db["thread"], "--format", "dot", "--db", path).stdout
    assert "✎ too short" in dot


def test_unknown_node_is_one_line(llm_db: dict) -> None:
    for command in (["note", "nope", "text"], ["prefer", "nope"]):
        result = run(*command, "--db", llm_db["path"], expect=2)
        assert result.stderr == "Error: no node with id 'nope'\n"
    result = run("note", llm_db["first"], "--db", llm_db["path"], expect=2)
    assert result.stderr == "Error: give the note's TEXT, or --clear to remove it\n"


def test_a_read_only_database_is_one_line(llm_db: dict, tmp_path: Path) -> None:
    # A read-only bind mount: root may write any file, but not on it.
    source = llm_db["path"].parent
    mounted = tmp_path / "mounted"
    mounted.mkdir()
    path = mounted / "logs.db"
    result = run_on_read_only_mount(
        source, mounted, "note", llm_db["first"], "why", "--db", path
    )
    assert (result.returncode, result.stdout) == (2, ""), result.stderr
    assert result.stderr == f"Error: cannot write notes: {path} is read-only\n"


# -- a chat export -------------------------------------------------------------------


def test_notes_of_a_chat_export_go_beside_it(tmp_path: Path) -> None:
    export = build.write_zip(
        tmp_path / "chatgpt-export.zip", build.split(build.chatgpt_export(), 2)
    )
    before = file_digest(export)
    run("note", "a1", "the monoid answer was better", "--db", export)
    run("prefer", "a1", "--db", export)
    side = tmp_path / ("chatgpt-export.zip" + SIDE_FILE_SUFFIX)
    assert side.is_file()
    assert file_digest(export) == before
    tree = load_tree("conv-monad", export)
    assert tree.nodes["a1"]["note"] == "the monoid answer was better"
    assert tree.nodes["a1"]["preferred"] is True
    # The current node's path stays the active one.
    assert [n for n, on in tree.nodes(data="active") if on] == ["a1b", "a2e"]
    lines = run("tree", "conv-monad", "--db", export).stdout.splitlines()
    # a1 and a1b answer the first prompt: alternatives at the start.
    assert "├── a1  What is a monad? ★ ✎ the monoid answer was better" in lines
    result = run("pairs", "--nl", "--db", export)
    [record] = [json.loads(line) for line in result.stdout.splitlines()]
    assert (record["chosen_id"], record["rejected_id"]) == ("a1", "a1b")
    frame = read_forest(export).nodes.set_index("id")
    assert frame.at["a1", "note"] == "the monoid answer was better"
    assert bool(frame.at["a1b", "preferred"]) is False


# -- what the person said in the app (ChatGPT's message_feedback.json) ---------------


@pytest.fixture
def rated_export(tmp_path: Path) -> Path:
    """The ChatGPT export as downloaded, with the person's thumbs up and
    down beside the conversations."""
    return build.write_zip(
        tmp_path / "chatgpt-export.zip",
        {
            **build.split(build.chatgpt_export(), 2),
            "message_feedback.json": build.chatgpt_feedback(),
        },
    )


def marks(path: Path) -> dict[str, tuple[str | None, bool]]:
    """The note and preferred mark of every marked node of conv-monad."""
    tree = load_tree("conv-monad", path)
    return {
        node: (data["note"], data["preferred"])
        for node, data in tree.nodes(data=True)
        if data["note"] is not None or data["preferred"]
    }


def test_thumbs_in_the_app_become_branch_marks(rated_export: Path) -> None:
    # a1 has an alternative (a1b answers the same first prompt): preferred.
    # a2e has none: a thumbs-up without words says nothing more.
    # a2's thumbs-down, its tag and its words: a note.
    expected = {
        "a1": (None, True),
        "a2": ("thumbs down in ChatGPT (not-helpful): Too short.", False),
    }
    assert marks(rated_export) == expected
    frame = read_forest(rated_export).nodes.set_index("id")
    assert {
        node: (frame.at[node, "note"], bool(frame.at[node, "preferred"]))
        for node in frame.index
        if frame.at[node, "note"] is not None or frame.at[node, "preferred"]
    } == expected
    # pairs choose what the person liked, not the app's current branch.
    result = run("pairs", "--nl", "--db", rated_export)
    [record] = [json.loads(line) for line in result.stdout.splitlines()]
    assert (record["chosen_id"], record["rejected_id"]) == ("a1", "a1b")
    lines = run("tree", "conv-monad", "--db", rated_export).stdout.splitlines()
    assert lines[1:4] == [
        "├── a1  What is a monad? ★",
        "└── a1b  What is a monad?",
        "    ├── a2  Simpler? ✎ thumbs down in ChatGPT (not-h…",
    ]


def test_the_users_own_notes_win_over_the_apps(rated_export: Path) -> None:
    before = file_digest(rated_export)
    run("prefer", "a1b", "--db", rated_export)
    run("note", "a2", "fine after all", "--db", rated_export)
    assert marks(rated_export) == {
        "a1b": (None, True),  # the user's choice takes the app's from a1
        "a2": ("fine after all", False),
    }
    result = run("pairs", "--nl", "--db", rated_export)
    [record] = [json.loads(line) for line in result.stdout.splitlines()]
    assert (record["chosen_id"], record["rejected_id"]) == ("a1b", "a1")
    # Clearing the user's note shows the app's again.
    run("note", "a2", "--clear", "--db", rated_export)
    assert marks(rated_export)["a2"][0] == (
        "thumbs down in ChatGPT (not-helpful): Too short."
    )
    assert file_digest(rated_export) == before


def test_feedback_beside_an_unpacked_export_and_hostile_entries(
    tmp_path: Path,
) -> None:
    build.write_json(tmp_path / "conversations.json", build.chatgpt_export())
    entries = [
        *build.chatgpt_feedback(),
        # Entries the person did not make the way the app writes them.
        {"conversation_id": "conv-monad", "rating": "thumbsUp"},
        {"message_id": "a1b", "rating": "thumbsUp"},
        {"conversation_id": "conv-monad", "message_id": "gone", "rating": 1},
        {"conversation_id": 7, "message_id": [], "content": {"x": 1}},
        "not an entry",
        # Content that is no JSON text: the words as they are.
        {
            "conversation_id": "conv-monad",
            "message_id": "a2e",
            "rating": "thumbsDown",
            "content": "{not json",
            "create_time": build.EPOCH + 200,  # after the thumbs-up
        },
    ]
    build.write_json(tmp_path / "message_feedback.json", entries)
    assert marks(tmp_path) == {
        "a1": (None, True),
        "a2": ("thumbs down in ChatGPT (not-helpful): Too short.", False),
        "a2e": ("thumbs down in ChatGPT: {not json", False),
    }
