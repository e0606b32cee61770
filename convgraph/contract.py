"""The node contract of DESIGN.md: which attributes every node carries.

One place for the names, so that the readers, the forest, the exporters and
the statistics agree on them without importing each other.
"""

#: Every node attribute, in the order tables and exports show them.
NODE_ATTRIBUTES = (
    "conversation_id",
    "prompt",
    "system",
    "response",
    "model",
    "datetime_utc",
    "input_tokens",
    "output_tokens",
    "duration_ms",
    "source",
)

#: The texts: most of a database's bytes, left out by `text=False` reads.
TEXT_ATTRIBUTES = ("prompt", "system", "response")

#: The usage figures, integers (or None): nullable Int64 in tables.
INTEGER_ATTRIBUTES = ("input_tokens", "output_tokens", "duration_ms")

#: The columns of `Forest.nodes`, in order: the node's id, the id of the tree
#: it belongs to, its (checked) parent's id, then the attributes.
NODE_COLUMNS = ("id", "tree_id", "parent_id", *NODE_ATTRIBUTES)

#: The columns of few distinct values, pandas categories in tables; the
#: others but the usage figures are object columns (str or None).
CATEGORY_COLUMNS = ("tree_id", "conversation_id", "model", "source")
