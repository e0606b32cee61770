"""How trees and forests show themselves in Jupyter, registered by class name
so the model imports none of this."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import networkx as nx

    from convgraph.model.forest import Forest

#: The classes drawn, by module and name: IPython matches them unimported.
TREE_CLASS = ("convgraph.model.tree", "ConversationTree")
FOREST_CLASS = ("convgraph.model.forest", "Forest")

SVG, HTML = "image/svg+xml", "text/html"


def tree_svg_shown(tree: nx.DiGraph[str]) -> str | None:
    from convgraph.jupyter.tree_view import shown_svg

    return shown_svg(tree)


def tree_html_shown(tree: nx.DiGraph[str]) -> str | None:
    from convgraph.jupyter.tree_view import shown_html

    return shown_html(tree)


def forest_html_shown(forest: Forest) -> str:
    from convgraph.jupyter.forest_view import forest_html

    return forest_html(forest)


def register(display_formatter: Any) -> None:
    """Register the pictures with an IPython `DisplayFormatter`."""
    formatters = display_formatter.formatters
    formatters[SVG].for_type_by_name(*TREE_CLASS, tree_svg_shown)
    formatters[HTML].for_type_by_name(*TREE_CLASS, tree_html_shown)
    formatters[HTML].for_type_by_name(*FOREST_CLASS, forest_html_shown)


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext convgraph.jupyter`: `register` with this shell."""
    register(ipython.display_formatter)


def register_with_running_ipython() -> bool:
    """`register` with this process's IPython, if any (True then)."""
    import sys

    get_ipython = getattr(sys.modules.get("IPython"), "get_ipython", None)
    shell = get_ipython() if get_ipython is not None else None
    if shell is None or not hasattr(shell, "display_formatter"):
        return False
    register(shell.display_formatter)
    return True
