"""A node's whole content in every document (issue 23.3): its parts (text,
reasoning, tool calls and results, code and its output, attachments,
fragments), its tool calls and tools, in JSON, tree JSON, GraphML, Parquet
and the drawings' tooltips, each read back exact; on a hand-made run built
with `convgraph.parts`' constructors, and on llm's and the chat apps' own
files where their readers give parts."""

from __future__ import annotations

import io
import json
from pathlib import Path

import jsonschema
import pandas as pd
import pytest

from convgraph import parts
from convgraph.analysis.stats import summary_table
from convgraph.contract import NODE_ATTRIBUTES
from convgraph.export import (
    ExportError,
    generate_dot,
    generate_json,
    generate_tree_json,
    read_graphml,
    read_json,
    read_tree_json,
    write_graphml,
    write_parquet,
)
from convgraph.model.forest import Forest
from convgraph.model.tree import ConversationTree
from convgraph.sources.parquet import read_nodes
from tests.helpers import documented_schemas, read_forest, run

#: A run of every part type, with text no format may lose: quotes, markup,
#: a control character, a line end, non-ASCII, nested JSON arguments.
AGENT_PARTS = [
    parts.text(parts.USER, 'Shout "tree" <b>\x1b'),
    parts.fragment("notes.txt", 12),
    parts.reasoning("First é, then\nthe tool."),
    parts.tool_call("shout", {"word": "tree", "n": [1, 2.5, None, True]}, "c1"),
    parts.tool_result("shout", "TREE\r\n", "c1"),
    parts.text(parts.ASSISTANT, "Done: **TREE**"),
]
CODE_PARTS = [
    parts.attachment(parts.USER, "photo.png", None, "image/png", 1000),
    parts.text(parts.USER, "Run it"),
    parts.code("print(1)", "python"),
    parts.code_output("1\n"),
    parts.tool_call("search", "raw words", None),
    parts.tool_result("search", "", None, error="boom"),
    parts.reasoning("", redacted=True),
]


def agent_tree() -> ConversationTree:
    """r (a tool call and its result), then a (plain) and b (code, a call
    without an id that failed) as alternatives below it."""
    return ConversationTree.from_edges(
        [("r", "a"), ("r", "b")],
        {
            "r": {
                "prompt": 'Shout "tree" <b>\x1b',
                "response": "Done: **TREE**",
                "parts": AGENT_PARTS,
                "tool_calls": 1,
                "tools": "shout",
                "model": "echo",
                "active": True,
            },
            "a": {"prompt": "Thanks", "response": "Welcome", "tool_calls": 0},
            "b": {
                "prompt": "Run it",
                "response": None,
                "parts": CODE_PARTS,
                "tool_calls": 1,
                "tools": "search",
                "active": True,
            },
        },
        tree_id="agent",
        name="Agent",
    )


def assert_same_nodes(back: ConversationTree, tree: ConversationTree) -> None:
    assert list(back.edges) == list(tree.edges)
    for node in tree:
        expected = {key: tree.nodes[node][key] for key in NODE_ATTRIBUTES}
        assert {key: back.nodes[node][key] for key in NODE_ATTRIBUTES} == expected


def test_json_carries_the_parts_and_reads_them_back() -> None:
    tree = agent_tree()
    document = json.loads("\n".join(generate_json(tree)))
    jsonschema.validate(
        document, documented_schemas("json-schema.md")["convgraph.node-link/1"]
    )
    first = document["nodes"][0]
    assert first["parts"] == AGENT_PARTS
    assert (first["tool_calls"], first["tools"]) == (1, "shout")
    assert document["nodes"][1]["parts"] is None
    (back,) = read_json(io.StringIO("\n".join(generate_json(tree))))
    assert_same_nodes(back, tree)


def test_tree_json_carries_the_parts_and_reads_them_back() -> None:
    tree = agent_tree()
    text = "\n".join(generate_tree_json(tree))
    document = json.loads(text)
    jsonschema.validate(
        document, documented_schemas("json-schema.md")["convgraph.tree-json/1"]
    )
    root = document["children"][0]["children"][0]
    assert root["parts"] == AGENT_PARTS
    assert [child["parts"] for child in root["children"]] == [None, CODE_PARTS]
    (back,) = read_tree_json(io.StringIO(text))
    assert_same_nodes(back, tree)


def test_the_schema_holds_a_part_to_its_type() -> None:
    schema = documented_schemas("json-schema.md")["convgraph.node-link/1"]
    document = json.loads("\n".join(generate_json(agent_tree())))
    document["nodes"][0]["parts"][3] = {"role": "assistant", "type": "tool_call"}
    with pytest.raises(jsonschema.ValidationError, match="'name' is a required"):
        jsonschema.validate(document, schema)


