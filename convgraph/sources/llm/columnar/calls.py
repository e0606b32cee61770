"""Tool calls and tool chains of a message store, on arrays: the row reader's
counts (`message_store.MessageStoreReader`) for every turn at once.

A turn's tool calls are the `tool_call` parts of the messages of its run
step: the trailing user and tool messages of its input and the messages it
appended, up to its tip. Here each message's calls are counted from the
`parts` rows read as columns (only a call's row holds anything: the others
are NULLs, cheap to read), and every turn walks up from its tip and from its
input at once, one message a round for all turns, as far as the longest
walk (one or two messages in a file llm wrote; a walk longer than
`MAX_ROUNDS` leaves the file to the row reader). Only the few turns that
made calls have their tools' names listed, in Python, in the row reader's
order. A turn whose input is a `tool` message carries on the run of the turn
above it (`runs.RUN`); the run rule itself (`runs.fold_runs_table`) is the
row reader's, on the same table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from convgraph.sources.llm.columnar.reader import INTEGER, TEXT

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

#: A message's role as a number: user, tool, or anything else.
USER, TOOL, OTHER = 1, 2, 0
ROLE_CODE = (
    f"(case role when 'user' then {USER} when 'tool' then {TOOL} else {OTHER} end)"
)

#: The columns of `parts` read: a tool call's message, position, name
#: columns; NULL for every other part.
CALL_COLUMNS = {
    out: (f"case when type = 'tool_call' then {column} end", types)
    for out, column, types in (
        ("call_hash", "message_hash", TEXT),
        ("position", "position", INTEGER),
        ("tool_name", "tool_name", TEXT),
        ("payload", "payload", TEXT),
    )
}

#: The longest walk up from a turn's tip or input taken on arrays; a file
#: with longer ones (hand-made) is the row reader's.
MAX_ROUNDS = 64


class TooLong(Exception):
    """A turn's walk is longer than `MAX_ROUNDS` messages."""


def turn_calls(
    parent_rows: np.ndarray,
    roles: np.ndarray,
    start_rows: np.ndarray,
    tip_rows: np.ndarray,
    call_rows: np.ndarray,
    parts: dict[str, pa.ChunkedArray],
    message_count: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each turn's number of tool calls, whether it carries on a run, and
    its tools' names (a list, or None where it made no call).

    Parameters
    ----------
    parent_rows
        Each message's parent (-1: none); rows at or past `message_count`
        are hashes that name no message.
    roles
        Each message's `ROLE_CODE`.
    start_rows, tip_rows
        Each turn's input and tip message (-1: none).
    call_rows
        The message of each row of `parts` (-1: no tool call).
    parts
        The `CALL_COLUMNS` of those rows, in rowid order.
    """
    import numpy as np

    from convgraph.sources.llm.message_parts import call_name

    calls = np.bincount(call_rows[call_rows >= 0], minlength=len(parent_rows))
    input_role = np.zeros(len(parent_rows), bool)
    input_role[:message_count] = roles != OTHER
    # A message of the turn's run: below its input, up from its tip; and
    # the trailing user and tool messages of its input.
    out_walk = _walk(parent_rows, tip_rows, message_count, stop=start_rows)
    in_walk = _walk(parent_rows, start_rows, message_count, keep=input_role)
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
            # The row reader's order: the input's messages oldest first, then
            # the appended ones.
            walked = [int(rows[turn]) for rows in reversed(in_walk)]
            walked += [int(rows[turn]) for rows in reversed(out_walk)]
            names[turn] = [
                name for row in walked if row >= 0 for name in by_message.get(row, ())
            ]
    return counts, carries, names


def _walk(
    parent_rows: np.ndarray,
    starts: np.ndarray,
    message_count: int,
    stop: np.ndarray | None = None,
    keep: np.ndarray | None = None,
) -> list[np.ndarray]:
    """The messages up from each start, a round at a time: each round's
    message of every turn (-1 where its walk has ended). A walk ends at a
    hash that names no message, at the turn's `stop`, or at a message not
    in `keep`."""
    import numpy as np

    current = starts.copy()
    rounds: list[np.ndarray] = []
    while True:
        going = (current >= 0) & (current < message_count)
        if stop is not None:
            going &= current != stop
        if keep is not None:
            going[going] = keep[current[going]]
        if not going.any():
            return rounds
        if len(rounds) == MAX_ROUNDS:
            raise TooLong
        rounds.append(np.where(going, current, -1))
        current = np.full(len(current), -1)
        current[going] = parent_rows[rounds[-1][going]]


def _names_by_message(
    call_rows: np.ndarray, parts: dict[str, pa.ChunkedArray], call_name: Any
) -> dict[int, list[str | None]]:
    """Each message's tool calls' names, in position order (a missing
    position first, as SQLite sorts NULL; one position in rowid order)."""
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
