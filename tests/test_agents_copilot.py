"""GitHub Copilot CLI's sessions (issue 46): a real session file, and
sessions built here in its event shapes (usage events, a subagent, an
attachment as the whole prompt, ids trimmed to one placeholder, an event
kind not known), read alone, in their folder and from a home folder with
the other agents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.test_agents_cases import claude, problems, rows, write

DATA = Path(__file__).parent / "data" / "agents" / "copilot"


def event(kind: str, number: int, data: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """One Copilot CLI event, linked to the one before it."""
    return {
        "type": kind,
        "data": data,
        "id": extra.pop("id", f"e{number}"),
        "timestamp": f"2026-03-26T17:50:{number:02d}.000Z",
        "parentId": extra.pop("parent", f"e{number - 1}" if number > 1 else None),
        **extra,
    }


def session(key: str = "c1") -> list[dict[str, Any]]:
    context = {"cwd": "/home/ada/p", "branch": "main"}
    call = {"toolCallId": "k1", "name": "task", "arguments": '{"prompt": "look"}'}
    return [
        event("session.start", 1, {"sessionId": key, "context": context}),
        event("session.model_change", 2, {"newModel": "gpt-5"}),
        event("user.message", 3, {"content": "Find it", "attachments": []}),
        event("assistant.turn_start", 4, {"turnId": "0"}),
        event("assistant.message", 5, {"content": "", "toolRequests": [call]}),
        event("assistant.usage", 6, {"model": "gpt-5", "inputTokens": 100, "outputTokens": 7, "cacheReadTokens": 60}),
        event("subagent.started", 7, {"toolCallId": "k1", "agentName": "explore", "agentDescription": "Looks around"}),
        event("assistant.message", 8, {"content": "Found.", "toolRequests": [], "parentToolCallId": "k1"}),
        event("tool.execution_complete", 9, {"toolCallId": "k1", "success": True, "result": {"content": "found"}}),
        event("assistant.message", 10, {"content": "Here.", "toolRequests": []}),
        event("assistant.usage", 11, {"model": "gpt-5", "inputTokens": 120, "outputTokens": 3}),
        event("assistant.turn_end", 12, {"turnId": "0"}),
        event("brand.new", 13, {}),
        event("user.message", 14, {"content": "", "attachments": [{"type": "image", "path": "a.png"}]}),
        event("assistant.message", 15, {"content": "A cat.", "toolRequests": []}),
    ]  # fmt: skip


def test_a_real_copilot_session() -> None:
    """jazzyalex/agent-sessions' small fixture: one turn, one call."""
    path = DATA / "core-stage0-small" / "events.jsonl"
    columns = ("id", "tree_id", "source", "prompt", "response", "tools", "model")
    expected = [
        (
            "e7",
            "copilot_stage0_small",
            "copilot-cli",
            "Hello",
            "Done",
            "bash",
            "gpt-5-mini",
        )
    ]
    assert rows(path, *columns) == expected
    assert rows(path.parent, *columns) == expected
    assert problems(path) == []


def test_a_copilot_session_as_a_tree(tmp_path: Path) -> None:
    path = write(tmp_path / "session-state" / "c1" / "events.jsonl", session())
    assert rows(path, "id", "parent_id", "prompt", "response", "input_tokens", "output_tokens", "cache_read_tokens", "project", "git_branch", "sidechain") == [
        ("e8", "e10", None, "Found.", None, None, None, "/home/ada/p", "main", "k1"),
        ("e10", None, "Find it", "Here.", 220, 10, 60, "/home/ada/p", "main", None),
        ("e15", "e10", "[1 image]", "A cat.", None, None, None, "/home/ada/p", "main", None),
    ]  # fmt: skip
    [(parts,)] = [
        row for row in rows(path, "parts") if row[0] and row[0][0].get("sidechain")
    ]
    assert {(p.get("agent_type"), p.get("agent_description")) for p in parts} == {
        ("explore", "Looks around")
    }
    assert problems(path) == [
        (
            "unknown-record",
            f"{path}: 1 record of a kind not known ('brand.new'): left out",
        )
    ]


def test_ids_trimmed_to_one_placeholder(tmp_path: Path) -> None:
    """Every id and parent the same placeholder (a trimmed fixture): read
    in file order, each call and result once."""
    trimmed = [
        {**record, "id": "[trimmed]", "parentId": "[trimmed]"} for record in session()
    ]
    path = write(tmp_path / "events.jsonl", trimmed)
    assert rows(path, "prompt", "tool_calls", "sidechain") == [
        (None, 0, "k1"),
        ("Find it", 1, None),
        ("[1 image]", 0, None),
    ]


def test_a_home_folder_finds_copilot_with_the_other_agents(tmp_path: Path) -> None:
    write(tmp_path / ".copilot" / "session-state" / "c1" / "events.jsonl", session())
    write(
        tmp_path / ".claude" / "projects" / "-p" / "s1.jsonl",
        [
            claude("user", "u1", None, "Hello"),
            claude("assistant", "a1", "u1", [{"type": "text", "text": "Hi."}]),
        ],
    )
    assert sorted(set(rows(tmp_path, "tree_id", "source"))) == [
        ("c1", "copilot-cli"),
        ("s1", "claude-code"),
    ]
    assert set(rows(tmp_path / ".copilot", "tree_id")) == {("c1",)}
