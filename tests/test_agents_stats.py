"""Agents' sessions in the node contract and the statistics (issue 27.2 and
27.3): the project and git branch as node columns of a tree read by id too,
a subagent's leaves never abandoned branches, and the cost of cached input
as the price table prices it. The files are tests/data/agents/ (its README
says where each comes from).
"""

from __future__ import annotations

import json
from pathlib import Path

from convgraph import Forest
from convgraph.contract import PLACE_ATTRIBUTES
from tests.helpers import run

DATA = Path(__file__).parent / "data" / "agents"
PROJECTS = DATA / "claude-code" / "projects"


def places(forest: Forest) -> list[tuple]:
    """Each node's id, project and git branch, in table order, sorted."""
    table = forest.nodes[["id", *PLACE_ATTRIBUTES]].astype(object)
    return sorted(tuple(row) for row in table.itertuples(False))


def test_a_tree_read_by_id_has_its_project_and_branch() -> None:
    """The session switched branch after the compaction (c1)."""
    expected = [
        ("a4", "/home/ada/tree", "main"),
        ("a5", "/home/ada/tree", "main"),
        ("a6", "/home/ada/tree", "main"),
        ("a8", "/home/ada/tree", "fix-parser"),
        ("a9", "/home/ada/tree", "fix-parser"),
        ("c1", "/home/ada/tree", "fix-parser"),
        ("x4", "/home/ada/tree", "main"),
    ]
    by_id = Forest.read(PROJECTS, conversation_ids=["s1"], text=False)
    assert places(by_id) == expected
    assert places(Forest.read(PROJECTS, text=False)) == expected


def test_other_sources_have_no_place_columns() -> None:
    logs = Path(__file__).parent.parent / "examples" / "logs.db"
    forest = Forest.read(logs, text=False)
    named = Forest.read(logs, conversation_ids=[forest.tree_ids[0]], text=False)
    for table in (forest.nodes, named.nodes):
        assert not set(PLACE_ATTRIBUTES) & set(table.columns)


def test_usage_of_one_session_by_project() -> None:
    found = json.loads(
        run("stats", "--db", PROJECTS, "--by", "project", "--json", "s1").output
    )
    assert [(row["project"], row["nodes"]) for row in found] == [("/home/ada/tree", 7)]


def test_agents_columns_begin_with_the_place() -> None:
    from convgraph.sources.agent_files import AGENT_ATTRIBUTES

    assert AGENT_ATTRIBUTES[: len(PLACE_ATTRIBUTES)] == PLACE_ATTRIBUTES
