"""Exporters: conversation trees as DOT, GraphML, JSON, Mermaid, HTML and
more, and the forest's tables as a Parquet dataset."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from convgraph.errors import ExportError


@dataclass(frozen=True)
class ExportFormat:
    """One format of `FORMATS`: `convgraph.export.<module>`, whether it has
    `generate_<module>` and `read_<module>`, the keyword `options` it takes, and
    whether it writes the forest's `tables` (a folder; `generate` is None)."""

    module: str
    generates: bool = True
    reads: bool = False
    options: frozenset[str] = frozenset()
    tables: bool = False

    def _function(self, verb: str) -> Callable[..., Any]:
        exporter = importlib.import_module(f"{__name__}.{self.module}")
        function: Callable[..., Any] = getattr(exporter, f"{verb}_{self.module}")
        return function

    @property
    def generate(self) -> Callable[..., Any] | None:
        """`generate(graphs, **options)`: yields the lines; None for tables."""
        return self._function("generate") if self.generates else None

    @property
    def write(self) -> Callable[..., Any]:
        """`write(graphs, path_or_file, **options)`: writes them."""
        return self._function("write")

    @property
    def read(self) -> Callable[..., list[Any]] | None:
        """`read(path_or_file)`, the list of trees; None where it does not round-trip."""
        return self._function("read") if self.reads else None


FORMATS: dict[str, ExportFormat] = {
    "dot": ExportFormat("dot", options=frozenset({"rankdir"})),
    "graphml": ExportFormat("graphml", reads=True),
    "json": ExportFormat("json", reads=True),
    "tree-json": ExportFormat("tree_json", reads=True),
    "mermaid": ExportFormat("mermaid", options=frozenset({"rankdir"})),
    "html": ExportFormat("html", reads=True, options=frozenset({"rankdir"})),
    "parquet": ExportFormat("parquet", generates=False, tables=True),
    "markdown": ExportFormat("markdown", options=frozenset({"full"})),
    "chat-jsonl": ExportFormat("chat_jsonl", options=frozenset({"paths", "reasoning"})),
}

#: Where each function offered flat lives: the formats' own, and `to_pydot`.
_LAZY = {
    f"{verb}_{entry.module}": entry.module
    for entry in FORMATS.values()
    for verb, offered in (
        ("generate", entry.generates),
        ("write", True),
        ("read", entry.reads),
    )
    if offered
}
_LAZY["to_pydot"] = "dot"

# Spelled out for linters and readers; a test holds it to `_LAZY`.
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


def __getattr__(name: str) -> Any:
    if (module := _LAZY.get(name)) is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


if TYPE_CHECKING:
    from convgraph.export.chat_jsonl import generate_chat_jsonl, write_chat_jsonl
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
