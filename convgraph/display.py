"""How conversation trees and forests show themselves in Jupyter.

`ConversationTree` is the DiGraph that `convgraph.forest.build_graph` makes: a
plain `networkx.DiGraph` in every way, plus IPython's rich display. Where
Graphviz's `dot` is installed, a tree is drawn as SVG from the DOT that
`convgraph.export.dot` writes (models coloured, branch points and leaves
marked); elsewhere, or for a tree too big to lay out quickly, it is the text
tree of `convgraph.render`, escaped into an HTML `<pre>`. Only one of the two
is offered at a time, because notebook front ends prefer HTML over SVG when a
result has both. `forest_html` is the statistics table a `Forest` shows.
"""

from __future__ import annotations

import html
import shutil
import subprocess
from typing import TYPE_CHECKING

import networkx as nx

if TYPE_CHECKING:
    from convgraph.forest import Forest

#: Trees with more nodes than this show as text: Graphviz lays out a few
#: hundred boxes in well under a second, thousands take minutes.
SVG_NODE_LIMIT = 400
#: How long `dot` may take before the text tree is shown instead.
DOT_TIMEOUT_SECONDS = 20
#: Lines of text tree that the HTML shows before it says how many are left.
HTML_LINE_LIMIT = 500
#: Conversations that a forest's table shows (the first and last halves).
FOREST_ROW_LIMIT = 60


def graphviz_available() -> bool:
    """Whether Graphviz's `dot` program is on the PATH."""
    return shutil.which("dot") is not None


class ConversationTree(nx.DiGraph):
    """A conversation tree (edges parent -> child) that draws itself in Jupyter.

    Everything of `networkx.DiGraph` works as before: it pickles, copies and
    makes subgraphs of its own class. The display methods are IPython's:
    `_repr_svg_` (Graphviz) or `_repr_html_` (text tree), never both.

    Examples
    --------
    >>> tree = ConversationTree(conversation_id="c1", name="Trees")
    >>> tree.add_node("r", prompt="What is a tree?")
    >>> tree.add_node("a", prompt="And <b>bold</b>?")
    >>> tree.add_node("b", prompt="Or a forest?")
    >>> tree.add_edges_from([("r", "a"), ("r", "b")])
    >>> tree
    <ConversationTree 'c1' (Trees): 3 nodes, 1 root, 2 leaves>
    >>> print(tree.text_html())
    <div class="convgraph-tree"><p><b>c1</b>  Trees</p><pre>r  What is a tree?
    ├── a  And &lt;b&gt;bold&lt;/b&gt;?
    └── b  Or a forest?</pre></div>
    """

    def __repr__(self) -> str:
        roots = sum(1 for _, degree in self.in_degree() if degree == 0)
        leaves = sum(1 for _, degree in self.out_degree() if degree == 0)
        name = self.graph.get("name")
        named = f" ({name})" if name else ""
        return (
            f"<{type(self).__name__} {self.graph.get('conversation_id')!r}{named}:"
            f" {_count(self.number_of_nodes(), 'node')}, {_count(roots, 'root')},"
            f" {_count(leaves, 'leaf', 'leaves')}>"
        )

    def draws_as_svg(self) -> bool:
        """Whether the notebook shows this tree as a Graphviz picture (dot is
        installed and the tree is small enough) rather than as text."""
        return 0 < self.number_of_nodes() <= SVG_NODE_LIMIT and graphviz_available()

    def to_svg(self) -> str:
        """The tree drawn by Graphviz, as SVG text.

        Raises
        ------
        RuntimeError
            `dot` is missing, failed, or took longer than DOT_TIMEOUT_SECONDS.
        """
        from convgraph.export.dot import generate_dot

        if not graphviz_available():
            raise RuntimeError("Graphviz's dot is not installed")
        source = "\n".join(generate_dot(self)) + "\n"
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
        return done.stdout.decode("utf-8")

    def text_html(self, line_limit: int = HTML_LINE_LIMIT) -> str:
        """The text tree of `convgraph.render`, escaped, in an HTML `<pre>`,
        under the conversation's id and name."""
        from itertools import islice

        from convgraph.render import generate_tree_lines

        lines = list(islice(generate_tree_lines(self), line_limit + 1))
        more = ""
        if len(lines) > line_limit:
            lines = lines[:line_limit]
            more = (
                f"<p>… {self.number_of_nodes() - line_limit:,} more nodes not shown</p>"
            )
        title = f"<b>{html.escape(str(self.graph.get('conversation_id')))}</b>"
        if self.graph.get("name"):
            title += f"  {html.escape(str(self.graph['name']))}"
        body = html.escape("\n".join(lines))
        return (
            f'<div class="convgraph-tree"><p>{title}</p><pre>{body}</pre>{more}</div>'
        )

    def _repr_svg_(self) -> str | None:
        if not self.draws_as_svg():
            return None
        try:
            return self.to_svg()
        except RuntimeError:
            # IPython shows the plain repr when no rich form is offered.
            return None

    def _repr_html_(self) -> str | None:
        if self.draws_as_svg():
            return None
        return self.text_html()


def forest_html(forest: Forest, row_limit: int = FOREST_ROW_LIMIT) -> str:
    """A forest as HTML: its size, then the statistics table of
    `convgraph.stats.conversation_table` (models joined by commas; a long
    table shows its first and last rows)."""
    import pandas as pd

    from convgraph.stats import conversation_table

    table = conversation_table(forest)
    table["models"] = [", ".join(models) for models in table["models"]]
    heading = html.escape(repr(forest))
    with pd.option_context(
        "display.max_rows", row_limit, "display.min_rows", row_limit
    ):
        body = table.to_html(
            index=False, na_rep="", max_rows=row_limit, float_format="{:.2f}".format
        )
    return f'<div class="convgraph-forest"><p>{heading}</p>{body}</div>'


def _count(number: int, singular: str, plural: str | None = None) -> str:
    return f"{number} {singular if number == 1 else plural or singular + 's'}"
