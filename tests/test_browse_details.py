"""The details pane of `convgraph browse` shows the whole step: a tool
chain's calls and results, code and its output, reasoning folded, and
answers that are not Markdown (code without a fence) line by line, read from
the pane as the screen draws it (80x24, and 200x50 where the width
matters)."""

from __future__ import annotations

import shutil
import sqlite3

import pytest

from convgraph.browse.details import CONTINUED
from tests.databases import add_response, legacy_database
from tests.tui import (
    EXAMPLES,
    drawn,
    drive,
    open_first,
    pane_lines,
    pane_strips,
    rested,
)

HASH_MAPS = "01jb2hashmap0000000000000"
#: The example's answer that is Python without a fence.
CODE_ANSWER = "01jb2hm01b000000000000000"


@pytest.mark.parametrize("size", [(80, 24), (200, 50)])
def test_code_keeps_its_lines_in_the_details_pane(size):
    """An answer that is code without a fence is not Markdown: the pane
    shows it as it is, each line whole (a line wider than the pane goes on
    below it, marked), `__init__` not turned bold."""
    db = EXAMPLES / "logs.db"
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    (code,) = conn.execute(
        "select response from responses where id = ?", [CODE_ANSWER]
    ).fetchone()
    conn.close()
    assert code.splitlines()[1] == "    def __init__(self, size=8):"

    async def scenario(app, pilot):
        screen = await open_first(app, pilot, "hash maps")
        await pilot.press("j")
        await rested(pilot)
        assert screen.tree.node == CODE_ANSWER
        shown = pane_lines(screen)
        start = shown.index("Response") + 2
        assert shown[start : start + len(code.splitlines())] == code.splitlines()
        assert screen.details.source.endswith("### Response\n\n" + code)
        styles = [
            segment.style
            for strip in pane_strips(screen)
            for segment in strip
            if "__init__" in segment.text
        ]
        assert styles and not any(style and style.bold for style in styles)
        if size == (80, 24):  # the pane is narrower than the longest line
            assert any(
                strip.text.startswith(CONTINUED) for strip in pane_strips(screen)
            )

    drive(db, scenario, size=size)


def test_markdown_answers_stay_markdown_and_their_code_blocks_code(tmp_path):
    db = tmp_path / "markdown.db"
    conn = legacy_database(db)
    answer = (
        "Use a `dict`:\n\n```python\nclass HashMap:\n"
        "    def __init__(self):\n        self.d = {}\n```"
    )
    add_response(conn, "md", "markdown", "How?", response=answer)
    conn.commit()
    conn.close()

    async def scenario(app, pilot):
        screen = await open_first(app, pilot, "markdown")
        await rested(pilot)
        shown = pane_lines(screen)
        # Rich's Markdown: the inline code's backticks go, the fenced
        # block keeps its lines (inside the block's padding).
        assert "Use a dict:" in shown
        code = [line.strip() for line in shown[shown.index("Use a dict:") + 1 :]]
        assert code[2:5] == [
            "class HashMap:",
            "def __init__(self):",
            "self.d = {}",
        ]

    drive(db, scenario)


def shouting_tree():
    """A tool chain, a code cell and reasoning, made by hand with the parts'
    constructors (as readers give them)."""
    from convgraph.model.tree import ConversationTree
    from convgraph.parts import (
        ASSISTANT,
        USER,
        code,
        code_output,
        reasoning,
        text,
        tool_call,
        tool_result,
    )

    run_parts = [
        text(USER, "Shout the word tree"),
        reasoning("The user wants it loud.\nShout it."),
        tool_call("shout", {"word": "tree"}, "call-1"),
        tool_result("shout", "TREE", "call-1"),
        text(ASSISTANT, "TREE!"),
    ]
    cell = [
        text(USER, "Count"),
        text(ASSISTANT, "Let me count."),
        code("print(len('tree'))", "python"),
        code_output("4"),
        text(ASSISTANT, "4"),
    ]
    return ConversationTree.from_edges(
        [("run", "count")],
        {
            "run": {
                "prompt": "Shout the word tree",
                "response": "TREE!",
                "model": "echo",
                "parts": run_parts,
                "tool_calls": 1,
                "tools": "shout",
            },
            "count": {"prompt": "Count", "response": "4", "parts": cell},
        },
        tree_id="linear",
    )


