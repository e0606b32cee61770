"""The agents' readers on the cases real files hold and hostile ones add
(issue 36, issue 39 family 6): a session told by its whole file, a rewind
and an edited prompt as siblings, runs read as lived, a file holding two
sessions, a line holding two records, a byte order mark, one id for two
records, a file cut short, kinds not known yet, files of a folder that
cannot be read, Gemini CLI's JSON-lines sessions, Codex's prompts shown
only as events. Each session is written here, record by record, in the
agents' own shapes.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from convgraph.errors import DatabaseError
from convgraph.sources import open_logs
from tests.helpers import run

REAL = Path(__file__).parent / "data" / "agents" / "home"
SPOTTER = REAL / ".claude" / "projects" / "-home-marco-projects-spotter"


def write(path: Path, records: list[Any], bom: bool = False) -> Path:
    """A JSON-lines file of `records` (a str is written as the line)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    data = "".join(line + "\n" for line in lines).encode()
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + data)
    return path


def claude(
    kind: str, uuid: str, parent: str | None, content: Any, **extra: Any
) -> dict:
    """One Claude Code record of the conversation."""
    record = {
        "parentUuid": parent,
        "isSidechain": False,
        "cwd": "/home/ada/p",
        "sessionId": extra.pop("session", "s1"),
        "version": "2.1.38",
        "gitBranch": "main",
        "type": kind,
        "message": {"role": kind, "content": content},
        "uuid": uuid,
        "timestamp": extra.pop("time", "2026-01-01T10:00:00.000Z"),
    }
    record.update(extra)
    return record


def tool_use(call: str, name: str = "Bash") -> list[dict]:
    return [{"type": "tool_use", "id": call, "name": name, "input": {"command": "ls"}}]


def tool_result(call: str, output: str = "ok") -> list[dict]:
    return [{"type": "tool_result", "tool_use_id": call, "content": output}]


def rows(path: Path, *names: str) -> list[tuple]:
    with open_logs(path) as logs:
        nodes, _ = logs.read_forest()
    table = nodes[list(names)].astype(object)
    table = table.where(table.notna(), None)
    return [tuple(row) for row in table.itertuples(False)]


def problems(path: Path) -> list[tuple[str, str]]:
    with open_logs(path) as logs:
        logs.read_forest()
        return [(p.kind, p.message) for p in logs.record_problems]


SNAPSHOT = {"type": "file-history-snapshot", "messageId": "m", "snapshot": {}}


def test_a_session_is_told_by_its_whole_file(tmp_path: Path) -> None:
    """Snapshots, modes and kinds not known yet before the first message:
    read, the unknown kind counted and reported by check."""
    session = write(
        tmp_path / "s1.jsonl",
        [
            SNAPSHOT,
            SNAPSHOT,
            {"type": "permission-mode", "permissionMode": "default", "sessionId": "s1"},
            {"type": "mode", "mode": "normal", "sessionId": "s1"},
            {"type": "brand-new-kind", "sessionId": "s1"},
            claude("user", "u1", None, "Hello"),
            claude("assistant", "a1", "u1", [{"type": "text", "text": "Hi."}]),
        ],
    )
    assert rows(session, "id", "prompt", "response") == [("a1", "Hello", "Hi.")]
    assert problems(session) == [
        (
            "unknown-record",
            f"{session}: 1 record of a kind not known ('brand-new-kind'): left out",
        )
    ]
    found = run("check", "--db", session, expect=1).output
    assert "unknown-record" in found and "brand-new-kind" in found
    assert rows(tmp_path, "id") == [("a1",)]


def test_a_file_of_snapshots_alone_is_no_session(tmp_path: Path) -> None:
    session = write(tmp_path / "s.jsonl", [SNAPSHOT, SNAPSHOT])
    with pytest.raises(DatabaseError):
        open_logs(session)


