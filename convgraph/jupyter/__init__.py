"""How trees and forests show themselves in Jupyter: a tree as a picture
(its DOT drawing as SVG where Graphviz is installed, else the text tree)
(`tree_view`), a forest as its conversations table (`forest_view`).

This is a user interface beside the command line and the terminal browser,
so it stands at their layer and may use the exporters. The model knows
nothing of it: the pictures are registered with IPython's display
formatters by the names of the classes they draw
(`for_type_by_name("convgraph.model.tree", "ConversationTree", ...)`), which
IPython looks up when it shows an object. `convgraph/__init__.py` registers
them when convgraph is imported inside a running IPython (a notebook's
kernel), so a notebook shows trees and forests with nothing more than its
imports; `%load_ext convgraph.jupyter` does the same in an IPython started
after convgraph was imported. Registering imports neither the model nor the
display modules: each printer imports its module when an object is first
shown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import networkx as nx

    from convgraph.model.forest import Forest

#: Where the classes drawn live, by name (IPython matches an object's class
#: and its bases by module and name, without importing them here).
TREE_CLASS = ("convgraph.model.tree", "ConversationTree")
FOREST_CLASS = ("convgraph.model.forest", "Forest")

#: The MIME types the pictures are offered as.
SVG, HTML = "image/svg+xml", "text/html"


def tree_svg_shown(tree: nx.DiGraph[str]) -> str | None:
    """The SVG a notebook shows for `tree`, or None where it shows the text
    tree instead (`convgraph.jupyter.tree_view.shown_svg`)."""
    from convgraph.jupyter.tree_view import shown_svg

    return shown_svg(tree)


def tree_html_shown(tree: nx.DiGraph[str]) -> str | None:
    """The HTML a notebook shows for `tree`, or None where it shows the SVG
    instead (`convgraph.jupyter.tree_view.shown_html`)."""
    from convgraph.jupyter.tree_view import shown_html

    return shown_html(tree)


def forest_html_shown(forest: Forest) -> str:
    """The HTML a notebook shows for `forest`: its statistics table
    (`convgraph.jupyter.forest_view.forest_html`)."""
    from convgraph.jupyter.forest_view import forest_html

    return forest_html(forest)


def register(display_formatter: Any) -> None:
    """Register the pictures with an IPython `DisplayFormatter` (a shell's
    `display_formatter`): a tree's SVG and HTML (one of them None at a
    time, since front ends prefer HTML where both are offered), a forest's
    HTML. Registering again replaces them.

    Examples
    --------
    >>> from IPython.core.formatters import DisplayFormatter
    >>> formatter = DisplayFormatter()
    >>> register(formatter)
    >>> from convgraph.model.tree import ConversationTree
    >>> shown, _ = formatter.format(ConversationTree(tree_id="c1"))
    >>> sorted(shown)
    ['text/html', 'text/plain']
    """
    formatters = display_formatter.formatters
    formatters[SVG].for_type_by_name(*TREE_CLASS, tree_svg_shown)
    formatters[HTML].for_type_by_name(*TREE_CLASS, tree_html_shown)
    formatters[HTML].for_type_by_name(*FOREST_CLASS, forest_html_shown)


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext convgraph.jupyter`: register the pictures with this shell
    (`register`)."""
    register(ipython.display_formatter)


def register_with_running_ipython() -> bool:
    """Register the pictures with the IPython this process runs, if it runs
    one (a notebook's kernel); True if it did. IPython is not imported
    where it is not loaded already, so a script that imports convgraph
    pays nothing.
    """
    import sys

    ipython = sys.modules.get("IPython")
    get_ipython = getattr(ipython, "get_ipython", None)
    shell = get_ipython() if get_ipython is not None else None
    if shell is None or not hasattr(shell, "display_formatter"):
        return False
    register(shell.display_formatter)
    return True
