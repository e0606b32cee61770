"""Agents' sessions in every output (issue 27, item 4): Markdown export cuts
long tool outputs unless --full, the HTML explorer and the TUI draw a
subagent's subtree folded under its Task call's node, from the files in
tests/data/agents/.
"""

from __future__ import annotations

import json
import shutil
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


def two_turn_subagent(tmp_path: Path) -> Path:
    """The fixture project, its subagent asked a second question (so that
    its subtree holds two nodes, x4 and x6)."""
    project = tmp_path / "-home-ada-tree"
    shutil.copytree(PROJECT, project)
    agent = project / "agent-ag1.jsonl"
    last = json.loads(agent.read_text().splitlines()[-1])
    asked = {**last, "type": "user", "uuid": "x5", "parentUuid": "x4"}
    asked["timestamp"] = "2025-06-01T10:05:30.000Z"
    asked["message"] = {"role": "user", "content": "And the lexer?"}
    answered = {**last, "uuid": "x6", "parentUuid": "x5"}
    answered["timestamp"] = "2025-06-01T10:05:40.000Z"
    answered["message"] = {
        **last["message"],
        "id": "msg_x6",
        "content": [{"type": "text", "text": "The lexer is fine."}],
    }
    with agent.open("a") as file:
        for record in (asked, answered):
            file.write(json.dumps(record) + "\n")
    return project


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


def test_browse_folds_a_subagent_under_its_task_call() -> None:
    """At 80x24 the subagent is one line under the Task call's node, folded
    at open; → on it opens it, as enter does, and its root stays marked."""
    from tests.tui import drive, open_first, screen_rows

    shown: dict[str, object] = {}

    async def scenario(app, pilot) -> None:
        screen = await open_first(app, pilot, "s1")
        tree = screen.tree
        shown["open"] = [row[:43].rstrip() for row in screen_rows(app)[1:8]]
        await pilot.press("end")
        shown["cursor"] = tree.node
        await pilot.press("right")
        shown["right"] = [row[:43].rstrip() for row in screen_rows(app)[1:9]]
        shown["after right"] = tree.node
        tree.show(tree.graph)
        await pilot.press("end", "enter")
        shown["enter"] = [line for _, line in tree.lines()]

    drive(PROJECT / "s1.jsonl", scenario)
    calls = [
        '  ↳ Bash(command="pytest", description="… …',
        '  ↳ Task(description="Find the bug", pro… …',
    ]
    assert shown["open"] == [
        "Fix the failing parser test ∴",
        *calls,
        "├── Now add a test",
        "├── Now add two tests",
        "└── ⤷ subagent ag1: 1 node",
        "",
    ]
    assert shown["cursor"] == shown["after right"] == "x4"
    assert shown["right"] == [
        "Fix the failing parser test ∴",
        *calls,
        "├── Now add a test",
        "├── Now add two tests",
        "└── Find the parser bug ⤷ subagent ag1",
        '      ↳ Grep(pattern="def parse") → parse.…',
        "",
    ]
    assert shown["enter"][-2:] == [
        "└── Find the parser bug",
        '      ↳ Grep(pattern="def parse") → parse.py:12',
    ]


def test_html_folds_a_subagent_under_its_task_call(browser, tmp_path: Path) -> None:
    """The subagent opens folded into one box under the Task call's node,
    named and counted; a click opens it, its nodes drawn and marked."""
    from tests.html_pages import Pages

    page = tmp_path / "session.html"
    run("export", "--db", two_turn_subagent(tmp_path), "--format", "html", "-o", page)
    pages = Pages(browser)
    try:
        visit = pages.open(page)
        assert visit.drawn_ids() == {"a4", "a5", "a6", "a8", "a9", "x4"}
        assert visit.ids_with_class("subagent") == {"x4"}
        assert visit.ids_with_class("folded") == {"x4"}
        box = visit.node("x4")
        assert box.locator(".label").text_content() == "⤷ subagent ag1"
        assert box.locator(".sublabel").text_content() == "2 nodes · click to open"
        assert box.get_attribute("aria-label") == (
            "Subagent ag1, folded: 2 nodes; click to open"
        )
        box.click()
        assert visit.drawn_ids() == {"a4", "a5", "a6", "a8", "a9", "x4", "x6"}
        assert visit.ids_with_class("folded") == set()
        assert visit.ids_with_class("subagent") == {"x4"}
        assert visit.node("x4").locator(".label").text_content() == (
            "⤷ ag1 · Find the parser bug"
        )
        assert visit.count("g.node") == 7
        visit.assert_clean()
    finally:
        pages.close()


def test_subagents_start_where_their_sidechain_starts() -> None:
    """A subagent's root is its first node under a node not of its own
    sidechain: under the main session, under another subagent, or a root;
    it counts its whole subtree."""
    import networkx as nx

    from convgraph.present.subagents import Subagent, subagent_roots

    def parts(agent: str | None) -> list[dict]:
        text = {"type": "text", "text": "t"}
        return [text if agent is None else {**text, "sidechain": agent}]

    tree = nx.DiGraph([("m", "a1"), ("a1", "a2"), ("a2", "b1"), ("m", "m2")])
    tree.add_node("r")
    agents = {"m": None, "m2": None, "a1": "A", "a2": "A", "b1": "B", "r": "C"}
    nx.set_node_attributes(
        tree, {node: parts(agent) for node, agent in agents.items()}, "parts"
    )
    assert subagent_roots(tree) == {
        "a1": Subagent("A", 3),
        "b1": Subagent("B", 1),
        "r": Subagent("C", 1),
    }
