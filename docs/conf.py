"""Sphinx's configuration of convgraph's documentation.

The pages are Markdown read by MyST, as llm's, sqlite-utils' and Datasette's
are; the command-line reference is generated from the click commands
themselves (sphinx-click) and the Python reference from the numpydoc
docstrings (autodoc with napoleon), so neither can drift from the code.
`.ci/run` builds it with warnings as errors:

    python -m sphinx -W -n -b html docs docs/_build/html
"""

from __future__ import annotations

from importlib.metadata import version as installed_version

project = "convgraph"
author = "convgraph's maintainers"
copyright = "convgraph's maintainers, Apache-2.0"
release = installed_version("convgraph")
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx_click",
]

source_suffix = {".md": "markdown"}
root_doc = "index"
# Not pages: the build's output, and the script that draws browse.svg.
exclude_patterns = ["_build", "**/*.py"]

# Headings get the anchors GitHub gives them, so that `design.md#the-node-
# contract` lands on the same heading on GitHub and in the built site (the
# code and the tests point at docs/design.md#... anchors).
myst_heading_anchors = 4
myst_enable_extensions = ["deflist"]

# The docstrings write code in single backquotes, as Markdown does.
default_role = "literal"
napoleon_numpy_docstring = True
napoleon_google_docstring = False
autodoc_member_order = "bysource"
autodoc_typehints = "signature"

# -n checks every cross-reference. The types of the libraries convgraph
# builds on (pandas, numpy, networkx, the standard library) would resolve
# only through intersphinx, which fetches their inventories over the
# network; the build must work offline, so those names stay plain text.
# Aliases of convgraph's own that the reference does not document as pages
# are named here too.
nitpick_ignore_regex = [
    (
        "py:class",
        r"(pd|pandas|np|numpy|nx|networkx|pa|pyarrow|pydot|tantivy|click"
        r"|collections\.abc|typing|os|pathlib|datetime|sqlite3|io)\..*",
    ),
    ("py:class", r"Path|PathLike|DataFrame|DiGraph|Series|Callable|Iterator"),
    ("py:class", r"(list|dict|tuple|set)\[.*"),
    # convgraph's type aliases, and names its signatures take from imports
    # made for type checkers only, which autodoc sees as bare words.
    (
        "py:class",
        r"(convgraph\.[\w.]+\.)?(PathOrFile|Graphs|Tree|ProgressCallback|TreeStream"
        r"|TreeRows|PageLinks|NodeNote|Costs)|Source|Problem|Hit|TreeFilter"
        r"|Summaries|Transcript",
    ),
    # Request records of the fan-out's live display, which no reader calls.
    ("py:class", r"convgraph\.store\.fanout\.\w+"),
    # store.branch and store.fan_out say why BranchError is raised in the
    # middle of their Raises line ("BranchError (llm missing)").
    ("py:exc", r"llm missing"),
]


def escape_help(app: object, ctx: object, lines: list[str]) -> None:
    """sphinx-click hands a command's help to reStructuredText, where a
    lone `*` (search's help names it as a word) starts emphasis; the help
    means the character."""
    lines[:] = [line.replace("*", "\\*") for line in lines]


def setup(app: object) -> None:
    for part in ("description", "options", "arguments", "epilog"):
        app.connect(f"sphinx-click-process-{part}", escape_help)  # type: ignore[attr-defined]


html_theme = "furo"
html_title = "convgraph"
html_static_path: list[str] = []
