"""The JSON lines of agents' session files read within bounds
(`agent_files.json_lines`, `iter_lines`): orjson reads them, the standard
library's decoder what it refuses, and a line read in many small reads is
whole."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest

from convgraph.errors import DatabaseError
from convgraph.links.integrity import Problem
from convgraph.sources import agent_files
from convgraph.sources.agent_files import first_records, iter_lines, json_lines

LINES = b'{"a": 1}\n' + b"x" * 100 + b"\n\n" + b'{"b": 2}\n{"c": 3}'


@pytest.mark.parametrize("size", [1, 2, 7, 8, 9, 16, 1000])
def test_lines_spanning_reads_are_whole(size: int) -> None:
    found = list(iter_lines(io.BytesIO(LINES), Path("f"), size))
    assert found == [b'{"a": 1}', b"x" * 100, b"", b'{"b": 2}', b'{"c": 3}']


@pytest.mark.parametrize("size", [1, 7, 1000])
def test_a_line_past_the_bound_is_an_error(
    size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(agent_files, "MAX_VALUE_BYTES", 50)
    with pytest.raises(DatabaseError, match="a line is longer than"):
        list(iter_lines(io.BytesIO(LINES + b"y" * 60), Path("f"), size))


def test_what_orjson_refuses_the_standard_library_reads(tmp_path: Path) -> None:
    """NaN and a lone surrogate escape are JSON to Python's decoder, not to
    orjson: read as ever; a line cut short, or no object, is a problem."""
    session = tmp_path / "s.jsonl"
    session.write_bytes(
        b'{"n": NaN}\n'
        b'  {"s": "\\ud800"}  \n'
        b'{"cut": \n'
        b"[1, 2]\n"
        b'{"ok": "\xc3\xa9"}\n'
        b"\xff\n"
    )
    problems: list[Problem] = []
    found = list(json_lines(session, problems))
    assert repr(found) == "[{'n': nan}, {'s': '\\ud800'}, {'ok': 'é'}]"
    assert [problem.node_id for problem in problems] == [
        "s.jsonl:3",
        "s.jsonl:4",
        "s.jsonl:6",
    ]


def test_first_records_stop_when_enough(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    session.write_text("".join(f'{{"i": {i}}}\n' for i in range(20)))
    assert len(first_records(session)) == 8
    assert first_records(session, enough=lambda found: found[-1]["i"] == 2) == [
        {"i": 0},
        {"i": 1},
        {"i": 2},
    ]


# -- the records of one API message folded into one message ----------------------


def _record(uuid: str, parent: str | None, kind: str, **fields: object) -> dict:
    record: dict = {
        "uuid": uuid,
        "parentUuid": parent,
        "type": kind,
        "sessionId": fields.pop("session", "s1"),
        "timestamp": f"2025-06-01T10:00:{len(uuid):02d}.000Z",
        "isSidechain": False,
    }
    if kind == "user":
        record["message"] = {"role": "user", "content": fields.pop("content")}
    else:
        record["message"] = {
            "role": "assistant",
            "id": fields.pop("api"),
            "model": "claude-sonnet-4",
            "content": [fields.pop("block")],
            "usage": {"input_tokens": 5, "output_tokens": 7},
        }
    record.update(fields)
    return record


THINK = {"type": "thinking", "thinking": "hmm", "signature": "s"}
CALL = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}
RESULT = [{"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"}]
ANSWER = {"type": "text", "text": "Done."}

#: A run: a prompt, an API message of three blocks (thinking, a call, a
#: text), the call's result, and an answer.
RUN = [
    _record("u1", None, "user", content="List the files"),
    _record("a1", "u1", "assistant", api="m1", block=THINK),
    _record("a2", "a1", "assistant", api="m1", block=CALL),
    _record("r1", "a2", "user", content=RESULT),
    _record("a3", "r1", "assistant", api="m2", block=ANSWER),
]


def _forest(folder: Path, monkeypatch: pytest.MonkeyPatch, fold: bool) -> tuple:
    import functools

    from convgraph.sources import claude_code
    from convgraph.sources.agent_sessions import open_agent_source

    if not fold:
        read = functools.partial(claude_code.read_group, fold=False)
        monkeypatch.setattr(claude_code, "read_group", read)
    source = open_agent_source(folder)
    assert source is not None
    nodes, names = source.read_forest()
    bare, _ = source.read_forest(text=False)
    monkeypatch.undo()
    return nodes, bare, names


def _write(folder: Path, sessions: dict[str, list[dict]]) -> Path:
    import json

    folder.mkdir()
    for name, records in sessions.items():
        text = "".join(json.dumps(record) + "\n" for record in records)
        (folder / f"{name}.jsonl").write_text(text)
    return folder


@pytest.mark.parametrize(
    "sessions",
    [
        {"s1": RUN},
        # A prompt branching from the middle of an API message: read unfolded.
        {"s1": [*RUN, _record("u2", "a1", "user", content="No, stop")]},
        # An id twice.
        {"s1": [*RUN, _record("a2", "a3", "assistant", api="m3", block=ANSWER)]},
        # A summary naming a folded record.
        {"s1": [*RUN, {"type": "summary", "summary": "Listing", "leafUuid": "a1"}]},
        # A resumed session holding only the first block of the API message
        # another one holds whole.
        {"s1": RUN[:2], "s2": [{**r, "sessionId": "s2"} for r in RUN]},
    ],
)
def test_folded_api_messages_read_as_the_records_do(
    sessions: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _write(tmp_path / "projects", sessions)
    folded = _forest(folder, monkeypatch, fold=True)
    unfolded = _forest(folder, monkeypatch, fold=False)
    for mine, theirs in zip(folded[:2], unfolded[:2], strict=True):
        pd.testing.assert_frame_equal(mine, theirs)
    assert folded[2] == unfolded[2]


def test_an_api_message_is_one_message(tmp_path: Path) -> None:
    """The records of one API message are one message: its id the last
    record's, its parts in order, its usage once."""
    from convgraph.sources.chat_messages import ANSWER as ANSWERED
    from convgraph.sources.chat_messages import STEP
    from convgraph.sources.claude_code import read_group

    path = _write(tmp_path / "projects", {"s1": RUN}) / "s1.jsonl"
    (group,) = read_group("s1", [path])
    assert [(m.id, m.parent, m.kind) for m in group.messages] == [
        ("u1", None, "prompt"),
        ("a2", "u1", STEP),
        ("r1", "a2", STEP),
        ("a3", "r1", ANSWERED),
    ]
    assert group.aliases == {"a1": "a2"}
    assert [part["type"] for part in group.messages[1].parts or ()] == [
        "reasoning",
        "tool_call",
    ]
    assert (group.messages[1].input_tokens, group.messages[1].output_tokens) == (5, 7)
