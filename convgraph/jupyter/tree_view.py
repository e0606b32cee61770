"""How conversation trees show themselves in Jupyter: as SVG from their
DOT export where Graphviz is installed and the tree is small, else as the
text tree in an HTML `<pre>`. One of the two at a time: notebook front ends
prefer HTML where a result offers both.
"""

from __future__ import annotations

import html
import shutil
import subprocess
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import networkx as nx

#: Trees with more nodes than this show as text: Graphviz's layout grows
#: much faster than the tree.
SVG_NODE_LIMIT = 400
#: How long `dot` may take before the text tree is shown instead.
DOT_TIMEOUT_SECONDS = 20
#: Lines of text tree that the HTML shows before it says how many are left.
HTML_LINE_LIMIT = 500


def graphviz_available() -> bool:
    """Whether Graphviz's `dot` program is on the PATH."""
    return shutil.which("dot") is not None


def draws_as_svg(tree: nx.DiGraph[str]) -> bool:
    """Whether the notebook shows `tree` as a Graphviz picture."""
    return 0 < tree.number_of_nodes() <= SVG_NODE_LIMIT and graphviz_available()


def tree_svg(tree: nx.DiGraph[str]) -> str:
    """The tree drawn by Graphviz from its DOT export, as SVG text. Raises
    `RuntimeError` where `dot` is missing, fails or times out."""
    from convgraph.export.dot import generate_dot, svg_references_fixed

    if not graphviz_available():
        raise RuntimeError("Graphviz's dot is not installed")
    source = "\n".join(generate_dot(tree)) + "\n"
    try:
        done = subprocess.run(
            ["dot", "-Tsvg"],
            input=source.encode("utf-8"),
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
    """The text tree, escaped, in an HTML `<pre>` under the tree's id and
    name; past `line_limit` lines, how many nodes are left out."""
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
    """The SVG a notebook shows for `tree`, or None where it shows the text
    tree instead (IPython then shows what else is offered)."""
    if not draws_as_svg(tree):
        return None
    try:
        return tree_svg(tree)
    except RuntimeError:
        return None


def shown_html(tree: nx.DiGraph[str]) -> str | None:
    """The text tree a notebook shows for `tree`, or None where it shows
    the SVG instead."""
    if draws_as_svg(tree):
        return None
    return tree_text_html(tree)
