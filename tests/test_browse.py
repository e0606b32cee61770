"""`convgraph browse`, driven by Textual's headless pilot in an 80x24 screen.

Each test opens a known database, presses the keys a user would, and asserts
the exact conversation rows, tree lines, node under the cursor and text in
the details pane that the widgets hold. Branching runs llm 0.36 with the
offline echo model on a copy of a database llm wrote; notes and preferred
marks are read back from the file with `read_notes`; every other test checks
that the file it read is byte for byte the same afterwards.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

import convgraph
from convgraph.analysis.stats import conversation_table
from convgraph.browse import count_conversations, list_conversations
from convgraph.browse.listing import SHAPES_COMMAND
from convgraph.browse.tree_screen import ConversationScreen
from convgraph.errors import UnknownNode
from convgraph.present.local_time import person_time
from convgraph.sources import open_logs
from tests.databases import add_response, legacy_database
from tests.helpers import SAFETY_SECONDS, file_digest, read_forest, run
from tests.plugins.llm_slow_model import SlowModel, registered
from tests.tui import (
    EXAMPLES,
    drawn,
    drive,
    open_first,
    rested,
    screen_rows,
    settle,
)

# -- the list ------------------------------------------------------------


def test_list_shows_every_conversation_with_its_figures():
    db = EXAMPLES / "logs.db"

    async def scenario(app, pilot):
        rows = [
            (r.name, r.nodes, r.leaves, r.max_depth, r.models)
            for r in app.conversations.shown
        ]
        assert rows == [
            # Legacy history that llm 0.36 went on with and forked (newest
            # first), under llm's own name for the conversation.
            ("Starting a sourdough starter", 7, 2, 4, ["gpt-4o-mini", "llama3.2"]),
            ("Good morning, translated", 6, 2, 2, ["gpt-4o-mini", "llama3.2"]),
            (
                "How hash maps work",
                7,
                4,
                2,
                ["claude-3.5-sonnet", "gpt-4o-mini", "llama3.2"],
            ),
            ("Autumn haiku", 3, 2, 1, ["claude-3.5-sonnet", "gpt-4o-mini"]),
        ]
        table = app.query_one("#conversations")
        assert str(app.query_one("#heading").render()) == (
            "name                      nodes leaves depth retry last             models"
        )
        # The share of its tokens that abandoned branches spent, as stats
        # counts it (`abandoned_share`: 52%).
        assert table.lines[2] == (
            "How hash maps work            7      4     2   52%"
            " 2025-09-27 09:14 claude-3.5-…"
        )
        await pilot.press("down", "down", "enter")  # the table has the keys
        await settle(app, pilot)
        assert app.screen.tree.node == "01jb2hm00root000000000000"
        await pilot.press("escape")
        await pilot.press("slash", *"haiku")
        assert [r.name for r in app.conversations.shown] == ["Autumn haiku"]
        await pilot.press(*"xyz")
        assert app.conversations.shown == []
        await pilot.press("escape", "q")  # out of the box, then quit
        await pilot.pause()
        assert app.return_code == 0

    drive(db, scenario)


def test_a_wide_character_name_keeps_the_columns_in_line(tmp_path):
    """A name in Japanese takes two terminal cells a character: the list
    pads it by cells, so the figures after it start at the same cell on
    every line, as the screen draws them (80 columns)."""
    from rich.cells import cell_len

    db = tmp_path / "wide.db"
    conn = legacy_database(db)
    for number, name in enumerate(
        ["木の会話", "trees", "日本語の長い会話の名前はここで切れます"]
    ):
        add_response(
            conn,
            f"r{number}",
            f"c{number}",
            "hi",
            name=name,
            datetime_utc=f"2025-01-0{number + 1}T10:00:00",
        )
    conn.commit()
    conn.close()

    async def scenario(app, pilot):
        table = app.query_one("#conversations")
        assert table.lines == [
            "日本語の長い会話の名前…       1      1     0       2025-01-03 10:00 echo",
            "trees                         1      1     0       2025-01-02 10:00 echo",
            "木の会話                      1      1     0       2025-01-01 10:00 echo",
        ]
        # Where each line's node count stands, in cells: the same everywhere,
        # on the screen too (the heading's "nodes" column ends there).
        drawn = [
            "".join(segment.text for segment in table.render_line(row))
            for row in range(3)
        ]
        assert {cell_len(line[: line.index(" 1 ") + 1]) for line in drawn} == {30}
        # The longest line: 67 cells to the time's end, " echo" after it.
        assert table.virtual_size.width == 72

    drive(db, scenario)


def test_a_wide_character_prompt_widens_the_tree_to_its_cells(tmp_path):
    """The tree scrolls as far as its widest line reaches in terminal cells,
    not in characters."""
    from rich.cells import cell_len

    db = tmp_path / "wide.db"
    conn = legacy_database(db)
    add_response(conn, "r0", "c0", "木の会話について教えて", name="trees")
    conn.commit()
    conn.close()

    async def scenario(app, pilot):
        screen = await open_first(app, pilot, "trees")
        (line,) = drawn(screen)
        assert line == "木の会話について教えて"
        assert screen.tree.virtual_size.width == cell_len(line) + 12 == 34

    drive(db, scenario)


def test_list_names_come_from_the_small_tables_and_calls_from_one_scan(seed_db):
    with convgraph.open(seed_db) as logs:
        names = [(r.tree_id, r.nodes, r.counted) for r in list_conversations(logs)]
        scanned = [(r.tree_id, r.nodes, r.counted) for r in count_conversations(logs)]
    # Newest conversation first, the figures not read yet.
    assert names == [
        ("multiple-roots", 0, False),
        ("complex", 0, False),
        ("branch", 0, False),
        ("linear", 0, False),
    ]
    # The calls logged: not the nodes until the forest's rules count them
    # (a tool chain's calls are one node), so not `counted`.
    assert scanned == [
        ("multiple-roots", 6, False),
        ("complex", 7, False),
        ("branch", 3, False),
        ("linear", 4, False),
    ]


def test_list_of_a_message_store_counts_forks_in_their_tree(llm_fork_db):
    with convgraph.open(llm_fork_db["path"]) as logs:
        rows = count_conversations(logs)
    assert [(row.tree_id, row.nodes, row.models) for row in rows] == [
        (llm_fork_db["thread"], 5, ["echo"])
    ]


def test_the_list_counts_a_tool_chain_as_stats_does(tmp_path):
    """llm runs a tool chain as several calls, which convgraph reads as one
    node: the list's node count is the one `convgraph stats` gives, not the
    calls logged, and it is shown as not known (…) until it is read."""
    from tests.databases import LlmLog
    from tests.test_tool_chains import SHOUT_TREE, legacy_chain

    (tmp_path / "llm").mkdir()
    with LlmLog(tmp_path / "llm") as log:
        first, last = log.tool_chain("shout tree", SHOUT_TREE)
        other = log.prompt("hello")
        chain, alone = log.thread_of(first), log.thread_of(other)
    # A legacy chain of three calls between two questions: five responses.
    legacy = legacy_chain(tmp_path / "legacy.db", with_parent=True)
    for db, calls, nodes in (
        (log.path, {chain: 2, alone: 1}, {chain: 1, alone: 1}),
        (legacy, {"c": 5}, {"c": 3}),
    ):
        stats = json.loads(run("stats", "--db", db, "--json").stdout)
        assert {row["tree_id"]: row["nodes"] for row in stats} == nodes
        with convgraph.open(db) as logs:
            scanned = count_conversations(logs)
        assert {row.tree_id: row.nodes for row in scanned} == calls
        assert not any(row.counted for row in scanned)

        async def scenario(app, pilot, nodes=nodes):
            rows = app.conversations.shown
            assert {row.tree_id: row.nodes for row in rows} == nodes
            assert all(row.counted for row in rows)
            table = app.query_one("#conversations")
            # The nodes column, right-aligned in its six cells.
            assert [line[25:31] for line in table.lines] == [
                f"{nodes[row.tree_id]:>6}" for row in rows
            ]

        drive(db, scenario)


# -- moving in a tree -------------------------------------------------------


def test_open_move_and_switch_siblings(seed_db):
    async def scenario(app, pilot):
        screen = await open_first(app, pilot, "complex")
        assert drawn(screen) == [
            "prompt complex-root",
            "├── prompt complex-b",
            "│   ├── prompt complex-c",
            "│   └── prompt complex-d",
            "└── prompt complex-e",
            "    ├── prompt complex-f",
            "    └── prompt complex-g",
        ]
        assert screen.tree.node == "complex-root"
        await pilot.press("j", "l")  # down to b, then its first child
        assert screen.tree.node == "complex-c"
        await pilot.press("right_square_bracket")
        assert screen.tree.node == "complex-d"
        await pilot.press("right_square_bracket")  # wraps round
        assert screen.tree.node == "complex-c"
        await pilot.press("left_square_bracket")
        assert screen.tree.node == "complex-d"
        await pilot.press("h", "down", "down", "down")
        assert screen.tree.node == "complex-e"
        await pilot.press("k", "left")  # up to d, then d's parent
        assert screen.tree.node == "complex-b"
        await pilot.press("h")
        assert screen.tree.node == "complex-root"
        await pilot.press("down")
        await rested(pilot)
        assert screen.details.title == "complex-b"
        assert screen.details.source == (
            "**model** echo  \n"
            f"**time** {person_time('2025-09-27T10:00:08+00:00')}  \n"
            "input tokens 11, output tokens 21, duration ms 200\n\n"
            "### Prompt\n\n> prompt complex-b\n\n"
            "### Response\n\nanswer to prompt complex-b"
        )
        # i shows the ids, as `convgraph tree` draws them.
        await pilot.press("i")
        assert drawn(screen)[:2] == [
            "complex-root  prompt complex-root",
            "├── complex-b  prompt complex-b",
        ]
        await pilot.press("i")
        # Folding b hides its subtree's lines and says how many.
        await pilot.press("space")
        assert drawn(screen)[1:3] == [
            "├── prompt complex-b",
            "└── prompt complex-e",
        ]
        await pilot.press("space")
        assert len(drawn(screen)) == 7
        # Escape goes back to the list.
        await pilot.press("escape")
        assert not isinstance(app.screen, ConversationScreen)

    drive(seed_db, scenario)


def test_several_roots_are_alternatives_and_brackets_move_between_them(seed_db):
    async def scenario(app, pilot):
        screen = await open_first(app, pilot, "multiple")
        assert drawn(screen) == [
            "start: 2 alternatives",
            "├── prompt multiple-roots-root1",
            "│   prompt multiple-roots-a",
            "│   prompt multiple-roots-b",
            "└── prompt multiple-roots-root2",
            "    prompt multiple-roots-x",
            "    prompt multiple-roots-y",
        ]
        assert screen.tree.node == "multiple-roots-root1"
        await pilot.press("j", "j", "j")
        assert screen.tree.node == "multiple-roots-root2"
        # The start's line holds no node: the cursor stays on the first root.
        await pilot.press("home", "k")
        assert screen.tree.node == "multiple-roots-root1"
        await pilot.press("right_square_bracket")
        assert screen.tree.node == "multiple-roots-root2"
        await pilot.press("right_square_bracket")  # wraps round
        assert screen.tree.node == "multiple-roots-root1"
        await pilot.press("left_square_bracket")
        assert screen.tree.node == "multiple-roots-root2"
        # c on a root compares the roots; d across them has the start as
        # its fork point.
        await pilot.press("c")
        assert screen.details.title == "compare the alternatives at the start"
        assert screen.details.source.split("\n")[-1] == (
            "Similarity columns: ~1 = multiple-roots-root1, ~2 = multiple-roots-root2"
        )
        await pilot.press("m", "end", "d")
        assert screen.details.title == "diff multiple-roots-root2 → multiple-roots-y"
        await pilot.press("home", "j", "j", "d")
        assert screen.details.title == "diff multiple-roots-root2 → multiple-roots-b"
        assert screen.details.source.split("\n\n")[0] == (
            "**fork point** the start (they differ from the first turn)  \n"
            "**a** multiple-roots-root2  \n"
            "**b** multiple-roots-root1 → multiple-roots-a → multiple-roots-b"
        )

    drive(seed_db, scenario)


def test_a_conversation_given_on_start_opens_at_once(seed_db):
    async def scenario(app, pilot):
        assert isinstance(app.screen, ConversationScreen)
        assert app.screen.tree.node == "branch-root"

    drive(seed_db, scenario, conversation_id="branch")


# -- the small things: the cursor kept, escape, the room, the 0-node row -----


def test_reopening_a_conversation_puts_the_cursor_back(seed_db):
    """Each conversation keeps the node the cursor was on when it was left;
    one never opened starts at its first root."""

    async def scenario(app, pilot):
        screen = await open_first(app, pilot, "complex")
        await pilot.press("j", "l", "right_square_bracket")
        assert screen.tree.node == "complex-d"
        await pilot.press("escape", "enter")  # the list's cursor stayed
        await settle(app, pilot)
        assert app.screen.tree.node == "complex-d"
        await pilot.press("escape", "slash", *["backspace"] * 7, *"branch", "enter")
        await settle(app, pilot)
        assert app.screen.tree.node == "branch-root"
        await pilot.press("j")
        assert app.screen.tree.node == "branch-b"
        await pilot.press("escape", "slash", *["backspace"] * 6, *"complex", "enter")
        await settle(app, pilot)
        assert app.screen.tree.node == "complex-d"
        await rested(pilot)
        assert app.screen.details.title == "complex-d"

    drive(seed_db, scenario)


def test_escape_from_the_transcript_returns_to_the_tree(seed_db):
    """Escape closes a view (the transcript, the keys) and shows the node
    again; from the node it goes back to the list."""

    async def scenario(app, pilot):
        screen = await open_first(app, pilot, "complex")
        await pilot.press("j", "t")
        assert screen.details.title == "transcript to complex-b"
        await pilot.press("escape")
        assert app.screen is screen
        assert (screen.tree.node, screen.details.title) == ("complex-b", "complex-b")
        assert screen.tree.has_focus
        await pilot.press("tab", "question_mark")  # a view, from the pane
        assert screen.details.title == "Keys"
        await pilot.press("escape")
        assert app.screen is screen
        assert screen.details.title == "complex-b"
        await pilot.press("escape")
        assert not isinstance(app.screen, ConversationScreen)

    drive(seed_db, scenario)


def _long_prompts(db: Path) -> None:
    """A tree whose prompts are longer than any pane: a root, two children,
    two grandchildren under the first (guides of 8 cells at depth 2)."""
    conn = legacy_database(db)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu"
    shape = [("r", None), ("a", "r"), ("b", "r"), ("a1", "a"), ("a2", "a")]
    for number, (node, parent) in enumerate(shape):
        add_response(
            conn,
            node,
            "long",
            f"{node}: " + " ".join([words] * 4),
            parent=parent,
            name="long prompts",
            datetime_utc=f"2025-01-01T10:00:0{number}",
        )
    conn.commit()
    conn.close()


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
def test_prompts_take_the_tree_panes_room_and_no_scrollbar_shows(tmp_path, size):
    """The tree pane takes three fifths of the screen (the details keep 37
    cells at least); a prompt runs to the pane's edge, where an ellipsis
    cuts it, with or without the ids; the pane's last row stays blank (no
    horizontal scrollbar's thumb)."""
    from rich.cells import cell_len

    db = tmp_path / "long.db"
    _long_prompts(db)
    width, height = size
    pane = {80: 43, 200: 120}[width]

    async def scenario(app, pilot):
        screen = await open_first(app, pilot, "long")
        assert screen.tree.size.width == pane
        for ids in (False, True):
            rows = screen_rows(app)
            tree_rows = [row[:pane] for row in rows[1 : 1 + 5]]
            guides = ["", "├── ", "│   ├── ", "│   └── ", "└── "]
            nodes = ["r", "a", "a1", "a2", "b"]
            for row, guide, node in zip(tree_rows, guides, nodes, strict=True):
                label = f"{node}  {node}: alpha" if ids else f"{node}: alpha"
                assert row.startswith(guide + label)
                assert row.endswith("…") and cell_len(row) == pane
            # Every prompt gets the room its guides leave: at 80 columns, 34
            # cells and the ellipsis at depth 2 (a 40-cell pane left 32).
            shown = tree_rows[2][len("│   ├── ") : -1]
            if ids:
                shown = shown[len("a1  ") :]
            assert cell_len(shown) == pane - 8 - 1 - (4 if ids else 0)
            last = rows[height - 2][:pane]  # above the status line
            assert last == " " * pane
            await pilot.press("i")

    drive(db, scenario, size=size)


