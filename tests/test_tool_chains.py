"""A tool chain is one step of the user's (issue 23): llm runs it as several
model calls, convgraph reads it as one node.

Files written by the real llm 0.36 with llm-echo 0.5, which calls the tools
a JSON prompt names (`LlmLog.tool_chain`) and is sent their results in a call
of its own (a turn whose input message has the role `tool`); legacy files
written by hand on llm 0.31's schema for exact scenarios, and by llm 0.31
itself (`tests/old_llm.py`, slow). Every answer is exact: the node's id (the
run's last call), its prompt (the user's words), its response (the calls'
answers joined by a blank line), its parts, tool calls, tools, usage (summed)
and time (the last call's), and every way of looking a call up.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import llm
import pandas as pd
import pytest
import sqlite_utils
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llm.logs import LogStore
from llm.parts import ToolResultPart

from convgraph import parts as kinds
from convgraph.contract import CONTENT_ATTRIBUTES, SOURCE_COLUMNS
from convgraph.model.loading import load_path, load_tree, load_tree_of_node
from convgraph.model.tree import children, parent, path, siblings
from convgraph.sources import open_logs
from convgraph.store import migrate
from tests.databases import LlmLog, add_response, legacy_database, timestamp
from tests.helpers import examples, plain, read_forest, run
from tests.old_llm import OldLlmUnavailable, old_llm

SHOUT_TREE = [{"name": "shout", "arguments": {"word": "tree"}}]
PROMPT = json.dumps({"prompt": "shout tree", "tool_calls": SHOUT_TREE})


def echo_answer(
    prompt: str, previous: list[str] = (), tool_results: list[dict] | None = None
) -> str:
    """What llm-echo 0.5 answers (streaming, no system, no attachments)."""
    info: dict = {
        "prompt": prompt,
        "system": "",
        "attachments": [],
        "stream": True,
        "previous": [{"prompt": text} for text in previous],
    }
    if tool_results is not None:
        info["tool_results"] = tool_results
    return json.dumps(info, indent=2)


def missing(value: object) -> bool:
    """NA or NaN in a table (a list of parts is a value)."""
    return not isinstance(value, list) and bool(pd.isna(value))


def turn_rows(path: Path) -> dict[str, dict]:
    """Each turn's row, by id."""
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    try:
        return {row["id"]: dict(row) for row in conn.execute("select * from turns")}
    finally:
        conn.close()


def call_ids(path: Path) -> list[str]:
    """The tool call ids llm gave, in the order logged."""
    conn = sqlite3.connect(path)
    try:
        return [
            json.loads(row[0])["tool_call_id"]
            for row in conn.execute(
                "select payload from parts where type = 'tool_call' order by id"
            )
        ]
    finally:
        conn.close()


@pytest.fixture(scope="module")
def chain(tmp_path_factory) -> dict:
    """`shout tree` as llm runs it: two turns, the second sent the result."""
    directory = tmp_path_factory.mktemp("chain")
    with LlmLog(directory) as log:
        turns = log.tool_chain("shout tree", SHOUT_TREE)
    return {"path": log.path, "turns": turns, "thread": log.thread_of(turns[0])}


