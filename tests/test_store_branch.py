"""`convgraph branch`: continue a conversation from any node with llm.

The model must be given the history from the root to the node, then the new
prompt. To see exactly what it was given, the tests add a small llm plugin
with a model that answers with the messages it received, as llm-echo answers
with the prompt; the rest runs on llm 0.36 itself with llm-echo.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import llm
import pytest
import sqlite_utils
from llm.logs import LogStore
from llm.plugins import pm

from convgraph.model.loading import load_tree, load_tree_of_node
from convgraph.model.tree import path as path_to
from convgraph.store import BranchError, branch, migrate
from tests.databases import LlmLog, add_tree, legacy_database
from tests.helpers import file_digest, run


class MessagesModel(llm.Model):
    """Answers with the messages it was given, as [role, text] pairs."""

    model_id = "messages"
    can_stream = False

    def execute(self, prompt, stream, response, conversation=None):
        yield json.dumps(
            [
                [
                    message.role,
                    "".join(getattr(p, "text", "") or "" for p in message.parts),
                ]
                for message in prompt.messages
            ]
        )


class MessagesPlugin:
    @llm.hookimpl
    def register_models(self, register):
        register(MessagesModel())


@pytest.fixture
def messages_model():
    pm.register(MessagesPlugin(), name="convgraph-test-messages")
    yield "messages"
    pm.unregister(name="convgraph-test-messages")


def chain(path: Path, turn_id: str) -> list[tuple[str, str]]:
    """The stored messages up to a turn's tip: (role, text) pairs."""
    db = sqlite_utils.Database(path)
    try:
        tip = db["turns"].get(turn_id)["tip_message_hash"]
        return [
            (message.role, "".join(getattr(p, "text", "") or "" for p in message.parts))
            for message in LogStore(db).load_chain(tip)
        ]
    finally:
        db.close()


def thread(path: Path, thread_id: str) -> dict:
    db = sqlite_utils.Database(path)
    try:
        return db["threads"].get(thread_id)
    finally:
        db.close()


# -- the message store ----------------------------------------------------------


def test_branch_in_the_message_store_forks_a_thread_at_the_node(store):
    log, conversation, first, second = store
    tip_before = thread(log.path, conversation)["tip_message_hash"]
    result = run("branch", first, "What is a graph, then?", "--db", log.path, "--json")
    created = json.loads(result.stdout)
    assert sorted(created) == ["conversation_id", "node_id"]
    fork, node = created["conversation_id"], created["node_id"]

    forked = thread(log.path, fork)
    assert forked["forked_from"] == conversation
    assert (
        forked["tip_message_hash"]
        == (sqlite_utils.Database(log.path)["turns"].get(node)["tip_message_hash"])
    )
    assert thread(log.path, conversation)["tip_message_hash"] == tip_before
    # convgraph sees the new turn as a child of the node, beside `second`.
    tree = load_tree(conversation, log.path)
    assert list(tree.successors(first)) == [second, node]
    assert tree.nodes[node]["conversation_id"] == fork
    assert tree.nodes[node]["prompt"] == "What is a graph, then?"
    # The stored history is the node's, then the new prompt and its answer.
    history = chain(log.path, first)
    assert chain(log.path, node)[:-1] == [*history, ("user", "What is a graph, then?")]


def test_llm_continues_the_fork(store):
    log, conversation, first, second = store
    created = branch(first, "What is a graph, then?", log.path)
    with log:
        turn = log.prompt("And a DAG?", continue_conversation=created.conversation_id)
    assert log.thread_of(turn) == created.conversation_id
    tree = load_tree_of_node(turn, log.path)
    assert path_to(tree, turn) == [first, created.node_id, turn]
    assert [text for role, text in chain(log.path, turn) if role == "user"] == [
        "What is a tree?",
        "What is a graph, then?",
        "And a DAG?",
    ]


def test_the_model_gets_the_history_up_to_the_node(store, messages_model):
    log, conversation, first, second = store
    created = branch(second, "Now a graph", log.path, model=messages_model)
    tree = load_tree(conversation, log.path)
    answers = [tree.nodes[n]["response"] for n in (first, second)]
    assert json.loads(tree.nodes[created.node_id]["response"]) == [
        ["user", "What is a tree?"],
        ["assistant", answers[0]],
        ["user", "And a forest?"],
        ["assistant", answers[1]],
        ["user", "Now a graph"],
    ]
    assert tree.nodes[created.node_id]["model"] == "messages"


def test_a_system_prompt_comes_after_the_history(store, messages_model):
    log, conversation, first, second = store
    created = branch(
        first, "Briefly?", log.path, model=messages_model, system="Be brief"
    )
    given = json.loads(
        load_tree(conversation, log.path).nodes[created.node_id]["response"]
    )
    assert given[-2:] == [["system", "Be brief"], ["user", "Briefly?"]]
    # llm-echo reads the system prompt from the prompt itself.
    echoed = branch(first, "Briefly?", log.path, system="Be brief")
    answer = load_tree(conversation, log.path).nodes[echoed.node_id]["response"]
    assert json.loads(answer)["system"] == "Be brief"


