"""Coding agents' sessions read as trees (issue 27): Claude Code's projects,
Codex CLI's rollouts and Gemini CLI's chats, from the files in
tests/data/agents/ (tests/data/agents/README.md says where each comes from).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convgraph.errors import DatabaseError
from convgraph.sources import READS, open_logs
from convgraph.sources.agents.sessions import AgentSessions
from tests.helpers import examples, file_digest, read_forest, run

DATA = Path(__file__).parent / "data" / "agents"
PROJECTS = DATA / "claude-code" / "projects"
PROJECT = PROJECTS / "-home-ada-tree"
CODEX = DATA / "codex" / "sessions"
GEMINI = DATA / "gemini-cli" / "tmp"


def columns(path: Path, *names: str) -> list[tuple]:
    """The named columns of a whole read of `path`, row by row."""
    with open_logs(path) as logs:
        nodes, _ = logs.read_forest()
    table = nodes[list(names)].astype(object)
    table = table.where(table.notna(), None)
    return [tuple(row) for row in table.itertuples(False)]


@pytest.mark.parametrize(
    "path, agent",
    [
        (PROJECTS, "claude-code"),
        (PROJECT, "claude-code"),
        (PROJECT / "s1.jsonl", "claude-code"),
        (DATA / "claude-code" / "sample_session.jsonl", "claude-code"),
        (CODEX, "codex"),
        (next(CODEX.rglob("rollout-*c0dex-1.jsonl")), "codex"),
        (GEMINI, "gemini-cli"),
        (GEMINI / "0a1b2c" / "checkpoint-parser.json", "gemini-cli"),
    ],
)
def test_told_by_content(path: Path, agent: str) -> None:
    with open_logs(path) as logs:
        assert isinstance(logs, AgentSessions)
        assert logs.generations == [agent]


def test_claude_code_project_is_one_tree() -> None:
    """Rewind, subagent, resumed session, compaction: one tree, as lived."""
    rows = columns(
        PROJECTS,
        "id",
        "tree_id",
        "parent_id",
        "prompt",
        "tool_calls",
        "tools",
        "input_tokens",
        "output_tokens",
        "active",
        "git_branch",
        "source",
    )
    assert rows == [
        ("x4", "s1", "a4", "Find the parser bug", 1, "Grep", 17, 10, False, "main", "claude-code"),
        ("a4", "s1", None, "Fix the failing parser test", 2, "Bash, Task", 165, 15, True, "main", "claude-code"),
        ("a5", "s1", "a4", "Now add a test", 0, None, 40, 2, False, "main", "claude-code"),
        ("a6", "s1", "a4", "Now add two tests", 0, None, 41, 3, True, "main", "claude-code"),
        # The compaction's summary is no prompt: the turn it continues goes on.
        ("a8", "s1", "a6", "Run the tests", 0, None, 110, 5, True, "fix-parser", "claude-code"),
        ("a9", "s1", "a8", "Commit it", 0, None, 70, 2, True, "fix-parser", "claude-code"),
    ]  # fmt: skip
    assert {row[0]: row for row in columns(PROJECTS, "id", "project")}["a9"] == (
        "a9",
        "/home/ada/tree",
    )


def test_subagent_is_marked_and_results_named() -> None:
    with open_logs(PROJECTS) as logs:
        nodes, names = logs.read_forest()
    assert names == {"s1": "Fix the parser"}
    parts = dict(zip(nodes["id"], nodes["parts"], strict=True))
    assert {part.get("sidechain") for part in parts["x4"]} == {"ag1"}
    assert all("sidechain" not in part for part in parts["a4"])
    results = [part for part in parts["a4"] if part["type"] == "tool_result"]
    assert [(r["name"], r["output"], r["error"]) for r in results] == [
        ("Bash", "Error: exit 1", "Error: exit 1"),
        ("Task", "Found it in parse.py", None),
    ]
    assert [part["type"] for part in parts["a4"]] == [
        "text",
        "reasoning",
        "text",
        "tool_call",
        "tool_result",
        "tool_call",
        "tool_result",
        "text",
    ]


def test_one_tree_read_equals_the_whole_read() -> None:
    with open_logs(PROJECTS) as logs:
        nodes, _ = logs.read_forest()
        tree = logs.read_tree("s1")
        assert logs.tree_ids() == ["s1"]
        assert logs.tree_id_of_conversation("s2") == "s1"
        assert logs.tree_id_of_node("a9") == "s1"
    whole = {row["id"]: row for row in nodes.astype(object).to_dict("records")}
    for record in tree.records:
        row = whole[record["id"]]
        for name in ("parent_id", "prompt", "response", "tool_calls", "active"):
            assert record[name] == row[name], (record["id"], name)


def test_a_session_file_alone_brings_its_subagent() -> None:
    assert columns(PROJECT / "s1.jsonl", "id", "parent_id", "active") == [
        ("x4", "a4", False),
        ("a4", None, True),
        ("a5", "a4", False),
        ("a6", "a4", True),
    ]


def test_file_without_links_is_one_chain() -> None:
    """claude-code-transcripts' fixture: records without parentUuid."""
    assert columns(
        DATA / "claude-code" / "sample_session.jsonl",
        "id",
        "parent_id",
        "tools",
        "tool_calls",
        "project",
    ) == [
        ("msg-005", None, "Write, Bash", 2, "/project"),
        ("msg-007", "msg-005", None, 0, "/project"),
    ]