def test_ids_show_as_short_as_is_unique_in_the_tree():
    """With `i` an llm id shows its first 12 characters (more where two of
    the tree share them), so a prompt at depth 2 keeps 20 of an 80-column
    screen's cells; the pane's header holds the whole id."""
    db = EXAMPLES / "logs.db"

    async def scenario(app, pilot):
        screen = await open_first(app, pilot, "hash")
        await pilot.press("i", "j", "l")
        rows = [row[:43] for row in screen_rows(app)[1:8]]
        assert rows == [
            "01jb2hm00roo  Explain how a hash map works.",
            "├── 01jb2hm01b00  Show me a minimal implem…",
            "│   ├── 01jb2hm02c00  Add resizing when th…",
            "│   └── 01jb2hm03d00  Use open addressing …",
            "└── 01jb2hm04e00  Compare it with a binary…",
            "    ├── 01jb2hm05f00  Which is faster for …",
            "    └── 01jb2hm06g00  Which uses less memo…",
        ]
        assert drawn(screen)[2] == (
            "│   ├── 01jb2hm02c00  Add resizing when the load factor passes 0.75."
        )
        await rested(pilot)
        assert screen.details.title == "01jb2hm02c000000000000000"

    drive(db, scenario)


def test_an_export_lists_its_empty_conversations_with_0_nodes(tmp_path):
    """A conversation where nothing was said is a row of 0 nodes; opening it
    says so in the status line."""
    from tests.chat_exports import (
        chatgpt_branches,
        gpt_conversation,
        gpt_preamble,
        write_json,
    )

    empty = gpt_conversation(
        "conv-empty", "Nothing said", gpt_preamble("root-e", "sys-e"), "sys-e"
    )
    export = write_json(tmp_path / "conversations.json", [chatgpt_branches(), empty])

    async def scenario(app, pilot):
        rows = [
            (r.tree_id, r.nodes, r.leaves, r.max_depth) for r in app.conversations.shown
        ]
        assert rows == [("conv-monad", 4, 3, 1), ("conv-empty", 0, 0, 0)]
        assert app.query_one("#conversations").lines[1] == (
            "Nothing said                  0      0     0"
        )
        await pilot.press("down", "enter")
        await settle(app, pilot)
        assert not isinstance(app.screen, ConversationScreen)
        assert str(app.query_one("#list-status").render()) == (
            "conv-empty (Nothing said) holds no prompt and no answer: 0 nodes"
        )

    drive(export, scenario)


