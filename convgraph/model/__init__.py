"""The model: a conversation as a tree, the forest as tables.

`tree` holds `ConversationTree` (the networkx DiGraph every tree is built as)
and the tree operations; `forest` reads a source into trees (`load_tree`,
`load_path`, ...) or into the node and edge tables (`Forest`); `marks` adds
the branch attributes (the active path, the user's notes) to either.
"""
