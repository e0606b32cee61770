"""The JSON lines of agents' session files read within bounds
(`agent_files.json_lines`, `iter_lines`): orjson reads them, the standard
library's decoder what it refuses, and a line read in many small reads is
whole."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from convgraph.errors import DatabaseError
from convgraph.links.integrity import Problem
from convgraph.sources.agents import files as agent_files
from convgraph.sources.agents.files import first_records, iter_lines, json_lines

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
