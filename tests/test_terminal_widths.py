"""Every output meant for a person fits the terminal it is printed on
(issue 38.3): each command runs in a real pseudo-terminal 80 columns wide,
and every line it shows takes at most 80 cells, measured as a terminal
measures them (wcwidth: a Japanese character takes two).

The files hold what makes lines long: llm's 26-character ids (a logs.db
written by llm 0.36 itself, with a fork), long prompts in English and in
Japanese, a word longer than a line, a note and a preferred answer; and the
example's legacy file and ChatGPT export, searched and measured by week
too.
"""

from __future__ import annotations

import os
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wcwidth import wcswidth

from convgraph.cli.output import wrapped
from tests.databases import LlmLog
from tests.helpers import ROOT, examples, run, run_on_a_terminal

EXAMPLES = ROOT / "examples"
WIDTH = 80
#: What a terminal acts on rather than shows: styles (CSI) and OSC strings.
_CONTROLS = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")

LONG = (
    "Explain, step by step and with an example for each step, how a hash map"
    " decides where a key goes, what it does when two keys want one bucket,"
    " and when it grows."
)
JAPANESE = (
    "東京タワーの高さと、夜に展望台から見える景色について詳しく教えてください。" * 2
)
UNBROKEN = "https://example.com/" + "a-very-long-path-segment" * 8


@pytest.fixture(scope="module")
def llm_file(tmp_path_factory) -> dict[str, str]:
    """A logs.db llm 0.36 wrote: a conversation of three long prompts, a
    fork at its first answer continued once; the forked answer preferred
    and noted."""
    folder = tmp_path_factory.mktemp("llm")
    with LlmLog(folder) as log:
        first = log.prompt(LONG)
        thread = log.thread_of(first)
        second = log.prompt(JAPANESE, continue_conversation=thread)
        third = log.prompt(UNBROKEN, continue_conversation=thread)
        _, forked = log.fork(first, "And in Python, " + LONG.lower())
    run("note", forked, "tried in Python: " + LONG, "--db", log.path)
    run("prefer", forked, "--db", log.path)
    return {
        "db": str(log.path),
        "thread": thread,
        "first": first,
        "second": second,
        "third": third,
        "forked": forked,
    }


def shown_widths(*words: object) -> tuple[int, list[int], str]:
    """Run `convgraph WORDS` with stdout and stderr on an 80-column
    pseudo-terminal; its exit status, each line's width in cells, the text."""
    # A progress bar is drawn and erased in place (a slow first search on a
    # busy machine): its frames are no line of the answer.
    env = {
        **os.environ,
        "COLUMNS": str(WIDTH),
        "LINES": "40",
        "CONVGRAPH_PROGRESS_DELAY": "3600",
    }
    done = run_on_a_terminal(*words, stream="both", size=(40, WIDTH), env=env)
    text = _CONTROLS.sub("", done.shown.decode("utf-8", "replace"))
    lines = text.replace("\r", "").split("\n")
    return done.status, [wcswidth(line) for line in lines], text


def commands(files: dict[str, str]) -> list[list[str]]:
    """Every human output, as a user types it, on the llm file."""
    db = ["--db", files["db"]]
    first, second, third, forked = (
        files[key] for key in ("first", "second", "third", "forked")
    )
    return [
        ["tree", *db],
        ["tree", files["thread"], *db],
        ["tree", "--active", *db],
        ["conversations", *db],
        ["stats", *db],
        ["transcript", third, *db],
        ["transcript", forked, *db],
        ["diff", third, forked, *db],
        ["compare", first, *db],
        ["compare", files["thread"], *db],
        ["pairs", *db],
        ["path", third, *db],
        ["children", first, *db],
        ["siblings", second, *db],
        ["descendants", first, *db],
        ["roots", files["thread"], *db],
        ["leaves", files["thread"], *db],
        ["check", *db],
        ["migrate", "--dry-run", *db],
        ["conversations", "--model", "gpt*", *db],
    ]


@pytest.mark.parametrize("index", range(20))
def test_every_human_output_fits_80_columns(index, llm_file):
    words = commands(llm_file)[index]
    status, widths, text = shown_widths(*words)
    assert status == 0, text
    assert max(widths) <= WIDTH, (words, text)


