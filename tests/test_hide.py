"""Hiding a branch (issue 38): `convgraph hide NODE` keeps a mark where notes
are kept, on every source, and nothing else changes in the file; every read
leaves the node and everything below it out until `unhide`, and asking for
hidden branches shows them again."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from convgraph.errors import HiddenNode
from convgraph.model.loading import load_path, load_tree, load_tree_of_node
from convgraph.model.marks import hidden_records, hidden_records_table
from convgraph.sources.notes import TABLE, NodeNote
from tests import chat_exports as build
from tests.databases import LlmLog
from tests.helpers import file_digest, read_forest, run


@pytest.fixture
def retried(tmp_path: Path) -> dict:
    """llm 0.36 + echo: a prompt, its follow-up, and the follow-up asked
    again from the first answer three times (retries), the last logged last."""
    with LlmLog(tmp_path) as log:
        first = log.prompt("What is a tree?")
        thread = log.thread_of(first)
        second = log.prompt("And a forest?", continue_conversation=thread)
        tries = [log.fork(first, "And a forest?")[1] for _ in range(3)]
        below = log.prompt("Go on", continue_conversation=log.thread_of(tries[0]))
    return {
        "path": log.path,
        "thread": thread,
        "first": first,
        "second": second,
        "tries": tries,
        "below": below,
    }


def test_a_hidden_branch_is_left_out_of_every_read(retried: dict) -> None:
    path, tries, below = retried["path"], retried["tries"], retried["below"]
    result = run("hide", tries[0], "--db", path)
    assert result.stdout == (
        f"hid the branch of {tries[0]} (in {path}); convgraph unhide {tries[0]}"
        " shows it again\n"
    )
    run("hide", tries[1][:12], "--db", path)  # a prefix names the node
    gone = {tries[0], below, tries[1]}
    tree = load_tree(retried["thread"], path)
    assert set(tree.nodes) == {retried["first"], retried["second"], tries[2]}
    assert tree.graph["hidden"] == 3
    # The active path is the last node kept.
    assert [node for node, on in tree.nodes(data="active") if on] == [
        retried["first"],
        tries[2],
    ]
    forest = read_forest(path)
    assert not gone & set(forest.nodes["id"])
    assert forest.hidden == {tree.graph["tree_id"]: 3}
    assert list(forest.parent_rows) == [-1, 0, 0]
    # Asked for, they are there, and counted all the same.
    everything = read_forest(path, hidden=True)
    assert gone <= set(everything.nodes["id"])
    assert everything.hidden == forest.hidden
    assert set(load_tree(retried["thread"], path, hidden=True).nodes) >= gone
    # A hidden node asked for by id says so.
    with pytest.raises(HiddenNode, match="is in a hidden branch"):
        load_tree_of_node(below, path)
    with pytest.raises(HiddenNode):
        load_path(below, path)
    assert load_path(below, path, hidden=True)[-1] == below
    lines = run("tree", retried["thread"], "--db", path).stdout
    assert tries[0] not in lines and tries[2] in lines
    result = run("path", below, "--db", path, expect=2)
    assert result.stderr == (
        f"Error: node {below!r} is in a hidden branch: `convgraph unhide` shows it"
        " again, `--all` shows it once\n"
    )


def test_unhide_shows_it_again_and_llm_tables_are_untouched(retried: dict) -> None:
    path, hidden = retried["path"], retried["tries"][0]
    conn = sqlite3.connect(path)
    before = conn.execute("select * from turns order by id").fetchall()
    conn.close()
    run("hide", hidden, "--db", path)
    result = run("unhide", hidden, "--db", path)
    assert result.stdout == f"{hidden}'s branch is shown again\n"
    assert hidden in load_tree(retried["thread"], path)
    conn = sqlite3.connect(path)
    assert conn.execute("select * from turns order by id").fetchall() == before
    # The mark said nothing any more: its row is gone.
    assert conn.execute(f"select count(*) from {TABLE}").fetchone() == (0,)
    conn.close()


def test_a_table_of_notes_from_before_hiding_takes_the_mark(retried: dict) -> None:
    path, second = retried["path"], retried["second"]
    conn = sqlite3.connect(path)
    conn.execute(
        f"create table {TABLE} (node_id text primary key, note text,"
        " preferred integer not null default 0, updated_utc text not null)"
    )
    conn.execute(f"insert into {TABLE} values (?, 'kept', 0, 'then')", [second])
    conn.commit()
    conn.close()
    assert load_tree(retried["thread"], path).nodes[second]["note"] == "kept"
    run("hide", second, "--db", path)
    tree = load_tree(retried["thread"], path, hidden=True)
    assert tree.nodes[second]["note"] == "kept"
    assert second not in load_tree(retried["thread"], path)


def test_a_chat_export_hides_beside_it(tmp_path: Path) -> None:
    export = build.write_zip(
        tmp_path / "chatgpt-export.zip", build.split(build.chatgpt_export(), 2)
    )
    before = file_digest(export)
    run("hide", "a1b", "--db", export)
    assert file_digest(export) == before
    assert "a1b" not in load_tree("conv-monad", export)
    assert "a1b" in load_tree("conv-monad", export, hidden=True)
    assert "a1b" not in set(read_forest(export).nodes["id"])


def test_an_agents_session_hides_beside_it(tmp_path: Path) -> None:
    session = tmp_path / "session.jsonl"
    source = Path(__file__).parent / "data/agents/claude-code/sample_session.jsonl"
    session.write_bytes(source.read_bytes())
    forest = read_forest(session)
    tree_id = forest.tree_ids[0]
    tree = load_tree(tree_id, session)
    leaf = [node for node in tree if tree.out_degree(node) == 0][-1]
    run("hide", leaf, "--db", session)
    assert session.read_bytes() == source.read_bytes()
    assert leaf not in load_tree(tree_id, session)
    assert len(read_forest(session).nodes) == len(forest.nodes) - 1


@given(
    st.lists(st.integers(min_value=0, max_value=30), min_size=1, max_size=30),
    st.sets(st.integers(min_value=0, max_value=30)),
)
def test_the_two_forms_hide_what_networkx_says_lies_below(
    parents: list[int], marked: set[int]
) -> None:
    """A random forest (each node's parent an earlier node, or none), some
    nodes hidden: both forms leave out exactly the hidden nodes and their
    descendants."""
    import numpy as np
    import pandas as pd

    ids = [f"n{row}" for row in range(len(parents))]
    parent_rows = [
        parent if row > 0 and parent < row and parent % 3 else -1
        for row, parent in enumerate(parents)
    ]
    graph = nx.DiGraph()
    graph.add_nodes_from(ids)
    graph.add_edges_from(
        (ids[parent], ids[row]) for row, parent in enumerate(parent_rows) if parent >= 0
    )
    notes = {ids[row]: NodeNote(hidden=True) for row in marked if row < len(ids)}
    expected = set(notes)
    for node in notes:
        expected |= nx.descendants(graph, node)
    records = [{"id": node} for node in ids]
    links = {
        ids[row]: (ids[parent] if parent >= 0 else None)
        for row, parent in enumerate(parent_rows)
    }
    assert hidden_records(records, links, notes) == expected
    rows = hidden_records_table(pd.DataFrame({"id": ids}), np.array(parent_rows), notes)
    assert {ids[row] for row in np.flatnonzero(rows)} == expected


def test_all_shows_the_hidden_branches_in_every_reading_command(retried: dict) -> None:
    path, tries, below = retried["path"], retried["tries"], retried["below"]
    thread = retried["thread"]
    run("hide", tries[0], "--db", path)
    drawn = run("tree", thread, "--db", path).stdout
    assert below not in drawn
    assert below in run("tree", thread, "--all", "--db", path).stdout
    assert run("path", below, "--all", "--db", path).stdout.splitlines()[-1] == below
    assert below in run("transcript", below, "--all", "--db", path).stdout
    exported = run("export", "--format", "json", "--all", "--db", path).stdout
    assert below in exported
    assert below not in run("export", "--format", "json", "--db", path).stdout
    # stats counts what it left out apart, and --all counts it in.
    result = run("stats", "--json", "--db", path)
    [row] = json.loads(result.stdout)
    assert row["nodes"] == 4
    assert result.stderr == (
        "2 nodes of 1 conversation in hidden branches left out (--all counts them in)\n"
    )
    result = run("stats", "--json", "--all", "--db", path)
    assert json.loads(result.stdout)[0]["nodes"] == 6
    assert result.stderr == ""
    # A command that writes takes no --all.
    assert "--all" not in run("note", "--help").stdout


def test_search_leaves_a_hidden_branch_out_and_finds_it_shown_again(
    retried: dict, tmp_path: Path
) -> None:
    """The index is a cache of what every output shows: a hide (a note in
    convgraph's table) has the hidden node's tree read again, on llm's file
    and beside a chat export."""
    from convgraph.search import search

    path, below = retried["path"], retried["below"]
    index = tmp_path / "index"

    def found(db: Path, words: str) -> set[str]:
        return {hit.id for hit in search(db, words, index_directory=index)}

    assert below in found(path, "Go on")
    run("hide", retried["tries"][0], "--db", path)
    assert below not in found(path, "Go on")
    run("unhide", retried["tries"][0], "--db", path)
    assert below in found(path, "Go on")
    export = build.write_zip(
        tmp_path / "chatgpt-export.zip", build.split(build.chatgpt_export(), 2)
    )
    before = found(export, "monad")
    assert "a1b" in before
    run("hide", "a1b", "--db", export)
    assert found(export, "monad") == before - {"a1b"}
