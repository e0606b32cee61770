"""A long-time user's logs.db: legacy history written by llm before 0.32,
continued and forked by llm 0.36 in the message store, written to again by
the old llm and branched by convgraph.

Every file here is written by the real programs: llm 0.19 with llm-echo 0.2
in a virtual environment of its own (`tests/old_llm.py`, built once and
cached; the tests skip when pip cannot install it) and llm 0.36 with
llm-echo, installed here, sharing one `LLM_USER_PATH`. Each scenario is built
once per session; the tests only read it (or a copy).

The answer to every question is one exact tree: each node hangs under the
node whose output its input really continues, whatever was logged later.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
import sqlite_utils
from llm.logs import LogStore

from convgraph.model.loading import load_tree, load_tree_of_node
from convgraph.model.tree import children, path, roots
from tests.databases import LlmLog
from tests.helpers import file_digest, plain, read_forest, run
from tests.old_llm import OldLlmUnavailable, old_llm


@pytest.fixture(scope="session")
def old():
    """llm 0.19 with llm-echo 0.2, in its own cached environment."""
    try:
        return old_llm("0.19", "0.2")
    except OldLlmUnavailable as error:
        pytest.skip(str(error))


def legacy_rows(db: Path) -> list[dict]:
    """The legacy responses, in id order (the order llm replays them)."""
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return [
            dict(row)
            for row in conn.execute(
                "select id, conversation_id, prompt from responses order by id"
            )
        ]
    finally:
        conn.close()


def assistant_messages(db: Path, turn_id: str) -> list[str]:
    """The hashes of the assistant messages above a turn's input, oldest
    first: for llm's first turn of a legacy conversation, each legacy
    response's answer rebuilt as a message."""
    conn = sqlite3.connect(db)
    try:
        current = conn.execute(
            "select parent_message_hash from turns where id = ?", [turn_id]
        ).fetchone()[0]
        found = []
        while current is not None:
            parent, role = conn.execute(
                "select parent_hash, role from messages where hash = ?", [current]
            ).fetchone()
            if role == "assistant":
                found.append(current)
            current = parent
        return found[::-1]
    finally:
        conn.close()


def fork_at_message(db: Path, message_hash: str, forked_from: str, text: str):
    """A fork at a stored message, continued once, with llm 0.36's Python
    API (`LogStore.fork`, then `log(..., thread_id=...)`): (thread, turn)."""
    import llm

    database = sqlite_utils.Database(db)
    try:
        store = LogStore(database)
        thread = store.fork(message_hash, forked_from=forked_from)
        history = store.load_chain(store.thread_tip(thread))
        response = llm.get_model("echo").prompt(messages=[*history, llm.user(text)])
        response.text()
        return thread, store.log(response, thread_id=thread)
    finally:
        database.close()


def sent_chain(db: Path, turn_id: str) -> list[tuple[str, str]]:
    """What llm sent the model for a turn: its input chain, (role, text)."""
    database = sqlite_utils.Database(db)
    try:
        parent = database["turns"].get(turn_id)["parent_message_hash"]
        return [
            (
                message.role,
                "".join(getattr(part, "text", "") or "" for part in message.parts),
            )
            for message in LogStore(database).load_chain(parent)
        ]
    finally:
        database.close()


def structure(tree) -> dict[str, tuple]:
    """Each node's (parent, conversation_id, system), for exact comparison."""
    return {
        node: (
            next(iter(tree.predecessors(node)), None),
            tree.nodes[node]["conversation_id"],
            tree.nodes[node]["system"],
        )
        for node in tree
    }