# -- searching every conversation's content ----------------------------------


def _trip_and_harbour(db: Path) -> None:
    """Two conversations; the word "zeppelin" lies only in the answer of
    the trip's first alternative, the branch left behind (the train, logged
    after it, is the active path)."""
    conn = legacy_database(db)
    for node, cid, prompt, response, parent, name in [
        ("h-root", "harbour", "High water in Brest?", "At 06:12.", None, "Harbour"),
        ("t-root", "trip", "Plan a trip to Lyon", "Gladly.", None, "Trip to Lyon"),
        ("t-air", "trip", "Could we fly?", "Only by zeppelin, sadly.", "t-root", None),
        ("t-train", "trip", "By train then?", "The TGV: two hours.", "t-root", None),
    ]:
        add_response(
            conn,
            node,
            cid,
            prompt,
            parent=parent,
            response=response,
            name=name,
            datetime_utc=f"2025-01-02T10:0{len(node)}:00",
        )
    conn.commit()
    conn.close()


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
def test_slash_in_the_list_finds_a_word_on_an_abandoned_branch(tmp_path, size):
    """`/` and a word no conversation's name holds: enter searches every
    conversation's content, the hit is listed (conversation, node, ○ for an
    abandoned branch, the snippet with the word marked), and enter on it
    opens its tree at that node."""
    db = tmp_path / "trips.db"
    _trip_and_harbour(db)

    async def scenario(app, pilot):
        await pilot.press("slash", *"zeppelin")
        table = app.query_one("#conversations")
        assert app.conversations.shown == []
        assert table.lines == [
            "⌕ enter: search every conversation's content for “zeppelin”"
        ]
        await pilot.press("enter")
        await settle(app, pilot)
        assert table.lines == [
            "⌕ “zeppelin”: 1 node (● on the active path, ○ on an abandoned branch)",
            "Trip to Lyon         t-air        ○ Only by zeppelin, sadly.",
        ]
        assert table.marks == {1: [[44, 52]]}
        assert app.conversations.indexing  # the file's first search
        assert table.lines[1][44:52] == "zeppelin"
        assert table.cursor == 1
        (hit,) = app.conversations.hits
        assert (hit.tree_id, hit.id, hit.active, hit.depth) == (
            "trip",
            "t-air",
            False,
            1,
        )
        await pilot.press("enter")
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, ConversationScreen)
        assert screen.tree_id == "trip"
        assert screen.tree.node == "t-air"
        await rested(pilot)
        assert screen.details.title == "t-air"
        # Back in the list, the hits are still there; a word found nowhere
        # says so.
        await pilot.press("escape")
        assert table.lines[1].startswith("Trip to Lyon")
        await pilot.press("slash", *["backspace"] * 8, *"harbour")
        assert [row.name for row in app.conversations.shown] == ["Harbour"]
        await pilot.press("down", "enter")  # the search row, below the name
        await settle(app, pilot)
        assert table.lines[1:] == ["⌕ “harbour”: no node of any conversation holds it"]
        assert not app.conversations.indexing  # the index was there
        # While a first search runs, its row says it indexes first.
        app.conversations.searching("harbour", indexing=True)
        assert table.lines[1:] == [
            "⌕ indexing the file's content (once), then searching for “harbour”…"
        ]

    drive(db, scenario, size=size)


