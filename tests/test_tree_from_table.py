"""The whole forest drawn from the table's rows is the per-tree drawing.

`convgraph tree` of every conversation draws each tree from the forest's
table (`text_tree.forest_drawings` over `Forest.tree_rows`), without a
DiGraph; one conversation, `--json` and the library draw from the DiGraph
(`text_tree.tree_drawing`). Each test reads a source once, then asserts
that both give the same text, tree by tree, in every style the command
has (width, `--indent-chains`, `--active`), in batches of one tree and of
many: on the seed scenarios with notes and a preferred answer, llm's own
fork database, the message store and legacy files with tool chains and
reasoning, the chat exports, an agent's sessions with a subagent, files
with cycles, self-links, orphans and cross-conversation links, and forests
cut by filters. The command's own output, plain and coloured, is checked
against the per-tree drawing too.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import click
import pytest

from convgraph.model.filters import TreeFilter, select_trees
from convgraph.model.forest import Forest
from convgraph.present.text_tree import Style, forest_drawings, tree_drawing
from convgraph.store.notes import set_note, set_preferred
from tests import test_hostile_data
from tests.chat_exports import (
    chatgpt_agent,
    chatgpt_export,
    chatgpt_tools,
    claude_agent,
    claude_export,
    webui_export,
    write_json,
)
from tests.databases import legacy_database, seed_database
from tests.helpers import read_forest, run
from tests.test_integrity import hostile_db

# The hostile fixtures, shared with the module that defines them.
base_files = test_hostile_data.base_files
legacy_base = test_hostile_data.legacy_base
legacy_parts_base = test_hostile_data.legacy_parts_base
store_parts_base = test_hostile_data.store_parts_base
__all__ = ["hostile_db"]

ROOT = Path(__file__).resolve().parent.parent
AGENTS = ROOT / "tests" / "data" / "agents"

#: Every style `convgraph tree` draws in: marks always on, as the command
#: draws them.
STYLES = [
    Style(width, indent_chains, True, active)
    for width in (60, 12, 0)
    for indent_chains in (False, True)
    for active in (False, True)
]


def per_tree(forest: Forest, style: Style) -> list[tuple[str, str]]:
    """Each tree of `forest` drawn from its DiGraph."""
    return [tree_drawing(graph, style) for graph in forest.trees()]


def assert_same_drawings(forest: Forest) -> list[tuple[str, str]]:
    """Both ways give the same text in every style and batch size; the
    default style's drawings, for tests that look further."""
    assert len(forest.tree_ids) > 0
    for style in STYLES:
        expected = per_tree(forest, style)
        assert list(forest_drawings(forest, style)) == expected, style
        if style in (STYLES[0], STYLES[-1]):
            for batch in (1, 3):
                drawn = forest_drawings(forest, style, batch=batch)
                assert list(drawn) == expected
    return per_tree(forest, STYLES[0])


def command_text(drawings: list[tuple[str, str]], color: bool = False) -> str:
    """What `convgraph tree` prints for these drawings: each heading (bold
    where colour is on), the lines beneath it, a blank line between trees."""
    return "\n".join(
        (click.style(heading, bold=True) if color else heading)
        + "\n"
        + (rest + "\n" if rest else "")
        for heading, rest in drawings
    )


@pytest.fixture
def noted_seed(tmp_path: Path) -> Path:
    """The four scenarios, with a note and a preferred answer."""
    path = seed_database(tmp_path / "seed.db")
    set_note("branch-b", "too short\nsecond line", path)
    set_preferred("complex-c", db=path)
    return path


@pytest.fixture
def hostile_links(hostile_db: Path) -> Path:
    """Each kind of broken link (tests/test_integrity.py's file), one node of
    the cycle without a prompt."""
    conn = sqlite3.connect(hostile_db)
    conn.execute("update responses set prompt = '' where id = 'c-y'")
    conn.commit()
    conn.close()
    return hostile_db


def test_the_seed_scenarios_with_marks(noted_seed: Path) -> None:
    forest = read_forest(noted_seed)
    drawings = assert_same_drawings(forest)
    assert [heading for heading, _ in drawings] == [
        "linear  prompt linear-root",
        "branch  prompt branch-root",
        "complex  prompt complex-root",
        "multiple-roots  prompt multiple-roots-root1",
    ]
    assert any("★" in rest for _, rest in drawings)
    assert any("✎ too short second line" in rest for _, rest in drawings)
    # Several roots hang from the conversation's line.
    assert drawings[3][1].splitlines()[0].startswith("├── multiple-roots-")
    for color in (False, True):
        shown = run("tree", "--db", noted_seed, color=color).stdout
        assert shown == command_text(drawings, color)