def test_parallel_calls_and_hooks_are_one_run(tmp_path: Path) -> None:
    """As Claude Code 2.1 writes them: a hook's progress under the first
    call, the second call under the progress, each result under its call,
    the answer under the last result. One node, one chain."""
    progress = {
        "type": "progress",
        "uuid": "p1",
        "parentUuid": "a1",
        "sessionId": "s1",
        "data": {"type": "hook_progress"},
        "timestamp": "2026-01-01T10:00:01.000Z",
    }
    session = write(
        tmp_path / "s1.jsonl",
        [
            claude("user", "u1", None, "Look around"),
            claude("assistant", "a1", "u1", tool_use("t1")),
            progress,
            claude("assistant", "a2", "p1", tool_use("t2", "Glob")),
            claude("user", "r1", "a1", tool_result("t1")),
            claude("user", "r2", "a2", tool_result("t2")),
            claude("assistant", "a3", "r2", [{"type": "text", "text": "Done."}]),
            claude("user", "u2", "a3", "Thanks"),
            claude("assistant", "a4", "u2", [{"type": "text", "text": "Welcome."}]),
        ],
    )
    assert rows(session, "id", "parent_id", "tool_calls", "tools", "response") == [
        ("a3", None, 2, "Bash, Glob", "Done."),
        ("a4", "a3", 0, None, "Welcome."),
    ]


def test_a_rewind_and_an_edited_prompt_are_siblings(tmp_path: Path) -> None:
    session = write(
        tmp_path / "s1.jsonl",
        [
            claude("user", "u1", None, "One"),
            claude("assistant", "a1", "u1", [{"type": "text", "text": "1"}]),
            claude("user", "u2", "a1", "Two"),
            claude("assistant", "a2", "u2", [{"type": "text", "text": "2"}]),
            claude("user", "u3", "a1", "Two, edited"),
            claude("assistant", "a3", "u3", [{"type": "text", "text": "2'"}]),
        ],
    )
    assert rows(session, "id", "parent_id", "prompt", "active") == [
        ("a1", None, "One", True),
        ("a2", "a1", "Two", False),
        ("a3", "a1", "Two, edited", True),
    ]


def test_a_file_holding_two_sessions_is_named_by_both(tmp_path: Path) -> None:
    session = write(
        tmp_path / "s1.jsonl",
        [
            claude("user", "u1", None, "First"),
            claude("assistant", "a1", "u1", [{"type": "text", "text": "1"}]),
            claude("user", "u2", "a1", "Again", session="s2"),
            claude(
                "assistant", "a2", "u2", [{"type": "text", "text": "2"}], session="s2"
            ),
        ],
    )
    with open_logs(session) as logs:
        assert logs.tree_ids() == ["s1"]
        assert logs.tree_id_of_conversation("s2") == "s1"
        assert logs.resolve_conversation("s2") == "s2"
    transcript = run("transcript", "--db", session, "s2").output
    assert "Again" in transcript and "First" in transcript


def test_a_line_holding_two_records_is_two_records(tmp_path: Path) -> None:
    first = json.dumps(claude("user", "u1", None, "Hello"))
    second = json.dumps(
        claude("assistant", "a1", "u1", [{"type": "text", "text": "Hi."}])
    )
    session = write(tmp_path / "s1.jsonl", [first + second])
    assert rows(session, "id", "prompt", "response") == [("a1", "Hello", "Hi.")]
    assert problems(session) == []


def test_a_byte_order_mark_is_read_past(tmp_path: Path) -> None:
    session = write(
        tmp_path / "s1.jsonl",
        [
            claude("user", "u1", None, "Hello"),
            claude("assistant", "a1", "u1", [{"type": "text", "text": "Hi."}]),
        ],
        bom=True,
    )
    assert rows(session, "id", "prompt", "git_branch") == [("a1", "Hello", "main")]
    rollout = write(
        tmp_path / "rollout-2026-01-01T10-00-00-x.jsonl",
        [
            {
                "timestamp": "2026-01-01T10:00:00Z",
                "type": "session_meta",
                "payload": {"id": "x", "cwd": "/p", "git": {"branch": "dev"}},
            },
            {
                "timestamp": "2026-01-01T10:00:01Z",
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "Hi"}],
                },
            },
        ],
        bom=True,
    )
    assert rows(rollout, "id", "tree_id", "prompt", "git_branch") == [
        ("x:1", "x", "Hi", "dev")
    ]


def test_one_id_for_two_records_keeps_both(tmp_path: Path) -> None:
    """The same record twice is read once; one id for two records of other
    contents keeps both (the second as a sibling) and says so."""
    answer = claude("assistant", "a1", "u1", [{"type": "text", "text": "Hi."}])
    session = write(
        tmp_path / "s1.jsonl",
        [
            claude("user", "u1", None, "Hello"),
            answer,
            answer,
            claude("user", "u2", "a1", "First words"),
            claude("user", "u2", "a1", "Other words"),
        ],
    )
    assert rows(session, "id", "parent_id", "prompt") == [
        ("a1", None, "Hello"),
        ("u2", "a1", "First words"),
        ("u2+2", "a1", "Other words"),
    ]
    assert problems(session) == [
        (
            "duplicate-record",
            f"{session}: u2 names two records with different contents:"
            " both read, the later as u2+2",
        )
    ]


