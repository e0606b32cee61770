"""`convgraph browse`: walk conversation trees in the terminal (imports Textual)."""

from convgraph.browse.app import BrowseApp, run, write_refusal
from convgraph.browse.listing import (
    ConversationRow,
    count_conversations,
    list_conversations,
    structure_figures,
)

__all__ = [
    "BrowseApp",
    "ConversationRow",
    "count_conversations",
    "list_conversations",
    "run",
    "structure_figures",
    "write_refusal",
]