def test_a_tool_chain_shows_its_calls_in_the_tree_and_the_details(seed_db):
    async def scenario(app, pilot):
        screen = await open_first(app, pilot, "linear")
        screen.show_tree(shouting_tree())
        await rested(pilot)
        assert drawn(screen) == [
            "Shout the word tree ∴",
            '  ↳ shout(word="tree") → TREE',
            "Count",
            "  ↳ python: print(len('tree')) → 4",
        ]
        assert screen.details.source == (
            "**model** echo  \n**time** ?  \n1 tool call: shout\n\n"
            "### Prompt\n\n> Shout the word tree\n\n"
            "### Run\n\n"
            "▸ *reasoning, 33 characters (e: show)*\n\n"
            '↳ **shout** called with\n```json\n{\n  "word": "tree"\n}\n```\n\n'
            "← **shout** gave back\n```\nTREE\n```\n\n"
            "### Response\n\nTREE!"
        )
        shown = pane_lines(screen)
        assert '"word": "tree"' in [line.strip() for line in shown]
        await pilot.press("e")  # the reasoning unfolds, as it is
        assert "▾ *reasoning (e: fold)*\n\n" in screen.details.source
        shown = pane_lines(screen)
        at = shown.index("▾ reasoning (e: fold)")
        assert shown[at + 2 : at + 4] == ["The user wants it loud.", "Shout it."]
        # The cursor steps over the call's line to the next node.
        await pilot.press("j")
        await rested(pilot)
        assert screen.tree.node == "count"
        assert "*said:* Let me count.\n\n↳ **code** ran (python)\n```python\n" in (
            screen.details.source
        )
        assert "← **output**\n```\n4\n```" in screen.details.source
        await pilot.press("e", "k")
        assert screen.tree.node == "run"

    drive(seed_db, scenario)


def test_a_tool_chain_llm_logged_shows_its_run(tmp_path):
    """A file llm 0.36 wrote: `shout tree` run by llm-echo 0.5 with thinking
    on, two model calls read as one node; the pane shows the call, its
    result and the reasoning, folded, and the answers (JSON, not Markdown)
    line by line."""
    from tests.databases import LlmLog

    with LlmLog(tmp_path) as log:
        first, last = log.tool_chain(
            "shout tree",
            [{"name": "shout", "arguments": {"word": "tree"}}],
            "-o",
            "thinking",
            "1",
        )
        thread = log.thread_of(first)
    thought = "First I consider the prompt, then I decide what to say."

    async def scenario(app, pilot):
        screen = app.screen
        await rested(pilot)
        assert screen.tree.node == last
        assert drawn(screen) == [
            '{"prompt": "shout tree", "tool_calls": [{"name": "shout", "… ∴',
            '  ↳ shout(word="tree") → TREE!',
        ]
        run_part = screen.details.source.split("### Run\n\n")[1]
        run_part = run_part.split("\n\n### Response")[0]
        assert run_part.split("\n\n") == [
            f"▸ *reasoning, {len(thought)} characters (e: show)*",
            '*said:* { "prompt": "shout tree", "system": "", "attachments": '
            '\\[\\], "stream": true, "previous": \\[\\] }',
            '↳ **shout** called with\n```json\n{\n  "word": "tree"\n}\n```',
            "← **shout** gave back\n```\nTREE!\n```",
            f"▸ *reasoning, {len(thought)} characters (e: show)*",
        ]
        response = screen.graph.nodes[last]["response"]
        shown = pane_lines(screen)
        start = shown.index("Response") + 2
        assert shown[start:] == response.splitlines()

    drive(log.path, scenario, conversation_id=thread)


