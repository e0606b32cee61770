"""The text tree shows the whole conversation: a tool chain as one step of the
user's with its calls beneath it, reasoning as a mark, and the roots of a
tree as the alternatives of its start (`convgraph tree` and
`convgraph.present.text_tree`)."""

from __future__ import annotations

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
from convgraph.present.text_tree import (
    CALL,
    NODE,
    START,
    drawing,
    render_tree,
    run_lines,
)
from tests.databases import LlmLog
from tests.helpers import run


def shouting_tree() -> ConversationTree:
    """A prompt answered by a run of two tool calls, then a branch below it."""
    chain = [
        text(USER, "Shout the words tree and forest"),
        reasoning("The user wants both words loud."),
        tool_call("shout", {"word": "tree"}, "call-1"),
        tool_call("shout", {"word": "forest"}, "call-2"),
        # The results come back in another order: matched by their ids.
        tool_result("shout", "FOREST", "call-2"),
        tool_result("shout", "TREE", "call-1"),
        text(ASSISTANT, "TREE and FOREST"),
    ]
    return ConversationTree.from_edges(
        [("run", "a"), ("run", "b")],
        {
            "run": {
                "prompt": "Shout the words tree and forest",
                "response": "TREE and FOREST",
                "parts": chain,
                "tool_calls": 2,
                "tools": "shout",
            },
            "a": {"prompt": "Now whisper them"},
            "b": {
                "prompt": "Count the letters",
                "parts": [
                    text(USER, "Count the letters"),
                    code("print(len('tree'))", "python"),
                    code_output("4\n"),
                    text(ASSISTANT, "4"),
                ],
            },
        },
        tree_id="shouts",
        name="Shouting",
    )


def test_a_tool_chain_is_one_line_with_its_calls_beneath_it():
    assert render_tree(shouting_tree()).splitlines() == [
        "run  Shout the words tree and forest ∴",
        '  ↳ shout(word="tree") → TREE',
        '  ↳ shout(word="forest") → FOREST',
        "├── a  Now whisper them",
        "└── b  Count the letters",
        "      ↳ python: print(len('tree')) → 4",
    ]


def test_the_lines_say_which_node_each_draws():
    lines = list(drawing(shouting_tree()))
    assert [(line.node, line.kind) for line in lines] == [
        ("run", NODE),
        ("run", CALL),
        ("run", CALL),
        ("a", NODE),
        ("b", NODE),
        ("b", CALL),
    ]


def test_calls_are_cut_to_the_width_and_their_text_made_safe():
    parts = [
        tool_call("search", {"query": "a very long query " * 5}, None),
        # No ids: the result goes to the first call still waiting for one.
        tool_result("search", "line\x1b]0;pwned\x07\none " + "x" * 80),
        tool_call("fail", "{}", None),
        tool_result("fail", "", error="no network"),
        tool_result("orphan", "a result no call asked for"),
    ]
    assert run_lines({"parts": parts}, width=40) == [
        '↳ search(query="a v… → line␛]0;pwned␇ one…',
        "↳ fail() → error: no network",
        "↳ orphan → a result no call asked for",
    ]
    assert run_lines({"parts": parts}, width=0) == []
    assert run_lines({"parts": None, "prompt": "hi"}) == []


def test_a_result_without_an_id_answers_the_call_of_its_tool():
    # As the transcript's chat messages pair them: by id, else by the
    # tool's name, else the first call the source gave no id.
    parts = [
        tool_call("weather", {"city": "Oslo"}),
        tool_call("time", {"city": "Oslo"}, "t1"),
        tool_call("weather", {"city": "Rome"}),
        tool_result("time", "09:00"),
        tool_result(None, "rain"),
        tool_result("weather", "sun"),
    ]
    assert run_lines({"parts": parts}) == [
        '↳ weather(city="Oslo") → rain',
        '↳ time(city="Oslo") → 09:00',
        '↳ weather(city="Rome") → sun',
    ]


def test_arguments_that_are_no_object_show_as_json():
    parts = [
        tool_call("echo", ["a", 1], "c1"),
        tool_call("raw", "not json", "c2"),
        tool_call("nothing", None, "c3"),
    ]
    assert run_lines({"parts": parts}) == [
        '↳ echo(["a", 1])',
        "↳ raw(not json)",
        "↳ nothing()",
    ]


def test_several_roots_hang_from_the_start_with_their_calls():
    tree = ConversationTree.from_edges(
        [("first", "next")],
        {
            "first": {"prompt": "Shout tree"},
            "again": {
                "prompt": "Shout tree, please",
                "parts": [
                    text(USER, "Shout tree, please"),
                    tool_call("shout", {"word": "tree"}, "c1"),
                    tool_result("shout", "TREE", "c1"),
                ],
            },
        },
    )
    assert render_tree(tree).splitlines() == [
        "start: 2 alternatives",
        "├── first  Shout tree",
        "│   next",
        "└── again  Shout tree, please",
        '      ↳ shout(word="tree") → TREE',
    ]
    assert [line.kind for line in drawing(tree)][:2] == [START, NODE]
    # A subtree drawn alone has no start.
    assert render_tree(tree, "again").splitlines()[0] == "again  Shout tree, please"


def test_convgraph_tree_hangs_several_roots_from_the_conversations_line(seed_db):
    output = run("tree", "multiple-roots", "--db", seed_db).output
    assert output.splitlines() == [
        "multiple-roots  prompt multiple-roots-root1",
        "├── multiple-roots-root1  prompt multiple-roots-root1",
        "│   multiple-roots-a  prompt multiple-roots-a",
        "│   multiple-roots-b  prompt multiple-roots-b",
        "└── multiple-roots-root2  prompt multiple-roots-root2",
        "    multiple-roots-x  prompt multiple-roots-x",
        "    multiple-roots-y  prompt multiple-roots-y",
    ]
    # One root stays in the conversation line's column, as before.
    assert run("tree", "linear", "--db", seed_db).output.splitlines()[:2] == [
        "linear  prompt linear-root",
        "linear-root  prompt linear-root",
    ]


def test_a_tool_chain_llm_logged_is_one_line_with_its_call(tmp_path):
    """llm 0.36 runs `shout tree` with llm-echo 0.5 as two model calls (the
    second sent the tool's result), thinking on: convgraph tree draws one
    node, marked ∴, with the call beneath it."""
    with LlmLog(tmp_path) as log:
        first, last = log.tool_chain(
            "shout tree",
            [{"name": "shout", "arguments": {"word": "tree"}}],
            "-o",
            "thinking",
            "1",
        )
        thread = log.thread_of(first)
    lines = run("tree", thread, "--db", log.path, "--width", "30").output
    assert lines.splitlines() == [
        f'{thread}  {{"prompt": "shout tree", "too…',
        f'{last}  {{"prompt": "shout tree", "too… ∴',
        '  ↳ shout(word="tree") → TREE!',
    ]
