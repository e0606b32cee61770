"""GraphML export: typed keys, missing values left out, forbidden characters
replaced, and the four scenarios (docs/design.md#the-four-scenarios) and a real
llm database read back by networkx and lxml exactly as they went out."""

from __future__ import annotations

import doctest
import io

import lxml.etree
import networkx as nx
import pytest

import convgraph.export.graphml
from convgraph.export import ExportError, generate_graphml, read_graphml, write_graphml
from convgraph.model.loading import load_tree
from tests.helpers import read_forest

NS = {"g": "http://graphml.graphdrawing.org/xmlns"}


def as_bytes(graphs) -> bytes:
    file = io.BytesIO()
    write_graphml(graphs, file)
    return file.getvalue()


def assert_same(actual, expected):
    assert len(actual) == len(expected)
    for back, graph in zip(actual, expected, strict=True):
        assert back.graph == graph.graph
        assert list(back.nodes(data=True)) == list(graph.nodes(data=True))
        assert list(back.edges) == list(graph.edges)


def test_doctests():
    assert doctest.testmod(convgraph.export.graphml).failed == 0


def node_line(name: str, index: int) -> str:
    return (
        f'<node id="branch-{name}"><data key="conversation_id">branch</data>'
        f'<data key="prompt">prompt branch-{name}</data>'
        f'<data key="response">answer to prompt branch-{name}</data>'
        # A plain node: no parts, no tool calls (issue 23).
        '<data key="tool_calls">0</data>'
        '<data key="model">echo</data>'
        f'<data key="datetime_utc">2025-09-27T10:00:0{4 + index}.000000+00:00</data>'
        f'<data key="input_tokens">{10 + index}</data>'
        f'<data key="output_tokens">{20 + index}</data>'
        f'<data key="duration_ms">{100 * (index + 1)}</data>'
        '<data key="source">responses</data>'
        # branch-c, logged last, is on the active path; b was left behind.
        f'<data key="active">{"false" if name == "b" else "true"}</data>'
        '<data key="preferred">false</data></node>'
    )


def test_branch_scenario_exact_lines(seed_db):
    keys = [
        ("conversation_id", "string"),
        ("prompt", "string"),
        ("system", "string"),
        ("response", "string"),
        ("parts", "string"),
        ("tool_calls", "long"),
        ("tools", "string"),
        ("model", "string"),
        ("datetime_utc", "string"),
        ("input_tokens", "long"),
        ("output_tokens", "long"),
        ("duration_ms", "long"),
        ("source", "string"),
        ("active", "boolean"),
        ("note", "string"),
        ("preferred", "boolean"),
        # The ids of the calls a node's run folds, as a JSON array.
        ("calls", "string"),
    ]
    assert list(generate_graphml(load_tree("branch", seed_db))) == [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<graphml xmlns="http://graphml.graphdrawing.org/xmlns"'
        ' xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"'
        ' xsi:schemaLocation="http://graphml.graphdrawing.org/xmlns'
        ' http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd">',
        '<key id="g_tree_id" for="graph" attr.name="tree_id" attr.type="string"/>',
        '<key id="g_name" for="graph" attr.name="name" attr.type="string"/>',
        *(
            f'<key id="{key}" for="node" attr.name="{key}" attr.type="{kind}"/>'
            for key, kind in keys
        ),
        '<graph edgedefault="directed">',
        '<data key="g_tree_id">branch</data>',
        '<data key="g_name">prompt branch-root</data>',
        node_line("root", 0),
        node_line("b", 1),
        node_line("c", 2),
        '<edge source="branch-root" target="branch-b"/>',
        '<edge source="branch-root" target="branch-c"/>',
        "</graph>",
        "</graphml>",
    ]


def test_networkx_reads_a_conversation_as_it_was(seed_db):
    tree = load_tree("complex", seed_db)
    data = as_bytes(tree)
    lxml.etree.fromstring(data, lxml.etree.XMLParser(recover=False))
    whole = nx.read_graphml(io.BytesIO(data))
    assert list(whole.nodes) == list(tree.nodes)
    assert list(whole.edges) == list(tree.edges)
    # None (the scenarios have no system prompts) is left out, not written as
    # text.
    assert whole.nodes["complex-c"] == {
        "conversation_id": "complex",
        "prompt": "prompt complex-c",
        "response": "answer to prompt complex-c",
        "tool_calls": 0,
        "model": "echo",
        "datetime_utc": "2025-09-27T10:00:09.000000+00:00",
        "input_tokens": 12,
        "output_tokens": 22,
        "duration_ms": 300,
        "source": "responses",
        "active": False,
        "preferred": False,
    }
    assert isinstance(whole.nodes["complex-c"]["input_tokens"], int)
    assert whole.nodes["complex-g"]["active"] is True
    assert whole.graph["tree_id"] == "complex"
    assert whole.graph["name"] == "prompt complex-root"
    assert_same(read_graphml(io.BytesIO(data)), [tree])