def test_a_hits_snippet_starts_near_the_word_found_at_80_columns(tmp_path):
    """At 80 columns a snippet whose word found lies past the edge starts
    nearer to it, after "…", and ends in "…" at the edge; the list has no
    horizontal scrollbar (its last row stays blank). The example's index is
    built beside a copy, never beside the example."""
    db = tmp_path / "logs.db"
    shutil.copy(EXAMPLES / "logs.db", db)

    async def scenario(app, pilot):
        await pilot.press("slash", *"bucket", "enter")
        await settle(app, pilot)
        rows = screen_rows(app)
        assert rows[4:7] == [
            "⌕ “bucket”: 2 nodes (● on the active path, ○ on an abandoned"
            " branch)            ",
            "How hash maps work   01jb2hm01b0… ○ …value): bucket ="
            " self.buckets[hash(key) % …",
            "How hash maps work   01jb2hm00ro… ● …resolved by chaining (a list"
            " per bucket) o…",
        ]
        table = app.query_one("#conversations")
        assert [
            table.lines[row][start:end]
            for row in (1, 2)
            for start, end in table.marks[row]
        ] == ["bucket", "bucket"]
        assert rows[22] == " " * 80
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.screen.tree.node == "01jb2hm01b000000000000000"

    drive(db, scenario)


