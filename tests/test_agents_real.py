"""Real session files of coding agents (tests/data/agents, whose README says
where each comes from), read by convgraph and counted by
`tests/agents_reference.py`, a reader written from the formats alone.

Every file's prompts, tool calls and tool results, as convgraph's nodes
hold them (a prompt: a node with a user part outside a subagent; calls and
results: parts), equal the reference reader's. The cases where the two
disagree are marked, with what differs; the README of the data and the
reference reader's notes say why the reference counts as it does.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import convgraph
from convgraph.analysis.stats import conversation_table
from convgraph.parts import node_parts
from convgraph.sources import open_logs
from tests.agents_reference import agent_of, claude_files, count
from tests.helpers import read_forest

DATA = Path(__file__).parent / "data" / "agents"
HOME = DATA / "home"
CLAUDE = HOME / ".claude" / "projects"
CODEX = HOME / ".codex" / "sessions"
GEMINI = HOME / ".gemini" / "tmp"


def sessions() -> list[Path]:
    """Every real file, but a subagent's file read with its session's."""
    files = sorted(
        path for path in DATA.rglob("*.json*") if not path.name.endswith(".meta.json")
    )
    companions: set[Path] = set()
    for path in files:
        if agent_of(path) == "claude-code" and not path.name.startswith("agent-"):
            companions.update(claude_files(path)[1:])
    return [path for path in files if path not in companions]


FILES = sessions()


def convgraph_counts(path: Path) -> tuple[int, int, int]:
    """Prompts, tool calls and tool results of convgraph's nodes."""
    prompts = calls = results = 0
    with convgraph.open(path) as logs:
        rows = logs.forest().nodes.to_dict("records")
    for row in rows:
        parts = node_parts(row)
        prompts += any(
            part["role"] == "user" and not part.get("sidechain") for part in parts
        )
        calls += sum(part["type"] == "tool_call" for part in parts)
        results += sum(part["type"] == "tool_result" for part in parts)
    return prompts, calls, results


def test_every_real_file_is_found() -> None:
    agents = Counter(agent_of(path) for path in FILES)
    assert agents == {"claude-code": 35, "codex": 9, "gemini-cli": 10, "copilot": 6}


@pytest.mark.parametrize("path", FILES, ids=lambda path: str(path.relative_to(DATA)))
def test_each_file_counts_as_the_reference_reader_counts(path: Path) -> None:
    assert convgraph_counts(path) == count(path).triple()


def test_the_reference_reader_counts_what_the_formats_say() -> None:
    """Counts checked by hand, record by record (the image session: its
    prompts, one of them an image alone, two of them slash commands the
    model answered; Copilot's skill-injected message is no prompt)."""
    stage0 = CLAUDE / "-tmp-stage0" / "0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f.jsonl"
    assert count(stage0).triple() == (1, 2, 1)
    image = CLAUDE / "-entire-cli" / "062a8bdd-4322-4ffa-bc38-3e8b8bfb5a56.jsonl"
    assert count(image).prompts == 19
    copilot = DATA / "copilot"
    assert count(copilot / "agent-sessions-small" / "events.jsonl").triple() == (
        2,
        4,
        4,
    )
    assert count(copilot / "hippo-memory-copilot-sess-1" / "events.jsonl").triple() == (
        1,
        1,
        1,
    )
    rollout = (
        CODEX / "2026" / "05" / "12" / "rollout-2026-05-12T10-00-00-spawn-skill.jsonl"
    )
    assert count(rollout).triple() == (1, 3, 1)


HOME_FILES = [path for path in FILES if HOME in path.parents]


def table_rows(nodes: Any, columns: list[str]) -> list[tuple[Any, ...]]:
    table = nodes[columns].astype(object)
    table = table.where(table.notna(), None)
    return sorted(tuple(row) for row in table.itertuples(False))


def _home_table() -> Any:
    with open_logs(HOME) as logs:
        nodes, _ = logs.read_forest()
    return nodes


HOME_TABLE = _home_table()


@pytest.mark.parametrize(
    "path", HOME_FILES, ids=[str(p.relative_to(HOME)) for p in HOME_FILES]
)
def test_a_file_alone_is_its_tree_in_the_home_folder(path: Path) -> None:
    """A file read alone gives the nodes, links and contents the home
    folder's read gives its tree."""
    with open_logs(path) as logs:
        alone, _ = logs.read_forest()
    trees = set(alone["tree_id"])
    whole = HOME_TABLE[HOME_TABLE["tree_id"].isin(trees)]
    columns = [
        "id",
        "tree_id",
        "parent_id",
        "prompt",
        "response",
        "tool_calls",
        "sidechain",
    ]
    assert table_rows(alone, columns) == table_rows(whole, columns)


def test_the_home_folder_reads_all_three_agents_as_one_forest() -> None:
    with open_logs(HOME) as logs:
        assert logs.generations == ["claude-code", "codex", "gemini-cli"]
        assert logs.files_read == 51 and logs.unread == []
        nodes, _ = logs.read_forest()
        problems = logs.record_problems
    assert problems == []
    by_source = nodes.groupby("source", observed=True)["tree_id"].nunique()
    assert by_source.to_dict() == {"claude-code": 33, "codex": 6, "gemini-cli": 8}
    # Each agent's store alone gives its trees of the home folder.
    for store, source in (
        (CLAUDE, "claude-code"),
        (CODEX, "codex"),
        (GEMINI, "gemini-cli"),
    ):
        with open_logs(store) as logs:
            alone, _ = logs.read_forest()
        columns = ["id", "tree_id", "parent_id", "prompt", "tool_calls", "active"]
        assert table_rows(alone, columns) == table_rows(
            nodes[nodes["source"] == source], columns
        )


def test_every_real_session_is_one_branch_with_none_abandoned() -> None:
    """None of these sessions was rewound: each is one root and one leaf
    on the main chain, nothing abandoned (subagents hang off it), but the
    session that `/clear` started again, whose first chain is left."""
    table = conversation_table(read_forest(HOME, text=False))
    cleared = table["tree_id"] == "062a8bdd-4322-4ffa-bc38-3e8b8bfb5a56"
    assert set(table.loc[~cleared, "roots"]) == {1}
    assert set(table.loc[~cleared, "abandoned_branches"]) == {0}
    assert table.loc[cleared, ["roots", "abandoned_branches"]].values.tolist() == [
        [2, 1]
    ]
    forest = read_forest(HOME, text=False)
    main = forest.nodes[forest.nodes["sidechain"].isna()]
    parents = Counter(main["parent_id"].dropna())
    assert max(parents.values()) == 1  # no main-chain node has two children


def test_a_linear_session_of_parallel_calls_and_hooks_reads_as_lived() -> None:
    """The 2.1 session whose hooks' progress records and parallel results
    hang off its calls, stopped by the user: one prompt, one node ending
    with the interruption."""
    path = CLAUDE / "-home-marco-projects-spotter" / "short.jsonl"
    with open_logs(path) as logs:
        nodes, _ = logs.read_forest()
    assert table_rows(nodes, ["id", "parent_id", "tool_calls", "tools"]) == [
        ("c06a9fe4-ba05-44f2-b619-a057c18101e5", None, 2, "Bash, Glob")
    ]
    last = node_parts(nodes.astype(object).to_dict("records")[0])[-1]
    assert last == {
        "role": "user",
        "type": "text",
        "text": "[Request interrupted by user for tool use]",
    }