def test_a_session_cut_short_is_read_as_far_as_it_goes(tmp_path: Path) -> None:
    whole = json.dumps(
        claude("assistant", "a1", "u1", [{"type": "text", "text": "Hi."}])
    )
    session = write(
        tmp_path / "s1.jsonl", [claude("user", "u1", None, "Hello"), whole[:40]]
    )
    assert rows(session, "id", "prompt") == [("u1", "Hello")]
    assert [kind for kind, _ in problems(session)] == ["bad-line"]
    # A Gemini CLI session written as JSON, cut short while it was written.
    chats = tmp_path / "gemini" / "chats"
    chats.mkdir(parents=True)
    value = {"sessionId": "g1", "messages": [GEMINI_USER, GEMINI_ANSWER]}
    text = json.dumps(value)
    (chats / "session-2026-01-01T10-00-g1.json").write_text(text[: text.index("Hi")])
    found = problems(tmp_path / "gemini")
    assert [kind for kind, _ in found] == ["bad-line"]
    assert "cut short after 1 message:" in found[0][1]
    assert rows(tmp_path / "gemini", "prompt") == [("Hello",)]


def test_a_folder_names_each_file_it_cannot_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    project = tmp_path / "projects" / "-p"
    write(
        project / "s1.jsonl",
        [
            claude("user", "u1", None, "Hello"),
            claude("assistant", "a1", "u1", [{"type": "text", "text": "Hi."}]),
        ],
    )
    write(project / "notes.jsonl", [{"note": "not a session"}])
    with (
        caplog.at_level(logging.WARNING, "convgraph.sources.agents"),
        open_logs(tmp_path / "projects") as logs,
    ):
        assert logs.files_read == 1
        nodes, _ = logs.read_forest()
        found = [(p.kind, p.message) for p in logs.record_problems]
    assert list(nodes["id"]) == ["a1"]
    unread = project / "notes.jsonl"
    assert caplog.messages == [
        f"{tmp_path / 'projects'}: 1 of 2 session files read; not read:",
        f"  {unread}: no session of Claude Code, Codex, Gemini CLI or Copilot CLI",
    ]
    assert found == [
        (
            "unread-file",
            f"{unread}: not read: no session of Claude Code, Codex, Gemini CLI or Copilot CLI",
        )
    ]
    result = run("tree", "--db", tmp_path / "projects")
    assert result.output.startswith("s1  Hello")


def test_a_home_folder_reads_every_agents_store(tmp_path: Path) -> None:
    write(
        tmp_path / ".claude" / "projects" / "-p" / "s1.jsonl",
        [
            claude("user", "u1", None, "Hello"),
            claude("assistant", "a1", "u1", [{"type": "text", "text": "Hi."}]),
        ],
    )
    write(
        tmp_path / ".gemini" / "tmp" / "h" / "chats" / "session-x.jsonl", GEMINI_LINES
    )
    assert sorted(set(rows(tmp_path, "tree_id", "source"))) == [
        ("g1", "gemini-cli"),
        ("s1", "claude-code"),
    ]


GEMINI_USER = {
    "id": "m1",
    "timestamp": "2026-01-01T10:00:00Z",
    "type": "user",
    "content": [{"text": "Hello"}],
}
GEMINI_ANSWER = {
    "id": "m2",
    "timestamp": "2026-01-01T10:00:01Z",
    "type": "gemini",
    "content": "Hi",
    "model": "gemini-3",
}
GEMINI_LINES = [
    {"sessionId": "g1", "projectHash": "h", "startTime": "2026-01-01T10:00:00Z"},
    GEMINI_USER,
    {"$set": {"lastUpdated": "2026-01-01T10:00:00Z"}},
    {**GEMINI_ANSWER, "content": ""},
    {**GEMINI_ANSWER, "tokens": {"input": 10, "output": 2}},
    {
        "id": "m3",
        "timestamp": "2026-01-01T10:00:02Z",
        "type": "user",
        "content": [{"text": "Wrong question"}],
    },
    {
        "id": "m4",
        "timestamp": "2026-01-01T10:00:03Z",
        "type": "gemini",
        "content": "Wrong answer",
    },
    {"$rewindTo": "m3"},
    {
        "id": "m5",
        "timestamp": "2026-01-01T10:00:04Z",
        "type": "user",
        "content": [{"text": "Right question"}],
    },
    {
        "id": "m6",
        "timestamp": "2026-01-01T10:00:05Z",
        "type": "gemini",
        "content": "Right answer",
    },
    {"$set": {"summary": "A greeting"}},
]