def test_a_search_of_nothing_but_symbols_says_so_in_its_row(tmp_path):
    """A query is text: FTS5's syntax is words to find, and one with no
    letter or digit is said in the search row, not a traceback."""
    db = tmp_path / "trips.db"
    _trip_and_harbour(db)

    async def scenario(app, pilot):
        await pilot.press("slash", *'"*-', "enter")
        await settle(app, pilot)
        table = app.query_one("#conversations")
        assert table.lines == [
            "⌕ “\"*-”: ⚠ nothing to search for in '\"*-': give a word with a"
            " letter or digit"
        ]
        # '-sadly' is a word to find, not FTS5's NOT.
        await pilot.press("slash", *["backspace"] * 3, *'zeppelin" -sadly')
        await pilot.press("enter")
        await settle(app, pilot)
        assert [hit.id for hit in app.conversations.hits] == ["t-air"]

    drive(db, scenario)


# -- search, diff, compare ------------------------------------------------------


@pytest.mark.slow
def test_search_finds_prompts_and_responses_and_n_goes_on(seed_db):
    async def scenario(app, pilot):
        screen = await open_first(app, pilot, "complex")
        await pilot.press("slash", *"ANSWER TO PROMPT COMPLEX-F", "enter")
        assert screen.tree.node == "complex-f"
        await pilot.press("slash", *"prompt complex-", "enter")
        # From the cursor on: f, then g, then round to the root.
        assert screen.tree.node == "complex-f"
        await pilot.press("n")
        assert screen.tree.node == "complex-g"
        await pilot.press("n")
        assert screen.tree.node == "complex-root"
        status = screen.query_one("#status").render()
        assert str(status) == "'prompt complex-': hit 1 of 7 (n: next)"
        await pilot.press("slash", *"no such words", "enter")
        assert screen.tree.node == "complex-root"
        assert str(screen.query_one("#status").render()) == (
            "no node holds 'no such words'"
        )

    drive(seed_db, scenario)


def test_mark_then_diff_shows_the_branch_diff(seed_db):
    async def scenario(app, pilot):
        screen = await open_first(app, pilot, "complex")
        await pilot.press("d")
        assert screen.details.title == (
            "⚠ mark a node first (m), then move and press d"
        )
        await pilot.press("j", "l", "m")  # mark complex-c
        assert drawn(screen)[2] == "│   ├── prompt complex-c"
        assert screen.tree.mark == "complex-c"
        await pilot.press("end", "d")  # the cursor on complex-g
        await rested(pilot)  # the node's view, still due, gave way to the diff
        assert screen.tree.node == "complex-g"
        assert screen.details.title == "diff complex-c → complex-g"
        assert screen.details.source.split("\n\n")[:3] == [
            "**fork point** complex-root  \n"
            "**a** complex-b → complex-c  \n"
            "**b** complex-e → complex-g",
            "### Step 1: complex-b / complex-e",
            "same prompt: no, response similarity 0.83",
        ]
        assert "-prompt complex-b\n+prompt complex-e" in screen.details.source

    drive(seed_db, scenario)


def test_compare_shows_the_cursors_siblings(seed_db):
    async def scenario(app, pilot):
        screen = await open_first(app, pilot, "complex")
        await pilot.press("c")
        assert screen.details.title == "⚠ a root has no siblings to compare"
        await pilot.press("j", "c")
        assert screen.details.title == "compare the answers below complex-root"
        assert screen.details.source.split("\n") == [
            "| id | model | out tokens | length | subtree | ~1 | ~2 |",
            "|---|---|---|---|---|---|---|",
            "| complex-b | echo | 21 | 26 | 3 | 1.00 | 0.83 |",
            "| complex-e | echo | 24 | 26 | 3 | 0.83 | 1.00 |",
            "",
            "Similarity columns: ~1 = complex-b, ~2 = complex-e",
        ]

    drive(seed_db, scenario)


def test_keys_help(seed_db):
    async def scenario(app, pilot):
        screen = await open_first(app, pilot, "linear")
        await pilot.press("question_mark")
        assert screen.details.title == "Keys"
        assert "| `[` `]` | previous or next sibling" in screen.details.source
        assert "| `N` | write the cursor's note (an empty note clears it) |" in (
            screen.details.source
        )

    drive(seed_db, scenario)


