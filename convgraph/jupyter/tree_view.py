"""How trees show in Jupyter: SVG through Graphviz when installed and the tree
is small, else the text tree in HTML (front ends prefer HTML if both)."""

from __future__ import annotations

import html
import shutil
import subprocess
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import networkx as nx

#: More nodes than this show as text: Graphviz's layout grows too fast.
SVG_NODE_LIMIT = 400
DOT_TIMEOUT_SECONDS = 20
HTML_LINE_LIMIT = 500


def graphviz_available() -> bool:
    return shutil.which("dot") is not None


def draws_as_svg(tree: nx.DiGraph[str]) -> bool:
    return 0 < tree.number_of_nodes() <= SVG_NODE_LIMIT and graphviz_available()


def tree_svg(tree: nx.DiGraph[str]) -> str:
    """The tree as SVG from `dot`. Raises RuntimeError where `dot` fails."""
    from convgraph.export.dot import generate_dot, svg_references_fixed

    if not graphviz_available():
        raise RuntimeError("Graphviz's dot is not installed")
    try:
        done = subprocess.run(
            ["dot", "-Tsvg"],
            input=("\n".join(generate_dot(tree)) + "\n").encode("utf-8"),
            capture_output=True,
            timeout=DOT_TIMEOUT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise RuntimeError("dot took too long to lay the tree out") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip()
        raise RuntimeError(f"dot failed: {message}")
    return svg_references_fixed(done.stdout.decode("utf-8"))


def tree_text_html(tree: nx.DiGraph[str], line_limit: int = HTML_LINE_LIMIT) -> str:
    """The text tree, escaped, in an HTML `<pre>`, cut at `line_limit` lines."""
    from itertools import islice

    from convgraph.present.text_tree import generate_tree_lines

    lines = list(islice(generate_tree_lines(tree, marks=True), line_limit + 1))
    more = ""
    if len(lines) > line_limit:
        lines = lines[:line_limit]
        more = f"<p>… {tree.number_of_nodes() - line_limit:,} more nodes not shown</p>"
    title = f"<b>{html.escape(str(tree.graph.get('tree_id')))}</b>"
    if tree.graph.get("name"):
        title += f"  {html.escape(str(tree.graph['name']))}"
    body = html.escape("\n".join(lines))
    return f'<div class="convgraph-tree"><p>{title}</p><pre>{body}</pre>{more}</div>'


def shown_svg(tree: nx.DiGraph[str]) -> str | None:
    """The SVG a notebook shows for `tree`, or None for the text tree."""
    if not draws_as_svg(tree):
        return None
    try:
        return tree_svg(tree)
    except RuntimeError:
        return None


def shown_html(tree: nx.DiGraph[str]) -> str | None:
    """The text tree a notebook shows for `tree`, or None for the SVG."""
    return None if draws_as_svg(tree) else tree_text_html(tree)
