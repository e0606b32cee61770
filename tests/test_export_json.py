"""JSON exports, node-link and nested tree: exact documents for the four
scenarios (docs/design.md#the-four-scenarios), the schemas of
docs/json-schema.md, networkx reading node-link as it is, a real llm database,
and a chain nested deeper than `json` reads."""

from __future__ import annotations

import doctest
import io
import json

import jsonschema
import networkx as nx
import pytest

import convgraph.export.json
import convgraph.export.tree_json
from convgraph.export import (
    ExportError,
    generate_json,
    generate_tree_json,
    read_json,
    read_tree_json,
    write_json,
    write_tree_json,
)
from convgraph.export.tree_json import loads_deep
from convgraph.model.loading import load_tree
from tests.helpers import documented_schemas, read_forest


def schemas() -> dict[str, dict]:
    """The JSON Schemas that docs/json-schema.md documents, by `$id`."""
    return documented_schemas("json-schema.md")


def document(lines) -> dict:
    return json.loads("\n".join(lines))


def seed_node(name: str, conversation: str, index: int) -> dict:
    return {
        "id": f"{conversation}-{name}",
        "conversation_id": conversation,
        "prompt": f"prompt {conversation}-{name}",
        "system": None,
        "response": f"answer to prompt {conversation}-{name}",
        # A node that is only its prompt and answer (issue 23).
        "parts": None,
        "tool_calls": 0,
        "tools": None,
        "model": "echo",
        "datetime_utc": f"2025-09-27T10:00:{index:02d}.000000+00:00",
        "input_tokens": 10 + index % 100,
        "output_tokens": 20 + index % 100,
        "duration_ms": 100,
        "source": "responses",
        "active": True,
        "note": None,
        "preferred": False,
        # The calls it folds: none, each node here one response.
        "calls": [],
    }


def test_doctests():
    assert doctest.testmod(convgraph.export.json).failed == 0
    assert doctest.testmod(convgraph.export.tree_json).failed == 0


def test_node_link_branch_scenario_exact(seed_db):
    nodes = []
    for offset, name in enumerate(["root", "b", "c"]):
        node = seed_node(name, "branch", 4 + offset)
        node.update(
            input_tokens=10 + offset,
            output_tokens=20 + offset,
            duration_ms=100 * (offset + 1),
            # The most recently logged node, branch-c, is where llm goes on.
            active=name != "b",
        )
        nodes.append(node)
    assert document(generate_json(load_tree("branch", seed_db))) == {
        "format": "convgraph.node-link",
        "version": 1,
        "directed": True,
        "multigraph": False,
        "nodes": nodes,
        "edges": [
            {"source": "branch-root", "target": "branch-b"},
            {"source": "branch-root", "target": "branch-c"},
        ],
        "graph": {"tree_id": "branch", "name": "prompt branch-root"},
    }


def test_networkx_reads_node_link_as_the_same_graph(seed_db):
    tree = load_tree("complex", seed_db)
    back = nx.node_link_graph(document(generate_json(tree)), edges="edges")
    # The tree's id is `tree_id` in every output.
    assert back.graph == {
        "tree_id": tree.graph["tree_id"],
        "name": tree.graph["name"],
    }
    # networkx keeps the calls each node folds (none here) as an attribute.
    assert list(back.nodes(data=True)) == [
        (node, {**data, "calls": []}) for node, data in tree.nodes(data=True)
    ]
    assert list(back.edges) == list(tree.edges)


def test_node_link_forest_round_trip_and_schema(seed_db):
    trees = list(read_forest(seed_db).trees())
    lines = list(generate_json(trees))
    data = document(lines)
    jsonschema.validate(data, schemas()["convgraph.node-link/1"])
    assert data["graph"] == {
        "conversations": [
            {"tree_id": "linear", "name": "prompt linear-root"},
            {"tree_id": "branch", "name": "prompt branch-root"},
            {"tree_id": "complex", "name": "prompt complex-root"},
            {
                "tree_id": "multiple-roots",
                "name": "prompt multiple-roots-root1",
            },
        ]
    }
    assert [node["tree_id"] for node in data["nodes"]].count("complex") == 7
    assert len(data["edges"]) == 15
    back = read_json(io.StringIO("\n".join(lines)))
    for tree, graph in zip(back, trees, strict=True):
        assert tree.graph == graph.graph
        assert list(tree.nodes(data=True)) == list(graph.nodes(data=True))
        assert list(tree.edges) == list(graph.edges)