def test_transcript_shows_the_path_from_the_root_to_the_cursor(seed_db):
    async def scenario(app, pilot):
        screen = await open_first(app, pilot, "complex")
        await pilot.press("j", "l")  # complex-c, below complex-b
        await pilot.press("t")
        assert screen.details.title == "transcript to complex-c"
        assert screen.details.source == (
            "# prompt complex-root\n\n"
            "Conversation `complex`, down to `complex-c`.\n\n"
            "## 1. User\n\nprompt complex-root\n\n"
            "## 1. Assistant · echo · 2025-09-27T10:00:07.000000+00:00"
            " · `complex-root`\n\n"
            "answer to prompt complex-root\n\n"
            "## 2. User\n\nprompt complex-b\n\n"
            "## 2. Assistant · echo · 2025-09-27T10:00:08.000000+00:00"
            " · `complex-b`\n\n"
            "answer to prompt complex-b\n\n"
            "## 3. User\n\nprompt complex-c\n\n"
            "## 3. Assistant · echo · 2025-09-27T10:00:09.000000+00:00"
            " · `complex-c`\n\n"
            "answer to prompt complex-c\n"
        )

    drive(seed_db, scenario)


def test_the_active_path_is_bold(seed_db):
    async def scenario(app, pilot):
        screen = await open_first(app, pilot, "complex")
        await pilot.press("j")  # the cursor's own highlight is bold too
        bold = []
        for row, (node, _) in enumerate(screen.tree.lines()):
            text = screen.tree.line_text(row)
            if any(span.style == "bold" for span in text.spans):
                bold.append(node)
        # The last node logged is complex-g: the path down to it is active.
        assert bold == ["complex-root", "complex-e", "complex-g"]

    drive(seed_db, scenario)


def notes_of(db: Path) -> dict:
    """The notes as the library reads them back from the file."""
    from convgraph.store.notes import read_notes

    with open_logs(db) as logs:
        return read_notes(logs)


@pytest.mark.slow
def test_note_is_written_shown_and_cleared(seed_db):
    from convgraph.store.notes import NodeNote

    async def scenario(app, pilot):
        screen = await open_first(app, pilot, "complex")
        await pilot.press("j", "l")  # complex-c
        await pilot.press("N", *"keep this one", "enter")
        await settle(app, pilot)
        await rested(pilot)
        assert notes_of(seed_db) == {"complex-c": NodeNote("keep this one", False)}
        assert screen.tree.node == "complex-c"
        assert screen.tree.line_text(2).plain == "│   ├── prompt complex-c ✎"
        assert screen.details.source.startswith(
            "**model** echo  \n"
            f"**time** {person_time('2025-09-27T10:00:09+00:00')}  \n"
            "input tokens 12, output tokens 22, duration ms 300\n\n"
            "**Note:** keep this one\n\n"
        )
        assert str(screen.query_one("#status").render()) == (
            "note on complex-c written to seed.db"
        )
        # The box holds the note; emptying it clears the note.
        await pilot.press("N")
        assert app.screen.query_one("#prompt").value == "keep this one"
        await pilot.press("ctrl+u", "enter")
        await settle(app, pilot)
        await rested(pilot)
        assert notes_of(seed_db) == {}
        assert screen.tree.line_text(2).plain == "│   ├── prompt complex-c"
        assert "Note" not in screen.details.source
        # Escape leaves the note as it was.
        await pilot.press("N", *"never mind", "escape")
        await settle(app, pilot)
        assert notes_of(seed_db) == {}

    drive(seed_db, scenario, writes=True)


def test_a_note_on_a_node_gone_from_the_file_says_so_in_the_pane(seed_db):
    async def scenario(app, pilot):
        screen = await open_first(app, pilot, "linear")
        node = screen.tree.node
        # Another program deletes the node after the tree was read.
        conn = sqlite3.connect(seed_db)
        with conn:
            conn.execute("update responses set parent_response_id = null")
            conn.execute("delete from responses where id = ?", [node])
        conn.close()
        await pilot.press("N", *"hello", "enter")
        await settle(app, pilot)
        assert screen.details.title == f"⚠ {UnknownNode(node)}"
        assert notes_of(seed_db) == {}

    drive(seed_db, scenario, writes=True)


def test_prefer_marks_one_alternative_and_toggles(tmp_path):
    db = tmp_path / "logs.db"
    conn = legacy_database(db)
    add_response(conn, "root", "c1", "Hi", response="Hello", name="Greetings")
    for number in (1, 2):  # two answers to the same follow-up
        add_response(
            conn,
            f"again-{number}",
            "c1",
            "Again",
            parent="root",
            response=f"Hello {number}",
            datetime_utc=f"2025-09-27T10:00:0{number}",
        )
    conn.commit()
    conn.close()

    from convgraph.store.notes import NodeNote

    async def scenario(app, pilot):
        screen = await open_first(app, pilot, "Greetings")
        await pilot.press("j")  # again-1
        await pilot.press("p")
        await settle(app, pilot)
        assert notes_of(db) == {"again-1": NodeNote(None, True)}
        assert [screen.tree.line_text(row).plain for row in range(3)] == [
            "Hi",
            "├── Again ★",
            "└── Again",
        ]
        await rested(pilot)
        assert "★ preferred" in screen.details.source
        # The other answer: marking it unmarks the first.
        await pilot.press("j", "p")
        await settle(app, pilot)
        assert notes_of(db) == {"again-2": NodeNote(None, True)}
        assert str(screen.query_one("#status").render()) == (
            "again-2 preferred; unmarked again-1"
        )
        assert [screen.tree.line_text(row).plain for row in range(3)] == [
            "Hi",
            "├── Again",
            "└── Again ★",
        ]
        # Again: no longer preferred.
        await pilot.press("p")
        await settle(app, pilot)
        assert notes_of(db) == {}
        assert screen.tree.line_text(2).plain == "└── Again"

    drive(db, scenario, writes=True)


