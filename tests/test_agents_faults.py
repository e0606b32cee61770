"""The four faults of issue 46, each on the shape that showed it: a session
file read alone took in other sessions' subagents, a pasted image as the
whole prompt was no prompt, two Gemini CLI sessions reusing message ids were
merged, and a tool call could sit in two nodes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from convgraph.sources import open_logs
from tests.test_agents_cases import claude, rows, write


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
