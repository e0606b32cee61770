"""User records no one typed (issue 46, the lead's rules): Claude Code's
interruptions, compaction summaries and local commands, Gemini CLI's own
"System: Please continue.", each a step of the turn before it; a command
the model answers a prompt; Copilot CLI's calls seen only as they started.
Each session is written here in the agent's own shapes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from convgraph.parts import node_parts
from convgraph.sources import open_logs
from tests.test_agents_cases import claude, rows, tool_result, tool_use, write
from tests.test_agents_copilot import event

INTERRUPTED = "[Request interrupted by user for tool use]"


def parts_of(path: Path) -> dict[str, list[dict[str, Any]]]:
    with open_logs(path) as logs:
        nodes, _ = logs.read_forest()
    return {row["id"]: node_parts(row) for row in nodes.to_dict("records")}


def command(name: str, args: str = "") -> str:
    """A command record's text, as Claude Code 2.x writes it."""
    return (
        f"<command-message>{name.lstrip('/')}</command-message>\n"
        f"<command-name>{name}</command-name>\n<command-args>{args}</command-args>"
    )


def test_an_interruption_ends_the_turn_it_stopped(tmp_path: Path) -> None:
    path = write(
        tmp_path / "p" / "s1.jsonl",
        [
            claude("user", "u1", None, "Fix it"),
            claude("assistant", "a1", "u1", tool_use("t1")),
            claude("user", "r1", "a1", tool_result("t1", "stopped")),
            claude("user", "i1", "r1", [{"type": "text", "text": INTERRUPTED}]),
            claude("user", "u2", "i1", "Try again"),
            claude("user", "i2", "u2", "[Request interrupted by user]"),
            claude("user", "u3", "i2", "Once more"),
            claude("assistant", "a3", "u3", [{"type": "text", "text": "Done."}]),
        ],
    )
    # Log order: one time each, then the id.
    assert rows(path, "id", "parent_id", "prompt", "tool_calls") == [
        ("a3", "i2", "Once more", 0),
        ("i1", None, "Fix it", 1),
        ("i2", "i1", "Try again", 0),
    ]
    parts = parts_of(path)
    assert parts["i1"][-1] == {"role": "user", "type": "text", "text": INTERRUPTED}
    assert [p["text"] for p in parts["i2"]] == [
        "Try again",
        "[Request interrupted by user]",
    ]


def test_a_compaction_summary_continues_the_turn_before(tmp_path: Path) -> None:
    summary = "This session is being continued from a previous conversation."
    boundary = claude("system", "c1", None, None, subtype="compact_boundary")
    boundary["logicalParentUuid"] = "a1"
    path = write(
        tmp_path / "p" / "s1.jsonl",
        [
            claude("user", "u1", None, "First"),
            claude("assistant", "a1", "u1", [{"type": "text", "text": "One."}]),
            boundary,
            claude("user", "u2", "c1", summary, isCompactSummary=True),
            claude("assistant", "a2", "u2", [{"type": "text", "text": "Going on."}]),
            claude("user", "u3", "a2", "Next"),
            claude("assistant", "a3", "u3", [{"type": "text", "text": "Two."}]),
        ],
    )
    assert rows(path, "id", "parent_id", "prompt", "response") == [
        ("a2", None, "First", "One.\n\nGoing on."),
        ("a3", "a2", "Next", "Two."),
    ]
    # Written by the compaction's model: no user part of the turn.
    assert parts_of(path)["a2"][2] == {
        "role": "assistant",
        "type": "text",
        "text": summary,
    }


def test_a_summary_whose_session_is_not_there_is_no_prompt(tmp_path: Path) -> None:
    boundary = claude("system", "c1", None, None, subtype="compact_boundary")
    boundary["logicalParentUuid"] = "gone"
    path = write(
        tmp_path / "p" / "s1.jsonl",
        [
            boundary,
            claude("user", "u1", "c1", "This session is being continued from a"
                   " previous conversation.", isCompactSummary=True),
            claude("assistant", "a1", "u1", tool_use("t1")),
            claude("user", "r1", "a1", tool_result("t1")),
        ],
    )  # fmt: skip
    assert rows(path, "id", "prompt", "tool_calls") == [("r1", None, 1)]
    assert [p["role"] for p in parts_of(path)["r1"]] == ["assistant"] * 2 + ["tool"]


