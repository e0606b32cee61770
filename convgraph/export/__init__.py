"""Exporters: conversation trees as DOT, GraphML, JSON, Mermaid and HTML, and
the forest's tables as a Parquet dataset (`parquet`, for Dask and Spark).

One module per format, each with networkx's readwrite verbs:
`generate_<format>(graphs, ...)` yields the text line by line,
`write_<format>(graphs, path_or_file, ...)` writes it, and `read_<format>`
reads it back where the format round-trips (GraphML, both JSON shapes, HTML).
`graphs` is one conversation DiGraph from `convgraph.model.forest` or an iterable
of them (a forest).

`FORMATS` maps each format's name, as `convgraph export --format` takes it,
to its functions; a new format is one more entry. No module here imports
networkx or pydot at import time, so the command line can list the formats
and stay fast.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from convgraph.export.chat_jsonl import generate_chat_jsonl, write_chat_jsonl
from convgraph.export.common import ExportError
from convgraph.export.dot import generate_dot, to_pydot, write_dot
from convgraph.export.graphml import generate_graphml, read_graphml, write_graphml
from convgraph.export.html import generate_html, read_html, write_html
from convgraph.export.json import generate_json, read_json, write_json
from convgraph.export.markdown import generate_markdown, write_markdown
from convgraph.export.mermaid import generate_mermaid, write_mermaid
from convgraph.export.parquet import write_parquet
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
    options
        The keyword options that `generate` and `write` take (`rankdir`).
    tables
        True for a format of the forest's tables rather than its graphs:
        `write(forest, directory, force=...)` writes a folder (Parquet), and
        `generate` is None.
    """

    generate: Callable[..., object] | None
    write: Callable[..., object]
    read: Callable[..., list] | None
    options: frozenset[str] = frozenset()
    tables: bool = False


FORMATS: dict[str, ExportFormat] = {
    "dot": ExportFormat(generate_dot, write_dot, None, frozenset({"rankdir"})),
    "graphml": ExportFormat(generate_graphml, write_graphml, read_graphml),
    "json": ExportFormat(generate_json, write_json, read_json),
    "tree-json": ExportFormat(generate_tree_json, write_tree_json, read_tree_json),
    "mermaid": ExportFormat(
        generate_mermaid, write_mermaid, None, frozenset({"rankdir"})
    ),
    "html": ExportFormat(generate_html, write_html, read_html, frozenset({"rankdir"})),
    "parquet": ExportFormat(None, write_parquet, None, tables=True),
    "markdown": ExportFormat(generate_markdown, write_markdown, None),
    "chat-jsonl": ExportFormat(
        generate_chat_jsonl, write_chat_jsonl, None, frozenset({"paths"})
    ),
}

__all__ = [
    "FORMATS",
    "ExportError",
    "ExportFormat",
    "generate_chat_jsonl",
    "generate_dot",
    "generate_graphml",
    "generate_html",
    "generate_json",
    "generate_markdown",
    "generate_mermaid",
    "generate_tree_json",
    "read_graphml",
    "read_html",
    "read_json",
    "read_tree_json",
    "to_pydot",
    "write_chat_jsonl",
    "write_dot",
    "write_graphml",
    "write_html",
    "write_json",
    "write_markdown",
    "write_mermaid",
    "write_parquet",
    "write_tree_json",
]