# -- writing ---------------------------------------------------------------------


@pytest.fixture
def fork_copy(llm_fork_db, tmp_path):
    """A copy of the database llm wrote, to branch in."""
    target = tmp_path / "logs.db"
    shutil.copy(llm_fork_db["path"], target)
    return {**llm_fork_db, "path": target}


def test_branch_with_echo_adds_the_answer_under_the_cursor(fork_copy):
    first, second, third = fork_copy["turns"]

    async def scenario(app, pilot):
        screen = await open_first(app, pilot, fork_copy["thread"][:8])
        await pilot.press("j")  # the second turn of the thread
        assert screen.tree.node == second
        await pilot.press("b")
        await pilot.press(*"Say it again", "enter")
        await settle(app, pilot)
        await rested(pilot)
        new = screen.tree.node
        assert new not in (first, second, third, *fork_copy["fork_turns"])
        assert screen.graph.nodes[new]["prompt"] == "Say it again"
        assert list(screen.graph.predecessors(new)) == [second]
        assert json.loads(screen.graph.nodes[new]["response"])["prompt"] == (
            "Say it again"
        )
        assert screen.details.title == new
        assert "> Say it again" in screen.details.source
        assert len(drawn(screen)) == 6

    drive(fork_copy["path"], scenario, writes=True)
    conn = sqlite3.connect(fork_copy["path"])
    assert conn.execute("select count(*) from turns").fetchone() == (6,)
    conn.close()


@pytest.mark.slow
def test_branch_streams_the_answer_into_the_pane_then_shows_the_node(fork_copy):
    """The slow test model answers in 20 pieces, 0.1 s apart: the pane shows
    the text received so far while it streams, then the logged node."""
    second = fork_copy["turns"][1]
    streaming = f"branching from {second}…"
    shown: list[str] = []

    async def scenario(app, pilot):
        screen = await open_first(app, pilot, fork_copy["thread"][:8])
        await pilot.press("j", "b", *"Say it again", "enter")
        # Watch the pane as a user would until the answer is logged (the
        # bound only keeps a broken build from hanging the suite).
        for _ in range(int(SAFETY_SECONDS / 0.02)):
            await pilot.pause(0.02)
            if screen.details.title != streaming:
                break
            if screen.details.source not in shown:
                shown.append(screen.details.source)
        await settle(app, pilot)
        await rested(pilot)
        new = screen.tree.node
        assert list(screen.graph.predecessors(new)) == [second]
        answer = screen.graph.nodes[new]["response"]
        assert screen.details.title == new
        assert f"### Response\n\n{answer}" in screen.details.source
        # While streaming: the prompt, the progress line, the answer so far.
        partial = []
        for source in shown:
            prompt, status, *text = source.split("\n\n", 2)
            assert prompt == "> Say it again"
            assert status.startswith("*slow: ")
            if text:
                assert answer.startswith(text[0])
                partial.append(text[0])
        assert any(0 < len(text) < len(answer) for text in partial)

    with registered(SlowModel("slow", delay=2.0, chunks=20)):
        drive(fork_copy["path"], scenario, writes=True, model="slow")


def test_a_model_error_shows_in_the_pane(fork_copy):
    async def scenario(app, pilot):
        screen = await open_first(app, pilot, fork_copy["thread"][:8])
        await pilot.press("b", *"hello", "enter")
        await settle(app, pilot)
        assert screen.details.title == (
            "⚠ unknown model 'no-such-model' (`llm models` lists the models llm knows)"
        )
        assert screen.tree.node == fork_copy["turns"][0]

    drive(fork_copy["path"], scenario, model="no-such-model")


def test_branch_on_a_legacy_file_without_rules_says_why(seed_db):
    async def scenario(app, pilot):
        screen = await open_first(app, pilot, "linear")
        await pilot.press("b", *"hello", "enter")
        await settle(app, pilot)
        assert screen.details.title.startswith("⚠ ")
        assert "convgraph migrate" in screen.details.title

    drive(seed_db, scenario, model="echo")


def test_a_chat_export_takes_notes_beside_it_but_no_branches(tmp_path):
    """convgraph cannot write an app's export: branching says so, while
    notes go to the file `set_note` keeps beside the export."""
    from convgraph.store.notes import NodeNote

    export = tmp_path / "chatgpt-export.zip"
    shutil.copy(EXAMPLES / "chatgpt-export.zip", export)
    before = file_digest(export)

    async def scenario(app, pilot):
        assert [row.name for row in app.conversations.shown][:2] == [
            "Identify this plant",
            "Autumn haiku",
        ]
        screen = await open_first(app, pilot, "haiku")
        message = (
            "⚠ chatgpt-export.zip is a chatgpt export: convgraph reads it,"
            " it cannot write it; convgraph import chatgpt-export.zip copies"
            " it into llm's database, where b and r write"
        )
        for key in ("b", "r"):
            await pilot.press(key)
            assert screen.details.title == message
        node = screen.tree.node
        await pilot.press("N", *"the best one", "enter", "p")
        await settle(app, pilot)
        assert notes_of(export) == {node: NodeNote("the best one", True)}
        # The haiku was asked three times: the node is the first of three
        # alternatives at the start, on the line below the start's.
        row = [n for n, _ in screen.tree.lines()].index(node)
        assert row == 1
        assert screen.tree.line_text(row).plain.endswith(" ★ ✎")

    drive(export, scenario, writes=True)
    assert file_digest(export) == before
    assert (tmp_path / "chatgpt-export.zip.convgraph.db").is_file()


