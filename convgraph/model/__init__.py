"""The model: a conversation as a tree, the forest as tables.

`tree` holds `ConversationTree` (the networkx DiGraph every tree is built as,
`ConversationTree.from_records`) and the tree operations; `loading` reads one
tree from a source without pandas (`load_tree`, `load_tree_of_node`,
`load_path`, ...); `forest` reads a whole source into the node and edge
tables (`Forest`); `marks` adds the branch attributes (the active path, the
user's notes) to a graph (`mark_tree`) or a table (`mark_tree_table`).
"""
