"""The four faults of issue 46, each on the shape that showed it: a session
file read alone took in other sessions' subagents, a pasted image as the
whole prompt was no prompt, two Gemini CLI sessions reusing message ids were
merged, and a tool call could sit in two nodes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from convgraph.sources import open_logs
from tests.test_agents_cases import claude, rows, tool_result, tool_use, write


def said(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


def warmup(session: str, uuid: str) -> list[dict[str, Any]]:
    """A subagent's warm-up, as Claude Code 2.0 writes it beside the session."""
    side = {"isSidechain": True, "agentId": uuid, "session": session}
    return [
        claude("user", f"{uuid}-u", None, "Warmup", **side),
        claude("assistant", f"{uuid}-a", f"{uuid}-u", said("Ready."), **side),
    ]


def test_a_session_file_alone_holds_only_its_own_subagents(tmp_path: Path) -> None:
    """A project folder holding the subagents of a session whose own file is
    not there, and of another session: neither joins the session read alone,
    which equals that session in the folder's read."""
    session = write(
        tmp_path / "s1.jsonl",
        [
            claude("user", "u1", None, "Hello"),
            claude("assistant", "a1", "u1", said("Hi.")),
            claude("user", "u2", "a1", "Again"),
            claude("assistant", "a2", "u2", said("Yes.")),
        ],
    )
    write(tmp_path / "agent-own.jsonl", warmup("s1", "own"))
    write(tmp_path / "agent-gone.jsonl", warmup("s7", "gone"))
    write(tmp_path / "agent-other.jsonl", warmup("s5", "other"))
    write(
        tmp_path / "s5.jsonl",
        [
            claude("user", "v1", None, "Other", session="s5"),
            claude("assistant", "b1", "v1", said("Other."), session="s5"),
        ],
    )
    columns = ("id", "tree_id", "parent_id", "prompt", "sidechain", "active")
    alone = rows(session, *columns)
    assert [row[3] for row in alone] == ["Hello", "Again", "Warmup"]
    assert {row[1] for row in alone} == {"s1"}
    folder = [row for row in rows(tmp_path, *columns) if row[1] == "s1"]
    assert sorted(alone, key=str) == sorted(folder, key=str)


def test_a_pasted_image_alone_is_the_prompt(tmp_path: Path) -> None:
    picture = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
    }
    session = write(
        tmp_path / "s1.jsonl",
        [
            claude("user", "u1", None, [picture], imagePasteIds=[1]),
            claude("assistant", "a1", "u1", said("A logo.")),
        ],
    )
    assert rows(session, "id", "prompt", "response") == [("a1", "[1 image]", "A logo.")]
    with open_logs(session) as logs:
        [tree] = logs.tree_ids()
        assert logs.read_tree(tree).records[0]["prompt"] == "[1 image]"


def gemini_session(session: str, prompt: str, call: str) -> list[dict[str, Any]]:
    """A Gemini CLI 0.40 session as JSON lines, its message ids `m1`, `m2`,
    `m3` (ids are only a session's own)."""
    return [
        {"sessionId": session, "projectHash": "h", "startTime": "2026-01-01T10:00:00Z"},
        {
            "id": "m1",
            "timestamp": "2026-01-01T10:00:00Z",
            "type": "user",
            "content": [{"text": prompt}],
        },
        {
            "id": "m2",
            "timestamp": "2026-01-01T10:00:01Z",
            "type": "gemini",
            "content": "",
            "toolCalls": [
                {
                    "id": call,
                    "name": "ls",
                    "args": {},
                    "result": "a",
                    "status": "success",
                }
            ],
        },
        {
            "id": "m3",
            "timestamp": "2026-01-01T10:00:02Z",
            "type": "gemini",
            "content": "Done.",
        },
    ]


def test_two_sessions_reusing_message_ids_stay_apart(tmp_path: Path) -> None:
    """Two sessions that both use `m1`, `m2`: neither is taken for a copy
    of the other; the second's ids are made its own."""
    chats = tmp_path / "chats"
    first = write(
        chats / "session-2026-01-01T10-00-g1.jsonl", gemini_session("g1", "One", "c1")
    )
    write(
        chats / "session-2026-01-01T11-00-g2.jsonl", gemini_session("g2", "Two", "c2")
    )
    columns = ("id", "tree_id", "parent_id", "prompt", "tool_calls")
    assert sorted(rows(tmp_path, *columns), key=str) == [
        ("g2:m3", "g2", None, "Two", 1),
        ("m3", "g1", None, "One", 1),
    ]
    assert rows(first, *columns) == [("m3", "g1", None, "One", 1)]


def test_a_tool_call_sits_in_one_node(tmp_path: Path) -> None:
    """A call's result written after the next prompt, linked to the call:
    the run goes on below the prompt's message, and the prompt hangs under
    the run's end, so the call is counted once."""
    session = write(
        tmp_path / "s1.jsonl",
        [
            claude("user", "u1", None, "Look"),
            claude("assistant", "a1", "u1", tool_use("t1")),
            claude("user", "u2", "a1", "And then?"),
            claude("user", "r1", "a1", tool_result("t1")),
            claude("assistant", "a2", "r1", said("Seen.")),
            claude("assistant", "a3", "u2", said("Then this.")),
        ],
    )
    assert rows(session, "id", "parent_id", "prompt", "tool_calls", "response") == [
        ("a2", None, "Look", 1, "Seen."),
        ("a3", "a2", "And then?", 0, "Then this."),
    ]


def test_one_id_twice_in_a_gemini_json_session(tmp_path: Path) -> None:
    """A recorded session (JSON) writing an id twice: the later message is
    read as `ID+N`, each turn its own node."""
    again = [
        {"id": "m1", "timestamp": "2026-01-01T10:00:02Z", "type": "user", "content": "Again"},
        {"id": "m2", "timestamp": "2026-01-01T10:00:03Z", "type": "gemini", "content": "Hi again"},
    ]  # fmt: skip
    first = gemini_session("g1", "One", "c1")[1:]
    path = tmp_path / "chats" / "session-2026-01-01T10-00-g1.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"sessionId": "g1", "messages": [*first, *again]}))
    assert rows(path, "id", "parent_id", "prompt", "response", "tool_calls") == [
        ("m3", None, "One", "Done.", 1),
        ("m2+4", "m3", "Again", "Hi again", 0),
    ]