def test_graphml_carries_the_parts_as_json(tmp_path: Path) -> None:
    tree = agent_tree()
    out = io.BytesIO()
    write_graphml(tree, out)
    text = out.getvalue().decode()
    assert '<key id="parts" for="node" attr.name="parts" attr.type="string"/>' in text
    assert (
        '<key id="tool_calls" for="node" attr.name="tool_calls" attr.type="long"/>'
        in (text)
    )
    # JSON escapes the control character and the line ends itself.
    assert '"output": "TREE\\r\\n"' in text
    assert '"text": "Shout \\"tree\\" &lt;b&gt;\\u001b"' in text
    (back,) = read_graphml(io.BytesIO(out.getvalue()))
    # The prompt shows the character XML forbids as its symbol; the parts,
    # JSON, keep it.
    assert back.nodes["r"]["prompt"] == 'Shout "tree" <b>\u241b'
    back.nodes["r"]["prompt"] = tree.nodes["r"]["prompt"]
    assert_same_nodes(back, tree)
    assert isinstance(back.nodes["r"]["tool_calls"], int)


def test_graphml_whose_parts_are_not_json_is_one_line() -> None:
    out = io.BytesIO()
    write_graphml(agent_tree(), out)
    broken = out.getvalue().replace(b'[{"role', b"[{role", 1)
    with pytest.raises(ExportError, match="the parts of node 'r' are not JSON"):
        read_graphml(io.BytesIO(broken))


def agent_forest() -> Forest:
    tree = agent_tree()
    rows = [
        {
            "id": node,
            "tree_id": "agent",
            "parent_id": next(iter(tree.predecessors(node)), None),
            **{key: tree.nodes[node][key] for key in NODE_ATTRIBUTES},
            "conversation_id": "agent",
            "source": "responses",
        }
        for node in tree
    ]
    columns = ["id", "tree_id", "parent_id", *NODE_ATTRIBUTES]
    return Forest(pd.DataFrame(rows, columns=columns), {"agent": "Agent"})


def test_parquet_holds_the_parts_as_json_and_gives_them_back(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    write_parquet(agent_forest(), tmp_path / "dataset")
    stored = pq.read_table(tmp_path / "dataset" / "nodes").to_pandas()
    assert json.loads(stored["parts"][0]) == AGENT_PARTS
    assert pd.isna(stored["parts"][1])
    nodes = read_nodes(tmp_path / "dataset")
    assert nodes["parts"].tolist() == [AGENT_PARTS, None, CODE_PARTS]
    assert nodes["tool_calls"].tolist() == [1, 0, 1]
    assert nodes["tools"].fillna("-").tolist() == ["shout", "-", "search"]
    # The statistics of the dataset count them as the forest's do.
    (row,) = summary_table(nodes).to_dict("records")
    assert (row["tool_calls"], row["tools"]) == (2, ["shout", "search"])
    result = run("stats", "--db", tmp_path / "dataset", "--json")
    (shown,) = json.loads(result.stdout)
    assert (shown["tool_calls"], shown["tools"]) == (2, ["shout", "search"])


def test_the_tooltip_says_how_many_tools_were_called() -> None:
    dot = "\n".join(generate_dot(agent_tree()))
    assert "tool calls: 1 (shout)" in dot
    assert "tool calls: 1 (search)" in dot
    assert dot.count("tool calls:") == 2


# -- the files llm and the chat apps write ------------------------------------------


@pytest.fixture(scope="module")
def real_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A logs.db where llm 0.36 (llm-echo 0.5) ran a tool chain with
    reasoning, then a plain follow-up; a ChatGPT export of an agent's work
    (search, code that fails and code that runs, a picture, a tool error)."""
    from tests import chat_exports as build
    from tests.databases import LlmLog

    directory = tmp_path_factory.mktemp("real")
    with LlmLog(directory) as log:
        log.tool_chain(
            "shout tree",
            [{"name": "shout", "arguments": {"word": "tree"}}],
            "-o",
            "thinking",
            "1",
        )
        log.prompt(
            "And a forest?", continue_conversation=log.thread_of(log.latest_turn())
        )
    export = build.write_json(directory / "conversations.json", [build.chatgpt_agent()])
    return {"llm": directory / "logs.db", "chatgpt": export}


@pytest.mark.parametrize("kind", ["llm", "chatgpt"])
def test_every_format_gives_back_the_parts_a_real_file_holds(
    real_files: dict[str, Path], kind: str, tmp_path: Path
) -> None:
    pytest.importorskip("pyarrow")
    forest = read_forest(real_files[kind])
    trees = list(forest.trees())
    with_parts = [n for t in trees for n in t if t.nodes[n]["parts"] is not None]
    assert with_parts, "the reader gave no parts"
    assert sum(t.nodes[n]["tool_calls"] or 0 for t in trees for n in t) > 0
    json_text = "\n".join(generate_json(trees))
    schemas = documented_schemas("json-schema.md")
    jsonschema.validate(json.loads(json_text), schemas["convgraph.node-link/1"])
    tree_text = "\n".join(generate_tree_json(trees))
    graphml = io.BytesIO()
    write_graphml(trees, graphml)
    for back in (
        read_json(io.StringIO(json_text)),
        read_tree_json(io.StringIO(tree_text)),
        read_graphml(io.BytesIO(graphml.getvalue())),
    ):
        for read, tree in zip(back, trees, strict=True):
            assert_same_nodes(read, tree)
    write_parquet(forest, tmp_path / "dataset")
    nodes = read_nodes(tmp_path / "dataset").set_index("id")
    for tree in trees:
        for node in tree:
            assert nodes.at[node, "parts"] == tree.nodes[node]["parts"]