def test_the_command_in_every_style(noted_seed: Path) -> None:
    forest = read_forest(noted_seed)
    for style in STYLES:
        words = ["--width", style.width]
        words += ["--indent-chains"] * style.indent_chains + ["--active"] * style.active
        shown = run("tree", "--db", noted_seed, *words).stdout
        assert shown == command_text(per_tree(forest, style)), style


def test_llms_own_fork_database(llm_fork_db: dict) -> None:
    forest = read_forest(llm_fork_db["path"])
    assert_same_drawings(forest)
    assert run("tree", "--db", llm_fork_db["path"]).stdout == command_text(
        per_tree(forest, STYLES[0])
    )


def test_tool_chains_reasoning_and_hostile_base_files(base_files: dict) -> None:
    drawn = ""
    for base in base_files.values():
        drawings = assert_same_drawings(read_forest(base["path"]))
        drawn += "".join(rest for _, rest in drawings)
    # The files' tool chains and reasoning are drawn.
    assert "↳ " in drawn and " ∴" in drawn


def test_chat_exports(tmp_path: Path) -> None:
    exports = {
        "chatgpt.json": chatgpt_export(),
        "tools.json": [chatgpt_tools()],
        "agent.json": [chatgpt_agent()],
        "claude.json": claude_export(),
        "claude-agent.json": [claude_agent()],
        "webui.json": webui_export(),
    }
    for name, conversations in exports.items():
        path = write_json(tmp_path / name, conversations)
        assert_same_drawings(read_forest(path))
    assert_same_drawings(read_forest(ROOT / "examples" / "chatgpt-export.zip"))


def test_an_agents_sessions_with_a_subagent() -> None:
    forest = read_forest(AGENTS / "claude-code" / "projects")
    drawings = assert_same_drawings(forest)
    assert "sidechain" in forest.nodes.columns or drawings
    for path in sorted((AGENTS / "codex").rglob("*.jsonl")):
        assert_same_drawings(read_forest(path))


def test_broken_links_cycles_and_orphans(hostile_links: Path) -> None:
    forest = read_forest(hostile_links)
    assert len(forest.problems) == 4
    drawings = {
        heading.split()[0]: rest for heading, rest in assert_same_drawings(forest)
    }
    # The node with an empty prompt is drawn by its answer.
    assert "(tool result given back) answer:" in drawings["cyc"]
    # A dropped link draws its node as a root: two roots, two alternatives.
    assert drawings["self"].splitlines()[0].startswith("├── s-root")
    shown = run("tree", "--db", hostile_links)
    assert shown.stdout == command_text(per_tree(forest, STYLES[0]))
    assert "4 problems" in shown.stderr


def test_forests_cut_by_filters(noted_seed: Path, llm_fork_db: dict) -> None:
    for path in (noted_seed, llm_fork_db["path"]):
        forest = read_forest(path)
        first = forest.nodes["datetime_utc"].dropna().sort_values().iloc[1]
        since = datetime.fromisoformat(str(first)).replace(tzinfo=UTC)
        for where in (
            TreeFilter(since=since),
            TreeFilter(models=("nothing-*",)),
            TreeFilter(models=("*",)),
        ):
            kept = select_trees(forest, where)
            if len(kept.nodes):
                assert_same_drawings(kept)
            else:
                assert list(forest_drawings(kept)) == []


def test_the_batches_hold_whole_trees_in_order(noted_seed: Path) -> None:
    forest = read_forest(noted_seed)
    for batch in (1, 5, 100):
        batches = list(forest.tree_rows(["id"], batch=batch))
        assert [tree for rows in batches for tree in rows.tree_ids] == forest.tree_ids
        for rows in batches:
            assert len(rows.parents) == rows.ends[-1] == len(rows.columns["id"])
            assert all(-1 <= parent < len(rows.parents) for parent in rows.parents)
    [whole] = forest.tree_rows(["id", "note"], batch=100)
    tree = forest.tree("branch")
    at = whole.tree_ids.index("branch")
    start = whole.ends[at - 1] if at else 0
    ids = whole.columns["id"][start : whole.ends[at]]
    assert ids == list(tree)
    assert [
        None if parent < 0 else whole.columns["id"][parent]
        for parent in whole.parents[start : whole.ends[at]]
    ] == [next(iter(tree.predecessors(node)), None) for node in ids]
    notes = dict(zip(whole.columns["id"], whole.columns["note"], strict=True))
    assert notes["branch-b"] == "too short\nsecond line"
    assert notes["branch-c"] is None


