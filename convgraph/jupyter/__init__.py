"""How trees and forests show themselves in Jupyter: a tree as a picture
(its DOT drawing as SVG where Graphviz is installed, else the text tree)
(`tree_view`), a forest as its conversations table (`forest_view`).

This is a user interface beside the command line and the terminal browser,
so it stands at their layer and may use the exporters; the model's
`_repr_*` methods import it only when Jupyter asks an object for its picture.
"""