def test_write_keys_on_a_read_only_file_say_why(seed_db):
    seed_db.chmod(0o444)
    try:

        async def scenario(app, pilot):
            screen = await open_first(app, pilot, "linear")
            await pilot.press("b")
            assert screen.details.title == (
                f"⚠ {seed_db} is read-only for you: branching writes to it"
            )

        import os

        if os.access(seed_db, os.W_OK):  # root may write any file
            pytest.skip("this user may write a read-only file")
        drive(seed_db, scenario)
    finally:
        seed_db.chmod(0o644)


# -- scale and errors ----------------------------------------------------------


def test_a_ten_thousand_node_tree_draws_only_the_screen(tmp_path):
    """A 10,000-node tree: one line per node, a branch every tenth node;
    the end key reaches the last node and the screen draws 24 lines."""
    db = tmp_path / "big.db"
    conn = legacy_database(db)
    parent = None
    for index in range(10_000):
        node = f"n{index:05d}"
        # Every tenth node is a retry: a sibling of the node before it.
        above = parent
        add_response(
            conn,
            node,
            "big",
            f"question {index}",
            parent=above,
            datetime_utc=f"2025-01-01T00:00:00.{index:06d}",
        )
        if index % 10 != 9:
            parent = node
    conn.commit()
    conn.close()

    async def scenario(app, pilot):
        screen = await open_first(app, pilot, "big")
        lines = screen.tree.lines()
        assert len(lines) == 10_000
        await pilot.press("end")
        assert screen.tree.node == lines[-1][0]
        await pilot.press("home")
        assert screen.tree.node == "n00000"
        await pilot.press("pagedown")
        assert screen.tree.node == lines[screen.tree.size.height - 1][0]

    drive(db, scenario)


def test_command_line_errors_are_one_line(tmp_path, seed_db):
    result = run("browse", "--db", tmp_path / "missing.db", expect=2)
    assert result.stderr == f"Error: no database file at {tmp_path / 'missing.db'}\n"
    result = run("browse", "nope", "--db", seed_db, expect=2)
    assert result.stderr == "Error: no conversation with id 'nope'\n"


def test_shape_figures_read_in_a_process_of_their_own(tmp_path):
    """On a large file the browser reads leaves and depth through
    `listing.main` in a Python process of its own, away from the
    interface."""
    import subprocess
    import sys

    found = subprocess.run(
        [sys.executable, "-c", SHAPES_COMMAND, EXAMPLES / "logs.db"],
        capture_output=True,
        text=True,
        check=True,
    )
    # Nodes, leaves, depth and the share of tokens on abandoned branches,
    # as the statistics table counts them.
    row = conversation_table(read_forest(EXAMPLES / "logs.db", text=False))
    row = row.set_index("tree_id").loc["01jb2hashmap0000000000000"]
    expected = [7, 4, 2, float(row["abandoned_share"])]
    assert json.loads(found.stdout)["01jb2hashmap0000000000000"] == expected
    missing = subprocess.run(
        [sys.executable, "-c", SHAPES_COMMAND, tmp_path / "none.db"],
        capture_output=True,
        text=True,
    )
    assert (missing.returncode, missing.stderr) == (
        2,
        f"no database file at {tmp_path / 'none.db'}\n",
    )


def test_regenerate_with_echo_adds_a_sibling(fork_copy):
    first, second, _ = fork_copy["turns"]

    async def scenario(app, pilot):
        screen = await open_first(app, pilot, fork_copy["thread"][:8])
        await pilot.press("j", "r")
        await settle(app, pilot)
        await rested(pilot)
        new = screen.tree.node
        assert new != second
        assert list(screen.graph.predecessors(new)) == [first]
        assert screen.graph.nodes[new]["prompt"] == "And a forest?"
        assert sorted(screen.graph.successors(first)) == sorted(
            [second, new, *fork_copy["fork_turns"][:1]]
        )
        assert screen.details.title == new

    drive(fork_copy["path"], scenario, writes=True, model="echo")


def test_stored_escapes_and_markup_show_as_text(tmp_path):
    """A prompt that holds a terminal escape and Rich markup is shown as
    symbols and brackets, in the tree and in the pane."""
    db = tmp_path / "hostile.db"
    conn = legacy_database(db)
    add_response(
        conn,
        "x1",
        "hostile",
        "title \x1b]0;pwned\x07 [bold]loud[/bold]",
        response="line one\n\x1b[31mred\x1b[0m",
        datetime_utc="2025-01-01T00:00:00",
    )
    conn.commit()
    conn.close()

    async def scenario(app, pilot):
        screen = await open_first(app, pilot, "hostile")
        assert drawn(screen) == ["title ␛]0;pwned␇ [bold]loud[/bold]"]
        await rested(pilot)
        assert screen.details.source.endswith(
            "> title ␛]0;pwned␇ [bold]loud[/bold]\n\n"
            "### Response\n\nline one\n␛[31mred␛[0m"
        )

    drive(db, scenario)


def test_the_browser_reads_through_the_handle_it_is_given():
    """`BrowseApp(logs)` reads the open `convgraph.open` handle (each thread
    through its own `Logs.reopen`) and leaves it open for its caller."""
    import asyncio

    from convgraph.browse import BrowseApp
    from tests.tui import settle

    db = EXAMPLES / "logs.db"

    async def main(logs: convgraph.Logs) -> list[str | None]:
        app = BrowseApp(logs)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(app, pilot)
            await pilot.press("enter")
            await settle(app, pilot)
            assert app.screen.tree.node == "01jb0sd00root0000000000000"
            return [row.name for row in app.conversations.shown]

    with convgraph.open(db) as logs:
        names = asyncio.run(main(logs))
        assert len(logs.tree_ids()) == 4  # still open
    assert names == [
        "Starting a sourdough starter",
        "Good morning, translated",
        "How hash maps work",
        "Autumn haiku",
    ]
