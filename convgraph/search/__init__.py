"""Full-text search: its index, stamps, documents, text rules, syntax, query."""

from convgraph.search.query import Hit, search

__all__ = ["Hit", "search"]
