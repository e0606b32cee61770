"""DOT export: exact text for the four scenarios, read back by pydot and
drawn by Graphviz; the escaping of ids and labels one case at a time."""

from __future__ import annotations

import doctest
import shutil
import subprocess

import lxml.etree
import networkx as nx
import pydot
import pytest

import convgraph.export.dot
from convgraph.export import ExportError, generate_dot, to_pydot, write_dot
from convgraph.export.dot import quote_id, quote_text, unquote_id
from convgraph.model.loading import load_tree
from tests.helpers import SAFETY_SECONDS, read_forest

needs_graphviz = pytest.mark.skipif(
    shutil.which("dot") is None,
    reason="Graphviz's dot is not installed (apt-get install graphviz)",
)

BRANCH_DOT = [
    'digraph "branch" {',
    '  rankdir="TB";',
    '  fontname="Helvetica";',
    '  fontsize="11";',
    '  ordering="out";',
    '  label="prompt branch-root  (branch)";',
    '  labelloc="t";',
    '  node [shape="box", style="rounded,filled", fontname="Helvetica",'
    ' fontsize="10", fillcolor="white"];',
    '  edge [arrowsize="0.7"];',
    # The active path (to branch-c, logged last) is marked ● and "active".
    '  "branch-root" [label="branch-root  ·  echo  ●\\n» prompt branch-root\\n«'
    ' answer to prompt branch-root", tooltip="prompt: prompt branch-root\\n\\n'
    'response: answer to prompt branch-root", fillcolor="#8dd3c7",'
    ' peripheries="2", class="root branch-point active"];',
    '  "branch-b" [label="branch-b  ·  echo\\n» prompt branch-b\\n« answer to'
    ' prompt branch-b", tooltip="prompt: prompt branch-b\\n\\nresponse: answer'
    ' to prompt branch-b", fillcolor="#8dd3c7", style="rounded,filled,bold",'
    ' class="leaf"];',
    '  "branch-c" [label="branch-c  ·  echo  ●\\n» prompt branch-c\\n« answer to'
    ' prompt branch-c", tooltip="prompt: prompt branch-c\\n\\nresponse: answer'
    ' to prompt branch-c", fillcolor="#8dd3c7", style="rounded,filled,bold",'
    ' class="leaf active"];',
    '  "branch-root" -> "branch-b";',
    '  "branch-root" -> "branch-c";',
    "}",
]


def parsed(lines) -> pydot.Dot:
    [graph] = pydot.graph_from_dot_data("\n".join(lines))
    return graph


def test_doctests():
    assert doctest.testmod(convgraph.export.dot).failed == 0


def test_branch_scenario_exact_text(seed_db):
    assert list(generate_dot(load_tree("branch", seed_db))) == BRANCH_DOT


def test_complex_scenario_marks_branch_points_and_leaves(seed_db):
    graph = parsed(generate_dot(load_tree("complex", seed_db)))
    kinds = {
        unquote_id(node.get_name()): node.get("class")
        for node in graph.get_nodes()
        if node.get_name() not in ("node", "edge", "graph")
    }
    assert kinds == {
        "complex-root": '"root branch-point active"',
        "complex-b": '"branch-point"',
        "complex-c": '"leaf"',
        "complex-d": '"leaf"',
        "complex-e": '"branch-point active"',
        "complex-f": '"leaf"',
        "complex-g": '"leaf active"',
    }
    edges = [
        (unquote_id(e.get_source()), unquote_id(e.get_destination()))
        for e in graph.get_edges()
    ]
    assert edges == [
        ("complex-root", "complex-b"),
        ("complex-root", "complex-e"),
        ("complex-b", "complex-c"),
        ("complex-b", "complex-d"),
        ("complex-e", "complex-f"),
        ("complex-e", "complex-g"),
    ]