def test_text_output_names_the_new_node_and_conversation(store):
    log, conversation, first, second = store
    result = run("branch", second, "More", "--db", log.path, "-m", "echo")
    lines = result.stdout.splitlines()
    assert [line.split(" ")[0] for line in lines] == [
        "node",
        "conversation",
        "Continue",
    ]
    node, fork = (line.split(" ", 1)[1] for line in lines[:2])
    assert log.thread_of(node) == fork
    # The llm command that goes on from the new branch, as import says it.
    assert lines[2] == f"Continue it: llm -c --cid {fork} 'your prompt'"


# -- a legacy database with the parent column -----------------------------------


def test_legacy_branch_is_a_new_child_in_the_nodes_conversation(legacy, messages_model):
    result = run("branch", "f", "And then?", "-m", messages_model, "--db", legacy)
    lines = result.stdout.splitlines()
    node = lines[0].removeprefix("node ")
    assert lines == [f"node {node}", "conversation t"]
    tree = load_tree("t", legacy)
    assert path_to(tree, node) == ["root", "e", "f", node]
    assert json.loads(tree.nodes[node]["response"]) == [
        ["system", "You like trees"],
        ["user", "prompt root"],
        ["assistant", "answer to prompt root"],
        ["user", "prompt e"],
        ["assistant", "answer to prompt e"],
        ["user", "prompt f"],
        ["assistant", "answer to prompt f"],
        ["user", "And then?"],
    ]
    conn = sqlite3.connect(legacy)
    conn.row_factory = sqlite3.Row
    row = dict(conn.execute("select * from responses where id = ?", [node]).fetchone())
    conn.close()
    assert {
        key: row[key]
        for key in (
            "parent_response_id",
            "conversation_id",
            "model",
            "prompt",
            "system",
            "options_json",
        )
    } == {
        "parent_response_id": "f",
        "conversation_id": "t",
        "model": "messages",
        "prompt": "And then?",
        "system": None,
        "options_json": "{}",
    }
    assert len(node) == 26 and row["datetime_utc"] > "2025"


def test_legacy_branch_is_read_by_llm(tmp_path):
    """llm 0.36 lists the branch and continues its conversation."""
    with LlmLog(tmp_path) as log:
        legacy_database(log.path, with_parent=False).close()
        migrate(log.path)
        from convgraph.store import log_response

        root = log_response(log.path, prompt="Trees?", response="Yes.", model="echo")
        created = branch(root.node_id, "Which ones?", log.path, model="echo")
        listed = json.loads(log.cli("logs", "list", "--json", "-n", "0"))
        assert [
            (row["id"], row["conversation_id"], row["prompt"]) for row in listed
        ] == [
            (root.node_id, root.conversation_id, "Trees?"),
            (created.node_id, root.conversation_id, "Which ones?"),
        ]
        turn = log.prompt("Oaks?", continue_conversation=root.conversation_id)
    tree = load_tree(root.conversation_id, log.path)
    assert path_to(tree, turn) == [root.node_id, created.node_id, turn]


# -- errors ---------------------------------------------------------------------


def test_legacy_without_the_column_is_refused(tmp_path):
    path = tmp_path / "logs.db"
    conn = legacy_database(path, with_parent=False)
    add_tree(conn, "t", [("a", None), ("b", None)])
    conn.close()
    before = file_digest(path)
    result = run("branch", "a", "hi", "--db", path, expect=2)
    assert result.stderr == (
        "Error: the database has no parent_response_id column yet:"
        " run `convgraph migrate`\n"
    )
    assert file_digest(path) == before


def test_unknown_node_and_unknown_model(legacy):
    before = file_digest(legacy)
    result = run("branch", "nope", "hi", "--db", legacy, expect=2)
    assert result.stderr == "Error: no node with id 'nope'\n"
    result = run("branch", "f", "hi", "-m", "no-such-model", "--db", legacy, expect=2)
    assert result.stderr == (
        "Error: unknown model 'no-such-model' (`llm models` lists the models llm knows)\n"
    )
    assert file_digest(legacy) == before


def test_a_model_error_is_one_line_and_writes_nothing(store, monkeypatch):
    log, conversation, first, second = store
    monkeypatch.delenv("LLM_ECHO_NEEDS_KEY_KEY", raising=False)
    before = file_digest(log.path)
    result = run(
        "branch", first, "hi", "-m", "echo-needs-key", "--db", log.path, expect=2
    )
    assert result.stderr == (
        "Error: model echo-needs-key failed: No key found - add one using"
        " 'llm keys set echo-needs-key' or set the LLM_ECHO_NEEDS_KEY_KEY"
        " environment variable\n"
    )
    assert file_digest(log.path) == before


def test_without_llm_branching_says_how_to_get_it(legacy, monkeypatch):
    monkeypatch.setitem(sys.modules, "llm", None)  # `import llm` fails
    with pytest.raises(BranchError) as error:
        branch("f", "hi", legacy)
    assert str(error.value) == (
        "branching calls a model through llm, which is not installed: pip install llm"
    )


def test_a_model_past_its_request_timeout_is_a_branch_error(store):
    log, conversation, first, second = store
    from tests.plugins.llm_slow_model import SlowModel, registered

    before = file_digest(log.path)
    with registered(SlowModel("stuck", delay=60)), pytest.raises(BranchError) as error:
        branch(first, "hi", log.path, model="stuck", request_timeout=0.2)
    assert str(error.value) == "model stuck failed: no answer within 0.2 s (--timeout)"
    assert file_digest(log.path) == before
