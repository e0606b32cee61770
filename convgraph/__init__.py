"""convgraph: llm's logged conversations as trees to explore, measure and share.

`convgraph.open(path)` opens a `logs.db` of any generation, a chat export or coding
agents' sessions, and answers for one tree (`logs.tree(id)`, a networkx DiGraph), the
forest as pandas tables (`logs.forest()`), the statistics (`logs.stats()`) or a search
(`logs.search(...)`). The tree operations and statistics tables are offered flat,
imported on first use (PEP 562), as networkx offers its algorithms.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

from convgraph.errors import (
    ConvgraphError,
    DatabaseError,
    UnknownConversation,
    UnknownNode,
)

#: Where each name offered flat lives.
_LAZY = {
    "open": "convgraph.logs",
    "Logs": "convgraph.logs",
    "Problem": "convgraph.links.integrity",
    "Forest": "convgraph.model.forest",
    "render_tree": "convgraph.present.text_tree",
    **dict.fromkeys(
        (
            "ConversationTree",
            "children",
            "parent",
            "siblings",
            "path",
            "ancestors",
            "descendants",
            "subtree",
            "depth",
            "depths",
            "roots",
            "leaves",
            "branch_points",
            "tree_size",
            "branching_factor",
            "branches",
            "node_totals",
        ),
        "convgraph.model.tree",
    ),
    **dict.fromkeys(
        ("summary", "node_table", "edge_table", "conversation_table", "branch_table"),
        "convgraph.analysis.stats",
    ),
    "diff": "convgraph.analysis.branch_diff",
    "compare": "convgraph.analysis.compare",
    "similarity": "convgraph.analysis.similarity",
}

# Spelled out for type checkers and linters; a test holds it to `_LAZY`.
__all__ = [
    "ConversationTree",
    "ConvgraphError",
    "DatabaseError",
    "Forest",
    "Logs",
    "Problem",
    "UnknownConversation",
    "UnknownNode",
    "ancestors",
    "branch_points",
    "branch_table",
    "branches",
    "branching_factor",
    "children",
    "compare",
    "conversation_table",
    "depth",
    "depths",
    "descendants",
    "diff",
    "edge_table",
    "leaves",
    "node_table",
    "node_totals",
    "open",
    "parent",
    "path",
    "render_tree",
    "roots",
    "siblings",
    "similarity",
    "subtree",
    "summary",
    "tree_size",
]


def __getattr__(name: str) -> Any:
    if (module := _LAZY.get(name)) is None:
        raise AttributeError(f"module 'convgraph' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


# Inside a notebook's kernel, trees and forests show as pictures: the
# display registers itself with IPython by the classes' names (the model
# imports no display code). Outside IPython this costs a dictionary look-up.
if "IPython" in sys.modules:
    from convgraph.jupyter import register_with_running_ipython

    register_with_running_ipython()
    del register_with_running_ipython


if TYPE_CHECKING:
    from convgraph.analysis.branch_diff import diff
    from convgraph.analysis.compare import compare
    from convgraph.analysis.similarity import similarity
    from convgraph.analysis.stats import (
        branch_table,
        conversation_table,
        edge_table,
        node_table,
        summary,
    )
    from convgraph.links.integrity import Problem
    from convgraph.logs import Logs, open
    from convgraph.model.forest import Forest
    from convgraph.model.tree import (
        ConversationTree,
        ancestors,
        branch_points,
        branches,
        branching_factor,
        children,
        depth,
        depths,
        descendants,
        leaves,
        node_totals,
        parent,
        path,
        roots,
        siblings,
        subtree,
        tree_size,
    )
    from convgraph.present.text_tree import render_tree
