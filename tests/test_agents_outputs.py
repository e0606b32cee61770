"""Agents' sessions in every output (issue 27, item 4): Markdown export cuts
long tool outputs unless --full, the HTML explorer and the TUI draw a
subagent's subtree folded under its Task call's node, from the files in
tests/data/agents/.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import run

DATA = Path(__file__).parent / "data" / "agents"
PROJECTS = DATA / "claude-code" / "projects"
PROJECT = PROJECTS / "-home-ada-tree"


def long_session(tmp_path: Path) -> Path:
    """The first session of the fixture project, its first tool result
    2,503 characters long."""
    session = tmp_path / "long.jsonl"
    records = [
        json.loads(line) for line in (PROJECT / "s1.jsonl").read_text().splitlines()
    ]
    records[3]["message"]["content"][0]["content"] = "x" * 2500 + "END"
    session.write_text("".join(json.dumps(record) + "\n" for record in records))
    return session


def test_markdown_export_cuts_long_outputs_unless_full(tmp_path: Path) -> None:
    session = long_session(tmp_path)
    cut = run("export", "--db", session, "s1", "--format", "markdown").output
    whole = run(
        "export", "--db", session, "s1", "--format", "markdown", "--full"
    ).output
    said = "*… cut: the first 2,000 of 2,503 characters shown*"
    assert "x" * 2000 + "\n```\n\n" + said in cut
    assert "END" not in cut and "x" * 2001 not in cut
    assert "x" * 2500 + "END\n```" in whole and said not in whole
    assert cut.count("**Tool result**") == whole.count("**Tool result**") == 2


def test_full_is_for_markdown_only() -> None:
    result = run("export", "--db", PROJECT, "--format", "dot", "--full", expect=2)
    assert result.stderr.strip().endswith("--full does not apply to --format dot")
