"""convgraph: llm's logged conversations as trees to explore, measure and share.

Read a `logs.db` of any generation with `load_tree` (one conversation, as a
networkx DiGraph) or `Forest.read` (every conversation, as pandas tables); the
tree operations are plain functions in `convgraph.tree`, beside
`ConversationTree`, the DiGraph every tree is built as.
"""

from convgraph.errors import (
    ConvgraphError,
    DatabaseError,
    UnknownConversation,
    UnknownNode,
)
from convgraph.forest import Forest, load_tree, load_tree_of_node
from convgraph.integrity import Problem
from convgraph.render import render_tree
from convgraph.sources import open_logs

__all__ = [
    "ConvgraphError",
    "DatabaseError",
    "Forest",
    "Problem",
    "UnknownConversation",
    "UnknownNode",
    "load_tree",
    "load_tree_of_node",
    "open_logs",
    "render_tree",
]