def test_codex_rollouts() -> None:
    assert columns(
        CODEX, "id", "parent_id", "prompt", "response", "tools", "input_tokens", "model"
    ) == [
        ("old-1:3", None, "Say hi", "Hi.", None, None, None),
        (
            "c0dex-1:8",
            None,
            "List the files",
            "README.md and parse.py.",
            "shell",
            1200,
            "gpt-5-codex",
        ),
        (
            "c0dex-1:11",
            "c0dex-1:8",
            "Thanks",
            "You're welcome.",
            None,
            1300,
            "gpt-5-codex",
        ),
    ]
    with open_logs(CODEX) as logs:
        nodes, _ = logs.read_forest()
    parts = dict(zip(nodes["id"], nodes["parts"], strict=True))["c0dex-1:8"]
    assert [(p["type"], p.get("name"), p.get("output")) for p in parts] == [
        ("text", None, None),
        ("reasoning", None, None),
        ("tool_call", "shell", None),
        ("tool_result", "shell", "README.md\nparse.py\n"),
        ("text", None, None),
    ]


def test_gemini_chats() -> None:
    assert columns(GEMINI, "id", "parent_id", "prompt", "response", "tools") == [
        ("0a1b2c/checkpoint-parser:3", None, "What is in parse.py?", "One function, parse.", "read_file"),
        ("m2", None, "Count the tests", "There are 12.", "search_file_content"),
    ]  # fmt: skip


def test_commands_read_sessions_and_write_nothing(tmp_path: Path) -> None:
    copy = tmp_path / "projects"
    shutil.copytree(PROJECTS, copy)
    before = sorted(path.name for path in copy.rglob("*"))
    digests = {path: file_digest(path) for path in copy.rglob("*.jsonl")}
    tree = run("tree", "--db", copy).output
    assert tree.splitlines()[0] == "s1  Fix the parser"
    assert "├── x4  Find the parser bug" in tree
    transcript = run("transcript", "--db", copy, "s1").output
    assert "Committed." in transcript and "parse.py:12" not in transcript
    exported = run("export", "--db", copy, "--format", "json").output
    assert json.loads(exported)
    assert sorted(path.name for path in copy.rglob("*")) == before
    assert {path: file_digest(path) for path in copy.rglob("*.jsonl")} == digests


def test_a_cut_line_is_reported_not_fatal(tmp_path: Path) -> None:
    session = tmp_path / "cut.jsonl"
    lines = (PROJECT / "s1.jsonl").read_text().splitlines()
    session.write_text("\n".join([*lines[:2], lines[2][:40]]) + "\n")
    with open_logs(session) as logs:
        nodes, _ = logs.read_forest()
        problems = logs.record_problems
    assert list(nodes["id"]) == ["a1"]
    assert [(p.kind, p.node_id) for p in problems] == [("bad-line", "cut.jsonl:3")]


def test_forest_reads_sessions() -> None:
    forest = read_forest(PROJECTS)
    assert forest.tree_ids == ["s1"]
    assert sorted(forest.nodes["id"]) == ["a4", "a5", "a6", "a8", "a9", "x4"]


def test_agent_statistics_per_session_and_project() -> None:
    from convgraph.analysis.agent_stats import agent_table

    forest = read_forest(PROJECTS, text=False)
    figures = (
        1,  # sessions: s2 continues s1, one tree
        5,  # turns on the main chain
        1,  # sidechains
        1,  # rewinds: "Now add a test", left for "Now add two tests"
        3,  # tool calls: Bash, Task, and the subagent's Grep
        1,  # the Bash call failed
        "Grep 1, Bash 1, Task 1",
        443,  # input: 165 + 17 + 40 + 41 + 50 + 60 + 70
        100,
        5,
        37,
        "2025-06-01T10:05:00.000000+00:00",
        "2025-06-01T10:25:00.000000+00:00",
    )
    by_session = agent_table(forest)
    assert [tuple(row) for row in by_session.itertuples(False)] == [("s1", *figures)]
    by_project = agent_table(forest, "project")
    assert [tuple(row) for row in by_project.itertuples(False)] == [
        ("/home/ada/tree", *figures)
    ]
    codex = agent_table(read_forest(CODEX, text=False))
    assert codex[
        ["tree_id", "turns", "tools", "input_tokens", "cache_read_tokens"]
    ].astype(object).where(codex.notna(), None).values.tolist() == [
        ["old-1", 1, None, None, None],
        ["c0dex-1", 2, "shell 1", 2500, 2200],
    ]
    assert agent_table(read_forest(GEMINI)).shape == (2, 14)


