"""`convgraph.open(path)`: one handle on a file of conversations.

In the spirit of sqlite-utils' `Database(path)`: the file is opened once
(read-only, whatever wrote it: llm's `logs.db` of any generation, a chat
export, coding agents' sessions), and what convgraph answers about it hangs
off the handle: one tree (`tree`, reading only that tree), the whole forest
as tables (`forest`), the statistics (`stats`) and a search of every branch
(`search`). The functions the handle calls (`convgraph.load_tree`,
`convgraph.Forest.read`, `convgraph.analysis.search.search`) keep working
on their own; the handle only saves opening the file again for each.

Examples
--------
>>> import convgraph
>>> with convgraph.open("examples/logs.db") as logs:
...     tree = logs.tree("01jb1haiku")
...     table = logs.stats()
>>> tree
<ConversationTree '01jb1haiku000000000000000' (Autumn haiku): 3 nodes, 1 root, 2 leaves>
>>> table.loc[table["tree_id"] == "01jb1haiku000000000000000", "leaves"].item()
2
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from convgraph.errors import UnknownConversation, UnknownNode
from convgraph.sources import Source, open_logs
from convgraph.sources.source import NODE, ProgressCallback

if TYPE_CHECKING:
    import pandas as pd

    from convgraph.model.filters import TreeFilter
    from convgraph.model.forest import Forest
    from convgraph.model.tree import ConversationTree
    from convgraph.search import Hit


class Logs:
    """A file of conversations, open read-only (`convgraph.open`).

    Attributes
    ----------
    source : Source
        The reader of the file (`convgraph.sources.open_logs`).
    """

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.source: Source = open_logs(path)

    def __enter__(self) -> Logs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Let go of the file."""
        self.source.close()

    def __repr__(self) -> str:
        return f"<convgraph.Logs {self.source.path}>"

    def tree_ids(self) -> list[str]:
        """Every conversation tree's id, in the order of its first node."""
        return self.source.tree_ids()

    def tree(self, id: str) -> ConversationTree:
        """The tree a conversation id or a node id names (whole, or a unique
        prefix of 4 characters or more), reading only that tree.

        Raises
        ------
        UnknownConversation, AmbiguousId
        """
        from convgraph.model.loading import load_tree, load_tree_of_node

        try:
            kind, whole = self.source.resolve(id)
        except UnknownNode:  # neither a node nor a conversation
            raise UnknownConversation(id) from None
        if kind == NODE:
            return load_tree_of_node(whole, self.source)
        return load_tree(whole, self.source)

    def trees(self, ids: Iterable[str] = ()) -> Iterator[ConversationTree]:
        """The trees these conversation ids name, each once; every tree when
        none (`convgraph.model.loading.load_trees`)."""
        from convgraph.model.loading import load_trees

        return load_trees(ids, self.source)

    def forest(
        self,
        text: bool = True,
        trees: Iterable[str] | None = None,
        where: TreeFilter | None = None,
        progress: ProgressCallback | None = None,
        texts: Collection[str] | None = None,
    ) -> Forest:
        """Every tree as tables (`convgraph.Forest.read`: `text`, `texts`
        and `progress` as there), or only the trees named; with `where`,
        only the trees a time, model or source filter keeps."""
        from convgraph.model.filters import select_trees
        from convgraph.model.forest import Forest

        forest = Forest.read(self.source, text, trees, progress, texts)
        return select_trees(forest, where) if where is not None else forest

    def stats(self, where: TreeFilter | None = None) -> pd.DataFrame:
        """The statistics of every tree, one row each
        (`convgraph.analysis.stats.conversation_table`), read without the
        texts."""
        from convgraph.analysis.stats import conversation_table

        return conversation_table(self.forest(text=False, where=where))

    def search(self, query: str, **options: Any) -> list[Hit]:
        """The nodes of every branch that match `query`, best first
        (`convgraph.analysis.search.search`: `limit`, `abandoned`, `where`
        and the rest as there)."""
        from convgraph.search import search

        return search(self.source, query, **options)


def open(path: str | os.PathLike[str] | None = None) -> Logs:
    """Open a file of conversations read-only: llm's `logs.db` (its own
    when `path` is None), a ChatGPT, Claude.ai or Open WebUI export, or
    coding agents' sessions.

    Raises
    ------
    DatabaseError
        The file is missing, or is none of these.
    """
    return Logs(path)