def test_forest_is_one_cluster_per_conversation(seed_db):
    graph = parsed(generate_dot(read_forest(seed_db).trees()))
    assert graph.get_name() == '"conversations"'
    clusters = graph.get_subgraphs()
    assert [cluster.get_name() for cluster in clusters] == [
        '"cluster_0"',
        '"cluster_1"',
        '"cluster_2"',
        '"cluster_3"',
    ]
    assert [cluster.get("label") for cluster in clusters] == [
        '"prompt linear-root  (linear)"',
        '"prompt branch-root  (branch)"',
        '"prompt complex-root  (complex)"',
        '"prompt multiple-roots-root1  (multiple-roots)"',
    ]
    assert [len(cluster.get_nodes()) for cluster in clusters] == [4, 3, 7, 6]
    assert [len(cluster.get_edges()) for cluster in clusters] == [3, 2, 6, 4]


def test_to_pydot_writes_the_same_drawing(seed_db):
    trees = list(read_forest(seed_db).trees())
    streamed = parsed(generate_dot(trees))
    built = parsed(to_pydot(trees).to_string().splitlines())
    assert streamed.to_string() == built.to_string()


def test_colours_follow_models_in_order_of_appearance():
    tree = nx.DiGraph(tree_id="c", name=None)
    for node, model in [("a", "gpt-4o"), ("b", "echo"), ("c", "gpt-4o"), ("d", None)]:
        tree.add_node(node, model=model)
    tree.add_edges_from([("a", "b"), ("a", "c"), ("c", "d")])
    graph = parsed(generate_dot(tree))
    colours = {
        unquote_id(node.get_name()): node.get("fillcolor")
        for node in graph.get_nodes()
        if node.get_name() not in ("node", "edge", "graph")
    }
    assert colours == {
        "a": '"#8dd3c7"',
        "b": '"#ffffb3"',
        "c": '"#8dd3c7"',
        "d": '"white"',
    }


@pytest.mark.parametrize(
    ("node_id", "quoted"),
    [
        ("node", '"node"'),
        ("graph", '"graph"'),
        ("strict", '"strict"'),
        ("digraph", '"digraph"'),
        ("subgraph", '"subgraph"'),
        ("edge", '"edge"'),
        ("1abc", '"1abc"'),
        ('say "hi"', '"say \\"hi\\""'),
        ("back\\slash\\", '"back\\\\slash\\\\"'),
        ("two\nlines\r", '"two\\nlines\\r"'),
        ("bell\x07", '"bell\\x07"'),
        ("{<|>}", '"{<|>}"'),
        ("%3", '"\\%3"'),
        ("50%", '"50%"'),
        ("дерево 🌳", '"дерево 🌳"'),
    ],
)
def test_ids_are_quoted_and_read_back(node_id, quoted):
    assert quote_id(node_id) == quoted
    assert unquote_id(quoted) == node_id


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ('"quoted"', '"\\"quoted\\""'),
        ("a\\b", '"a\\\\b"'),
        ("\\N is the node name", '"\\\\N is the node name"'),
        ("one\ntwo\r\nthree\rfour", '"one\\ntwo\\nthree\\nfour"'),
        ("{record|<port>}", '"\\{record\\|\\<port\\>\\}"'),
        ("&lt; stays text", '"&amp;lt; stays text"'),
        ("nul\x00 esc\x1b del\x7f", '"nul␀ esc␛ del␡"'),
        ("ok\ufffe", '"ok\ufffd"'),
    ],
)
def test_labels_are_graphviz_escape_strings(text, quoted):
    assert quote_text(text) == quoted


def test_long_text_is_cut_into_quoted_pieces():
    text = "x" * 5000 + '"' + "y" * 5000
    quoted = quote_text(text)
    assert quoted.count('" + "') == 4
    [graph] = pydot.graph_from_dot_data(f"digraph {{ a [tooltip={quoted}]; }}")
    # pydot joins the pieces as DOT says: one string again.
    assert (
        graph.get_nodes()[0].get("tooltip")
        == '"' + "x" * 5000 + '\\"' + "y" * 5000 + '"'
    )


