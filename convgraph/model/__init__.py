"""The model: a conversation as a tree (`tree`), read one at a time
(`loading`) or as the forest's tables (`forest`), with branch marks (`marks`).
"""
