"""Transcripts: one path as Markdown or chat messages, and whole conversations
as a Markdown document with their branches, on the four scenarios' database, a
logs.db written by llm itself, and a ChatGPT export."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import convgraph.export.markdown
import convgraph.present.transcript
from convgraph.model.loading import load_tree
from convgraph.model.tree import ConversationTree
from convgraph.present.transcript import (
    Transcript,
    active_end,
    path_messages,
    transcript,
)
from tests import chat_exports as build
from tests.databases import LlmLog
from tests.helpers import examples, file_digest, run


def at(index: int) -> str:
    return f"2025-09-27T10:00:{index:02d}.000000+00:00"


def test_doctests() -> None:
    import doctest

    assert doctest.testmod(convgraph.present.transcript).failed == 0
    assert doctest.testmod(convgraph.export.markdown).failed == 0


COMPLEX_G = f"""\
# prompt complex-root

Conversation `complex`, down to `complex-g`.

## 1. User

prompt complex-root

## 1. Assistant · echo · {at(7)} · `complex-root`

answer to prompt complex-root

## 2. User

prompt complex-e

## 2. Assistant · echo · {at(11)} · `complex-e`

answer to prompt complex-e

## 3. User

prompt complex-g

## 3. Assistant · echo · {at(13)} · `complex-g`

answer to prompt complex-g
"""


@pytest.fixture
def in_tokyo(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The process's time zone is Tokyo's for the test (UTC+9, no summer
    time), and what it was again after."""
    import time

    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_transcript_down_to_a_node_of_the_seed(seed_db: Path, in_tokyo) -> None:
    """The document keeps the stored times (ISO 8601, UTC); the command,
    for a person, shows them in the user's time zone to the minute."""
    before = file_digest(seed_db)
    assert transcript("complex-g", seed_db).markdown() == COMPLEX_G
    result = run("transcript", "complex-g", "--db", seed_db)
    local = re.sub(
        r"2025-09-27T10:00:\d\d\.000000\+00:00", "2025-09-27 19:00 JST", COMPLEX_G
    )
    assert local.count("JST") == 3
    assert result.stdout == local
    assert file_digest(seed_db) == before


def test_a_conversation_id_follows_the_active_path(seed_db: Path) -> None:
    # complex-g was logged last: llm -c goes on from there.
    found = transcript("complex", seed_db)
    assert found.path == ["complex-root", "complex-e", "complex-g"]
    assert found.markdown() == COMPLEX_G
    assert transcript("complex-d", seed_db).path == [
        "complex-root",
        "complex-b",
        "complex-d",
    ]


def test_transcript_as_chat_messages(seed_db: Path) -> None:
    result = run("transcript", "branch-b", "--format", "json", "--db", seed_db)
    assert json.loads(result.stdout) == [
        {"role": "user", "content": "prompt branch-root"},
        {"role": "assistant", "content": "answer to prompt branch-root"},
        {"role": "user", "content": "prompt branch-b"},
        {"role": "assistant", "content": "answer to prompt branch-b"},
    ]


def test_unknown_id_is_one_line(seed_db: Path) -> None:
    result = run("transcript", "nope", "--db", seed_db, expect=2)
    assert result.stderr == "Error: no node with id 'nope'\n"
    assert result.stdout == ""


def test_system_prompt_once_and_tool_results_join_the_answer() -> None:
    tree = ConversationTree.from_edges(
        [("r", "t"), ("t", "u")],
        {
            "r": {"prompt": "Weather?", "response": "Calling the tool.", "system": "S"},
            # llm's call that gives a tool's output back has an empty prompt.
            "t": {"prompt": "", "response": "Sunny.", "system": "S"},
            "u": {"prompt": "Thanks", "response": "You're welcome."},
        },
    )
    assert path_messages(tree, ["r", "t", "u"]) == [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "Calling the tool.\n\nSunny."},
        {"role": "user", "content": "Thanks"},
        {"role": "assistant", "content": "You're welcome."},
    ]


# -- llm's own database ---------------------------------------------------------


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """llm 0.36 + echo: a prompt, a follow-up, and the follow-up asked again
    from the same point (a fork at the first answer: a regeneration)."""
    directory = tmp_path_factory.mktemp("llm-regenerated")
    with LlmLog(directory) as log:
        first = log.prompt("What is a tree?")
        thread = log.thread_of(first)
        second = log.prompt("And a forest?", continue_conversation=thread)
        fork, again = log.fork(first, "And a forest?")
    return {
        "path": log.path,
        "thread": thread,
        "first": first,
        "second": second,
        "again": again,
    }