def test_a_tool_chain_is_one_node_with_the_whole_run(chain) -> None:
    first, last = chain["turns"]
    rows = turn_rows(chain["path"])
    [call_id] = call_ids(chain["path"])
    result = {"name": "shout", "output": "TREE!", "tool_call_id": call_id}
    first_answer = echo_answer("shout tree")
    last_answer = echo_answer("", [PROMPT], [result])
    tree = load_tree(chain["thread"], chain["path"])
    assert list(tree) == [last]
    node = dict(tree.nodes[last])
    assert node == {
        "conversation_id": chain["thread"],
        "prompt": PROMPT,
        "system": None,
        "response": first_answer + "\n\n" + last_answer,
        "parts": [
            kinds.text("user", PROMPT),
            kinds.text("assistant", first_answer),
            kinds.tool_call("shout", {"word": "tree"}, call_id),
            kinds.tool_result("shout", "TREE!", call_id),
            kinds.text("assistant", last_answer),
        ],
        "tool_calls": 1,
        "tools": "shout",
        "model": "echo",
        # The last call's time, and the usage of both calls.
        "datetime_utc": rows[last]["datetime_utc"],
        "input_tokens": rows[first]["input_tokens"] + rows[last]["input_tokens"],
        "output_tokens": rows[first]["output_tokens"] + rows[last]["output_tokens"],
        "duration_ms": rows[first]["duration_ms"] + rows[last]["duration_ms"],
        "source": "turns",
        "active": True,
        "note": None,
        "preferred": False,
    }
    # llm names the thread by the prompt's first words.
    assert tree.graph == {
        "tree_id": chain["thread"],
        "name": '{"prompt": "shout tree", "tool_…',
        "calls": {first: last},
    }


def test_the_whole_file_reads_the_chain_as_one_tree_reads_it(chain) -> None:
    first, last = chain["turns"]
    tree = load_tree(chain["thread"], chain["path"])
    for text in (True, False):
        forest = read_forest(chain["path"], text=text)
        assert forest.calls == {first: last}
        [row] = forest.nodes.to_dict("records")
        assert row["id"] == last
        assert (row["tool_calls"], row["tools"]) == (1, "shout")
        assert row["input_tokens"] == tree.nodes[last]["input_tokens"]
        built = forest.tree(chain["thread"])
        assert built.graph["calls"] == {first: last}
        if text:
            assert dict(built.nodes[last]) == dict(tree.nodes[last])
        else:
            assert (row["prompt"], row["parts"]) == (None, None)


def test_a_call_inside_a_run_finds_the_runs_node(chain) -> None:
    first, last = chain["turns"]
    with open_logs(chain["path"]) as logs:
        assert logs.tree_id_of_node(first) == chain["thread"]
        assert logs.node_of(first) == last
        assert logs.node_of(last) == last
    tree = load_tree_of_node(first, chain["path"])
    assert list(tree) == [last]
    assert path(tree, first) == [last]
    assert children(tree, first) == []
    assert parent(tree, first) is None
    assert load_path(first, chain["path"]) == [last]
    for command in ("path", "children", "descendants"):
        expected = [last] if command == "path" else []
        found = run(command, first, "--db", chain["path"], "--json").stdout
        assert json.loads(found) == expected


def test_llm_goes_on_from_the_runs_end(chain, tmp_path) -> None:
    copy = tmp_path / "logs.db"
    shutil.copy(chain["path"], copy)
    first, last = chain["turns"]
    with LlmLog(tmp_path) as log:
        after = log.prompt("thanks", continue_conversation=chain["thread"])
    tree = load_tree(chain["thread"], copy)
    assert list(tree.edges) == [(last, after)]
    assert tree.nodes[after]["prompt"] == "thanks"
    assert (tree.nodes[after]["tool_calls"], tree.nodes[after]["parts"]) == (0, None)


def test_branch_and_regenerate_go_on_from_the_runs_end(chain, tmp_path) -> None:
    copy = tmp_path / "logs.db"
    shutil.copy(chain["path"], copy)
    first, last = chain["turns"]
    with LlmLog(tmp_path):
        # The id of the call inside the run names the run's node.
        branched = run("branch", first, "next please", "--db", copy, "--json")
        regenerated = run("regenerate", first, "--db", copy, "--json")
    below = json.loads(branched.stdout)["node_id"]
    [again] = [
        answer["node_id"] for answer in json.loads(regenerated.stdout)["answers"]
    ]
    tree = load_tree(chain["thread"], copy)
    assert parent(tree, below) == last
    assert tree.nodes[below]["prompt"] == "next please"
    # The regenerated answer is an alternative to the whole run, from the
    # same prompt: here a second start.
    assert siblings(tree, last) == [again]
    assert tree.nodes[again]["prompt"] == PROMPT


