"""Exporters: conversation trees as DOT, GraphML, JSON and Mermaid.

One module per format, each with networkx's readwrite verbs:
`generate_<format>(graphs, ...)` yields the text line by line,
`write_<format>(graphs, path_or_file, ...)` writes it, and `read_<format>`
reads it back where the format round-trips (GraphML and both JSON shapes).
`graphs` is one conversation DiGraph from `convgraph.forest` or an iterable
of them (a forest).

`FORMATS` maps each format's name, as `convgraph export --format` takes it,
to its functions; a new format is one more entry. No module here imports
networkx or pydot at import time, so the command line can list the formats
and stay fast.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from convgraph.export.common import ExportError
from convgraph.export.dot import generate_dot, to_pydot, write_dot
from convgraph.export.graphml import generate_graphml, read_graphml, write_graphml
from convgraph.export.html import generate_html, read_html, write_html
from convgraph.export.json import generate_json, read_json, write_json
from convgraph.export.mermaid import generate_mermaid, write_mermaid
from convgraph.export.tree_json import (
    generate_tree_json,
    read_tree_json,
    write_tree_json,
)


@dataclass(frozen=True)
class ExportFormat:
    """One format of `FORMATS`.

    Attributes
    ----------
    generate, write
        `generate(graphs, **options)` yields lines; `write(graphs,
        path_or_file, **options)` writes them.
    read
        `read(path_or_file) -> list of DiGraph`, or None where the format
        does not round-trip.
    suffix
        The file name suffix, with its dot.
    options
        The keyword options that `generate` and `write` take (`rankdir`).
    description
        One line for `--help`.
    """

    generate: Callable[..., object]
    write: Callable[..., None]
    read: Callable[..., list] | None
    suffix: str
    options: frozenset[str] = frozenset()
    description: str = ""


FORMATS: dict[str, ExportFormat] = {
    "dot": ExportFormat(
        generate_dot,
        write_dot,
        None,
        ".dot",
        frozenset({"rankdir"}),
        "Graphviz DOT, several conversations as clusters",
    ),
    "graphml": ExportFormat(
        generate_graphml,
        write_graphml,
        read_graphml,
        ".graphml",
        description="GraphML with typed keys, for Gephi, yEd and Cytoscape",
    ),
    "json": ExportFormat(
        generate_json,
        write_json,
        read_json,
        ".json",
        description="node-link JSON, networkx's convention",
    ),
    "tree-json": ExportFormat(
        generate_tree_json,
        write_tree_json,
        read_tree_json,
        ".json",
        description="nested JSON, the shape of D3's hierarchy",
    ),
    "mermaid": ExportFormat(
        generate_mermaid,
        write_mermaid,
        None,
        ".mmd",
        frozenset({"rankdir"}),
        "Mermaid flowchart, for GitHub Markdown",
    ),
    "html": ExportFormat(
        generate_html,
        write_html,
        read_html,
        ".html",
        frozenset({"rankdir"}),
        "one interactive page that works offline (TB or LR)",
    ),
}

__all__ = [
    "FORMATS",
    "ExportError",
    "ExportFormat",
    "generate_dot",
    "generate_graphml",
    "generate_json",
    "generate_mermaid",
    "generate_tree_json",
    "read_graphml",
    "read_json",
    "read_tree_json",
    "to_pydot",
    "write_dot",
    "write_graphml",
    "write_json",
    "write_mermaid",
    "write_tree_json",
]
