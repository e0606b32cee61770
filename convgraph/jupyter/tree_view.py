"""How conversation trees show themselves in Jupyter.

IPython asks the functions here for a `convgraph.model.tree.ConversationTree`'s
picture (`shown_svg`, `shown_html`, registered by name in
`convgraph.jupyter`), so the tree module imports neither the exporters nor
this module. Where Graphviz's `dot` is installed, a tree is drawn as SVG
from the DOT that `convgraph.export.dot` writes (models coloured, branch
points and leaves marked); elsewhere, or for a tree too big to lay out
quickly, it is the text tree of `convgraph.present.text_tree`, escaped into an
HTML `<pre>`. Only one of the two is offered at a time, because notebook
front ends prefer HTML over SVG when a result has both. A `Forest` shows its
statistics table (`convgraph.jupyter.forest_view`).
"""

from __future__ import annotations

import html
import shutil
import subprocess
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import networkx as nx

#: Trees with more nodes than this show as text: Graphviz lays out a few
#: hundred boxes in well under a second, thousands take minutes.
SVG_NODE_LIMIT = 400
#: How long `dot` may take before the text tree is shown instead.
DOT_TIMEOUT_SECONDS = 20
#: Lines of text tree that the HTML shows before it says how many are left.
HTML_LINE_LIMIT = 500


def graphviz_available() -> bool:
    """Whether Graphviz's `dot` program is on the PATH."""
    return shutil.which("dot") is not None


def draws_as_svg(tree: nx.DiGraph[str]) -> bool:
    """Whether the notebook shows `tree` as a Graphviz picture (dot is
    installed and the tree is small enough) rather than as text."""
    return 0 < tree.number_of_nodes() <= SVG_NODE_LIMIT and graphviz_available()


def tree_svg(tree: nx.DiGraph[str]) -> str:
    """The tree drawn by Graphviz from its DOT export, as SVG text.

    Raises
    ------
    RuntimeError
        `dot` is missing, failed, or took longer than DOT_TIMEOUT_SECONDS.
    """
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
    """The text tree of `convgraph.present.text_tree`, escaped, in an HTML `<pre>`,
    under the conversation's id and name; a tree longer than `line_limit`
    lines says how many nodes are left out."""
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
    """The SVG a notebook shows for `tree` (`tree_svg`), or None where it
    shows the text tree instead: Graphviz missing, the tree empty or too
    big (`draws_as_svg`), or `dot` failing or too slow (IPython then shows
    what else is offered)."""
    if not draws_as_svg(tree):
        return None
    try:
        return tree_svg(tree)
    except RuntimeError:
        return None


def shown_html(tree: nx.DiGraph[str]) -> str | None:
    """The text tree a notebook shows for `tree` (`tree_text_html`), or
    None where it shows the SVG instead (`draws_as_svg`): one picture, not
    two."""
    if draws_as_svg(tree):
        return None
    return tree_text_html(tree)