@pytest.fixture(scope="session")
def upgraded(old, tmp_path_factory) -> dict:
    """A legacy conversation of three prompts by llm 0.19 (the third with a
    system prompt); llm 0.36 continues it (`-c --cid`), forks it at the
    second answer's rebuilt message and continues the fork; then llm 0.19
    logs to the conversation again."""
    directory = tmp_path_factory.mktemp("upgraded")
    db = directory / "logs.db"
    old.run(directory, "-m", "echo", "first question")
    old.run(directory, "-m", "echo", "-c", "second question")
    old.run(directory, "-m", "echo", "-c", "-s", "be brief", "third question")
    r1, r2, r3 = (row["id"] for row in legacy_rows(db))
    conversation = legacy_rows(db)[0]["conversation_id"]
    with LlmLog(directory) as log:
        t4 = log.prompt("fourth question", continue_conversation=conversation)
        rebuilt = assistant_messages(db, t4)
        fork, tf1 = fork_at_message(db, rebuilt[1], conversation, "fork question")
        tf2 = log.prompt("fork follow-up", continue_conversation=fork)
    old.run(directory, "-m", "echo", "-c", "--cid", conversation, "fifth question")
    r5 = legacy_rows(db)[-1]["id"]
    return {
        "db": db,
        "conversation": conversation,
        "fork": fork,
        "ids": {"r1": r1, "r2": r2, "r3": r3, "r5": r5},
        "turns": {"t4": t4, "tf1": tf1, "tf2": tf2},
        "rebuilt": rebuilt,
    }


def expected_upgraded(s: dict) -> dict[str, tuple]:
    c, f = s["conversation"], s["fork"]
    r, t = s["ids"], s["turns"]
    return {
        r["r1"]: (None, c, None),
        r["r2"]: (r["r1"], c, None),
        r["r3"]: (r["r2"], c, "be brief"),
        # llm 0.36 sent the rebuilt history, system message included.
        t["t4"]: (r["r3"], c, "be brief"),
        # Forked at the second answer's rebuilt message: under r2.
        t["tf1"]: (r["r2"], f, None),
        t["tf2"]: (t["tf1"], f, None),
        # Logged later by the old llm: moves nothing.
        r["r5"]: (r["r3"], c, None),
    }


@pytest.mark.slow
def test_the_rebuilt_history_is_the_legacy_answers_in_order(upgraded):
    # The premise of the mapping: one rebuilt answer per legacy response.
    assert len(upgraded["rebuilt"]) == 3


@pytest.mark.slow
def test_upgraded_tree_is_exact(upgraded):
    before = file_digest(upgraded["db"])
    tree = load_tree(upgraded["conversation"], upgraded["db"])
    assert structure(tree) == expected_upgraded(upgraded)
    assert roots(tree) == [upgraded["ids"]["r1"]]
    assert tree.graph["tree_id"] == upgraded["conversation"]
    # llm's own name for the conversation, not its newest thread's.
    assert tree.graph["name"] == "first question"
    assert file_digest(upgraded["db"]) == before


@pytest.mark.slow
def test_any_thread_or_node_names_the_same_tree(upgraded):
    by_fork = load_tree(upgraded["fork"], upgraded["db"])
    by_node = load_tree_of_node(upgraded["turns"]["tf2"], upgraded["db"])
    expected = expected_upgraded(upgraded)
    assert structure(by_fork) == expected
    assert structure(by_node) == expected


@pytest.mark.slow
def test_the_fork_is_a_child_of_the_response_it_forked_from(upgraded):
    tree = load_tree(upgraded["conversation"], upgraded["db"])
    r, t = upgraded["ids"], upgraded["turns"]
    assert children(tree, r["r2"]) == [r["r3"], t["tf1"]]
    assert children(tree, r["r3"]) == [t["t4"], r["r5"]]
    assert path(tree, t["tf2"]) == [r["r1"], r["r2"], t["tf1"], t["tf2"]]


@pytest.mark.slow
@pytest.mark.parametrize("text", [True, False])
def test_the_forest_reads_the_same_tree(upgraded, text):
    forest = read_forest(upgraded["db"], text=text)
    nodes = forest.nodes.set_index("id")
    # A missing string in the table is pd.NA: read as None.
    parent_of = dict(
        zip(plain(forest.nodes["id"]), plain(forest.nodes["parent_id"]), strict=True)
    )
    system_of = dict(
        zip(plain(forest.nodes["id"]), plain(forest.nodes["system"]), strict=True)
    )
    expected = expected_upgraded(upgraded)
    assert {
        node: (parent_of[node], nodes.loc[node, "conversation_id"]) for node in expected
    } == {node: (parent, cid) for node, (parent, cid, _) in expected.items()}
    assert set(nodes["tree_id"]) == {upgraded["conversation"]}
    assert forest.names == {upgraded["conversation"]: "first question"}
    if text:
        assert {node: system_of[node] for node in expected} == {
            node: system for node, (_, _, system) in expected.items()
        }


