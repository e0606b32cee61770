"""Hits on every source (issue 37): llm's generations (legacy, message
store, a tool chain, an upgraded file: tests/test_search.py), ChatGPT,
Claude.ai and Open WebUI exports, and coding agents' sessions from
tests/data/agents/ (Claude Code, Codex CLI, Gemini CLI), with their tool
calls, results and reasoning searchable and a subagent's hits marked as a
sidechain; an agents' folder indexed again when a session changes, and
nothing written inside it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from convgraph.search import search
from tests.chat_exports import chatgpt_tools, claude_export, webui_export, write_json
from tests.helpers import file_digest, run

AGENTS = Path(__file__).parent / "data" / "agents"
PROJECT = AGENTS / "claude-code" / "projects" / "-home-ada-tree"


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(directory))
    return directory


def found(path: Path, query: str) -> list[tuple]:
    """Each hit's node, tree, depth, branch and fields, best first."""
    return [
        (hit.id, hit.tree_id, hit.depth, hit.active, hit.sidechain, hit.fields)
        for hit in search(path, query)
    ]


def test_claude_export_thinking_tool_use_and_attachments(tmp_path):
    export = write_json(tmp_path / "claude.json", claude_export())
    assert found(export, "even") == [
        ("as2", "claude-primes", 1, True, False, ["prompt", "parts"]),
    ]
    # The thinking block, the tool's input and its result.
    assert found(export, "calc") == [
        ("as2", "claude-primes", 1, True, False, ["parts"]),
    ]
    assert [hit.id for hit in search(export, "primes.txt")] == ["as2"]
    # An abandoned answer of a regenerated prompt.
    assert found(export, "odd") == [
        ("h2b", "claude-primes", 1, False, False, ["prompt"]),
    ]
    (hit,) = search(export, "calc")
    assert hit.source == "claude"


def test_open_webui_export_two_models_answering(tmp_path):
    export = write_json(tmp_path / "webui.json", webui_export())
    assert found(export, "hey") == [
        ("m2b", "chat-greet", 0, False, False, ["response"])
    ]
    assert found(export, "joke") == [("m4", "chat-greet", 1, True, False, ["prompt"])]
    assert [(hit.id, hit.model) for hit in search(export, "hello")] == [
        ("m2", "llama3")
    ]


def test_chatgpt_export_code_its_output_and_files(tmp_path):
    export = write_json(tmp_path / "conversations.json", [chatgpt_tools()])
    # The code the model ran, and the names of the files given.
    assert found(export, "print") == [
        ("a3", chatgpt_tools()["id"], 0, True, False, ["parts"])
    ]
    assert [hit.id for hit in search(export, "notes.pdf")] == ["a3"]
    (hit,) = search(export, "picture")
    assert (hit.source, hit.fields) == ("chatgpt", ["prompt"])


def test_claude_code_tool_calls_results_reasoning_and_a_subagent():
    # The tool call's arguments and its error, the reasoning before it.
    assert found(PROJECT, "pytest") == [("a4", "s1", 0, True, False, ["parts"])]
    assert found(PROJECT, "fails") == [("a4", "s1", 0, True, False, ["parts"])]
    assert [hit.id for hit in search(PROJECT, "exit")] == ["a4"]
    # The subagent's Grep: a sidechain, neither active nor abandoned.
    (hit,) = search(PROJECT, "grep")
    assert (hit.id, hit.active, hit.sidechain) == ("x4", False, True)
    assert hit.source == "claude-code"
    assert search(PROJECT, "grep", abandoned=True) == []
    lines = run("search", "--db", PROJECT, "grep").stdout.splitlines()
    assert lines[0].split("  ")[:5] == ["1.", "s1", "x4", "depth 1", "sidechain"]


def test_a_compaction_summary_beside_the_answer_is_found():
    # Claude Code's summary of the compacted conversation: a text part of the
    # node it continues, in neither its prompt nor its answer.
    assert found(PROJECT, "continued summary") == [
        ("a8", "s1", 2, True, False, ["parts"])
    ]
    # The answer's own text parts are not indexed twice.
    assert found(PROJECT, "continuing") == [("a8", "s1", 2, True, False, ["response"])]


def test_codex_and_gemini_sessions():
    codex = AGENTS / "codex" / "sessions"
    assert found(codex, "listing") == [
        ("c0dex-1:8", "c0dex-1", 0, True, False, ["parts"])
    ]
    gemini = AGENTS / "gemini-cli" / "tmp"
    hits = {hit.id: hit.fields for hit in search(gemini, "parse")}
    assert hits == {"0a1b2c/checkpoint-parser:3": ["prompt", "response", "parts"]}
    assert [hit.id for hit in search(gemini, "counting")] == ["m2"]


def test_an_agents_folder_is_indexed_again_when_a_session_changes(tmp_path):
    project = tmp_path / "-home-ada-tree"
    shutil.copytree(PROJECT, project)
    before = {path.name: file_digest(path) for path in project.iterdir()}
    assert [hit.id for hit in search(project, "commit")] == ["a9"]
    session = project / "s2.jsonl"
    text = session.read_text(encoding="utf-8")
    assert "Commit it" in text
    session.write_text(text.replace("Commit it", "Tag it"), encoding="utf-8")
    assert search(project, "commit") == []
    assert [hit.id for hit in search(project, "tag")] == ["a9"]
    # Nothing written inside the folder.
    assert sorted(path.name for path in project.iterdir()) == sorted(before)