@pytest.fixture(scope="module")
def forked_run(tmp_path_factory) -> dict:
    """A tool chain whose second call was tried again with another result:
    a fork of the thread at the tool call (`LogStore.fork`), sent the new
    result in a tool message."""
    directory = tmp_path_factory.mktemp("forked")
    with LlmLog(directory) as log:
        first, last = log.tool_chain("shout tree", SHOUT_TREE)
        db = sqlite_utils.Database(log.path)
        try:
            store = LogStore(db)
            row = db["turns"].get(first)
            thread = store.fork(row["tip_message_hash"], forked_from=row["thread_id"])
            history = store.load_chain(store.thread_tip(thread))
            call = history[-1].parts[-1]
            response = llm.get_model("echo").prompt(
                messages=[
                    *history,
                    llm.tool_message(
                        ToolResultPart(
                            name="shout",
                            output="TREE!!",
                            tool_call_id=call.tool_call_id,
                        )
                    ),
                ]
            )
            response.text()
            retried = store.log(response, thread_id=thread)
        finally:
            db.close()
    return {
        "path": log.path,
        "turns": (first, last, retried),
        "thread": row["thread_id"],
        "fork": thread,
    }


def test_a_run_that_forks_ends_one_node_per_branch(forked_run) -> None:
    first, last, retried = forked_run["turns"]
    [call_id] = call_ids(forked_run["path"])
    tree = load_tree(forked_run["fork"], forked_run["path"])
    assert list(tree) == [last, retried]
    assert list(tree.edges) == []
    assert siblings(tree, last) == [retried]
    for node, output, thread in (
        (last, "TREE!", forked_run["thread"]),
        (retried, "TREE!!", forked_run["fork"]),
    ):
        data = tree.nodes[node]
        assert data["prompt"] == PROMPT
        assert data["conversation_id"] == thread
        assert [part["type"] for part in data["parts"]] == [
            "text",
            "text",
            "tool_call",
            "tool_result",
            "text",
        ]
        assert data["parts"][3] == kinds.tool_result("shout", output, call_id)
        assert (data["tool_calls"], data["tools"]) == (1, "shout")
    # The call both runs share names the first run's node.
    assert tree.graph["calls"] == {first: last}
    assert path(tree, first) == [last]
    forest = read_forest(forked_run["path"])
    assert list(forest.nodes["id"]) == [last, retried]
    assert forest.calls == {first: last}


# -- every id llm logged is in every export ---------------------------------------


@pytest.fixture(scope="module")
def chain_and_chat(tmp_path_factory) -> dict:
    """`shout tree` as llm runs it (two turns, one node), and a conversation
    of its own after it: two trees, so the whole forest's JSON is written
    from its table."""
    directory = tmp_path_factory.mktemp("chain-and-chat")
    with LlmLog(directory) as log:
        first, last = log.tool_chain("shout tree", SHOUT_TREE)
        other = log.prompt("hello")
        threads = [log.thread_of(first), log.thread_of(other)]
    return {"path": log.path, "turns": (first, last, other), "threads": threads}


