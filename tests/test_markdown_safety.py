"""No stored text changes the structure of a Markdown document convgraph
writes (issue 24.5): a prompt holding `## 2. User` forges no turn, an answer
with an unclosed code fence swallows no turn after it, and `<script>` or
`<img onerror>` never reach a file that viewers render as HTML. Each document
is parsed by a real CommonMark parser (markdown-it-py) and its headings,
fences and HTML are exactly the turns convgraph wrote, whatever the texts
hold: for the hostile cases, and for any text (a hypothesis property)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token

import convgraph.present.markdown_text
from convgraph import parts
from convgraph.export.markdown import generate_markdown
from convgraph.model.tree import ConversationTree
from convgraph.present.markdown_text import markdown_lines
from convgraph.present.transcript import OUTPUT_LIMIT, Transcript
from tests.helpers import examples, run

#: CommonMark with HTML on, as GitHub and most viewers read Markdown, and
#: GitHub's tables.
PARSER = MarkdownIt("commonmark").enable("table")

#: The HTML convgraph writes itself: the reasoning's folded block.
OWN_HTML = ["<details>\n<summary>Reasoning</summary>\n", "</details>\n"]


def test_doctests() -> None:
    import doctest

    assert doctest.testmod(convgraph.present.markdown_text).failed == 0


def headings(tokens: list[Token]) -> list[tuple[str, str]]:
    """Each heading as (tag, its inline text as written)."""
    return [
        (token.tag, tokens[index + 1].content)
        for index, token in enumerate(tokens)
        if token.type == "heading_open"
    ]


def html(tokens: list[Token]) -> list[str]:
    """Every piece of HTML the parser found, block or inline."""
    found = [token.content for token in tokens if token.type == "html_block"]
    for token in tokens:
        found += [
            child.content
            for child in token.children or []
            if child.type == "html_inline"
        ]
    return found


def links(tokens: list[Token]) -> list[str]:
    return [
        str(child.attrs.get("href") or child.attrs.get("src"))
        for token in tokens
        for child in token.children or []
        if child.type in ("link_open", "image")
    ]


def fences(tokens: list[Token]) -> list[str]:
    return [token.content for token in tokens if token.type in ("fence", "code_block")]


def verbatim(text: str) -> str:
    """A text as a fence shows it: its lines as Markdown cuts them (and NUL
    as U+FFFD, as CommonMark reads it)."""
    return "\n".join(markdown_lines(text)).replace("\x00", "\ufffd") + "\n"


# -- the hostile cases ------------------------------------------------------------------

FORGED = "Here:\n\n## 2. User\n\nforged\n\n## 2. Assistant · `x`\n\nYes."
UNCLOSED = "Look:\n\n```python\nx = 1\n\nand every turn after it"
SCRIPT = "<script>alert(1)</script>"
IMAGE = '<img src=x onerror="alert(1)">'


def hostile_tree() -> ConversationTree:
    """Three steps whose texts attack the document, the second with an
    alternative; the conversation's name, a model and a note too."""
    return ConversationTree.from_edges(
        [("r", "a"), ("r", "b"), ("a", "c")],
        {
            "r": {"prompt": FORGED, "response": UNCLOSED, "active": True},
            "a": {
                "prompt": f"Run {SCRIPT}",
                "response": f"An image: {IMAGE}\n\n[x](javascript:alert(1))",
                "model": "<b>m</b>\n# one",
                "note": "`code` <i>",
                "active": True,
            },
            "b": {"prompt": "~~~\nTilde", "response": "````\nfour"},
            "c": {
                "prompt": "Last",
                "response": "Fine",
                "parts": [
                    parts.text(parts.USER, "Last"),
                    parts.reasoning(f"{SCRIPT}\n# think"),
                    parts.tool_call("run`x`", {"code": "```\n# not a heading"}, "t1"),
                    parts.tool_result("run`x`", f"{IMAGE}\n```", "t1"),
                    parts.code("</details>\n```", "python\n# x"),
                    parts.code_output("~~~~"),
                    parts.attachment(parts.USER, "<img src=x>", "javascript:alert(1)"),
                    parts.text(parts.ASSISTANT, "Fine"),
                ],
                "active": True,
            },
        },
        tree_id="hostile`\n## 9. User",
        name=f"{SCRIPT} ## name",
    )


