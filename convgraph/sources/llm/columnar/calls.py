"""A message store's tool calls on arrays, the row reader's counts for every
turn at once: a turn's calls are the `tool_call` parts of its own messages
(`message_chains.own_messages_table`); it carries on a run where its input
ends at a tool message."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from convgraph.sources.llm.columnar.reader import INTEGER, TEXT
from convgraph.sources.llm.message_chains import TOOL, own_messages_table

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa


#: NULL for every part but a call: cheap to read.
CALL_COLUMNS = {
    out: (f"case when type = 'tool_call' then {column} end", types)
    for out, column, types in (
        ("call_hash", "message_hash", TEXT),
        ("position", "position", INTEGER),
        ("tool_name", "tool_name", TEXT),
        ("payload", "payload", TEXT),
    )
}


def turn_calls(
    parent_rows: np.ndarray,
    roles: np.ndarray,
    start_rows: np.ndarray,
    tip_rows: np.ndarray,
    call_rows: np.ndarray,
    parts: dict[str, pa.ChunkedArray],
    message_count: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each turn's call count, whether it carries on a run, and its tools'
    names (None without calls). Rows of `parent_rows` past `message_count`
    are unknown hashes; `call_rows` gives each `parts` row's message."""
    import numpy as np

    from convgraph.sources.llm.message_parts import call_name

    calls = np.bincount(call_rows[call_rows >= 0], minlength=len(parent_rows))
    in_walk, out_walk = own_messages_table(
        parent_rows, roles, start_rows, tip_rows, message_count
    )
    counts = np.zeros(len(start_rows), np.int64)
    for rows in (*out_walk, *in_walk):
        taken = rows >= 0
        counts[taken] += calls[rows[taken]]
    carries = np.zeros(len(start_rows), bool)
    known = (start_rows >= 0) & (start_rows < message_count)
    carries[known] = roles[start_rows[known]] == TOOL

    names = np.full(len(start_rows), None, dtype=object)
    made = np.flatnonzero(counts)
    if len(made):
        by_message = _names_by_message(call_rows, parts, call_name)
        for turn in made.tolist():
            # The row reader's order: input oldest first, then appended.
            walked = [int(rows[turn]) for rows in reversed(in_walk)]
            walked += [int(rows[turn]) for rows in reversed(out_walk)]
            names[turn] = [
                name for row in walked if row >= 0 for name in by_message.get(row, ())
            ]
    return counts, carries, names


def _names_by_message(
    call_rows: np.ndarray, parts: dict[str, pa.ChunkedArray], call_name: Any
) -> dict[int, list[str | None]]:
    """Each message's tool names in position order, NULL first as in SQLite."""
    import numpy as np

    rows = np.flatnonzero(call_rows >= 0)
    positions = parts["position"].take(rows).to_pylist()
    tool_names = parts["tool_name"].take(rows).to_pylist()
    payloads = parts["payload"].take(rows).to_pylist()
    found: dict[int, list[tuple[tuple[bool, int, int], str | None]]] = {}
    for index, row in enumerate(rows.tolist()):
        position = positions[index]
        found.setdefault(int(call_rows[row]), []).append(
            (
                (position is not None, position or 0, row),
                call_name(tool_names[index], payloads[index]),
            )
        )
    return {
        message: [name for _, name in sorted(calls, key=lambda call: call[0])]
        for message, calls in found.items()
    }