def llm_turns(path: Path) -> dict[str, dict]:
    """Each turn as llm's own `llm logs --json` prints it."""
    with LlmLog(path.parent) as log:
        rows = json.loads(log.cli("logs", "--json", "-n", "0"))
    return {row["id"]: row for row in rows}


def test_transcript_of_a_real_llm_conversation(regenerated: dict) -> None:
    turns = llm_turns(regenerated["path"])
    first, again = regenerated["first"], regenerated["again"]
    found = transcript(regenerated["thread"], regenerated["path"])
    # The regeneration was logged last: it is the active path's end.
    assert found.path == [first, again]
    assert found.messages() == [
        {"role": "user", "content": "What is a tree?"},
        {"role": "assistant", "content": turns[first]["response"]},
        {"role": "user", "content": "And a forest?"},
        {"role": "assistant", "content": turns[again]["response"]},
    ]
    lines = found.markdown().splitlines()
    assert lines[0] == "# What is a tree?"
    assert f"## 2. Assistant · echo · {turns[again]['datetime_utc']} · `{again}`" in (
        lines
    )
    # The echo model answers with JSON, which is no Markdown: it is shown as
    # it is, in a fence (issue 23.3).
    assert lines[-2:] == [turns[again]["response"].splitlines()[-1], "```"]