def test_gemini_json_lines_replayed(tmp_path: Path) -> None:
    """A message written again replaces itself in its place; a rewind leaves
    what it rewound as a branch; the parts list is the prompt."""
    session = write(
        tmp_path / "chats" / "session-2026-01-01T10-00-g1.jsonl", GEMINI_LINES
    )
    for path in (session, tmp_path):
        assert rows(path, "id", "parent_id", "prompt", "response", "input_tokens", "active") == [
            ("m2", None, "Hello", "Hi", 10, True),
            ("m4", "m2", "Wrong question", "Wrong answer", None, False),
            ("m6", "m2", "Right question", "Right answer", None, True),
        ]  # fmt: skip
    with open_logs(session) as logs:
        _, names = logs.read_forest()
    assert names == {"g1": "A greeting"}


def test_codex_prompts_shown_only_as_events(tmp_path: Path) -> None:
    """A rollout that keeps the prompt only as the CLI's `user_message`
    event (as the spawn fixture of codemie-code does): that is the prompt."""
    rollout = REAL / ".codex" / "sessions" / "2026" / "05" / "12"
    path = next(rollout.glob("*spawn-skill.jsonl"))
    assert rows(path, "prompt", "tools", "tool_calls") == [
        ("run a review", "exec_command, spawn_agent, wait_agent", 3)
    ]


def test_a_pasted_image_is_an_attachment(tmp_path: Path) -> None:
    picture = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
    }
    session = write(
        tmp_path / "s1.jsonl",
        [
            claude(
                "user", "u1", None, [{"type": "text", "text": "What is this?"}, picture]
            ),
            claude("assistant", "a1", "u1", [{"type": "text", "text": "A logo."}]),
        ],
    )
    [(prompt, parts)] = rows(session, "prompt", "parts")
    assert prompt == "What is this?"
    assert [(p["type"], p.get("mime"), p.get("size")) for p in parts] == [
        ("text", None, None),
        ("attachment", "image/png", 8),
        ("text", None, None),
    ]


def test_codex_compaction_continues_the_rollout(tmp_path: Path) -> None:
    """A `compacted` record between turns, and an item of a kind not known:
    one chain, the item counted."""

    def item(second: int, payload: dict) -> dict:
        return {
            "timestamp": f"2026-01-01T10:00:{second:02d}Z",
            "type": "response_item",
            "payload": payload,
        }

    def said(role: str, text: str) -> dict:
        kind = "input_text" if role == "user" else "output_text"
        return {
            "type": "message",
            "role": role,
            "content": [{"type": kind, "text": text}],
        }

    rollout = write(
        tmp_path / "rollout-2026-01-01T10-00-00-c.jsonl",
        [
            {
                "timestamp": "2026-01-01T10:00:00Z",
                "type": "session_meta",
                "payload": {"id": "c"},
            },
            item(1, said("user", "One")),
            item(2, said("assistant", "1")),
            {
                "timestamp": "2026-01-01T10:00:03Z",
                "type": "compacted",
                "payload": {"message": "Summary", "replacement_history": []},
            },
            item(4, {"type": "future_item"}),
            item(5, said("user", "Two")),
            item(6, said("assistant", "2")),
        ],
    )
    assert rows(rollout, "id", "parent_id", "prompt", "response") == [
        ("c:2", None, "One", "1"),
        ("c:6", "c:2", "Two", "2"),
    ]
    assert problems(rollout) == [
        (
            "unknown-record",
            f"{rollout}: 1 record of a kind not known ('future_item'): left out",
        )
    ]


def test_progress_counts_the_files_read() -> None:
    told: list[tuple[str, int, int | None]] = []
    with open_logs(SPOTTER) as logs:
        logs.read_forest(text=False, progress=lambda *a: told.append(a))
    assert told[0] == ("reading sessions", 0, 3)
    assert told[-1] == ("reading sessions", 3, 3)
