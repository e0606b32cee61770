"""What the agents write today (issue 46), each record built here in the
agent's shape: Claude Code 2.1's records beside the conversation, a
subagent's `.meta.json`, a compaction's own agent, a forked session;
Gemini CLI's `$patch` and `kind` header; Codex's collaborating agents and
a turn context of a later shape; a cut session file said on stderr."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from tests.test_agents_cases import (
    GEMINI_ANSWER,
    GEMINI_USER,
    claude,
    problems,
    rows,
    write,
)


def said(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


def test_claude_code_2_1_records_beside_the_conversation(tmp_path: Path) -> None:
    """Attachments, modes, the last prompt, an away summary and the
    entry point: known, no node of their own, nothing reported."""
    session = write(
        tmp_path / "s1.jsonl",
        [
            {"type": "permission-mode", "permissionMode": "plan", "sessionId": "s1"},
            claude("user", "u1", None, "Hello", entrypoint="cli"),
            {
                "type": "attachment",
                "uuid": "t1",
                "parentUuid": "u1",
                "sessionId": "s1",
                "attachment": {"type": "hook_success"},
            },
            claude("assistant", "a1", "t1", said("Hi."), entrypoint="cli"),
            {
                "type": "system",
                "subtype": "away_summary",
                "uuid": "w1",
                "parentUuid": "a1",
                "sessionId": "s1",
                "content": "While you were away",
            },
            claude("user", "u2", "w1", "More"),
            claude("assistant", "a2", "u2", said("Yes.")),
            {"type": "last-prompt", "lastPrompt": "More", "leafUuid": "a2", "sessionId": "s1"},
        ],
    )  # fmt: skip
    assert rows(session, "id", "parent_id", "prompt") == [
        ("a1", None, "Hello"),
        ("a2", "a1", "More"),
    ]
    assert problems(session) == []


def subagent_session(folder: Path, agent: str) -> Path:
    """A session whose one subagent's file lies under `<session>/subagents/`."""
    session = write(
        folder / "s1.jsonl",
        [
            claude("user", "u1", None, "Hello"),
            claude("assistant", "a1", "u1", said("Hi.")),
        ],
    )
    side = {"isSidechain": True, "agentId": agent, "time": "2026-01-01T10:00:05.000Z"}
    write(
        folder / "s1" / "subagents" / f"agent-{agent}.jsonl",
        [
            claude("user", "x1", None, "Look", **side),
            claude("assistant", "x2", "x1", said("Seen."), **side),
        ],
    )
    return session


def subagent_about(session: Path) -> set[tuple[Any, ...]]:
    found = set()
    for agent, parts in rows(session, "sidechain", "parts"):
        if agent is not None:
            for part in parts:
                found.add(
                    (
                        part.get("agent_type"),
                        part.get("agent_description"),
                        part.get("worktree"),
                    )
                )
    return found


def test_a_subagents_meta_file_names_it_on_its_node(tmp_path: Path) -> None:
    session = subagent_session(tmp_path, "a7")
    meta = {
        "agentType": "Explore",
        "description": "Find the tests",
        "worktreePath": "/wt",
    }
    (tmp_path / "s1" / "subagents" / "agent-a7.meta.json").write_text(json.dumps(meta))
    assert subagent_about(session) == {("Explore", "Find the tests", "/wt")}


def test_a_compactions_own_agent(tmp_path: Path) -> None:
    session = subagent_session(tmp_path, "acompact-1")
    assert subagent_about(session) == {("compaction", None, None)}


def test_a_forked_session_is_a_branch_of_its_tree(tmp_path: Path) -> None:
    """A session forked from another copies its messages under ids of its
    own, each naming the one it copies (`forkedFrom`), then goes on: a
    branch of the first session's tree, the copies read once."""
    write(
        tmp_path / "s1.jsonl",
        [
            claude("user", "u1", None, "One"),
            claude("assistant", "a1", "u1", said("1")),
            claude("user", "u2", "a1", "Two"),
            claude("assistant", "a2", "u2", said("2")),
        ],
    )
    later = "2026-01-02T10:00:00.000Z"

    def fork(uuid: str, original: str) -> dict[str, Any]:
        return {
            "forkedFrom": {"sessionId": "s1", "messageUuid": original},
            "time": later,
        }

    forked = write(
        tmp_path / "s2.jsonl",
        [
            claude("user", "f1", None, "One", session="s2", **fork("f1", "u1")),
            claude(
                "assistant", "f2", "f1", said("1"), session="s2", **fork("f2", "a1")
            ),
            claude("user", "v2", "f2", "Other", session="s2", time=later),
            claude("assistant", "b2", "v2", said("2'"), session="s2", time=later),
        ],
    )
    columns = ("id", "tree_id", "parent_id", "prompt")
    assert sorted(rows(tmp_path, *columns)) == [
        ("a1", "s1", None, "One"),
        ("a2", "s1", "a1", "Two"),
        ("b2", "s1", "a1", "Other"),
    ]
    assert rows(forked, *columns) == [
        ("a1", "s2", None, "One"),
        ("b2", "s2", "a1", "Other"),
    ]