def test_agent_statistics_of_other_sources_are_empty() -> None:
    from convgraph.analysis.agent_stats import AGENT_COLUMNS, agent_table

    table = agent_table(read_forest(DATA.parent.parent.parent / "examples" / "logs.db"))
    assert list(table.columns) == ["tree_id", *AGENT_COLUMNS] and table.empty


def test_transcript_cuts_long_outputs_unless_full(tmp_path: Path) -> None:
    session = tmp_path / "long.jsonl"
    records = [
        json.loads(line) for line in (PROJECT / "s1.jsonl").read_text().splitlines()
    ]
    records[3]["message"]["content"][0]["content"] = "x" * 2500 + "END"
    session.write_text("".join(json.dumps(record) + "\n" for record in records))
    cut = run("transcript", "--db", session, "s1").output
    whole = run("transcript", "--db", session, "s1", "--full").output
    assert "END" not in cut and "x" * 2000 in cut and "x" * 2001 not in cut
    assert "x" * 2500 + "END" in whole
    assert cut.count("**Tool result**") == whole.count("**Tool result**") == 2


def test_markdown_export_cuts_long_outputs_unless_full(tmp_path: Path) -> None:
    from convgraph.export.markdown import generate_markdown
    from convgraph.model.loading import load_tree

    session = tmp_path / "long.jsonl"
    records = [
        json.loads(line) for line in (PROJECT / "s1.jsonl").read_text().splitlines()
    ]
    records[3]["message"]["content"][0]["content"] = "x" * 2500 + "END"
    session.write_text("".join(json.dumps(record) + "\n" for record in records))
    tree = load_tree("s1", session)
    assert "END" not in "\n".join(generate_markdown(tree))
    assert "x" * 2500 + "END" in "\n".join(generate_markdown(tree, full=True))


def test_ids_by_prefix() -> None:
    with open_logs(CODEX) as logs:
        assert logs.resolve("c0dex-1:1") == ("node", "c0dex-1:11")
        assert logs.resolve_conversation("c0de") == "c0dex-1"
    with open_logs(PROJECTS) as logs:
        assert logs.resolve_conversation("s2") == "s2"
        assert logs.tree_id_of_conversation(logs.resolve_conversation("s2")) == "s1"


@pytest.mark.parametrize("path", [PROJECTS, CODEX, GEMINI])
def test_figures_without_texts_are_the_figures_with_them(path: Path) -> None:
    structure = [
        "id",
        "tree_id",
        "parent_id",
        "tool_calls",
        "tools",
        "model",
        "datetime_utc",
        "input_tokens",
        "output_tokens",
        "active",
        "project",
        "git_branch",
        "sidechain",
        "tool_errors",
        "cache_read_tokens",
        "cache_write_tokens",
        "tool_uses",
    ]
    with open_logs(path) as logs:
        whole, _ = logs.read_forest()
        lean, _ = logs.read_forest(text=False)
    assert lean[structure].astype(object).equals(whole[structure].astype(object))
    assert lean[["prompt", "response", "parts"]].isna().all().all()


def test_check_reads_sessions(tmp_path: Path) -> None:
    assert run("check", "--db", PROJECTS).output == "no problems found\n"
    session = tmp_path / "cut.jsonl"
    lines = (PROJECT / "s1.jsonl").read_text().splitlines()
    session.write_text("\n".join([*lines[:2], lines[2][:40]]) + "\n")
    found = run("check", "--db", session, expect=1).output
    assert found == f"bad-line: {session}: line 3 is no JSON object: left out\n"


def test_usage_by_project() -> None:
    found = json.loads(
        run("stats", "--db", PROJECTS, "--by", "week,project", "--json").output
    )
    assert [
        {key: row[key] for key in ("week", "project", "conversations", "nodes")}
        for row in found
    ] == [
        {
            "week": "2025-W22",
            "project": "/home/ada/tree",
            "conversations": 1,
            "nodes": 6,
        }
    ]
    assert (found[0]["input_tokens"], found[0]["output_tokens"]) == (443, 37)


