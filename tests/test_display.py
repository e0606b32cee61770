"""Jupyter display: trees draw as SVG through Graphviz or as an escaped text
tree, forests show their statistics table, and the DiGraph subclass still
behaves as a DiGraph (pickles, copies, subgraphs)."""

from __future__ import annotations

import pickle
from pathlib import Path
from xml.etree import ElementTree

import networkx as nx
import pytest

from convgraph.jupyter import tree_view as display
from convgraph.jupyter.forest_view import forest_html
from convgraph.model.forest import Forest
from convgraph.model.loading import load_tree
from convgraph.model.tree import ConversationTree

SVG = "{http://www.w3.org/2000/svg}"
needs_dot = pytest.mark.skipif(
    not display.graphviz_available(), reason="Graphviz's dot is not installed"
)


@pytest.fixture
def complex_tree(seed_db: Path) -> ConversationTree:
    return load_tree("complex", seed_db)


def test_trees_from_the_core_are_conversation_trees(seed_db: Path) -> None:
    tree = load_tree("complex", seed_db)
    assert type(tree) is ConversationTree
    assert isinstance(tree, nx.DiGraph)
    forest = Forest.read(seed_db)
    assert all(type(graph) is ConversationTree for graph in forest.trees())
    assert (
        repr(tree)
        == "<ConversationTree 'complex' (prompt complex-root): 7 nodes, 1 root, 4 leaves>"
    )


@needs_dot
def test_a_tree_draws_as_svg_with_graphviz(complex_tree: ConversationTree) -> None:
    assert complex_tree.draws_as_svg()
    assert complex_tree._repr_html_() is None  # one picture, not two
    svg = complex_tree._repr_svg_()
    root = ElementTree.fromstring(svg)
    assert root.tag == f"{SVG}svg"

    def titles(kind: str) -> list[str]:
        return sorted(
            element.findtext(f"{SVG}title")
            for element in root.iter(f"{SVG}g")
            if kind in element.get("class", "").split()
        )

    assert titles("node") == [
        f"complex-{node}" for node in ["b", "c", "d", "e", "f", "g", "root"]
    ]
    assert titles("edge") == [
        "complex-b->complex-c",
        "complex-b->complex-d",
        "complex-e->complex-f",
        "complex-e->complex-g",
        "complex-root->complex-b",
        "complex-root->complex-e",
    ]
    texts = [element.text for element in root.iter(f"{SVG}text")]
    assert "» prompt complex-root" in texts  # the labels' prompt excerpts
    assert "« answer to prompt complex-g" in texts


def test_without_graphviz_a_tree_is_an_escaped_text_tree(
    complex_tree: ConversationTree, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(display.shutil, "which", lambda name: None)
    assert not complex_tree.draws_as_svg()
    assert complex_tree._repr_svg_() is None
    assert complex_tree._repr_html_() == (
        '<div class="convgraph-tree"><p><b>complex</b>  prompt complex-root</p><pre>'
        "complex-root  prompt complex-root\n"
        "├── complex-b  prompt complex-b\n"
        "│   ├── complex-c  prompt complex-c\n"
        "│   └── complex-d  prompt complex-d\n"
        "└── complex-e  prompt complex-e\n"
        "    ├── complex-f  prompt complex-f\n"
        "    └── complex-g  prompt complex-g</pre></div>"
    )


def test_text_tree_escapes_markup_and_stops_at_the_limit() -> None:
    tree = ConversationTree(tree_id="<c>", name="a & b")
    tree.add_node("r", prompt="<script>alert(1)</script>")
    for index in range(5):
        tree.add_node(f"n{index}", prompt="x")
        tree.add_edge("r", f"n{index}")
    text = tree.text_html(line_limit=3)
    assert "<script>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "<b>&lt;c&gt;</b>  a &amp; b" in text
    assert text.count("\n") == 2  # three lines of tree
    assert "<p>… 3 more nodes not shown</p>" in text


def test_a_big_tree_shows_as_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(display, "SVG_NODE_LIMIT", 3)
    tree = ConversationTree(nx.path_graph(4, create_using=nx.DiGraph), tree_id="c")
    assert not tree.draws_as_svg()
    assert tree._repr_svg_() is None
    assert tree._repr_html_().startswith('<div class="convgraph-tree">')


@needs_dot
def test_when_dot_fails_no_picture_is_offered(
    complex_tree: ConversationTree, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(display, "DOT_TIMEOUT_SECONDS", 1e-9)
    with pytest.raises(RuntimeError, match="too long"):
        complex_tree.to_svg()
    assert complex_tree._repr_svg_() is None


def test_the_subclass_pickles_copies_and_makes_subgraphs(
    complex_tree: ConversationTree,
) -> None:
    again = pickle.loads(pickle.dumps(complex_tree))
    assert type(again) is ConversationTree
    assert list(again.nodes(data=True)) == list(complex_tree.nodes(data=True))
    assert list(again.edges) == list(complex_tree.edges)
    assert again.graph == complex_tree.graph

    part = complex_tree.subgraph(["complex-root", "complex-b", "complex-c"]).copy()
    assert type(part) is ConversationTree
    assert sorted(part.edges) == [
        ("complex-b", "complex-c"),
        ("complex-root", "complex-b"),
    ]
    part.add_node("new")  # a copy is not frozen
    assert "new" not in complex_tree
    assert type(complex_tree.copy()) is ConversationTree
    assert type(complex_tree.reverse()) is ConversationTree
    assert type(nx.relabel_nodes(complex_tree, str.upper)) is ConversationTree
    assert list(nx.topological_sort(complex_tree))[0] == "complex-root"
    assert type(complex_tree.to_undirected()) is nx.Graph

    from convgraph.model import tree as operations

    sub = operations.subtree(complex_tree, "complex-e")
    assert type(sub) is ConversationTree
    # Sorted: networkx's subgraph keeps the nodes in set order, not log order.
    assert sorted(operations.leaves(sub)) == ["complex-f", "complex-g"]


def test_a_forest_shows_its_statistics_table(seed_db: Path) -> None:
    import pandas as pd

    forest = Forest.read(seed_db, text=False)
    shown = forest._repr_html_()
    assert shown == forest_html(forest)
    assert shown.startswith(
        '<div class="convgraph-forest"><p>&lt;Forest: 20 nodes in 4 conversations,'
        " 0 problems&gt;</p>"
    )
    (table,) = pd.read_html(__import__("io").StringIO(shown))
    assert table["tree_id"].tolist() == [
        "linear",
        "branch",
        "complex",
        "multiple-roots",
    ]
    assert table["nodes"].tolist() == [4, 3, 7, 6]
    assert table["branching_factor_avg"].tolist() == [1.0, 2.0, 2.0, 1.2]
    assert table["models"].tolist() == ["echo"] * 4


def test_a_long_forest_table_is_cut_in_the_middle(tmp_path: Path) -> None:
    import io

    import pandas as pd

    from tests.databases import add_response, legacy_database

    conn = legacy_database(tmp_path / "many.db")
    for index in range(30):
        add_response(conn, f"r{index:02d}", f"c{index:02d}", "hello")
    conn.commit()
    conn.close()
    forest = Forest.read(tmp_path / "many.db", text=False)
    (table,) = pd.read_html(io.StringIO(forest_html(forest, row_limit=10)))
    ids = table["tree_id"].tolist()
    assert ids[:5] == ["c00", "c01", "c02", "c03", "c04"]
    assert ids[-5:] == ["c25", "c26", "c27", "c28", "c29"]
    assert len(ids) == 11  # five, the "..." row, five