def test_node_link_keeps_every_string_verbatim(tmp_path):
    tree = nx.DiGraph(tree_id="c", name="naïve \u2028 name")
    text = 'nul\x00 "quoted" \\ back </script> 🌳 \ud7ff \r\n'
    tree.add_node("a", prompt=text, extra=[1, 2])
    write_json(tree, tmp_path / "a.json")
    raw = (tmp_path / "a.json").read_text(encoding="utf-8")
    assert "🌳" in raw and "naïve" in raw  # not ASCII-escaped
    [back] = read_json(tmp_path / "a.json")
    assert back.nodes["a"]["prompt"] == text
    assert back.nodes["a"]["extra"] == [1, 2]
    assert back.nodes["a"]["model"] is None
    assert back.graph == {"tree_id": "c", "name": "naïve \u2028 name"}


def test_tree_json_complex_scenario_nests_children(seed_db):
    data = document(generate_tree_json(load_tree("complex", seed_db)))
    jsonschema.validate(data, schemas()["convgraph.tree-json/1"])
    [conversation] = data["children"]
    assert (conversation["tree_id"], conversation["name"]) == (
        "complex",
        "prompt complex-root",
    )

    def shape(node):
        return {node["id"]: [shape(child) for child in node["children"]]}

    assert [shape(root) for root in conversation["children"]] == [
        {
            "complex-root": [
                {"complex-b": [{"complex-c": []}, {"complex-d": []}]},
                {"complex-e": [{"complex-f": []}, {"complex-g": []}]},
            ]
        }
    ]
    root = conversation["children"][0]
    assert {
        key: value for key, value in root.items() if key != "children"
    } == seed_node("root", "complex", 7) | {
        "input_tokens": 10,
        "output_tokens": 20,
        "duration_ms": 100,
    }


def test_tree_json_multiple_roots_and_forest_round_trip(seed_db):
    trees = list(read_forest(seed_db).trees())
    data = document(generate_tree_json(trees))
    jsonschema.validate(data, schemas()["convgraph.tree-json/1"])
    roots = [[root["id"] for root in c["children"]] for c in data["children"]]
    assert roots == [
        ["linear-root"],
        ["branch-root"],
        ["complex-root"],
        ["multiple-roots-root1", "multiple-roots-root2"],
    ]
    file = io.BytesIO()
    write_tree_json(trees, file)
    back = read_tree_json(io.BytesIO(file.getvalue()))
    for tree, graph in zip(back, trees, strict=True):
        assert tree.graph == graph.graph
        assert dict(tree.nodes(data=True)) == dict(graph.nodes(data=True))
        assert sorted(tree.edges) == sorted(graph.edges)
        for node in graph:
            assert list(tree.successors(node)) == list(graph.successors(node))


@pytest.mark.slow
def test_tree_json_of_a_chain_deeper_than_json_reads(tmp_path):
    depth = 20_000
    chain = nx.DiGraph(tree_id="deep", name=None)
    nx.add_path(chain, [f"n{index}" for index in range(depth)])
    for node in chain:
        chain.nodes[node]["prompt"] = node
    write_tree_json(chain, tmp_path / "deep.json")
    text = (tmp_path / "deep.json").read_text()
    with pytest.raises(RecursionError):
        json.loads(text)
    [back] = read_tree_json(tmp_path / "deep.json")
    assert back.number_of_nodes() == depth
    assert list(back.edges) == list(chain.edges)
    assert back.nodes[f"n{depth - 1}"]["prompt"] == f"n{depth - 1}"


