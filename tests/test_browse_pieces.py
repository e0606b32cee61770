"""The browser's and the plugin's small pure functions, each on an input
whose answer is known by hand (what their docstrings once showed)."""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

from rich.console import Console  # noqa: E402
from rich.style import Style  # noqa: E402
from rich.text import Text  # noqa: E402

from convgraph.browse.conversations import hit_line  # noqa: E402
from convgraph.browse.details import (  # noqa: E402
    markdown_kind,
    run_blocks,
    transcript_view,
)
from convgraph.browse.listing import (  # noqa: E402
    ConversationRow,
    TreeFigures,
    figures_from_json,
)
from convgraph.browse.strips import fitted  # noqa: E402
from convgraph.browse.tree_view import short_ids  # noqa: E402
from convgraph.parts import tool_call, tool_result  # noqa: E402
from convgraph.search import Hit  # noqa: E402


def test_a_line_is_cut_with_an_ellipsis_or_padded() -> None:
    assert fitted(Text("a long line"), Console(), 0, 6, Style()).text == "a lon…"
    assert fitted(Text("short"), Console(), 0, 7, Style()).text == "short  "


def test_a_hit_line_names_its_tree_and_marks_the_words_found() -> None:
    hit = Hit(
        1, 1.0, "t1", "01jb2hm05f000000000000000", 2, False, False, None, None,
        "responses", ["response"], "faster for range queries", [[0, 6]],
    )  # fmt: skip
    assert hit_line(hit, "How hash maps work") == (
        "How hash maps work   01jb2hm05f0… ○ faster for range queries",
        [[36, 42]],
    )
    letters = "a b c d e f g h i j k l m n o p q r s t u v w x y z"
    hit = Hit(
        1, 1.0, "t1", "n", 0, True, False, None, None, "responses",
        ["response"], letters, [[48, 49]],
    )  # fmt: skip
    # The word found lies past the width: the snippet starts nearer to it.
    assert hit_line(hit, "letters", width=48) == (
        "letters              n            ● …x y z",
        [[39, 40]],
    )


def test_short_ids_are_the_shortest_unique_prefixes() -> None:
    short = short_ids(["01jb2hm00root0", "01jb2hm00rook1", "r1"], fewest=8)
    assert short == {
        "01jb2hm00root0": "01jb2hm00root",
        "01jb2hm00rook1": "01jb2hm00rook",
        "r1": "r1",
    }


def test_markdown_kind() -> None:
    code = "class HashMap:\n    def __init__(self):\n        pass"
    assert markdown_kind(code) == "plain"
    assert markdown_kind("Use `dict`:\n\n```python\nd = {}\n```") == "markdown"
    assert markdown_kind("answer to prompt complex-b") == "markdown"


def test_a_transcripts_reasoning_is_named_and_quoted() -> None:
    folded = "<details>\n<summary>Reasoning</summary>\n\nA *hunch*.\n\n</details>"
    assert transcript_view(folded) == "∴ *reasoning*\n\n> A *hunch*."


def test_a_run_shows_each_call_and_its_result_fenced() -> None:
    blocks = run_blocks(
        [tool_call("shout", {"word": "tree"}, "c1"), tool_result("shout", "TREE", "c1")]
    )
    assert [text for _, text in blocks] == [
        '↳ **shout** called with\n```json\n{\n  "word": "tree"\n}\n```',
        "← **shout** gave back\n```\nTREE\n```",
    ]


def test_figures_fill_a_row_and_come_back_from_json() -> None:
    row = ConversationRow("c1", None, 5, None, counted=False)
    assert TreeFigures(3, 1, 2, 0.5).on(row) == ConversationRow(
        "c1", None, 3, None, [], 1, 2, 0.5, True
    )
    assert figures_from_json('{"c1": [3, 1, 2, null]}') == {
        "c1": TreeFigures(nodes=3, leaves=1, max_depth=2, abandoned_share=None)
    }