def test_a_failed_call_shows_its_output_once() -> None:
    transcript = run("transcript", "--db", PROJECTS, "a4").output
    assert transcript.count("Error: exit 1") == 1
    assert "**Tool result** · `Bash` · error" in transcript


def test_sessions_deeper_than_agents_keep_them_are_not_looked_for(
    tmp_path: Path,
) -> None:
    deep = tmp_path / "a" / "b" / "c" / "d" / "e" / "f"
    deep.mkdir(parents=True)
    shutil.copy(PROJECT / "s1.jsonl", deep)
    found = run("tree", "--db", tmp_path, expect=2).output
    assert found == f"Error: no sessions were found under {tmp_path}: {READS}\n"
    found = run("tree", "--db", tmp_path / "a" / "b").output
    assert found.startswith("s1  Fix the failing parser test\na4  ")


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


CLAUDE_KEYS = [
    "uuid",
    "parentUuid",
    "type",
    "message",
    "isSidechain",
    "timestamp",
    "cwd",
    "logicalParentUuid",
    "toolUseResult",
    "sessionId",
]
CODEX_KEYS = [
    "type",
    "payload",
    "timestamp",
    "role",
    "content",
    "name",
    "arguments",
    "call_id",
    "output",
    "info",
    "summary",
    "id",
]
ROLLOUT = next(CODEX.rglob("rollout-*c0dex-1.jsonl"))


@pytest.mark.parametrize(
    "path, keys", [(PROJECT / "s1.jsonl", CLAUDE_KEYS), (ROLLOUT, CODEX_KEYS)]
)
@settings(max_examples=examples(60), deadline=None)
@given(data=st.data())
def test_any_value_anywhere_is_read_or_reported(path: Path, keys: list, data) -> None:
    """A session whose records hold values of any type where the format
    has others (in the record, or in Codex's payload) reads (a table,
    maybe fewer nodes) and never raises."""
    import tempfile

    records = [json.loads(line) for line in path.read_text().splitlines()]
    changes = data.draw(
        st.lists(
            st.tuples(st.integers(0, 20), st.sampled_from(keys), JSON_VALUES),
            max_size=6,
        )
    )
    for index, key, value in changes:
        record = records[index % len(records)]
        inner = record.get("payload")
        (inner if isinstance(inner, dict) and index % 2 else record)[key] = value
    with tempfile.TemporaryDirectory() as folder:
        session = Path(folder) / path.name
        session.write_text("".join(json.dumps(record) + "\n" for record in records))
        try:
            logs = open_logs(session)
        except DatabaseError:
            return  # no longer an agent's session: told as such, one line
        with logs:
            nodes, _ = logs.read_forest()
            for tree_id in logs.tree_ids():
                logs.read_tree(tree_id)
        assert nodes["id"].is_unique


def test_browse_lists_and_opens_a_session() -> None:
    from tests.tui import drawn, drive, open_first, screen_rows

    shown: dict[str, list[str]] = {}

    async def scenario(app, pilot) -> None:
        shown["list"] = screen_rows(app)
        screen = await open_first(app, pilot, "Fix")
        shown["tree"] = drawn(screen)

    drive(PROJECT / "s1.jsonl", scenario)
    assert [row.split("…")[1].split()[0] for row in shown["list"] if "…" in row][
        :1
    ] == ["4"]  # "Fix the failing parser …", cut to its column, 4 nodes
    assert [line for line in shown["tree"] if "↳" not in line] == [
        "Fix the failing parser test ∴",
        "├── Now add a test",
        "├── Now add two tests",
        "└── ⤷ subagent ag1: 1 node",
    ]


@pytest.mark.parametrize("path", [PROJECTS, CODEX, GEMINI])
def test_every_tree_read_by_its_id_is_its_part_of_the_whole_read(path: Path) -> None:
    """Each agent's trees read one by one give the whole read's nodes (a
    Codex session, whose files are keyed by path and its tree by the id it
    holds, read as empty by its id)."""
    with open_logs(path) as logs:
        nodes, _ = logs.read_forest()
        whole = nodes.astype(object).to_dict("records")
        trees = logs.tree_ids()
        alone = {tree: logs.read_tree(tree).records for tree in trees}
    assert sorted(trees) == sorted({row["tree_id"] for row in whole})
    for tree in trees:
        expected = {row["id"]: row for row in whole if row["tree_id"] == tree}
        assert sorted(record["id"] for record in alone[tree]) == sorted(expected)
        for record in alone[tree]:
            for name in ("parent_id", "prompt", "response", "tool_calls", "active"):
                assert record[name] == expected[record["id"]][name], (tree, name)
