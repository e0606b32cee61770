"""Showing trees to people as text: the text tree (`text_tree`) and a branch
as a transcript (`transcript`). Cutting text and making it safe for a
terminal is `convgraph.text`, at the bottom layer, since every layer shows
some; Jupyter's pictures are `convgraph.jupyter`, beside the other user
interfaces.
"""
