"""Conversation paths as chat JSONL: one fine-tuning example a line, the
records of `training.chat_examples` (schema: docs/training-schema.md)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING

from convgraph.export.common import Graphs, PathOrFile, as_graphs, write_lines
from convgraph.export.training import chat_examples

if TYPE_CHECKING:
    pass


def generate_chat_jsonl(
    graphs: Graphs, paths: str = "leaves", reasoning: bool = False
) -> Iterator[str]:
    """Yield one JSON line per example (`paths`: "leaves" or "active"; the
    model's reasoning kept where `reasoning`)."""
    for example in chat_examples(as_graphs(graphs), paths, reasoning):
        yield json.dumps(example, ensure_ascii=False)


def write_chat_jsonl(
    graphs: Graphs,
    path_or_file: PathOrFile,
    paths: str = "leaves",
    reasoning: bool = False,
) -> None:
    """Write `generate_chat_jsonl(...)` to a path or an open file."""
    write_lines(generate_chat_jsonl(graphs, paths, reasoning), path_or_file)
