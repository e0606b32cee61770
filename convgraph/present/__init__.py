"""Showing trees to people: the text tree (`text_tree`), a branch as a
transcript (`transcript`), and how trees and forests show themselves in
Jupyter (`notebook` for a tree, `forest_view` for a forest's table). Cutting text and making it safe for a terminal is
`convgraph.text`, at the bottom layer, since every layer shows some.
"""