def test_every_id_llm_logged_is_in_every_export(chain_and_chat, tmp_path) -> None:
    """The first call of the run is no node, but each export names it as
    one of the calls its node folds (`calls`), and the formats that read
    back give the tree's calls again."""
    from convgraph.export import (
        FORMATS,
        read_graphml,
        read_html,
        read_json,
        read_tree_json,
    )

    db = chain_and_chat["path"]
    first, last, other = chain_and_chat["turns"]
    with open_logs(db) as logs:
        assert sorted(logs.tree_ids()) == sorted(chain_and_chat["threads"])
    written = {}
    for name in ("json", "tree-json", "graphml", "html", "markdown", "dot"):
        out = tmp_path / f"forest.{name}"
        run("export", "--db", db, "--format", name, "-o", out)
        written[name] = out
        assert first in out.read_text("utf-8"), name

    # Node-link JSON of the whole forest, from its table: the run's node
    # lists its first call, the other node none.
    document = json.loads(written["json"].read_text("utf-8"))
    assert {node["id"]: node["calls"] for node in document["nodes"]} == {
        last: [first],
        other: [],
    }
    # The same bytes as the per-tree path writes.
    forest = read_forest(db)
    generate = FORMATS["json"].generate
    assert "\n".join(generate(forest)) == "\n".join(generate(forest.trees()))

    tree = load_tree(chain_and_chat["threads"][0], db)
    for read, out in (
        (read_json, written["json"]),
        (read_tree_json, written["tree-json"]),
        (read_graphml, written["graphml"]),
        (read_html, written["html"]),
    ):
        backs = {back.graph["tree_id"]: back for back in read(out)}
        back = backs[chain_and_chat["threads"][0]]
        assert back.graph["calls"] == {first: last} == tree.graph["calls"], read
        assert dict(back.nodes[last]) == dict(tree.nodes[last]), read
        assert "calls" not in backs[chain_and_chat["threads"][1]].graph, read

    # The Markdown's answer names the call; the drawing's tooltip too.
    assert f"`{last}` (earlier calls `{first}`)" in written["markdown"].read_text(
        "utf-8"
    )
    assert f"earlier calls of its run: {first}" in written["dot"].read_text("utf-8")

    # The Parquet dataset's node table: a list of ids a node.
    import pyarrow as pa
    import pyarrow.parquet as pq

    run("export", "--db", db, "--format", "parquet", "-o", tmp_path / "dataset")
    table = pq.read_table(tmp_path / "dataset" / "nodes")
    kind = table.schema.field("calls").type
    assert pa.types.is_list(kind) and kind.value_type == pa.string()
    ids, calls = table["id"].to_pylist(), table["calls"].to_pylist()
    assert dict(zip(ids, calls, strict=True)) == {
        last: [first],
        other: [],
    }


# -- legacy files: llm 0.26-0.31's tool tables --------------------------------


def add_tool_call(conn, response_id: str, name: str, arguments: str, call_id: str):
    conn.execute(
        "insert into tool_calls (response_id, name, arguments, tool_call_id)"
        " values (?, ?, ?, ?)",
        [response_id, name, arguments, call_id],
    )


def add_tool_result(conn, response_id: str, name: str, output: str, call_id: str):
    conn.execute(
        "insert into tool_results (response_id, name, output, tool_call_id)"
        " values (?, ?, ?, ?)",
        [response_id, name, output, call_id],
    )


def legacy_chain(path: Path, with_parent: bool) -> Path:
    """Conversation "c": a question, a tool chain of three calls (the first
    calls two tools, the second one more), and a question after it."""
    conn = legacy_database(path, with_parent=with_parent)
    links = [("q", None), ("r1", "q"), ("r2", "r1"), ("r3", "r2"), ("after", "r3")]
    prompts = {"q": "hello", "r1": "look it up", "after": "thanks"}
    for index, (node, above) in enumerate(links):
        add_response(
            conn,
            node,
            "c",
            prompts.get(node, ""),
            parent=above if with_parent else None,
            response=f"answer {node}" if node != "r2" else "",
            datetime_utc=timestamp(index),
            input_tokens=index,
            output_tokens=10 * index,
            duration_ms=None if node == "r2" else 100,
        )
    add_tool_call(conn, "r1", "search", '{"q": "trees"}', "t1")
    add_tool_call(conn, "r1", "count", "not json", "t2")
    add_tool_result(conn, "r2", "search", "3 trees", "t1")
    add_tool_result(conn, "r2", "count", "12", "t2")
    add_tool_call(conn, "r2", "search", '{"q": "oaks"}', "t3")
    add_tool_result(conn, "r3", "search", "1 oak", "t3")
    conn.commit()
    conn.close()
    return path