def test_a_transcript_keeps_its_turns_whatever_the_texts_hold() -> None:
    tree = hostile_tree()
    document = Transcript(tree, ["r", "a", "c"]).markdown()
    tokens = PARSER.parse(document)
    assert [(tag, text.split(" ·")[0]) for tag, text in headings(tokens)] == [
        ("h1", "\\<script>alert(1)\\</script> ## name"),
        ("h2", "1. User"),
        ("h2", "1. Assistant"),
        ("h2", "2. User"),
        ("h2", "2. Assistant"),
        ("h2", "3. User"),
        ("h2", "3. Assistant"),
    ]
    # The only HTML is the reasoning's own block.
    assert html(tokens) == OWN_HTML
    assert links(tokens) == []
    shown = fences(tokens)
    # Texts that are not tame Markdown are shown verbatim, each in a fence.
    for text in (UNCLOSED, f"Run {SCRIPT}", "</details>\n```", f"{IMAGE}\n```"):
        assert verbatim(text) in shown
    # A tame text keeps its Markdown, its headings shown as written.
    page = PARSER.render(document)
    assert "<p>Here:</p>\n<p>## 2. User</p>\n<p>forged</p>" in page
    # The rendered page shows the name and the model as written.
    assert "<h1>&lt;script&gt;alert(1)&lt;/script&gt; ## name</h1>" in page
    assert "&lt;b&gt;m&lt;/b&gt; # one" in page


def test_the_markdown_export_keeps_its_turns_whatever_the_texts_hold() -> None:
    tokens = PARSER.parse("\n".join(generate_markdown(hostile_tree())) + "\n")
    assert [(tag, text.split(" ·")[0]) for tag, text in headings(tokens)] == [
        ("h1", "\\<script>alert(1)\\</script> ## name"),
        ("h2", "1. User"),
        ("h2", "1. Assistant"),
        ("h2", "2. User"),
        ("h2", "2. Assistant"),
        # b, the alternative to step 2, quoted one level down.
        ("h3", "2. User"),
        ("h3", "2. Assistant"),
        ("h2", "3. User"),
        ("h2", "3. Assistant"),
    ]
    assert html(tokens) == OWN_HTML
    assert links(tokens) == []
    assert verbatim("````\nfour") in fences(tokens)


def test_the_transcript_command_shows_the_same_turns(tmp_path) -> None:
    from tests.chat_exports import chatgpt_export, write_json

    export = chatgpt_export()
    conversation = next(c for c in export if c["id"] == "conv-monad")
    for message in conversation["mapping"].values():
        if message.get("message") and message["message"]["author"]["role"] == "user":
            message["message"]["content"]["parts"] = [FORGED]
    path = write_json(tmp_path / "conversations.json", export)
    document = run("transcript", "conv-monad", "--db", path).stdout
    assert [text for _, text in headings(PARSER.parse(document))][1:] == [
        "1. User",
        "1. Assistant · gpt-4o · 2024-03-01 12:00 UTC · `a1b`",
        "2. User",
        "2. Assistant · gpt-4o · 2024-03-01 12:01 UTC · `a2e`",
    ]


# -- any text at all --------------------------------------------------------------------

#: Pieces that attack Markdown's structure, to be joined into texts.
PIECES = st.sampled_from(
    [
        "```",
        "~~~",
        "````",
        "`",
        "#",
        "## 2. User",
        "# ",
        "<script>",
        "</details>",
        "<img src=x onerror=alert(1)>",
        "<!--",
        "<?",
        "<a href=x>",
        "-",
        "=",
        "---",
        "===",
        "> ",
        "- ",
        "1. ",
        "   ",
        "    ",
        "\t",
        "\n",
        "\r",
        "\r\n",
        "[a]: /u",
        "[x](javascript:alert(1))",
        "](java&#115;cript:x)",
        "*",
        "_",
        "|",
        "\\",
        "&lt;",
        "\x00",
        "\x1b]0;t\x07",
        "text",
        "python",
        " ",
    ]
)
TEXTS = st.one_of(st.lists(PIECES, max_size=20).map("".join), st.text(max_size=30))


