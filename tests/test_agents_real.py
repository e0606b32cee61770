"""Real session files other tools keep as fixtures (tests/data/agents/home,
tests/data/agents/README.md says where each comes from), read by convgraph
and counted by an independent reader written here from the formats alone:
every file is read, every count is the independent one, a file and its
folder give the same trees, and a linear session is one branch.

The independent reader (`independent_counts`) knows nothing of convgraph's
nodes: it counts, per session file and its subagents' files, the prompts a
person typed (Claude Code: user records that are neither tool results nor
`isMeta`, a compaction's summary counted; Codex: user message items that
are not the context Codex adds, else the `user_message` events; Gemini CLI:
user messages with text, a JSON-lines session replayed by id), the tool
calls and results, and the subagents' prompts. `benchmarks/agents.py`
prints the same comparison as a table.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from convgraph import Forest
from convgraph.analysis.stats import conversation_table
from convgraph.sources import open_logs

HOME = Path(__file__).parent / "data" / "agents" / "home"
CLAUDE = HOME / ".claude" / "projects"
CODEX = HOME / ".codex" / "sessions"
GEMINI = HOME / ".gemini" / "tmp"

#: What the context Codex sends as user messages begins with.
CODEX_CONTEXT = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
)
CODEX_CALLS = {
    "function_call",
    "custom_tool_call",
    "local_shell_call",
    "web_search_call",
    "tool_search_call",
    "image_generation_call",
}
CODEX_RESULTS = {
    "function_call_output",
    "custom_tool_call_output",
    "tool_search_output",
}


def _lines(path: Path) -> list[dict[str, Any]]:
    found = []
    for line in path.read_text(encoding="utf-8-sig").splitlines():
        if line.strip():
            found.append(json.loads(line))
    return found


def _claude(paths: list[Path]) -> Counter[str]:
    counts: Counter[str] = Counter()
    seen: set[str] = set()
    for path in paths:
        for record in _lines(path):
            if record.get("type") not in ("user", "assistant"):
                continue
            if record["uuid"] in seen:
                continue
            seen.add(record["uuid"])
            content = record["message"]["content"]
            blocks = content if isinstance(content, list) else []
            calls = sum(block.get("type") == "tool_use" for block in blocks)
            results = sum(block.get("type") == "tool_result" for block in blocks)
            counts["tool calls"] += calls
            counts["tool results"] += results
            prompt = record["type"] == "user" and (
                record.get("isCompactSummary") is True
                or (not results and record.get("isMeta") is not True)
            )
            if prompt:
                counts["prompts"] += 1
                if record.get("isSidechain") is True:
                    counts["subagent prompts"] += 1
    return counts


def _codex(path: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    typed = 0
    for record in _lines(path):
        payload = record.get("payload", {})
        if record["type"] == "event_msg" and payload.get("type") == "user_message":
            typed += 1
        if record["type"] != "response_item":
            continue
        kind = payload["type"]
        counts["tool calls"] += kind in CODEX_CALLS
        counts["tool results"] += kind in CODEX_RESULTS
        if kind == "message" and payload["role"] == "user":
            text = "".join(block.get("text", "") for block in payload["content"])
            counts["prompts"] += bool(text) and not text.lstrip().startswith(
                CODEX_CONTEXT
            )
    if not counts["prompts"]:
        counts["prompts"] = typed
    return counts


def _gemini(path: Path) -> Counter[str]:
    if path.suffix == ".json":
        messages = json.loads(path.read_text())["messages"]
    else:
        replayed: dict[str, dict[str, Any]] = {}
        for record in _lines(path):
            if "id" in record and "type" in record:
                replayed[record["id"]] = record
        messages = list(replayed.values())
    counts: Counter[str] = Counter()
    for message in messages:
        if message["type"] == "user":
            content = message["content"]
            if isinstance(content, list):
                content = "".join(part.get("text", "") for part in content)
            counts["prompts"] += bool(content)
        elif message["type"] == "gemini":
            counts["tool calls"] += len(message.get("toolCalls") or [])
            counts["tool results"] += len(message.get("toolCalls") or [])
    return counts


def session_files() -> dict[Path, list[Path]]:
    """Every session file of the home folder, with the files read with it
    (its subagents')."""
    found: dict[Path, list[Path]] = {}
    for project in sorted(CLAUDE.iterdir()):
        files = sorted(project.glob("*.jsonl"))
        agents = [file for file in files if file.name.startswith("agent-")]
        for file in files:
            if file in agents:
                continue
            below = sorted((project / file.stem / "subagents").glob("*.jsonl"))
            found[file] = [file, *below, *agents]
    for file in sorted(CODEX.rglob("rollout-*.jsonl")):
        found[file] = [file]
    for file in sorted(GEMINI.rglob("session-*.json*")):
        found[file] = [file]
    return found


def independent_counts(files: list[Path]) -> Counter[str]:
    """What the independent reader counts in one session's files."""
    first = files[0]
    if CLAUDE in first.parents:
        return _claude(files)
    if CODEX in first.parents:
        return _codex(first)
    return _gemini(first)


def convgraph_counts(path: Path) -> tuple[Counter[str], Any]:
    """What convgraph reads of the session file `path` alone: its counts
    and its nodes table."""
    with open_logs(path) as logs:
        nodes, _ = logs.read_forest()
    counts: Counter[str] = Counter()
    counts["nodes"] = len(nodes)
    counts["prompts"] = int(nodes["prompt"].notna().sum())
    counts["subagent prompts"] = int(
        (nodes["prompt"].notna() & nodes["sidechain"].notna()).sum()
    )
    counts["tool calls"] = int(nodes["tool_calls"].sum())
    counts["tool results"] = sum(
        part["type"] == "tool_result"
        for parts in nodes["parts"]
        if parts is not None
        for part in parts
    )
    return counts, nodes


FILES = session_files()
NAMES = [str(path.relative_to(HOME)) for path in FILES]


def test_every_real_file_is_found() -> None:
    assert len([f for f in FILES if CLAUDE in f.parents]) == 9
    assert len([f for f in FILES if CODEX in f.parents]) == 4
    assert len([f for f in FILES if GEMINI in f.parents]) == 3


@pytest.mark.parametrize("path", FILES, ids=NAMES)
def test_each_file_counts_as_the_independent_reader_counts(path: Path) -> None:
    ours, nodes = convgraph_counts(path)
    theirs = independent_counts(FILES[path])
    assert ours["nodes"] > 0
    for name in ("prompts", "subagent prompts", "tool calls", "tool results"):
        assert ours[name] == theirs[name], name
    # A node is a prompt and its run: every node has its prompt.
    assert ours["nodes"] == ours["prompts"]


@pytest.mark.parametrize("path", FILES, ids=NAMES)
def test_a_file_alone_is_its_tree_in_the_home_folder(path: Path) -> None:
    """A file read alone gives the nodes, links and contents the home
    folder's read gives its tree."""
    _, alone = convgraph_counts(path)
    tree = alone["tree_id"].iloc[0]
    whole = HOME_TABLE[HOME_TABLE["tree_id"] == tree]
    columns = ["id", "parent_id", "prompt", "response", "tool_calls", "sidechain"]
    assert table_rows(alone, columns) == table_rows(whole, columns)


def table_rows(nodes: Any, columns: list[str]) -> list[tuple[Any, ...]]:
    table = nodes[columns].astype(object)
    table = table.where(table.notna(), None)
    return sorted(tuple(row) for row in table.itertuples(False))


def _home_table() -> Any:
    with open_logs(HOME) as logs:
        nodes, _ = logs.read_forest()
    return nodes


HOME_TABLE = _home_table()


def test_the_home_folder_reads_all_three_agents_as_one_forest() -> None:
    with open_logs(HOME) as logs:
        assert logs.generations == ["claude-code", "codex", "gemini-cli"]
        assert logs.files_read == 19 and logs.unread == []
        nodes, _ = logs.read_forest()
        problems = logs.record_problems
    assert problems == []
    by_source = nodes.groupby("source", observed=True)["tree_id"].nunique()
    assert by_source.to_dict() == {"claude-code": 9, "codex": 4, "gemini-cli": 3}
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
    on the main chain, nothing abandoned (subagents hang off it)."""
    table = conversation_table(Forest.read(HOME, text=False))
    assert set(table["roots"]) == {1}
    assert set(table["abandoned_branches"]) == {0}
    forest = Forest.read(HOME, text=False)
    main = forest.nodes[forest.nodes["sidechain"].isna()]
    parents = Counter(main["parent_id"].dropna())
    assert max(parents.values()) == 1  # no main-chain node has two children


def test_a_linear_session_of_parallel_calls_and_hooks_reads_as_lived() -> None:
    """The 2.1 session whose hooks' progress records and parallel results
    hang off its calls: two prompts, two nodes, one chain."""
    path = CLAUDE / "-home-marco-projects-spotter" / "short.jsonl"
    with open_logs(path) as logs:
        nodes, _ = logs.read_forest()
    assert table_rows(nodes, ["id", "parent_id", "tool_calls", "tools"]) == sorted(
        [
            ("2618ef5d-c1c6-4938-b81c-8a3230ccad76", None, 2, "Bash, Glob"),
            (
                "c06a9fe4-ba05-44f2-b619-a057c18101e5",
                "2618ef5d-c1c6-4938-b81c-8a3230ccad76",
                0,
                None,
            ),
        ]
    )