def test_a_code_interpreter_cell_of_a_chatgpt_export(tmp_path):
    """The example export's CSV question: ChatGPT ran Python on an attached
    file; the pane shows the attachment, the code and what it printed."""
    export = tmp_path / "chatgpt-export.zip"
    shutil.copy(EXAMPLES / "chatgpt-export.zip", export)

    async def scenario(app, pilot):
        screen = app.screen
        await rested(pilot)
        assert drawn(screen)[:2] == [
            "The total of the amount column looks wrong. Can you check? …",
            "  ↳ python: import pandas as pd df = pd.read_csv('… → dtype('O')",
        ]
        run_part = screen.details.source.split("### Run\n\n")[1]
        assert run_part.split("\n\n")[:3] == [
            "*attachment:* expenses.csv (text/csv, 2048 bytes)",
            "↳ **code** ran (python)\n```python\nimport pandas as pd\n"
            "df = pd.read_csv('expenses.csv')\ndf['amount'].dtype\n```",
            "← **output**\n```\ndtype('O')\n```",
        ]
        shown = [line.strip() for line in pane_lines(screen)]
        at = shown.index("import pandas as pd")
        assert shown[at : at + 3] == [
            "import pandas as pd",
            "df = pd.read_csv('expenses.csv')",
            "df['amount'].dtype",
        ]

    drive(export, scenario, conversation_id="68e0c0de-0002-4000-8000-000000000000")


def test_stored_text_in_a_run_stays_text(seed_db):
    """A tool's name, arguments and output hold Markdown, fences and an
    escape: the pane shows them as characters, inside their own blocks."""
    from convgraph.model.tree import ConversationTree
    from convgraph.parts import tool_call, tool_result

    evil = "**bold** [link](javascript:x) \x1b]0;pwned\x07"
    parts = [
        tool_call(evil, {"q": "```\n# heading"}, "c1"),
        tool_result(evil, "````\n# not a heading\n```", "c1"),
    ]
    tree = ConversationTree.from_edges(
        [], {"n": {"prompt": "x", "parts": parts}}, tree_id="linear"
    )

    async def scenario(app, pilot):
        screen = await open_first(app, pilot, "linear")
        screen.show_tree(tree)
        await rested(pilot)
        shown = [line.strip() for line in pane_lines(screen)]
        words = " ".join(shown)  # the pane wraps the line at its width
        assert "↳ **bold** [link](javascript:x) ␛]0;pwned␇ called with" in words
        assert "← **bold** [link](javascript:x) ␛]0;pwned␇ gave back" in words
        # The output's own fences are lines of its block, not the end of it.
        at = shown.index("# not a heading")
        assert shown[at - 1 : at + 2] == ["````", "# not a heading", "```"]
        assert shown[at + 2 : at + 5] == ["", "", "Response"]
        assert "\x1b" not in screen.details.source
        assert drawn(screen) == [
            "x",
            "  ↳ **bold** [link](javascript:x) ␛]… → ```` # not a heading ```",
        ]

    drive(seed_db, scenario)


def test_the_transcript_names_the_reasoning_and_quotes_it(tmp_path):
    """Rich's Markdown drops HTML: the transcript's `<details>` block of
    reasoning shows as a line that names it and the reasoning quoted, the
    tool calls and results in their fences (200x50: the quote on one line)."""
    from tests.chat_exports import claude_agent, write_json

    export = write_json(tmp_path / "conversations.json", [claude_agent()])

    async def scenario(app, pilot):
        screen = app.screen
        await pilot.press("end", "t")
        assert screen.details.title == "transcript to ca-a1"
        source = screen.details.source
        assert "<details>" not in source and "<summary>" not in source
        start = source.index("∴")
        assert source[start:].split("\n")[:5] == [
            "∴ *reasoning*",
            "",
            "> The page may need a search first.",
            "",
            "Let me look.",
        ]
        shown = [line.strip() for line in pane_lines(screen)]
        at = shown.index("∴ reasoning")
        assert shown[at + 1 : at + 5] == [
            "",
            "▌ The page may need a search first.",
            "",
            "Let me look.",
        ]

    drive(export, scenario, conversation_id="claude-agent", size=(200, 50))