@pytest.mark.parametrize("with_parent", [True, False], ids=["parent", "chain"])
def test_a_legacy_tool_chain_is_one_node(tmp_path, with_parent) -> None:
    db = legacy_chain(tmp_path / "logs.db", with_parent)
    tree = load_tree("c", db)
    assert list(tree.edges) == [("q", "r3"), ("r3", "after")]
    node = dict(tree.nodes["r3"])
    assert node == {
        "conversation_id": "c",
        "prompt": "look it up",
        "system": None,
        # r2 answered nothing but calls: no empty paragraph for it.
        "response": "answer r1\n\nanswer r3",
        "parts": [
            kinds.text("user", "look it up"),
            kinds.text("assistant", "answer r1"),
            kinds.tool_call("search", {"q": "trees"}, "t1"),
            kinds.tool_call("count", "not json", "t2"),
            kinds.tool_result("search", "3 trees", "t1"),
            kinds.tool_result("count", "12", "t2"),
            kinds.tool_call("search", {"q": "oaks"}, "t3"),
            kinds.tool_result("search", "1 oak", "t3"),
            kinds.text("assistant", "answer r3"),
        ],
        "tool_calls": 3,
        "tools": "search, count",
        "model": "echo",
        "datetime_utc": timestamp(3),
        "input_tokens": 1 + 2 + 3,
        "output_tokens": 10 + 20 + 30,
        "duration_ms": 200,
        "source": "responses",
        "active": True,
        "note": None,
        "preferred": False,
    }
    assert tree.graph["calls"] == {"r1": "r3", "r2": "r3"}
    for text in (True, False):
        forest = read_forest(db, text=text)
        assert list(forest.nodes["id"]) == ["q", "r3", "after"]
        assert list(forest.nodes["tool_calls"]) == [0, 3, 0]
        assert list(forest.nodes["tools"]) == [None, "search, count", None]
        assert forest.calls == {"r1": "r3", "r2": "r3"}
    assert read_forest(db).tree("c").nodes["r3"] == tree.nodes["r3"]
    assert load_path("r2", db) == ["q", "r3"]
    assert json.loads(run("children", "r1", "--db", db, "--json").stdout) == ["after"]


def test_a_legacy_response_with_an_empty_prompt_and_no_results_is_its_own_node(
    tmp_path,
) -> None:
    conn = legacy_database(tmp_path / "logs.db")
    add_response(conn, "a", "c", "hi", datetime_utc=timestamp(0))
    add_response(conn, "b", "c", "", parent="a", datetime_utc=timestamp(1))
    add_tool_call(conn, "a", "search", "{}", "t1")
    conn.commit()
    conn.close()
    tree = load_tree("c", tmp_path / "logs.db")
    assert list(tree.edges) == [("a", "b")]
    assert (tree.nodes["a"]["tool_calls"], tree.nodes["b"]["tool_calls"]) == (1, 0)


def test_a_legacy_chain_that_forks_ends_one_node_per_branch(tmp_path) -> None:
    conn = legacy_database(tmp_path / "logs.db")
    add_response(conn, "r1", "c", "look", datetime_utc=timestamp(0))
    for index, node in enumerate(["r2", "r2b"], start=1):
        add_response(conn, node, "c", "", parent="r1", datetime_utc=timestamp(index))
        add_tool_result(conn, node, "search", f"found {node}", "t1")
    add_tool_call(conn, "r1", "search", "{}", "t1")
    conn.commit()
    conn.close()
    tree = load_tree("c", tmp_path / "logs.db")
    assert list(tree) == ["r2", "r2b"]
    assert [tree.nodes[node]["prompt"] for node in tree] == ["look", "look"]
    assert tree.graph["calls"] == {"r1": "r2"}
    assert list(read_forest(tmp_path / "logs.db").nodes["id"]) == ["r2", "r2b"]


