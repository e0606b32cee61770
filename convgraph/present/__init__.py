"""Showing trees to people: text cut and made safe for a terminal (`text`),
the text tree (`text_tree`), a branch as a transcript (`transcript`), and how
trees and forests show themselves in Jupyter (`notebook`).
"""