@pytest.mark.slow
def test_conversations_shows_one_root_and_the_diff_finds_the_fork_point(upgraded):
    listed = json.loads(run("conversations", "--db", upgraded["db"], "--json").stdout)
    assert [(row["name"], row["nodes"], row["roots"]) for row in listed] == [
        ("first question", 7, 1)
    ]
    diff = json.loads(
        run(
            "diff",
            "--db",
            upgraded["db"],
            upgraded["turns"]["tf2"],
            upgraded["ids"]["r5"],
            "--json",
        ).stdout
    )
    assert diff["fork_point"] == upgraded["ids"]["r2"]


@pytest.mark.slow
def test_a_migrated_file_reads_the_same_tree(upgraded, tmp_path):
    db = tmp_path / "logs.db"
    shutil.copy(upgraded["db"], db)
    run("migrate", "--db", db, "--link-linear")
    tree = load_tree(upgraded["conversation"], db)
    assert structure(tree) == expected_upgraded(upgraded)


@pytest.fixture(scope="session")
def branched(upgraded, tmp_path_factory) -> dict:
    """The upgraded file, then `convgraph branch -s` on the legacy response
    r2, then `llm -c --cid NEW_THREAD` (llm 0.36) on the new thread."""
    directory = tmp_path_factory.mktemp("branched")
    db = directory / "logs.db"
    shutil.copy(upgraded["db"], db)
    r2 = upgraded["ids"]["r2"]
    made = json.loads(
        run(
            "branch",
            "--db",
            db,
            r2,
            "branch question",
            "-s",
            "answer in French",
            "--json",
        ).stdout
    )
    thread = made["conversation_id"]
    with LlmLog(directory) as log:
        answer = log.cli("-m", "echo", "-c", "--cid", thread, "after the branch")
        after = log.latest_turn()
    return {
        **upgraded,
        "db": db,
        "branch": made["node_id"],
        "thread": thread,
        "after": after,
        "echo": json.loads(answer),
    }


@pytest.mark.slow
def test_branch_on_a_legacy_node_is_a_fork_at_its_history(branched):
    tree = load_tree(branched["conversation"], branched["db"])
    expected = expected_upgraded(branched)
    expected[branched["branch"]] = (
        branched["ids"]["r2"],
        branched["thread"],
        "answer in French",
    )
    # The system prompt the turn was given stays in force below it.
    expected[branched["after"]] = (
        branched["branch"],
        branched["thread"],
        "answer in French",
    )
    assert structure(tree) == expected
    # A branch does not rename its conversation; its thread is named as llm
    # names a conversation: by the prompt.
    assert tree.graph["name"] == "first question"
    with sqlite3.connect(branched["db"]) as conn:
        threads = dict(conn.execute("select id, name from threads").fetchall())
    assert threads[branched["thread"]] == "branch question"


@pytest.mark.slow
def test_llm_continues_exactly_the_branch(branched):
    # llm-echo lists the legacy responses llm replayed: none, since the new
    # thread holds the branch's own history as messages.
    assert branched["echo"]["prompt"] == "after the branch"
    assert branched["echo"]["previous"] == []
    tree = load_tree(branched["conversation"], branched["db"])
    answer = [tree.nodes[n]["response"] for n in (branched["ids"]["r1"],)]
    second = tree.nodes[branched["ids"]["r2"]]["response"]
    branch_answer = tree.nodes[branched["branch"]]["response"]
    assert sent_chain(branched["db"], branched["after"]) == [
        ("user", "first question"),
        ("assistant", answer[0]),
        ("user", "second question"),
        ("assistant", second),
        ("system", "answer in French"),
        ("user", "branch question"),
        ("assistant", branch_answer),
        ("user", "after the branch"),
    ]


@pytest.fixture(scope="session")
def old31():
    """llm 0.31 with llm-echo 0.4: the last legacy release, whose schema
    `convgraph migrate` works on."""
    try:
        return old_llm("0.31", "0.4")
    except OldLlmUnavailable as error:
        pytest.skip(str(error))