def test_a_chain_of_tool_results_round_a_cycle_folds_nothing(tmp_path) -> None:
    # Hostile links: both responses carry on the other's run. No run has a
    # head, so neither is folded; the check breaks the cycle as ever.
    conn = legacy_database(tmp_path / "logs.db")
    add_response(conn, "x", "c", "", parent="y", datetime_utc=timestamp(0))
    add_response(conn, "y", "c", "", parent="x", datetime_utc=timestamp(1))
    for node in ("x", "y"):
        add_tool_result(conn, node, "search", "found", "t1")
    conn.commit()
    conn.close()
    tree = load_tree("c", tmp_path / "logs.db")
    assert list(tree) == ["x", "y"]
    # The link of the cycle's first node in log order is dropped.
    assert list(tree.edges) == [("x", "y")]
    forest = read_forest(tmp_path / "logs.db")
    assert list(forest.nodes["id"]) == ["x", "y"]
    assert [problem.kind for problem in forest.problems] == ["cycle"]


@pytest.fixture(scope="module")
def old_031():
    try:
        return old_llm("0.31", "0.4")
    except OldLlmUnavailable as error:
        pytest.skip(str(error))


@pytest.mark.slow
def test_llm_031s_tool_chain_is_one_node(old_031, tmp_path) -> None:
    functions = tmp_path / "functions.py"
    functions.write_text(
        'def shout(word: str) -> str:\n    "Say it loudly."\n'
        '    return word.upper() + "!"\n'
    )
    old_031.run(tmp_path, "-m", "echo", "--functions", str(functions), PROMPT)
    conn = sqlite3.connect(tmp_path / "logs.db")
    first, last = [
        row[0] for row in conn.execute("select id from responses order by id")
    ]
    [conversation] = {
        row[0] for row in conn.execute("select conversation_id from responses")
    }
    conn.close()
    tree = load_tree(conversation, tmp_path / "logs.db")
    assert list(tree) == [last]
    result = {"name": "shout", "output": "TREE!", "tool_call_id": None}
    assert tree.nodes[last]["parts"] == [
        kinds.text("user", PROMPT),
        kinds.text("assistant", echo_answer("shout tree")),
        kinds.tool_call("shout", {"word": "tree"}),
        kinds.tool_result("shout", "TREE!"),
        kinds.text("assistant", echo_answer("", [PROMPT], [result])),
    ]
    assert (tree.nodes[last]["tool_calls"], tree.nodes[last]["tools"]) == (1, "shout")
    assert tree.graph["calls"] == {first: last}
    assert list(read_forest(tmp_path / "logs.db", text=False).nodes["id"]) == [last]


@pytest.mark.slow
def test_llm_036_goes_on_from_llm_031s_tool_chain(old_031, tmp_path) -> None:
    # llm 0.36 rebuilds the legacy run as messages (the call, the tool
    # message, the answer) and logs its turn below them: it hangs under the
    # run's node, found by its last answer.
    functions = tmp_path / "functions.py"
    functions.write_text(
        'def shout(word: str) -> str:\n    "Say it loudly."\n'
        '    return word.upper() + "!"\n'
    )
    old_031.run(tmp_path, "-m", "echo", "--functions", str(functions), PROMPT)
    with LlmLog(tmp_path) as log:
        log.cli("-m", "echo", "-c", "thanks")
        after = log.latest_turn()
    conn = sqlite3.connect(tmp_path / "logs.db")
    first, last = [
        row[0] for row in conn.execute("select id from responses order by id")
    ]
    conn.close()
    for text in (True, False):
        forest = read_forest(tmp_path / "logs.db", text=text)
        assert [
            list(row)
            for row in zip(
                plain(forest.nodes["id"]),
                plain(forest.nodes["parent_id"]),
                plain(forest.nodes["source"]),
                strict=True,
            )
        ] == [
            [last, None, "responses"],
            [after, last, "turns"],
        ]
        assert forest.calls == {first: last}
    tree = load_tree_of_node(first, tmp_path / "logs.db")
    assert list(tree.edges) == [(last, after)]
    assert path(tree, first) == [last]