EXAMPLE_COMMANDS = [
    ["tree", "--db", EXAMPLES / "logs.db"],
    ["conversations", "--db", EXAMPLES / "logs.db"],
    ["diff", "01jb5sd06f", "01jb4sd04d", "--db", EXAMPLES / "logs.db"],
    ["compare", "01jb0sd02b", "--db", EXAMPLES / "logs.db"],
    ["pairs", "--db", EXAMPLES / "logs.db"],
    ["transcript", "01jb2hm03d", "--db", EXAMPLES / "logs.db"],
    ["tree", "--db", EXAMPLES / "chatgpt-export.zip"],
    ["check", "--db", EXAMPLES / "chatgpt-export.zip"],
    # The first search builds the index (in the run's own cache) and says
    # where it went; its hits' ids are cut to fit.
    ["search", "hash", "--db", EXAMPLES / "logs.db"],
    ["search", "monad", "--db", EXAMPLES / "chatgpt-export.zip"],
    ["stats", "--by", "week", "--db", EXAMPLES / "logs.db"],
]


@pytest.mark.parametrize(
    "words", EXAMPLE_COMMANDS, ids=lambda w: " ".join(map(str, w[:2]))
)
def test_the_examples_fit_80_columns(words):
    status, widths, text = shown_widths(*words)
    assert status == 0, text
    assert max(widths) <= WIDTH, (words, text)


def test_import_dry_run_fits_80_columns(tmp_path):
    status, widths, text = shown_widths(
        "import", EXAMPLES / "chatgpt-export.zip", "--dry-run",
        "--db", tmp_path / "a-folder-with-a-long-name-for-the-new-database" / "x.db",
    )  # fmt: skip
    assert status == 0, text
    assert "Nothing was written (--dry-run)" in text
    assert max(widths) <= WIDTH, text


def test_the_tree_cuts_ids_to_a_prefix_that_names_them(llm_file):
    """On 80 columns an id of 26 characters is cut to the prefix that tells
    the file's ids apart, and that prefix is an id every command takes."""
    _, _, text = shown_widths("tree", llm_file["thread"], "--db", llm_file["db"])
    forked = llm_file["forked"]
    line = next(line for line in text.splitlines() if "★" in line)
    shown = line.split("── ")[-1].split("  ")[0]
    assert forked.startswith(shown) and 8 <= len(shown) < len(forked)
    assert "✎" in line  # the note's mark stays in sight
    path = run("path", shown, "--db", llm_file["db"]).stdout.splitlines()
    assert path[-1] == forked


def test_piped_outputs_keep_their_whole_lines(llm_file):
    """Off a terminal nothing is cut: what a script reads does not depend
    on a window's width (nor on $COLUMNS)."""
    db = llm_file["db"]
    lines = run("tree", llm_file["thread"], "--db", db, env={"COLUMNS": "40"}).stdout
    assert llm_file["forked"] in lines
    diff = run("diff", llm_file["third"], llm_file["forked"], "--db", db).stdout
    assert max(map(wcswidth, diff.splitlines())) > WIDTH


# -- the line breaker --------------------------------------------------------


@settings(max_examples=examples(200))
@given(
    st.lists(st.sampled_from(["a", "b", " ", "界", "-", "xyzxyzxyzxyz "])).map("".join),
    st.integers(min_value=2, max_value=30),
)
def test_a_wrapped_line_fits_and_keeps_every_character(text, width):
    lines = wrapped(text, width)
    assert all(wcswidth(line) <= width for line in lines)
    assert "".join(lines).replace(" ", "") == text.replace(" ", "")


def test_a_changed_line_keeps_its_mark_on_every_line():
    assert wrapped("+" + "word " * 10, 20, hang="+") == [
        "+word word word word",
        "+word word word word",
        "+word word",
    ]


# -- browse: the marks stay in sight ------------------------------------------


def test_browse_keeps_the_marks_of_a_long_line_at_80_columns(tmp_path):
    """A node whose prompt runs past the pane's edge: its ★ and ✎ are drawn
    at the edge, the prompt cut before them with an ellipsis."""
    pytest.importorskip("textual")
    from convgraph.browse.tree_screen import ConversationScreen
    from convgraph.store.notes import set_note, set_preferred
    from tests.tui import drive, open_first, settle

    db = tmp_path / "logs.db"
    db.write_bytes((EXAMPLES / "logs.db").read_bytes())
    node = "01jb4sd04d000000000000000"  # "My kitchen is only 18 °C in winter..."
    set_note(node, "warmer water", db)
    set_preferred(node, True, db)

    async def scenario(app, pilot):
        screen = await open_first(app, pilot, "sourdough")
        await settle(app, pilot)
        assert isinstance(screen, ConversationScreen)
        tree = screen.tree
        row = [shown for shown, _ in tree.lines()].index(node)
        whole = tree.line_text(row).plain
        assert tree.size.width < len(whole)
        strip = tree.render_line(row - tree.scroll_offset.y)
        assert strip.cell_length <= tree.size.width
        assert strip.text.rstrip().endswith("… ★ ✎")

    drive(db, scenario, writes=True, size=(80, 24))
