"""Full-text search of every node: the index kept in the user's cache
(`index`), the stamps that say whether it still holds its file's data
(`stamps`), its documents (`documents`), the text rules shared by texts
and queries (`text`), and the ranked search itself (`query`)."""

from convgraph.search.query import Hit, search

__all__ = ["Hit", "search"]