def test_gemini_patch_and_kind(tmp_path: Path) -> None:
    """A `$patch` changes a message written before; a `kind` header is
    known."""
    session = write(
        tmp_path / "chats" / "session-2026-01-01T10-00-g1.jsonl",
        [
            {"sessionId": "g1", "projectHash": "h", "startTime": "2026-01-01T10:00:00Z", "kind": "main"},
            GEMINI_USER,
            GEMINI_ANSWER,
            {"$patch": {"id": "m2", "tokens": {"input": 9, "output": 1}}},
        ],
    )  # fmt: skip
    assert rows(session, "id", "prompt", "response", "input_tokens") == [
        ("m2", "Hello", "Hi", 9)
    ]
    assert problems(session) == []


def test_codex_collaborating_agents(tmp_path: Path) -> None:
    """A `collab_tool_call` item is a call of the tool it names; a turn
    context of a later shape still names the model."""
    rollout = write(
        tmp_path / "rollout-2026-11-01T10-00-00-k.jsonl",
        [
            {"timestamp": "2026-11-01T10:00:00Z", "type": "session_meta", "payload": {"id": "k"}},
            {"timestamp": "2026-11-01T10:00:01Z", "type": "turn_context", "payload": {"turn": {"cwd": "/p", "model": "gpt-6"}}},
            {"timestamp": "2026-11-01T10:00:02Z", "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Ask"}]}},
            {"timestamp": "2026-11-01T10:00:03Z", "type": "response_item", "payload": {"id": "c1", "type": "collab_tool_call", "tool": "spawn_agent", "prompt": "look", "status": "completed"}},
            {"timestamp": "2026-11-01T10:00:04Z", "type": "world_state", "payload": {}},
            {"timestamp": "2026-11-01T10:00:05Z", "type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done"}]}},
        ],
    )  # fmt: skip
    assert rows(rollout, "prompt", "tools", "model", "project") == [
        ("Ask", "spawn_agent", "gpt-6", "/p")
    ]
    assert problems(rollout) == []


def test_a_cut_gemini_file_alone_is_said_on_stderr(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "chats" / "session-2026-01-01T10-00-g1.json"
    path.parent.mkdir(parents=True)
    text = json.dumps({"sessionId": "g1", "messages": [GEMINI_USER, GEMINI_ANSWER]})
    path.write_text(text[: text.index("Hi")])
    with caplog.at_level(logging.WARNING, "convgraph.sources.agents"):
        assert rows(path, "prompt") == [("Hello",)]
    assert caplog.messages == [
        f"{path}: cut short after 1 message: read as far as it goes"
    ]


def test_a_gemini_subagent_session_using_the_same_ids(tmp_path: Path) -> None:
    """A subagent's session (`kind: subagent`, in `chats/<session id>/`)
    using the main session's ids: read with its session, alone or in its
    folder, its ids made its own."""
    chats = tmp_path / "chats"
    main = write(
        chats / "session-2026-01-01T10-00-g1.jsonl",
        [
            {"sessionId": "g1", "projectHash": "h", "startTime": "2026-01-01T10:00:00Z", "kind": "main"},
            GEMINI_USER,
            GEMINI_ANSWER,
        ],
    )  # fmt: skip
    later = {"timestamp": "2026-01-01T10:00:05Z"}
    write(
        chats / "g1" / "sub-1.jsonl",
        [
            {"sessionId": "sub-1", "projectHash": "h", "startTime": "2026-01-01T10:00:04Z", "kind": "subagent"},
            {**GEMINI_USER, **later, "content": [{"text": "Look"}]},
            {**GEMINI_ANSWER, **later, "content": "Seen"},
        ],
    )  # fmt: skip
    columns = ("id", "parent_id", "prompt", "response", "sidechain")
    expected = [
        ("m2", None, "Hello", "Hi", None),
        ("g1:m2", "m2", "Look", "Seen", "sub-1"),
    ]
    assert rows(main, *columns) == expected
    assert rows(tmp_path, *columns) == expected
