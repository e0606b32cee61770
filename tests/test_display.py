"""Jupyter display: trees draw as SVG through Graphviz or as an escaped text
tree, forests show their statistics table, and the DiGraph subclass still
behaves as a DiGraph (pickles, copies, subgraphs).

The pictures are asked of IPython's own display formatter, as a notebook's
kernel asks: `convgraph.jupyter.register` puts them in by the classes'
names, and importing convgraph inside a running IPython does it alone
(tests/test_notebook.py runs a real kernel)."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import networkx as nx
import pytest
from IPython.core.formatters import DisplayFormatter

from convgraph.jupyter import register
from convgraph.jupyter import tree_view as display
from convgraph.jupyter.forest_view import forest_html
from convgraph.model.loading import load_tree
from convgraph.model.tree import ConversationTree
from tests.helpers import read_forest

SVG = "{http://www.w3.org/2000/svg}"
needs_dot = pytest.mark.skipif(
    not display.graphviz_available(), reason="Graphviz's dot is not installed"
)


@pytest.fixture
def complex_tree(seed_db: Path) -> ConversationTree:
    return load_tree("complex", seed_db)


@pytest.fixture(scope="module")
def formatter() -> DisplayFormatter:
    """IPython's display formatter, the pictures registered."""
    found = DisplayFormatter()
    register(found)
    return found


def shown(formatter: DisplayFormatter, value: object) -> dict[str, str]:
    """What a notebook shows of `value`, by MIME type."""
    return formatter.format(value)[0]


def test_trees_from_the_core_are_conversation_trees(seed_db: Path) -> None:
    tree = load_tree("complex", seed_db)
    assert type(tree) is ConversationTree
    assert isinstance(tree, nx.DiGraph)
    forest = read_forest(seed_db)
    assert all(type(graph) is ConversationTree for graph in forest.trees())
    assert (
        repr(tree)
        == "<ConversationTree 'complex' (prompt complex-root): 7 nodes, 1 root, 4 leaves>"
    )


@needs_dot
def test_a_tree_draws_as_svg_with_graphviz(
    complex_tree: ConversationTree, formatter: DisplayFormatter
) -> None:
    assert display.draws_as_svg(complex_tree)
    pictures = shown(formatter, complex_tree)
    # One picture, not two (front ends prefer HTML where both are offered).
    assert sorted(pictures) == ["image/svg+xml", "text/plain"]
    assert pictures["text/plain"] == (
        "<ConversationTree 'complex' (prompt complex-root): 7 nodes, 1 root, 4 leaves>"
    )
    svg = pictures["image/svg+xml"]
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
    complex_tree: ConversationTree,
    formatter: DisplayFormatter,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(display.shutil, "which", lambda name: None)
    assert not display.draws_as_svg(complex_tree)
    pictures = shown(formatter, complex_tree)
    assert "image/svg+xml" not in pictures
    assert pictures["text/html"] == (
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
    text = display.tree_text_html(tree, line_limit=3)
    assert "<script>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "<b>&lt;c&gt;</b>  a &amp; b" in text
    assert text.count("\n") == 2  # three lines of tree
    assert "<p>… 3 more nodes not shown</p>" in text


def test_a_big_tree_shows_as_text(
    formatter: DisplayFormatter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(display, "SVG_NODE_LIMIT", 3)
    tree = ConversationTree(nx.path_graph(4, create_using=nx.DiGraph), tree_id="c")
    assert not display.draws_as_svg(tree)
    pictures = shown(formatter, tree)
    assert "image/svg+xml" not in pictures
    assert pictures["text/html"].startswith('<div class="convgraph-tree">')


@needs_dot
def test_when_dot_fails_no_picture_is_offered(
    complex_tree: ConversationTree,
    formatter: DisplayFormatter,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(display, "DOT_TIMEOUT_SECONDS", 1e-9)
    with pytest.raises(RuntimeError, match="too long"):
        display.tree_svg(complex_tree)
    # IPython shows the plain repr when no picture is offered.
    assert sorted(shown(formatter, complex_tree)) == ["text/plain"]


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


def test_a_forest_shows_its_statistics_table(
    seed_db: Path, formatter: DisplayFormatter
) -> None:
    import pandas as pd

    forest = read_forest(seed_db, text=False)
    page = shown(formatter, forest)["text/html"]
    assert page == forest_html(forest)
    assert page.startswith(
        '<div class="convgraph-forest"><p>&lt;Forest: 20 nodes in 4 conversations,'
        " 0 problems&gt;</p>"
    )
    (table,) = pd.read_html(__import__("io").StringIO(page))
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
    forest = read_forest(tmp_path / "many.db", text=False)
    (table,) = pd.read_html(io.StringIO(forest_html(forest, row_limit=10)))
    ids = table["tree_id"].tolist()
    assert ids[:5] == ["c00", "c01", "c02", "c03", "c04"]
    assert ids[-5:] == ["c25", "c26", "c27", "c28", "c29"]
    assert len(ids) == 11  # five, the "..." row, five


def test_importing_convgraph_in_a_running_ipython_registers_the_pictures() -> None:
    """In a fresh interpreter: IPython's shell first (as in a kernel), then
    convgraph's model alone; its objects show as pictures, and the model
    never imported the display."""
    code = (
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "shell = InteractiveShell.instance()\n"
        "from convgraph.model.tree import ConversationTree\n"
        "import sys\n"
        "print(sorted(m for m in sys.modules if m.startswith('convgraph.jupyter')))\n"
        "tree = ConversationTree.from_edges([('r', 'a')], tree_id='c1')\n"
        "shown = shell.display_formatter.format(tree)[0]\n"
        "print(sorted(set(shown) - {'text/plain'}))\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    picture = "['image/svg+xml']" if display.graphviz_available() else "['text/html']"
    assert found.stdout.splitlines() == ["['convgraph.jupyter']", picture]


def test_outside_ipython_importing_convgraph_loads_no_display() -> None:
    code = (
        "import sys, convgraph\n"
        "from convgraph.model.tree import ConversationTree\n"
        "print(sorted(m for m in sys.modules"
        " if m.startswith(('IPython', 'convgraph.jupyter'))))\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert found.stdout == "[]\n"