@st.composite
def hostile_trees(draw: st.DrawFn) -> ConversationTree:
    """The shape of `hostile_tree` (a step with an alternative, a step below
    it), every text drawn: prompts (each with a word, so each step has a user
    heading), answers, a system prompt, the name, models, notes, and c's run
    of reasoning, a tool call and its result, code and its output."""
    text = draw
    run_parts = [
        parts.text(parts.USER, "p" + text(TEXTS)),
        parts.reasoning("r" + text(TEXTS)),
        parts.tool_call(text(TEXTS), {"a": text(TEXTS)}, "t1"),
        parts.tool_result(text(TEXTS), text(TEXTS), "t1"),
        parts.code(text(TEXTS), text(TEXTS)),
        parts.code_output(text(TEXTS)),
        parts.attachment(parts.USER, text(TEXTS), text(TEXTS), text(TEXTS)),
        parts.text(parts.ASSISTANT, text(TEXTS)),
    ]

    def node(**more: object) -> dict:
        return {
            "prompt": "p" + text(TEXTS),
            "response": text(TEXTS),
            "model": text(TEXTS),
            "note": text(TEXTS),
            "datetime_utc": text(TEXTS),
            "system": text(TEXTS),
            **more,
        }

    return ConversationTree.from_edges(
        [("r", "a"), ("r", "b"), ("a", "c")],
        {
            "r": node(active=True),
            "a": node(active=True),
            "b": node(),
            "c": node(parts=run_parts, active=True),
        },
        tree_id=text(TEXTS),
        name=text(TEXTS),
    )


def assert_only_turns(document: str, expected: list[tuple[str, str]]) -> None:
    tokens = PARSER.parse(document)
    found = headings(tokens)
    assert [tag for tag, _ in found] == [tag for tag, _ in expected], document
    for (_, text), (_, start) in zip(found[1:], expected[1:], strict=True):
        assert re.match(re.escape(start) + r"( ·|$)", text), (text, document)
    assert html(tokens) == OWN_HTML, document
    assert not [link for link in links(tokens) if ":" in link.split("/")[0]], document


STEPS = [("h1", ""), ("h2", "1. User"), ("h2", "1. Assistant")]


@settings(max_examples=examples(50), deadline=None)
@given(hostile_trees())
def test_any_text_leaves_a_transcript_its_turns(tree: ConversationTree) -> None:
    document = Transcript(tree, ["r", "a", "c"]).markdown()
    assert_only_turns(
        document,
        [
            *STEPS,
            ("h2", "2. User"),
            ("h2", "2. Assistant"),
            ("h2", "3. User"),
            ("h2", "3. Assistant"),
        ],
    )
    # A tool's output and code are shown exactly as they are, in fences.
    shown = fences(PARSER.parse(document))
    for part in tree.nodes["c"]["parts"]:
        for key in ("output", "text"):
            value = part.get(key)
            shows = part["type"] in ("tool_result", "code", "code_output")
            if shows and value and len(value) <= OUTPUT_LIMIT:
                assert verbatim(value) in shown, (value, document)


@settings(max_examples=examples(50), deadline=None)
@given(hostile_trees())
def test_any_text_leaves_the_markdown_export_its_turns(tree: ConversationTree) -> None:
    document = "\n".join(generate_markdown(tree)) + "\n"
    assert_only_turns(
        document,
        [
            *STEPS,
            ("h2", "2. User"),
            ("h2", "2. Assistant"),
            ("h3", "2. User"),
            ("h3", "2. Assistant"),
            ("h2", "3. User"),
            ("h2", "3. Assistant"),
        ],
    )


# -- what is not Markdown is shown as it is ---------------------------------------------

CODE = "class HashMap:\n    def __init__(self):\n        self.slots = [None] * 8"
MARKDOWN = "A map:\n\n- `get`, **fast**\n- [docs](https://example.org)"


def test_code_without_a_fence_is_shown_as_it_is() -> None:
    tree = ConversationTree.from_edges(
        [("r", "a")],
        {
            "r": {"prompt": "A hash map?", "response": CODE},
            "a": {"prompt": "Explain", "response": MARKDOWN},
        },
        tree_id="code",
    )
    tokens = PARSER.parse(Transcript(tree, ["r", "a"]).markdown())
    # The code keeps its lines and its underscores: a fence, not a paragraph.
    assert fences(tokens) == [verbatim(CODE)]
    page = PARSER.render(Transcript(tree, ["r", "a"]).markdown())
    assert "<strong>init</strong>" not in page
    # An answer in Markdown keeps its list, code span, emphasis and link.
    assert "<li><code>get</code>, <strong>fast</strong></li>" in page
    assert '<a href="https://example.org">docs</a>' in page
