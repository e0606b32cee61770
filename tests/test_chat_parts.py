"""The whole conversation from the apps' exports (issue 23.2): each node's
parts, tool calls and tools, read from ChatGPT's code cells, tool calls,
results and thoughts, Claude.ai's thinking and tool blocks, Open WebUI's
files, and the same through every entry point.

The exports are the real-shaped builders of tests/chat_exports.py; every
test asserts the exact parts of a known input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from convgraph import parts as P
from convgraph.model.loading import load_tree
from convgraph.sources import open_logs
from tests import chat_exports as build
from tests.helpers import documented_schemas, read_forest, run

#: chatgpt_agent's first node: a reasoning model that searches, runs code
#: twice (the first cell fails) and draws, then answers.
AGENT_FIRST = [
    P.text(P.USER, "Tides in Brest today?"),
    P.reasoning("Looking up tides\n\nThe user wants today's tides."),
    P.tool_call("web.run", "tides Brest"),
    P.tool_result("web.run", "# 【0†Tides in Brest】\nHigh water 06:12."),
    P.code("1/0", "python"),
    P.code_output("ZeroDivisionError: division by zero"),
    P.code("print(6 * 7)", "python"),
    P.code_output("42"),
    P.tool_call("dalle.text2im", '{"prompt": "a lighthouse"}'),
    P.tool_result("dalle.text2im", ""),
    P.attachment(P.ASSISTANT, None, "sediment://file_lighthouse", None, 2048),
    P.text(P.ASSISTANT, "High water at 06:12."),
]

#: Its second: a tool that fails (a system_error), a hidden spinner left out.
AGENT_SECOND = [
    P.text(P.USER, "And tomorrow?"),
    P.tool_call("web.run", "tides Brest"),
    P.tool_result(
        "web.run", "", error="ChatGPTAgentToolException: The tool timed out."
    ),
    P.text(P.ASSISTANT, "I could not look."),
]

#: chatgpt_tools' node: a picture (its pointer and its upload one file), the
#: words, a PDF, then the Python cell and its output.
TOOLS_FIRST = [
    P.attachment(P.USER, "photo.png", "file-service://file-abc", "image/png", 1000),
    P.text(P.USER, "What is in this picture?"),
    P.attachment(P.USER, "notes.pdf", None, "application/pdf", None),
    P.code("print(1 + 1)", "python"),
    P.code_output("2"),
    P.text(P.ASSISTANT, "It shows 2."),
]

CLAUDE_AGENT = [
    P.text(P.USER, "When is high water?"),
    P.attachment(P.USER, "harbour.txt", None, "text/plain", 120),
    P.attachment(P.USER, "chart.png"),
    P.reasoning("The page may need a search first."),
    P.text(P.ASSISTANT, "Let me look."),
    P.tool_call("web_fetch", {"url": "https://example.org/tides"}, "toolu_01"),
    P.tool_result(
        "web_fetch",
        "PERMISSIONS_ERROR: not in a prior search",
        "toolu_01",
        "PERMISSIONS_ERROR: not in a prior search",
    ),
    P.tool_call("web_search", {"query": "tides Brest"}, "toolu_02"),
    P.tool_result(
        "web_search",
        "Tides in Brest\nhttps://example.org/tides\nHigh water 06:12.",
        "toolu_02",
    ),
    P.text(P.ASSISTANT, "High water is at 06:12."),
]

WEBUI_FILES = [
    P.text(P.USER, "Summarise these"),
    P.attachment(P.USER, "report.pdf", "/api/v1/files/f-pdf", "application/pdf", 52000),
    # The picture kept inline: its type and size, never its bytes.
    P.attachment(P.USER, None, None, "image/png", 8),
    P.text(P.ASSISTANT, "A report and a picture."),
]


@pytest.fixture
def exports(tmp_path: Path) -> dict[str, Path]:
    return {
        "chatgpt": build.write_json(
            tmp_path / "conversations.json",
            [build.chatgpt_agent(), build.chatgpt_tools(), build.chatgpt_branches()],
        ),
        "claude": build.write_zip(
            tmp_path / "claude.zip",
            {"conversations.json": [build.claude_agent(), *build.claude_export()]},
        ),
        "openwebui": build.write_json(tmp_path / "chat.json", build.webui_files()),
    }


def nodes_of(path: Path, tree_id: str) -> dict[str, dict[str, Any]]:
    with open_logs(path) as logs:
        return {record["id"]: record for record in logs.read_tree(tree_id).records}


def test_chatgpt_code_tools_thoughts_and_pictures(exports: dict[str, Path]) -> None:
    agent = nodes_of(exports["chatgpt"], "conv-agent")
    assert list(agent) == ["g-a1", "g-a2"]
    assert agent["g-a1"]["parts"] == AGENT_FIRST
    assert agent["g-a2"]["parts"] == AGENT_SECOND
    # Code cells are code, not tool calls; the tools each once, in order.
    assert [(n["tool_calls"], n["tools"]) for n in agent.values()] == [
        (2, "web.run, dalle.text2im"),
        (1, "web.run"),
    ]
    # The plain texts stay what they were.
    assert [(n["prompt"], n["response"]) for n in agent.values()] == [
        ("Tides in Brest today?", "High water at 06:12."),
        ("And tomorrow?", "I could not look."),
    ]
    tools = nodes_of(exports["chatgpt"], "conv-tools")
    assert tools["a3"]["parts"] == TOOLS_FIRST
    assert (tools["a3"]["tool_calls"], tools["a3"]["tools"]) == (0, None)
    # A prompt and an answer and nothing else keep no parts.
    assert (tools["u4"]["parts"], tools["u4"]["tool_calls"]) == (None, 0)
    monad = nodes_of(exports["chatgpt"], "conv-monad")
    assert {node["parts"] for node in monad.values()} == {None}


def test_claude_thinking_tool_blocks_and_uploads(exports: dict[str, Path]) -> None:
    agent = nodes_of(exports["claude"], "claude-agent")
    assert agent["ca-a1"]["parts"] == CLAUDE_AGENT
    assert (agent["ca-a1"]["tool_calls"], agent["ca-a1"]["tools"]) == (
        2,
        "web_fetch, web_search",
    )
    assert agent["ca-a1"]["prompt"] == "When is high water?\n[2 files]"
    assert agent["ca-a1"]["response"] == "Let me look.\n\nHigh water is at 06:12."
    # The older fixture's blocks, without ids: a call and a result all the
    # same.
    primes = nodes_of(exports["claude"], "claude-primes")
    assert primes["as2"]["parts"] == [
        P.text(P.USER, "Name an even prime."),
        P.attachment(P.USER, "primes.txt", None, "txt", 12),
        P.reasoning("Two is even."),
        P.text(P.ASSISTANT, "2"),
        P.tool_call("calc", {"expr": "2 % 2"}),
        P.tool_result("calc", "0"),
        P.text(P.ASSISTANT, "It is the only one."),
    ]


def test_open_webui_files(exports: dict[str, Path]) -> None:
    chat = nodes_of(exports["openwebui"], "chat-files")
    assert chat["w2"]["parts"] == WEBUI_FILES
    assert chat["w2"]["prompt"] == "Summarise these\n[1 image, 1 file]"
    assert (chat["w2"]["tool_calls"], chat["w2"]["tools"]) == (0, None)


@pytest.mark.parametrize("app", ["chatgpt", "claude", "openwebui"])
def test_the_whole_table_and_one_tree_carry_the_same_parts(
    exports: dict[str, Path], app: str
) -> None:
    forest = read_forest(exports[app])
    for tree_id in forest.tree_ids:
        alone = load_tree(tree_id, exports[app])
        from_forest = forest.tree(tree_id)
        assert dict(alone.nodes(data=True)) == dict(from_forest.nodes(data=True))
    bare = read_forest(exports[app], text=False)
    # Without the texts the parts are left out, the tool counts kept.
    assert bare.nodes["parts"].isna().all()
    assert bare.nodes["tool_calls"].tolist() == forest.nodes["tool_calls"].tolist()
    assert bare.nodes["tools"].tolist() == forest.nodes["tools"].tolist()


def test_json_export_carries_the_parts_in_the_documented_schema(
    exports: dict[str, Path],
) -> None:
    schema = documented_schemas("json-schema.md")["convgraph.node-link/1"]
    document = json.loads(
        run("export", "conv-agent", "--format", "json", "-d", exports["chatgpt"]).stdout
    )
    jsonschema.validate(document, schema)
    by_id = {node["id"]: node for node in document["nodes"]}
    assert by_id["g-a1"]["parts"] == AGENT_FIRST
    assert by_id["g-a2"]["tools"] == "web.run"


def test_stats_count_the_tool_calls_of_each_tree(exports: dict[str, Path]) -> None:
    rows = json.loads(run("stats", "-d", exports["chatgpt"], "--json").stdout)
    assert [(row["tree_id"], row["tool_calls"], row["tools"]) for row in rows] == [
        ("conv-monad", 0, []),
        ("conv-agent", 3, ["web.run", "dalle.text2im"]),
        ("conv-tools", 0, []),
    ]
