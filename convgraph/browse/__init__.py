"""`convgraph browse`: walk conversation trees in the terminal (Textual).

`app` holds the application and its screens, `conversations` the
conversation list, `tree_view` the tree as drawn by `convgraph tree`,
`details` the pane beside it, and `listing` the cheap reads that fill the
list. Textual is imported only when this package is: the command line
imports it inside `convgraph browse`.
"""

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