def test_real_llm_database_both_shapes(llm_fork_db):
    tree = load_tree(llm_fork_db["thread"], llm_fork_db["path"])
    first, second, third = llm_fork_db["turns"]
    fork_first, fork_second = llm_fork_db["fork_turns"]
    data = document(generate_json(tree))
    jsonschema.validate(data, schemas()["convgraph.node-link/1"])
    by_id = {node["id"]: node for node in data["nodes"]}
    assert by_id[first]["prompt"] == "What is a tree?"
    assert by_id[fork_first]["prompt"] == "What is a graph, then?"
    assert by_id[fork_first]["conversation_id"] == llm_fork_db["fork"]
    nested = document(generate_tree_json(tree))
    jsonschema.validate(nested, schemas()["convgraph.tree-json/1"])
    [root] = nested["children"][0]["children"]
    assert root["id"] == first
    assert [child["id"] for child in root["children"]] == [second, fork_first]
    assert root["children"][0]["children"][0]["id"] == third
    assert root["children"][1]["children"][0]["id"] == fork_second


def test_readers_refuse_other_documents(tmp_path):
    cases = {
        "not json": "not JSON",
        "[1, 2]": "no format field",
        '{"format": "convgraph.tree-json", "version": 1}': "its format is 'convgraph.tree-json'",
        '{"format": "convgraph.node-link", "version": 2}': "version 2 is not one",
        '{"format": "convgraph.node-link", "version": 1}': "malformed",
    }
    for content, message in cases.items():
        with pytest.raises(ExportError, match=message):
            read_json(io.StringIO(content))
    with pytest.raises(ExportError, match="its format is 'convgraph.node-link'"):
        read_tree_json(io.StringIO('{"format": "convgraph.node-link", "version": 1}'))


def test_both_readers_refuse_a_file_that_is_not_utf_8_in_one_line(tmp_path):
    path = tmp_path / "latin-1.json"
    path.write_bytes('{"format": "caf\xe9"}'.encode("latin-1"))
    for read in (read_json, read_tree_json):
        with pytest.raises(ExportError, match="^not JSON: 'utf-8' codec can't decode"):
            read(path)


def test_deep_reader_matches_json_and_reports_errors():
    text = (
        '{"a": [1, -2.5e3, true, false, null, "x\\u00e9\\n", {}, []], "b": {"c": NaN}}'
    )
    value = loads_deep(text)
    assert value["a"] == json.loads(text)["a"]
    assert value["b"]["c"] != value["b"]["c"]  # NaN
    for broken in ['{"a" 1}', "[1, 2", "[1] 2", '{"a": }', "[1,]"]:
        with pytest.raises(json.JSONDecodeError):
            loads_deep(broken)


def test_readers_take_files_that_name_the_tree_conversation_id():
    # Files written before the tree's key was named tree_id said
    # conversation_id at graph level; the readers still take them and give
    # the graph attribute tree_id (a node's conversation_id stays as it is).
    node = '{"id": "r", "conversation_id": "thread"}'
    one = (
        '{"format": "convgraph.node-link", "version": 1, "nodes": [' + node + "],"
        ' "edges": [], "graph": {"conversation_id": "old", "name": "N"}}'
    )
    (back,) = read_json(io.StringIO(one))
    assert back.graph == {"tree_id": "old", "name": "N"}
    assert back.nodes["r"]["conversation_id"] == "thread"
    several = (
        '{"format": "convgraph.node-link", "version": 1, "nodes": ['
        '{"id": "r", "tree_id": "old"}, {"id": "x", "tree_id": "two"}],'
        ' "edges": [], "graph": {"conversations": ['
        '{"conversation_id": "old", "name": "N"},'
        ' {"conversation_id": "two", "name": null}]}}'
    )
    assert [graph.graph for graph in read_json(io.StringIO(several))] == [
        {"tree_id": "old", "name": "N"},
        {"tree_id": "two", "name": None},
    ]
    nested = (
        '{"format": "convgraph.tree-json", "version": 1, "children": ['
        '{"conversation_id": "old", "name": "N", "children": ['
        '{"id": "r", "conversation_id": "thread", "children": []}]}]}'
    )
    (back,) = read_tree_json(io.StringIO(nested))
    assert back.graph == {"tree_id": "old", "name": "N"}
    assert back.nodes["r"]["conversation_id"] == "thread"