def test_a_note_or_a_mark_on_a_call_inside_a_run_is_the_runs(tmp_path) -> None:
    db = legacy_chain(tmp_path / "logs.db", with_parent=True)
    run("note", "r1", "the search was right", "--db", db)
    run("prefer", "r2", "--db", db)
    tree = load_tree("c", db)
    assert tree.nodes["r3"]["note"] == "the search was right"
    assert tree.nodes["r3"]["preferred"] is True
    assert [tree.nodes[node]["note"] for node in ("q", "after")] == [None, None]


# -- one tree's read and the whole file's agree on any legacy tool chains ------


@st.composite
def legacy_runs(draw: st.DrawFn) -> list[tuple]:
    """Responses of two conversations, each maybe sent tool results, maybe
    making calls, with an empty prompt or not, and any stored parent."""
    count = draw(st.integers(1, 10))
    ids = [f"r{index}" for index in range(count)]
    return [
        (
            node,
            draw(st.sampled_from(["c", "d"])),
            draw(st.sampled_from(["", "ask"])),
            draw(st.one_of(st.none(), st.sampled_from([*ids, "gone"]))),
            draw(st.integers(0, 2)),  # tool calls made
            draw(st.booleans()),  # sent a result
        )
        for node in ids
    ]


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(rows=legacy_runs(), with_parent=st.booleans())
def test_one_tree_and_the_whole_file_fold_legacy_runs_alike(
    tmp_path_factory, rows, with_parent
) -> None:
    path = tmp_path_factory.mktemp("runs") / "logs.db"
    conn = legacy_database(path, with_parent=with_parent)
    for index, (node, conversation, prompt, above, made, sent) in enumerate(rows):
        add_response(
            conn,
            node,
            conversation,
            prompt,
            parent=above if with_parent else None,
            datetime_utc=timestamp(index),
            input_tokens=index,
        )
        for call in range(made):
            add_tool_call(conn, node, f"tool{call}", "{}", f"{node}-{call}")
        if sent:
            add_tool_result(conn, node, "tool0", "done", "x")
    conn.commit()
    conn.close()
    with open_logs(path) as logs:
        records, calls = [], {}
        for tree_id in logs.tree_ids():
            tree = logs.read_tree(tree_id)
            records += tree.records
            calls.update(tree.calls)
        records.sort(key=lambda record: (record["datetime_utc"], record["id"]))
        for text in (True, False):
            read = logs.read(texts=text)
            nodes = read.nodes
            assert read.calls == calls
            columns = [
                column
                for column in SOURCE_COLUMNS
                if text or column not in CONTENT_ATTRIBUTES
            ]
            table = [
                [None if missing(value) else value for value in row]
                for row in nodes[columns].astype(object).values.tolist()
            ]
            assert table == [[record[c] for c in columns] for record in records], text


# -- deleting a run ---------------------------------------------------------------


@pytest.mark.parametrize("with_parent", [True, False], ids=["parent", "chain"])
def test_deleting_a_run_deletes_every_call_of_it(tmp_path, with_parent) -> None:
    """The run r1 -> r2 -> r3 is one node (r3): deleting it, by its id or by
    the id of a call inside it, deletes the three calls and their tool rows,
    and the question after it moves up to the question before it."""
    from convgraph.store import delete_node

    for name in ("r3", "r1"):
        path = legacy_chain(tmp_path / f"{name}-{with_parent}.db", with_parent)
        if with_parent:
            migrate(path)
        deletion = delete_node(name, path, mode="reparent")
        assert (deletion.node_id, deletion.deleted, deletion.moved) == (
            "r3",
            ["r1", "r2", "r3"],
            ["after"],
        )
        conn = sqlite3.connect(path)
        assert [
            row[0] for row in conn.execute("select id from responses order by rowid")
        ] == [
            "q",
            "after",
        ]
        assert conn.execute("select count(*) from tool_calls").fetchone() == (0,)
        assert conn.execute("select count(*) from tool_results").fetchone() == (0,)
        conn.close()
        tree = load_tree("c", path)
        assert list(tree.edges) == [("q", "after")]