def test_unknown_rankdir_and_repeated_node_are_errors(seed_db):
    tree = load_tree("linear", seed_db)
    with pytest.raises(ExportError, match="rankdir must be one of TB, LR, BT, RL"):
        list(generate_dot(tree, rankdir="sideways"))
    with pytest.raises(ExportError, match="node 'linear-root' is in two"):
        list(generate_dot([tree, tree]))


def test_rankdir_and_empty_forest():
    assert list(generate_dot([], rankdir="LR"))[1] == '  rankdir="LR";'
    assert parsed(generate_dot([])).get_subgraphs() == []


def test_write_dot_to_path_and_binary_file(tmp_path, seed_db):
    tree = load_tree("branch", seed_db)
    write_dot(tree, tmp_path / "branch.dot")
    assert (tmp_path / "branch.dot").read_text(encoding="utf-8") == "\n".join(
        BRANCH_DOT
    ) + "\n"
    with open(tmp_path / "binary.dot", "wb") as file:
        write_dot(tree, file)
    assert (tmp_path / "binary.dot").read_bytes() == (
        tmp_path / "branch.dot"
    ).read_bytes()


@needs_graphviz
def test_graphviz_draws_the_seed_forest_as_valid_svg(seed_db, tmp_path):
    source = "\n".join(generate_dot(read_forest(seed_db).trees()))
    done = subprocess.run(
        ["dot", "-Tsvg"],
        input=source.encode(),
        capture_output=True,
        timeout=SAFETY_SECONDS,
    )
    assert done.returncode == 0, done.stderr
    svg = lxml.etree.fromstring(done.stdout)
    space = {"svg": "http://www.w3.org/2000/svg"}
    assert len(svg.xpath("//svg:g[@class='cluster']", namespaces=space)) == 4
    titles = svg.xpath(
        "//svg:g[contains(@class, 'node')]/svg:title/text()", namespaces=space
    )
    assert len(titles) == 20
    assert "complex-root" in titles
    leaves = svg.xpath(
        "//svg:g[contains(@class, 'leaf')]/svg:title/text()", namespaces=space
    )
    assert sorted(leaves) == [
        "branch-b",
        "branch-c",
        "complex-c",
        "complex-d",
        "complex-f",
        "complex-g",
        "linear-c",
        "multiple-roots-b",
        "multiple-roots-y",
    ]


@needs_graphviz
def test_graphviz_reads_keywords_and_hostile_ids():
    tree = nx.DiGraph(tree_id="strict", name='a "name" {with} <html>')
    ids = ["node", "graph", "strict", "edge", "1abc", 'q"uote', "back\\", "new\nline"]
    for node_id in ids:
        tree.add_node(node_id, prompt="<b>&amp;</b>", response="x\\ny")
    for parent, child in zip(ids, ids[1:], strict=False):
        tree.add_edge(parent, child)
    done = subprocess.run(
        ["dot", "-Tplain"],
        input="\n".join(generate_dot(tree)).encode(),
        capture_output=True,
    )
    assert done.returncode == 0, done.stderr
    drawn = [
        line for line in done.stdout.decode().splitlines() if line.startswith("node ")
    ]
    edges = [
        line for line in done.stdout.decode().splitlines() if line.startswith("edge ")
    ]
    assert len(drawn) == len(ids)
    assert len(edges) == len(ids) - 1


def test_real_llm_database_fork_is_one_tree(llm_fork_db):
    tree = load_tree(llm_fork_db["fork"], llm_fork_db["path"])
    graph = parsed(generate_dot(tree))
    first, second, third = llm_fork_db["turns"]
    fork_first, fork_second = llm_fork_db["fork_turns"]
    edges = {
        (unquote_id(e.get_source()), unquote_id(e.get_destination()))
        for e in graph.get_edges()
    }
    assert edges == {
        (first, second),
        (second, third),
        (first, fork_first),
        (fork_first, fork_second),
    }
    assert graph.get_name() == quote_id(llm_fork_db["thread"])