@pytest.mark.slow
def test_branch_on_a_legacy_only_file_says_what_llm_c_will_do(old31, tmp_path):
    old = old31
    old.run(tmp_path, "-m", "echo", "first question")
    old.run(tmp_path, "-m", "echo", "-c", "second question")
    db = tmp_path / "logs.db"
    r1, r2 = (row["id"] for row in legacy_rows(db))
    conversation = legacy_rows(db)[0]["conversation_id"]
    run("migrate", "--db", db, "--link-linear")
    result = run("branch", "--db", db, r1, "another second question")
    assert result.stderr.splitlines() == [
        f"llm -c --cid {conversation} replays every response of this"
        " conversation in the order logged, both branches run together;"
        " to go on from this branch alone, use convgraph branch"
    ]
    # That is what the old llm does: it sends both branches.
    echo = json.loads(
        old.run(tmp_path, "-m", "echo", "-c", "--cid", conversation, "third")
    )
    assert [p["prompt"] for p in echo["previous"]] == [
        "first question",
        "second question",
        "another second question",
    ]


@pytest.mark.slow
def test_delete_advises_only_what_works(upgraded, tmp_path):
    db = tmp_path / "logs.db"
    shutil.copy(upgraded["db"], db)
    run("migrate", "--db", db, "--link-linear")
    before = file_digest(db)
    r, t = upgraded["ids"], upgraded["turns"]
    # r3's answer is in the history llm 0.36 stored for t4: no way to delete.
    for mode in ([], ["--reparent"], ["--cascade"]):
        refused = run("delete", r["r3"], "--db", db, *mode, expect=2)
        assert refused.stderr == (
            f"Error: node {r['r3']} is continued by turns of llm's message store"
            f" ({t['t4']}), whose stored history holds its answer; convgraph"
            " neither moves nor deletes turns, so it cannot be deleted; nothing"
            " was deleted\n"
        )
    # r1's children are legacy, with turns further down: --reparent only.
    refused = run("delete", r["r1"], "--db", db, expect=2)
    assert refused.stderr == (
        f"Error: node {r['r1']} has 1 child ({r['r2']}): pass --children reparent"
        " to move them to its parent; nothing was deleted\n"
    )
    assert file_digest(db) == before
    run("delete", r["r1"], "--db", db, "--reparent")
    tree = load_tree(upgraded["conversation"], db)
    assert roots(tree) == [r["r2"]]
    assert next(iter(tree.predecessors(t["t4"]))) == r["r3"]


@pytest.mark.slow
def test_delete_without_the_parent_column_advises_reparent(upgraded, tmp_path):
    db = tmp_path / "logs.db"
    shutil.copy(upgraded["db"], db)
    r, t = upgraded["ids"], upgraded["turns"]
    refused = run("delete", r["r3"], "--db", db, expect=2)
    # Turns below: --cascade would refuse, so it is not offered.
    assert refused.stderr == (
        f"Error: node {r['r3']} has 2 children ({t['t4']}, {r['r5']}): pass"
        " --children reparent to move them to its parent; nothing was deleted\n"
    )
    run("delete", r["r3"], "--db", db, "--reparent")
    tree = load_tree(upgraded["conversation"], db)
    assert children(tree, r["r2"]) == [t["t4"], t["tf1"], r["r5"]]


def test_tables_and_width_count_terminal_cells(tmp_path):
    from wcwidth import wcswidth

    with LlmLog(tmp_path) as log:
        log.prompt("🌳🌳🌳 trees, 森 and forests of every size")
        log.prompt("plain words only")
    lines = run("conversations", "--db", log.path).stdout.splitlines()
    # Every row as wide as the header on a terminal, emoji or not.
    assert len(lines) == 3
    assert len({wcswidth(line) for line in lines}) == 1
    drawn = run("tree", "--db", log.path, "--width", "10").stdout.splitlines()
    emoji_tree = [line for line in drawn if "🌳" in line]
    # 10 cells of prompt: three trees (6 cells), " t" and the ellipsis.
    assert [line.split("  ", 1)[1] for line in emoji_tree] == ["🌳🌳🌳 tr…"] * 2
