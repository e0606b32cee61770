"""Conversations by meaning: texts embedded by an llm embedding model (WordLlama,
offline, by default), stored once, searched exactly."""

from convgraph.meaning.nearest import nearest as nearest
from convgraph.meaning.nearest import similar as similar
from convgraph.meaning.store import NodeVectors as NodeVectors
from convgraph.meaning.store import Rows as Rows
from convgraph.meaning.store import embed_texts as embed_texts
from convgraph.meaning.store import node_vectors as node_vectors

DEFAULT_MODEL = "wordllama"