def test_forest_round_trip_and_tree_ids(seed_db):
    trees = list(read_forest(seed_db).trees())
    data = as_bytes(trees)
    assert_same(read_graphml(io.BytesIO(data)), trees)
    whole = nx.read_graphml(io.BytesIO(data))
    assert whole.number_of_nodes() == 20
    assert whole.number_of_edges() == 15
    assert whole.nodes["multiple-roots-y"]["tree_id"] == "multiple-roots"
    assert whole.nodes["multiple-roots-y"]["tree_name"] == "prompt multiple-roots-root1"
    assert "g_tree_id" not in data.decode().split("<graph ")[1]


def test_real_llm_database_round_trip(llm_fork_db, tmp_path):
    tree = load_tree(llm_fork_db["thread"], llm_fork_db["path"])
    write_graphml(tree, tmp_path / "fork.graphml")
    [back] = read_graphml(tmp_path / "fork.graphml")
    assert_same([back], [tree])
    first = llm_fork_db["turns"][0]
    assert list(back.successors(first)) == [
        llm_fork_db["turns"][1],
        llm_fork_db["fork_turns"][0],
    ]
    assert back.nodes[first]["source"] == "turns"
    assert back.nodes[first]["model"] == "echo"


def test_forbidden_characters_are_replaced_and_the_rest_kept():
    tree = nx.DiGraph(tree_id="c", name="bell\x07")
    tree.add_node(
        "a\x01",
        prompt="nul\x00 tab\t cr\r lf\n ff\x0c <&> \ufffe",
        system="",
        response=None,
        input_tokens=0,
    )
    data = as_bytes(tree)
    lxml.etree.fromstring(data, lxml.etree.XMLParser(recover=False))
    [back] = read_graphml(io.BytesIO(data))
    assert list(back.nodes) == ["a␁"]
    node = back.nodes["a␁"]
    assert node["prompt"] == "nul␀ tab\t cr\r lf\n ff␌ <&> \ufffd"
    assert node["system"] == ""
    assert node["response"] is None
    assert node["input_tokens"] == 0
    assert back.graph == {"tree_id": "c", "name": "bell␇"}


def test_ids_with_whitespace_survive_attribute_normalization():
    tree = nx.DiGraph(tree_id="c", name=None)
    tree.add_edge("tab\there", 'new\nline "quoted"')
    [back] = read_graphml(io.BytesIO(as_bytes(tree)))
    assert list(back.edges) == [("tab\there", 'new\nline "quoted"')]


def test_errors(seed_db):
    tree = load_tree("linear", seed_db)
    with pytest.raises(ExportError, match="node 'linear-root' is in two"):
        list(generate_graphml([tree, tree]))
    bad = nx.DiGraph(tree_id="c", name=None)
    bad.add_node("a", input_tokens="12")
    with pytest.raises(ExportError, match="input_tokens must be an integer"):
        list(generate_graphml(bad))
    with pytest.raises(ExportError, match="cannot read the GraphML"):
        read_graphml(io.BytesIO(b"<graphml><unclosed></graphml>"))


def test_a_file_that_names_the_tree_conversation_id_is_read():
    # Files written before the graph-level key was named tree_id.
    old = (
        b'<?xml version="1.0" encoding="UTF-8"?>'
        b'<graphml xmlns="http://graphml.graphdrawing.org/xmlns">'
        b'<key id="g_conversation_id" for="graph" attr.name="conversation_id"'
        b' attr.type="string"/>'
        b'<key id="conversation_id" for="node" attr.name="conversation_id"'
        b' attr.type="string"/>'
        b'<graph edgedefault="directed">'
        b'<data key="g_conversation_id">old</data>'
        b'<node id="r"><data key="conversation_id">thread</data></node>'
        b'<node id="a"/><edge source="r" target="a"/></graph></graphml>'
    )
    (back,) = read_graphml(io.BytesIO(old))
    assert back.graph == {"tree_id": "old", "name": None}
    assert back.nodes["r"]["conversation_id"] == "thread"
    assert list(back.edges) == [("r", "a")]