def test_the_prompts_alone_are_read_where_the_reader_can(
    noted_seed: Path, hostile_links: Path, base_files: dict
) -> None:
    from convgraph.present.text_tree import DRAWN_TEXTS, answers_missing
    from convgraph.sources.llm import columnar

    whole = read_forest(noted_seed)
    prompts = read_forest(noted_seed, texts=DRAWN_TEXTS)
    assert prompts.nodes["prompt"].tolist() == whole.nodes["prompt"].tolist()
    assert whole.nodes["response"].notna().all()
    if columnar.available():
        # Read by columns: the answers and systems are left out.
        assert prompts.nodes["response"].isna().all()
        assert prompts.nodes["system"].isna().all()
    assert not answers_missing(prompts)
    # Its line shows no answer: drawn the same without them.
    assert list(forest_drawings(prompts)) == per_tree(whole, Style())
    # A node with an empty prompt is drawn by its answer: the command reads
    # the answers then (tested above against the whole read's drawing).
    assert answers_missing(read_forest(hostile_links, texts=DRAWN_TEXTS)) is (
        columnar.available()
    )
    assert not answers_missing(read_forest(hostile_links))
    # The drawn read asks those answers alone of the file: no tree is read
    # again.
    import convgraph

    whole_links = read_forest(hostile_links).nodes
    with convgraph.open(hostile_links) as logs:
        source = logs.source
        reads = []
        read = source.read
        source.read = lambda *a, **k: reads.append(k) or read(*a, **k)
        drawn = logs.drawn_forest().nodes
    assert len(reads) == 1
    answers = dict(zip(whole_links["id"], whole_links["response"], strict=True))
    empty = drawn["prompt"] == ""
    assert drawn["response"][empty].tolist() == [
        answers[node] for node in drawn["id"][empty]
    ]
    assert drawn["response"][empty].notna().all()
    # Read by rows (a file with tool calls): every text is kept.
    parts = base_files["legacy-parts"]["path"]
    assert (
        read_forest(parts, texts=DRAWN_TEXTS).nodes["response"].tolist()
        == read_forest(parts).nodes["response"].tolist()
    )


def test_trees_spread_over_the_log(tmp_path: Path) -> None:
    """Conversations logged turn about, as a random branching file's are:
    each batch's rows are spread over the table (taken from the column
    joined once, not from the slice they span)."""
    from tests.databases import add_response, timestamp

    path = tmp_path / "spread.db"
    conn = legacy_database(path)
    for index in range(200):
        tree = index % 40
        # Each turn answers the turn before it in its conversation, or
        # every third one the turn before that: branches.
        back = 80 if index % 3 == 0 and index >= 80 else 40
        add_response(
            conn,
            f"n{index:03d}",
            f"c{tree:02d}",
            f"prompt {index}\nsecond line" if index % 7 else "",
            parent=f"n{index - back:03d}" if index >= back else None,
            response=None if index % 5 else f"answer {index}",
            datetime_utc=timestamp(index),
            system="be brief" if index % 2 else None,
        )
    conn.commit()
    conn.close()
    forest = read_forest(path)
    drawings = assert_same_drawings(forest)
    assert len(drawings) == 40
    assert any("├── " in rest for _, rest in drawings)
    columns = ["id", "prompt", "response", "system", "input_tokens", "active"]
    whole = {
        name: forest.nodes[name].astype(object).where(forest.nodes[name].notna(), None)
        for name in columns
    }
    for batch in (1, 7, 1000):
        for rows in forest.tree_rows(columns, batch=batch):
            at = forest.nodes.index[forest.nodes["id"].isin(rows.columns["id"])]
            order = dict(zip(forest.nodes["id"][at], at, strict=True))
            positions = [order[node] for node in rows.columns["id"]]
            for name in columns:
                assert rows.columns[name] == whole[name][positions].tolist(), name
    shown = run("tree", "--db", path).stdout
    assert shown == command_text(per_tree(forest, STYLES[0]))
    # An empty prompt is drawn by its answer, read again for it.
    assert "n000  (tool result given back) answer: answer 0" in shown
