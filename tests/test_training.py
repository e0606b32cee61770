"""Training data: chat-jsonl paths and preference pairs, validated against
the schemas of docs/training-schema.md, on hand-made regenerations, a
logs.db written by llm itself, and a ChatGPT export."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import jsonschema
import pytest

import convgraph.export.chat_jsonl
from convgraph.export.training import PAIR_COLUMNS, preference_pairs, tree_pairs
from convgraph.model.loading import load_tree
from convgraph.store.notes import set_preferred
from tests import chat_exports as build
from tests.databases import LlmLog, add_response, legacy_database, timestamp
from tests.helpers import documented_schemas, file_digest, run


def schemas() -> dict[str, dict]:
    """The JSON Schemas that docs/training-schema.md documents, by `$id`."""
    return documented_schemas("training-schema.md")


def check_example(record: dict) -> None:
    jsonschema.validate(record, schemas()["convgraph.chat-jsonl/1"])
    roles = [message["role"] for message in record["messages"]]
    if roles[0] == "system":
        roles = roles[1:]
    if "tool" not in roles:
        assert roles == ["user", "assistant"] * (len(roles) // 2)
    check_order(record["messages"])
    assert roles[-1] == "assistant"


def check_order(messages: list[dict]) -> None:
    """The order docs/training-schema.md promises beyond its schemas: a user
    message first (after the system prompt), an assistant message after a
    user's or a tool's, a tool message after an assistant's or a tool's,
    answering a call made before it."""
    if messages[0]["role"] == "system":
        messages = messages[1:]
    assert messages[0]["role"] == "user"
    called: set[str] = set()
    for before, message in zip(messages, messages[1:], strict=False):
        role = message["role"]
        if role == "assistant":
            assert before["role"] in ("user", "tool"), messages
            called |= {call["id"] for call in message.get("tool_calls", [])}
        elif role == "tool":
            assert before["role"] in ("assistant", "tool"), messages
            assert message["tool_call_id"] in called, messages
        else:
            assert role == "user" and before["role"] != "user", messages


def check_pair(record: dict) -> None:
    jsonschema.validate(record, schemas()["convgraph.pairs/1"])
    assert record["prompt"][-1]["role"] == "user"
    check_order(record["prompt"] + record["chosen"])
    check_order(record["prompt"] + record["rejected"])


def test_doctests() -> None:
    import doctest

    assert doctest.testmod(convgraph.export.chat_jsonl).failed == 0


# -- a known set of regenerations --------------------------------------------------


@pytest.fixture
def jokes_db(tmp_path: Path) -> Path:
    """One conversation: a greeting, then "Tell a joke" answered three times
    (regenerations j1, j2, j3) and once edited to "Tell a poem" (p1)."""
    path = tmp_path / "jokes.db"
    conn = legacy_database(path)
    rows = [
        ("hi", None, "Hi", "Hello"),
        ("j1", "hi", "Tell a joke", "joke one"),
        ("j2", "hi", "Tell a joke", "joke two"),
        ("p1", "hi", "Tell a poem", "a poem"),
        ("j3", "hi", "Tell a joke", "joke three"),
    ]
    for index, (node, parent, prompt, response) in enumerate(rows):
        add_response(
            conn,
            node,
            "jokes",
            prompt,
            parent=parent,
            response=response,
            system="Be funny",
            datetime_utc=timestamp(index),
        )
    conn.commit()
    conn.close()
    return path


PROMPT = [
    {"role": "system", "content": "Be funny"},
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello"},
    {"role": "user", "content": "Tell a joke"},
]


def pair(chosen: str, rejected: str) -> dict:
    texts = {"j1": "joke one", "j2": "joke two", "j3": "joke three"}
    return {
        "prompt": PROMPT,
        "chosen": [{"role": "assistant", "content": texts[chosen]}],
        "rejected": [{"role": "assistant", "content": texts[rejected]}],
        "conversation_id": "jokes",
        "chosen_id": chosen,
        "rejected_id": rejected,
    }


def test_pairs_choose_the_active_answer(jokes_db: Path) -> None:
    # j3 was logged last: the active path. The poem answers another prompt.
    records = list(tree_pairs(load_tree("jokes", jokes_db)))
    assert records == [pair("j3", "j1"), pair("j3", "j2")]
    for record in records:
        check_pair(record)


def test_a_preferred_answer_is_chosen(jokes_db: Path) -> None:
    before = set_preferred("j1", db=jokes_db)
    assert before == []
    result = run("pairs", "--nl", "--db", jokes_db)
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert records == [pair("j1", "j2"), pair("j1", "j3")]
    # --prefer active ignores the mark.
    result = run("pairs", "--nl", "--prefer", "active", "--db", jokes_db)
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert records == [pair("j3", "j1"), pair("j3", "j2")]


def test_pairs_as_a_dataframe(jokes_db: Path) -> None:
    frame = preference_pairs(jokes_db)
    assert list(frame.columns) == list(PAIR_COLUMNS)
    assert frame[["chosen_id", "rejected_id"]].values.tolist() == [
        ["j3", "j1"],
        ["j3", "j2"],
    ]
    assert frame.at[0, "prompt"] == PROMPT
    assert frame.at[1, "rejected"] == [{"role": "assistant", "content": "joke two"}]


def test_pairs_csv_and_table(jokes_db: Path) -> None:
    result = run("pairs", "jokes", "--csv", "--db", jokes_db)
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert list(rows[0]) == list(PAIR_COLUMNS)
    assert json.loads(rows[0]["prompt"]) == PROMPT
    assert json.loads(rows[1]["chosen"]) == pair("j3", "j2")["chosen"]
    table = run("pairs", "--db", jokes_db).stdout.splitlines()
    assert table[0].split() == list(PAIR_COLUMNS)
    assert table[1].split()[:4] == ["Tell", "a", "joke", "joke"]
    assert len(table) == 3


def test_no_pair_without_a_choice(tmp_path: Path) -> None:
    # Two regenerations off the active path (the last node is elsewhere):
    # neither is chosen, so no pair.
    path = tmp_path / "none.db"
    conn = legacy_database(path)
    for index, (node, parent, prompt) in enumerate(
        [("r", None, "Q"), ("a", "r", "A?"), ("b", "r", "A?"), ("c", "r", "B?")]
    ):
        add_response(
            conn, node, "t", prompt, parent=parent, datetime_utc=timestamp(index)
        )
    conn.commit()
    conn.close()
    assert run("pairs", "--json", "--db", path).stdout == "[]\n"


def test_chat_jsonl_one_line_per_leaf(jokes_db: Path) -> None:
    before = file_digest(jokes_db)
    result = run("export", "--format", "chat-jsonl", "--db", jokes_db)
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [record["leaf_id"] for record in records] == ["j1", "j2", "p1", "j3"]
    assert records[2] == {
        "messages": [
            {"role": "system", "content": "Be funny"},
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello"},
            {"role": "user", "content": "Tell a poem"},
            {"role": "assistant", "content": "a poem"},
        ],
        "conversation_id": "jokes",
        "leaf_id": "p1",
    }
    for record in records:
        check_example(record)
    active = run(
        "export", "--format", "chat-jsonl", "--paths", "active", "--db", jokes_db
    )
    [record] = [json.loads(line) for line in active.stdout.splitlines()]
    assert record["leaf_id"] == "j3"
    assert file_digest(jokes_db) == before


def test_paths_option_only_for_chat_jsonl(jokes_db: Path) -> None:
    result = run(
        "export", "--format", "dot", "--paths", "active", "--db", jokes_db, expect=2
    )
    assert result.stderr == "Error: --paths does not apply to --format dot\n"


# -- llm's own database --------------------------------------------------------------


def test_chat_jsonl_and_pairs_of_a_real_llm_database(llm_fork_db: dict) -> None:
    path = llm_fork_db["path"]
    first, second, third = llm_fork_db["turns"]
    fork_first, fork_second = llm_fork_db["fork_turns"]
    result = run("export", "--format", "chat-jsonl", "--db", path)
    records = [json.loads(line) for line in result.stdout.splitlines()]
    # One line per leaf: the thread's last turn and the fork's.
    assert sorted(record["leaf_id"] for record in records) == sorted(
        [third, fork_second]
    )
    for record in records:
        check_example(record)
        assert len(record["messages"]) == 6
    by_leaf = {record["leaf_id"]: record for record in records}
    assert [m["content"] for m in by_leaf[fork_second]["messages"][::2]] == [
        "What is a tree?",
        "What is a graph, then?",
        "Is every tree a graph?",
    ]
    # The fork asked another question: no regeneration, no pair.
    assert run("pairs", "--json", "--db", path).stdout == "[]\n"


def test_pairs_of_a_regeneration_logged_by_llm(tmp_path: Path) -> None:
    with LlmLog(tmp_path) as log:
        first = log.prompt("What is a tree?")
        thread = log.thread_of(first)
        second = log.prompt("And a forest?", continue_conversation=thread)
        _, again = log.fork(first, "And a forest?")
        turns = {
            row["id"]: row for row in json.loads(log.cli("logs", "--json", "-n", "0"))
        }
    result = run("pairs", "--nl", "--db", log.path)
    [record] = [json.loads(line) for line in result.stdout.splitlines()]
    check_pair(record)
    assert record == {
        "prompt": [
            {"role": "user", "content": "What is a tree?"},
            {"role": "assistant", "content": turns[first]["response"]},
            {"role": "user", "content": "And a forest?"},
        ],
        "chosen": [{"role": "assistant", "content": turns[again]["response"]}],
        "rejected": [{"role": "assistant", "content": turns[second]["response"]}],
        "conversation_id": thread,
        "chosen_id": again,
        "rejected_id": second,
    }


# -- a ChatGPT export ------------------------------------------------------------------


@pytest.fixture
def chatgpt_zip(tmp_path: Path) -> Path:
    return build.write_zip(
        tmp_path / "chatgpt-export.zip", build.split(build.chatgpt_export(), 2)
    )


def test_pairs_of_a_regenerated_first_answer(chatgpt_zip: Path) -> None:
    before = file_digest(chatgpt_zip)
    result = run("pairs", "--nl", "--db", chatgpt_zip)
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert records == [
        {
            "prompt": [{"role": "user", "content": "What is a monad?"}],
            "chosen": [{"role": "assistant", "content": "A burrito."}],
            "rejected": [{"role": "assistant", "content": "A monoid."}],
            "conversation_id": "conv-monad",
            "chosen_id": "a1b",
            "rejected_id": "a1",
        }
    ]
    check_pair(records[0])
    assert file_digest(chatgpt_zip) == before


def test_chat_jsonl_of_a_chatgpt_export(chatgpt_zip: Path) -> None:
    result = run("export", "conv-monad", "--format", "chat-jsonl", "--db", chatgpt_zip)
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [record["leaf_id"] for record in records] == ["a1", "a2", "a2e"]
    assert records[1]["messages"] == [
        {"role": "user", "content": "What is a monad?"},
        {"role": "assistant", "content": "A burrito."},
        {"role": "user", "content": "Simpler?"},
        {"role": "assistant", "content": "A box."},
    ]
    for record in records:
        check_example(record)
    # Every conversation of the export: each line valid.
    whole = run("export", "--format", "chat-jsonl", "--db", chatgpt_zip)
    for line in whole.stdout.splitlines():
        check_example(json.loads(line))


# -- tool calls and reasoning (issue 23.3) -------------------------------------------


def test_chat_jsonl_of_a_run_with_tool_calls() -> None:
    from tests.test_export_parts import agent_tree

    lines = list(convgraph.export.chat_jsonl.generate_chat_jsonl(agent_tree()))
    records = [json.loads(line) for line in lines]
    assert [record["leaf_id"] for record in records] == ["a", "b"]
    # The path to b ends on a tool's result that no answer followed: the
    # example ends with the assistant's call.
    assert [m["role"] for m in records[1]["messages"]] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert records[1]["messages"][-1]["tool_calls"][0]["function"] == {
        "name": "search",
        "arguments": "raw words",
    }
    assert lines[0] == (
        '{"messages": [{"role": "user", "content": "Shout \\"tree\\" <b>\\u001b"},'
        ' {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type":'
        ' "function", "function": {"name": "shout", "arguments": "{\\"word\\":'
        ' \\"tree\\", \\"n\\": [1, 2.5, null, true]}"}}]}, {"role": "tool",'
        ' "tool_call_id": "c1", "content": "TREE\\r\\n"}, {"role": "assistant",'
        ' "content": "Done: **TREE**"}, {"role": "user", "content": "Thanks"},'
        ' {"role": "assistant", "content": "Welcome"}], "conversation_id": "agent",'
        ' "leaf_id": "a"}'
    )
    reasoned = json.loads(
        next(
            convgraph.export.chat_jsonl.generate_chat_jsonl(
                agent_tree(), paths="active", reasoning=True
            )
        )
    )
    assert reasoned["messages"][1]["reasoning_content"] == "First é, then\nthe tool."
    for record in [*records, reasoned]:
        check_example(record)


def test_pairs_of_runs_with_tool_calls() -> None:
    from convgraph import parts
    from convgraph.model.tree import ConversationTree

    asked = parts.text(parts.USER, "Weather?")
    tree = ConversationTree.from_edges(
        [],
        {
            "plain": {"prompt": "Weather?", "response": "Sunny, I guess."},
            "tools": {
                "prompt": "Weather?",
                "response": "Sunny.",
                "parts": [
                    asked,
                    parts.reasoning("Look it up."),
                    parts.tool_call("weather", {"city": "Oslo"}, "w1"),
                    parts.tool_result("weather", "sun", "w1"),
                    parts.text(parts.ASSISTANT, "Sunny."),
                ],
                "tool_calls": 1,
                "tools": "weather",
                "preferred": True,
            },
        },
        tree_id="forecast",
    )
    (record,) = tree_pairs(tree)
    run_messages = [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "w1",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "w1", "content": "sun"},
        {"role": "assistant", "content": "Sunny."},
    ]
    assert record == {
        "prompt": [{"role": "user", "content": "Weather?"}],
        "chosen": run_messages,
        "rejected": [{"role": "assistant", "content": "Sunny, I guess."}],
        "conversation_id": "forecast",
        "chosen_id": "tools",
        "rejected_id": "plain",
    }
    check_pair(record)
    (reasoned,) = tree_pairs(tree, reasoning=True)
    assert reasoned["chosen"][0]["reasoning_content"] == "Look it up."
    check_pair(reasoned)


def test_chat_jsonl_and_pairs_of_a_tool_chain_logged_by_llm(tmp_path: Path) -> None:
    """llm 0.36 with llm-echo 0.5: a prompt whose run calls shout (with
    reasoning, -o thinking 1), then a plain follow-up."""
    with LlmLog(tmp_path) as log:
        log.tool_chain(
            "shout tree",
            [{"name": "shout", "arguments": {"word": "tree"}}],
            "-o",
            "thinking",
            "1",
        )
        turns = log.turn_ids()
        rows = {
            row["id"]: row for row in json.loads(log.cli("logs", "--json", "-n", "0"))
        }
    (call,) = rows[turns[0]]["tool_calls"]
    assert [result["output"] for result in rows[turns[1]]["tool_results"]] == ["TREE!"]
    db = tmp_path / "logs.db"
    (line,) = run("export", "--format", "chat-jsonl", "--db", db).stdout.splitlines()
    record = json.loads(line)
    check_example(record)
    prompt = rows[turns[0]]["prompt"]
    assert record["messages"] == [
        {"role": "user", "content": prompt},
        {
            "role": "assistant",
            "content": rows[turns[0]]["response"],
            "tool_calls": [
                {
                    "id": call["tool_call_id"],
                    "type": "function",
                    "function": {"name": "shout", "arguments": '{"word": "tree"}'},
                }
            ],
        },
        # tests.databases.SHOUT's answer, as llm logged it.
        {"role": "tool", "tool_call_id": call["tool_call_id"], "content": "TREE!"},
        {"role": "assistant", "content": rows[turns[1]]["response"]},
    ]
    (line,) = run(
        "export", "--format", "chat-jsonl", "--reasoning", "--db", db
    ).stdout.splitlines()
    reasoned = json.loads(line)
    check_example(reasoned)
    thought = "First I consider the prompt, then I decide what to say."
    assert [m.get("reasoning_content") for m in reasoned["messages"]] == [
        None,
        thought,
        None,
        thought,
    ]
    # --reasoning is chat-jsonl's.
    refused = run("export", "--format", "json", "--reasoning", "--db", db, expect=2)
    assert refused.stderr == "Error: --reasoning does not apply to --format json\n"