def test_transcript_of_the_other_branch_by_node(regenerated: dict) -> None:
    second = regenerated["second"]
    result = run("transcript", second, "--format", "json", "--db", regenerated["path"])
    messages = json.loads(result.stdout)
    assert [message["role"] for message in messages] == [
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert messages[2]["content"] == "And a forest?"
    assert messages[3]["content"] == llm_turns(regenerated["path"])[second]["response"]


# -- a ChatGPT export --------------------------------------------------------------


@pytest.fixture
def chatgpt_json(tmp_path: Path) -> Path:
    return build.write_json(tmp_path / "conversations.json", build.chatgpt_export())


def test_chatgpt_current_node_is_the_active_path(chatgpt_json: Path) -> None:
    before = file_digest(chatgpt_json)
    found = transcript("conv-monad", chatgpt_json)
    assert found.path == ["a1b", "a2e"]
    assert found.messages() == [
        {"role": "user", "content": "What is a monad?"},
        {"role": "assistant", "content": "A burrito."},
        {"role": "user", "content": "An example?"},
        {"role": "assistant", "content": "Maybe."},
    ]
    assert found.markdown() == (
        "# Monads\n\nConversation `conv-monad`, down to `a2e`.\n\n"
        "## 1. User\n\nWhat is a monad?\n\n"
        "## 1. Assistant · gpt-4o · 2024-03-01T12:00:20.000000+00:00 · `a1b`\n\n"
        "A burrito.\n\n"
        "## 2. User\n\nAn example?\n\n"
        "## 2. Assistant · gpt-4o · 2024-03-01T12:01:00.000000+00:00 · `a2e`\n\n"
        "Maybe.\n"
    )
    assert file_digest(chatgpt_json) == before


# -- the whole conversation as Markdown ---------------------------------------------


BRANCH_DOCUMENT = f"""\
# prompt branch-root

Conversation `branch`: 3 steps, 2 branches.

## 1. User

prompt branch-root

## 1. Assistant · echo · {at(4)} · `branch-root`

answer to prompt branch-root

## 2. User

prompt branch-c

## 2. Assistant · echo · {at(6)} · `branch-c`

answer to prompt branch-c

> **Alternative to step 2** · echo · `branch-b`
>
> ### 2. User
>
> prompt branch-b
>
> ### 2. Assistant · echo · {at(5)} · `branch-b`
>
> answer to prompt branch-b
"""


def test_markdown_export_of_a_branching_conversation(seed_db: Path) -> None:
    result = run("export", "branch", "--format", "markdown", "--db", seed_db)
    assert result.stdout == BRANCH_DOCUMENT


def test_markdown_export_has_every_node_once_with_nested_branches(
    seed_db: Path,
) -> None:
    text = "\n".join(
        convgraph.export.markdown.generate_markdown(load_tree("complex", seed_db))
    )
    for node in ["root", "b", "c", "d", "e", "f", "g"]:
        assert text.count(f"`complex-{node}`") == (
            # An alternative's label names it as well as its answer.
            2 if node in ("b", "c", "f") else 1
        )
    # The active path is the main text; b's branch is quoted, and c, the
    # alternative to d inside it, one quote deeper.
    assert "\n> > **Alternative to step 3** · echo · `complex-c`\n" in text
    assert "\n**Alternative" not in text
    # Step 2's alternative follows step 2, before the main text goes on.
    assert (
        text.index("`complex-e`")
        < text.index("`complex-b`")
        < text.index("`complex-g`")
    )


def test_markdown_of_a_deep_chain_needs_no_recursion() -> None:
    depth = 5000
    tree = ConversationTree.from_edges(
        [(f"n{i}", f"n{i + 1}") for i in range(depth - 1)],
        {f"n{i}": {"prompt": f"p{i}", "response": f"r{i}"} for i in range(depth)},
        tree_id="deep",
    )
    lines = list(convgraph.export.markdown.generate_markdown(tree))
    assert lines[-1] == f"r{depth - 1}"
    assert active_end(tree) == f"n{depth - 1}"


def test_markdown_export_of_an_llm_database(regenerated: dict) -> None:
    result = run("export", "--format", "markdown", "--db", regenerated["path"])
    assert result.stdout.startswith("# What is a tree?\n")
    assert result.stdout.count("**Alternative to step 2**") == 1
    assert f"`{regenerated['second']}`" in result.stdout


def test_transcript_reads_only_its_tree(regenerated: dict) -> None:
    # Reading never writes: llm's tables are as they were.
    conn = sqlite3.connect(regenerated["path"])
    try:
        tables = {row[0] for row in conn.execute("select name from sqlite_master")}
    finally:
        conn.close()
    transcript(regenerated["first"], regenerated["path"])
    assert "_convgraph_notes" not in tables


# -- the whole run: tool calls, results, code, reasoning (issue 23.3) -------------


AGENT_TRANSCRIPT = """\
# Agent

Conversation `agent`, down to `b`.

## 1. User

```
Shout "tree" <b>\x1b
```

**Fragment** · notes.txt · 12 bytes

## 1. Assistant · echo · `r`

<details>
<summary>Reasoning</summary>

```
First é, then
the tool.
```

</details>

**Tool call** · `shout`

```json
{
  "word": "tree",
  "n": [
    1,
    2.5,
    null,
    true
  ]
}
```

**Tool result** · `shout`

```
TREE
```

Done: **TREE**

## 2. User

**Attachment** · photo.png · image/png · 1,000 bytes

Run it

## 2. Assistant · `b`

**Code** · python

```python
print(1)
```

**Output**

```
1
```

**Tool call** · `search`

```
raw words
```

**Tool result** · `search` · error

```
boom
```

*(reasoning redacted by the provider)*
"""


def test_a_transcript_shows_the_whole_run() -> None:
    from tests.test_export_parts import agent_tree

    # The prompt holds HTML and an escape: fenced, the text exact in the file.
    assert Transcript(agent_tree(), ["r", "b"]).markdown() == AGENT_TRANSCRIPT


def test_the_markdown_export_shows_the_whole_run_of_each_branch() -> None:
    from tests.test_export_parts import agent_tree

    text = "\n".join(convgraph.export.markdown.generate_markdown(agent_tree()))
    main = AGENT_TRANSCRIPT.split("## 1. User", 1)[1]
    assert text.startswith(
        "# Agent\n\nConversation `agent`: 3 steps, 2 branches.\n\n## 1. User"
    )
    assert text.endswith(
        main.rstrip("\n")
        + "\n\n> **Alternative to step 2** · `a`\n>\n> ### 2. User\n>\n> Thanks"
        "\n>\n> ### 2. Assistant · `a`\n>\n> Welcome"
    )


def test_chat_messages_of_the_whole_run() -> None:
    from tests.test_export_parts import agent_tree

    calls = {
        "c1": {
            "name": "shout",
            "arguments": '{"word": "tree", "n": [1, 2.5, null, true]}',
        },
        "call_1": {"name": "python", "arguments": '{"code": "print(1)"}'},
        "call_2": {"name": "search", "arguments": "raw words"},
    }

    def called(call_id: str) -> dict:
        return {"id": call_id, "type": "function", "function": calls[call_id]}

    expected = [
        {"role": "user", "content": 'Shout "tree" <b>\x1b'},
        {"role": "assistant", "content": "", "tool_calls": [called("c1")]},
        {"role": "tool", "tool_call_id": "c1", "content": "TREE\r\n"},
        {"role": "assistant", "content": "Done: **TREE**"},
        # Attachments are left out: a message holds text.
        {"role": "user", "content": "Run it"},
        # Code is a call of its language's tool; a call without an id gets one.
        {"role": "assistant", "content": "", "tool_calls": [called("call_1")]},
        {"role": "tool", "tool_call_id": "call_1", "content": "1\n"},
        {"role": "assistant", "content": "", "tool_calls": [called("call_2")]},
        {"role": "tool", "tool_call_id": "call_2", "content": "boom"},
    ]
    assert path_messages(agent_tree(), ["r", "b"]) == expected
    # Reasoning only where asked for; a redacted one has nothing to say.
    with_reasoning = path_messages(agent_tree(), ["r", "b"], reasoning=True)
    assert with_reasoning[1] == {
        **expected[1],
        "reasoning_content": "First é, then\nthe tool.",
    }
    assert with_reasoning[2:] == expected[2:]


def test_a_result_answers_its_call_by_id_else_by_name_else_in_order() -> None:
    from convgraph import parts

    tree = ConversationTree.from_edges(
        [],
        {
            "r": {
                "parts": [
                    parts.text(parts.USER, "Go"),
                    parts.tool_call("a", {}, "x"),
                    parts.tool_call("b", {}, None),
                    parts.tool_call("c", {}, None),
                    parts.tool_result("b", "B", None),
                    parts.tool_result(None, "C", None),
                    parts.tool_result("a", "A", "x"),
                    parts.text(parts.ASSISTANT, "Done"),
                ]
            }
        },
    )
    messages = path_messages(tree, ["r"])
    assert [call["id"] for call in messages[1]["tool_calls"]] == [
        "x",
        "call_1",
        "call_2",
    ]
    assert [(m["tool_call_id"], m["content"]) for m in messages[2:5]] == [
        ("call_1", "B"),
        ("call_2", "C"),
        ("x", "A"),
    ]
    assert messages[5] == {"role": "assistant", "content": "Done"}


def test_a_long_output_is_cut_with_its_size_said() -> None:
    from convgraph import parts
    from convgraph.present.transcript import OUTPUT_LIMIT, part_lines

    lines = part_lines(parts.tool_result("cat", "x" * 5000))
    assert lines == [
        "**Tool result** · `cat`",
        "",
        "```",
        "x" * OUTPUT_LIMIT,
        "```",
        "",
        "*… cut: the first 2,000 of 5,000 characters shown*",
    ]


# -- headings and labels: escaped only where Markdown needs it (issue 38.8) --


@settings(max_examples=examples(300))
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"])))
def test_a_line_of_text_reads_back_as_written(text: str) -> None:
    """Whatever a name holds, the heading it makes renders as that text
    (white space runs as one space), no markup made of it."""
    from markdown_it import MarkdownIt

    from convgraph.present.markdown_text import inline_text

    parser = MarkdownIt("commonmark").enable("strikethrough")
    tokens = parser.parse(f"# {inline_text(text)}\n")
    inline = tokens[1]
    assert [token.type for token in tokens] == [
        "heading_open",
        "inline",
        "heading_close",
    ]
    assert {child.type for child in inline.children or []} <= {"text"}
    shown = "".join(child.content for child in inline.children or [])
    assert shown == " ".join(text.split()).replace("\x00", "\ufffd")


def test_a_heading_keeps_parentheses_and_words_as_written() -> None:
    from convgraph.present.markdown_text import inline_text

    assert inline_text("Why is count() slow?") == "Why is count() slow?"
    assert inline_text("snake_case & C# (v2) | x!") == "snake_case & C# (v2) | x!"
    assert inline_text("*bold* [link](x) <b>") == "\\*bold\\* \\[link\\](x) \\<b>"
