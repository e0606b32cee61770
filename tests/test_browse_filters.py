"""`convgraph browse --since/--until/--model/--source`: the list shows the
trees the filter keeps (a tree is in when any of its nodes is), and `/`
searches only those; the model `b` and `r` ask is `-m/--branch-model`.
Driven by Textual's headless pilot on copies of known files, with the exact
rows the list holds."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from convgraph.cli.filters import make_filter
from convgraph.model.filters import TreeFilter
from tests.chat_exports import chatgpt_export, write_json
from tests.helpers import run
from tests.tui import EXAMPLES, drive, settle

pytest.importorskip("textual")


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    """The examples' logs.db, copied: a search writes its index beside it."""
    return Path(shutil.copy(EXAMPLES / "logs.db", tmp_path / "logs.db"))


def status(app) -> str:
    return str(app.query_one("#list-status").render())


def test_a_model_glob_lists_the_trees_with_a_node_it_answered(logs: Path):
    async def scenario(app, pilot):
        rows = [
            (r.tree_id, r.name, r.nodes, r.leaves, r.max_depth, r.models)
            for r in app.conversations.shown
        ]
        # Whole trees: their other models' nodes too.
        assert rows == [
            (
                "01jb2hashmap0000000000000",
                "How hash maps work",
                7,
                4,
                2,
                ["claude-3.5-sonnet", "gpt-4o-mini", "llama3.2"],
            ),
            (
                "01jb1haiku000000000000000",
                "Autumn haiku",
                3,
                2,
                1,
                ["claude-3.5-sonnet", "gpt-4o-mini"],
            ),
        ]
        assert status(app) == (
            "2 conversations in the filter · / filter or search · enter open · q quit"
        )

    drive(logs, scenario, where=TreeFilter(models=("claude*",)))


def test_a_time_bound_keeps_the_tree_logged_into_since_and_search_stays_in_it(
    logs: Path,
):
    async def scenario(app, pilot):
        assert [r.name for r in app.conversations.shown] == [
            "Starting a sourdough starter"
        ]
        table = app.query_one("#conversations")
        # "haiku" lies only in a tree the filter leaves out.
        await pilot.press("slash", *"haiku", "enter")
        await settle(app, pilot)
        assert table.lines == ["⌕ “haiku”: no node of any conversation holds it"]
        await pilot.press("slash", *["backspace"] * 5, *"flour", "enter")
        await settle(app, pilot)
        assert [(hit.tree_id, hit.id) for hit in app.conversations.hits] == [
            ("01jb0sourdough0000000000000", "01jb0sd00root0000000000000"),
            ("01jb0sourdough0000000000000", "01jb0sd02b000000000000000"),
        ]

    drive(logs, scenario, where=make_filter("2025-11-01", None))


def test_a_source_the_file_does_not_hold_lists_nothing(logs: Path):
    async def scenario(app, pilot):
        assert app.conversations.shown == []
        assert status(app).startswith("0 conversations in the filter")

    drive(logs, scenario, where=TreeFilter(sources=("chatgpt",)))


def test_a_chat_export_filtered_by_model(tmp_path: Path):
    export = write_json(tmp_path / "export.json", chatgpt_export())

    async def scenario(app, pilot):
        assert [(r.tree_id, r.models) for r in app.conversations.shown] == [
            ("conv-chain", ["gpt-4"])
        ]

    drive(export, scenario, where=TreeFilter(models=("gpt-4",)))


def test_the_options_and_their_errors(logs: Path):
    result = run("browse", "--db", logs, "--source", "chatgtp", expect=2)
    assert result.stderr.startswith("Error: --source chatgtp: no such source;")
    result = run("browse", "--db", logs, "--since", "soon", expect=2)
    assert result.stderr.startswith("Error: --since soon: not a date")
    help_text = run("browse", "--help").stdout
    for option in ("-m, --branch-model MODEL", "--since WHEN", "--model GLOB"):
        assert option in help_text
    assert "A tree is in when any of its nodes matches" in help_text