def test_local_commands_are_steps(tmp_path: Path) -> None:
    """`/clear` starts the chain again; `/model` and its output, then
    Claude Code's own "No response requested.", answer nothing."""
    path = write(
        tmp_path / "p" / "s1.jsonl",
        [
            claude("user", "k1", None, command("/clear")),
            claude("user", "o1", "k1", "<local-command-stdout></local-command-stdout>"),
            claude("user", "u1", "o1", "First"),
            claude("assistant", "a1", "u1", [{"type": "text", "text": "One."}]),
            claude("user", "k2", "a1", command("/model")),
            claude("user", "o2", "k2", "<local-command-stdout>Kept</local-command-stdout>"),
            {**claude("assistant", "s2", "o2", [{"type": "text", "text": "No response requested."}]),
             "message": {"role": "assistant", "model": "<synthetic>",
                         "content": [{"type": "text", "text": "No response requested."}]}},
            claude("user", "u2", "s2", "Next"),
            claude("assistant", "a2", "u2", [{"type": "text", "text": "Two."}]),
        ],
    )  # fmt: skip
    assert rows(path, "id", "parent_id", "prompt", "response") == [
        ("a2", "s2", "Next", "Two."),
        ("s2", None, "First", "One."),
    ]


def test_a_command_the_model_answers_is_a_prompt(tmp_path: Path) -> None:
    path = write(
        tmp_path / "p" / "s1.jsonl",
        [
            claude("user", "k1", None, command("/init")),
            claude("user", "m1", "k1", "Please analyze this codebase", isMeta=True),
            claude("assistant", "a1", "m1", [{"type": "text", "text": "Written."}]),
            claude("user", "k2", "a1", command("/review", "167")),
            claude("assistant", "a2", "k2", [{"type": "text", "text": "Looks fine."}]),
        ],
    )
    assert rows(path, "id", "parent_id", "prompt", "response") == [
        ("a1", None, "/init", "Written."),
        ("a2", "a1", "/review 167", "Looks fine."),
    ]
    assert parts_of(path)["a2"][0] == {
        "role": "user",
        "type": "text",
        "text": "/review 167",
    }


def test_gemini_please_continue_is_a_step(tmp_path: Path) -> None:
    messages = [
        {"id": "m1", "type": "user", "content": "Fix it"},
        {
            "id": "m2",
            "type": "gemini",
            "content": "",
            "toolCalls": [
                {"id": "t1", "name": "shell", "args": {}, "status": "success"}
            ],
        },
        {"id": "m3", "type": "user", "content": "System: Please continue."},
        {"id": "m4", "type": "gemini", "content": "Fixed."},
        {"id": "m5", "type": "user", "content": "Thanks"},
        {"id": "m6", "type": "gemini", "content": "Welcome."},
    ]
    for message in messages:
        message["timestamp"] = "2026-01-10T20:00:00.000Z"
    path = tmp_path / "tmp" / "h" / "chats" / "session-2026-01-10T20-00-g1.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"sessionId": "g1", "messages": messages}))
    assert rows(path, "id", "parent_id", "prompt", "response", "tool_calls") == [
        ("m4", None, "Fix it", "Fixed.", 1),
        ("m6", "m4", "Thanks", "Welcome.", 0),
    ]


def test_copilot_calls_seen_only_as_they_started(tmp_path: Path) -> None:
    """No reply requests them: each started call is a call of the turn,
    the last one left without its result."""
    start = {"toolCallId": "k1", "toolName": "bash", "arguments": {"command": "ls"}}
    path = write(
        tmp_path / "s" / "events.jsonl",
        [
            event("session.start", 1, {"sessionId": "c1"}),
            event("user.message", 2, {"content": "Fix the tests"}),
            event("tool.execution_start", 3, start),
            event("tool.execution_complete", 4, {"toolCallId": "k1", "success": True,
                                                 "result": {"content": "a.py"}}),
            event("tool.execution_start", 5, {**start, "toolCallId": "k2"}),
        ],
    )  # fmt: skip
    assert rows(path, "id", "prompt", "tool_calls", "tools") == [
        ("e5", "Fix the tests", 2, "bash")
    ]
    assert [(p["type"], p.get("id")) for p in parts_of(path)["e5"]] == [
        ("text", None),
        ("tool_call", "k1"),
        ("tool_result", "k1"),
        ("tool_call", "k2"),
    ]


def test_copilot_a_call_started_before_its_request_is_one_call(
    tmp_path: Path,
) -> None:
    start = {"toolCallId": "k1", "toolName": "bash", "arguments": {}}
    request = {"toolCallId": "k1", "name": "bash", "arguments": "{}"}
    path = write(
        tmp_path / "s" / "events.jsonl",
        [
            event("user.message", 1, {"content": "Go"}),
            event("tool.execution_start", 2, start),
            event("assistant.message", 3, {"content": "Ran.", "toolRequests": [request]}),
            event("tool.execution_complete", 4, {"toolCallId": "k1", "success": True}),
        ],
    )  # fmt: skip
    assert rows(path, "id", "prompt", "response", "tool_calls") == [
        ("e4", "Go", "Ran.", 1)
    ]
