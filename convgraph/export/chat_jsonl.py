"""Conversation paths as chat JSONL: one fine-tuning example a line.

Each line is one JSON object, `{"messages": [{"role", "content"}, ...],
"conversation_id", "leaf_id"}` (see `convgraph.export.training.chat_examples`):
by default one per root-to-leaf path, so every branch is an example; with
`paths="active"` one per conversation, along its active path. The format
that fine-tuning APIs and `datasets.load_dataset("json", ...)` read: tool
calls as an assistant message's `tool_calls` (`{"id", "type": "function",
"function": {"name", "arguments"}}`, the arguments a JSON string), each
result a `{"role": "tool", "tool_call_id", "content"}` message; the model's
reasoning left out unless asked for (`reasoning=True`, the assistant
message's `reasoning_content`). docs/training-schema.md holds the schema.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from convgraph.export.common import PathOrFile, as_graphs, read_text, write_lines
from convgraph.export.training import chat_examples

if TYPE_CHECKING:
    import networkx as nx


def generate_chat_jsonl(
    graphs: nx.DiGraph[Any] | Iterable[nx.DiGraph[Any]],
    paths: str = "leaves",
    reasoning: bool = False,
) -> Iterator[str]:
    """Yield one JSON line per example (`paths`: "leaves" or "active"; the
    model's reasoning kept where `reasoning`)."""
    for example in chat_examples(as_graphs(graphs), paths, reasoning):
        yield json.dumps(example, ensure_ascii=False)


def write_chat_jsonl(
    graphs: nx.DiGraph[Any] | Iterable[nx.DiGraph[Any]],
    path_or_file: PathOrFile,
    paths: str = "leaves",
    reasoning: bool = False,
) -> None:
    """Write `generate_chat_jsonl(graphs, paths, reasoning)` to a path or an
    open file."""
    write_lines(generate_chat_jsonl(graphs, paths, reasoning), path_or_file)


def read_chat_jsonl(path_or_file: PathOrFile) -> list[dict[str, Any]]:
    """The examples of a chat JSONL file, one dict per line."""
    return [json.loads(line) for line in read_text(path_or_file).splitlines() if line]
