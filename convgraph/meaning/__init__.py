"""Conversations by meaning: texts embedded by an llm embedding model (WordLlama,
offline, by default), stored once, searched exactly."""

from convgraph.meaning.nearest import nearest, similar
from convgraph.meaning.store import NodeVectors, embed_texts, node_vectors

#: The embedding model when none is named (`convgraph.meaning.model.WordLlama`).
DEFAULT_MODEL = "wordllama"

__all__ = [
    "DEFAULT_MODEL",
    "NodeVectors",
    "embed_texts",
    "nearest",
    "node_vectors",
    "similar",
]
