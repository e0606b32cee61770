"""The columnar read of a message store: turns, threads and messages as
columns, each turn's parent found on integers.

A file with tool calls (a part of type `tool_call`, or a message of the
role `tool`) is left to the row reader, which counts them and folds each
tool chain into one node (`runs`).

Each thread's tree is found by pointer jumping up `forked_from`; message
hashes and thread ids are numbered as integers (`numbering`); each turn's
parent turn is then found for every turn at once by
`turn_parents.turn_parent_rows`, the table form of the message store's
parent rule, whose turn-by-turn form the row reader uses. Only structure
and usage: the texts, which need the messages' parts and fragments, are
the row reader's. The answer is `MessageStoreReader.read_all`'s, exactly;
a cycle of messages or of forks (hostile data, which the row reader
reports) raises `NotColumnar`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from convgraph.contract import INTEGER_ATTRIBUTES
from convgraph.sources.columnar.arrays import (
    dictionary_codes,
    in_log_order,
    nodes_frame,
    object_array,
)
from convgraph.sources.columnar.numbering import numbered, numbered_by_bytes
from convgraph.sources.columnar.reader import (
    ID,
    INTEGER,
    TEXT,
    ArrowReader,
    NotColumnar,
)

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    from convgraph.sources.snapshot import Snapshot

#: The tables `read_store` reads.
TABLES = ("threads", "turns", "messages", "parts")


def read_store(
    reader: ArrowReader, snapshot: Snapshot
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The turns of a message store without legacy rows, structure and usage
    only, up to `snapshot`'s bounds (of `TABLES`), with the message store's
    parent rule (`turn_parents.turn_parent_rows`)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from convgraph.links.pointer_jumping import reaches_root, root_pointers
    from convgraph.sources.message_store import SOURCE
    from convgraph.sources.turn_parents import turn_parent_rows

    threads = reader.table(
        "threads",
        {
            "id": ("id", ID),
            "name": ("name", TEXT),
            "forked_from": ("forked_from", TEXT),
        },
        snapshot,
    )
    turns = reader.table(
        "turns",
        {
            "id": ("id", ID),
            "conversation_id": ("thread_id", ID),
            "start": ("parent_message_hash", TEXT),
            "tip": ("tip_message_hash", TEXT),
            "model": ("model", TEXT),
            "datetime_utc": ("datetime_utc", TEXT),
            **{name: (name, INTEGER) for name in INTEGER_ATTRIBUTES},
        },
        snapshot,
    )
    messages = reader.table(
        "messages",
        {
            "hash": ("hash", ID),
            "parent_hash": ("parent_hash", TEXT),
            "tool": ("role = 'tool'", INTEGER),
        },
        snapshot,
    )
    if not len(turns["id"]):
        raise NotColumnar("no turns")
    # Tool calls to count, or a tool chain to fold into one node (`runs`):
    # the row reader's work, a call at a time.
    tool_calls = reader.table(
        "parts", {"tool_call": ("type = 'tool_call'", INTEGER)}, snapshot
    )["tool_call"]
    if _any(tool_calls) or _any(messages.pop("tool")):
        raise NotColumnar("tool calls")

    # Log order: the row reader's `order by coalesce(datetime_utc, ''), id`.
    # llm appends as it logs, so the rows nearly always are in it already:
    # checking costs a comparison, moving every column a second or so.
    if not in_log_order(turns["datetime_utc"], turns["id"])[0]:
        order = pc.sort_indices(
            pa.table(
                {"key": pc.fill_null(turns["datetime_utc"], ""), "id": turns["id"]}
            ),
            [("key", "ascending"), ("id", "ascending")],
        )
        turns = {name: values.take(order) for name, values in turns.items()}

    # Each thread's tree: up forked_from to a thread whose origin is not in
    # the table. A cycle of forks has no such thread: the row reader names
    # the tree by the cycle's smallest id and reports it.
    thread_ids = threads["id"]
    in_table = len(thread_ids)
    ids = (thread_ids, threads["forked_from"], turns["conversation_id"])
    thread_count, (fork_codes, thread_codes) = numbered_by_bytes(*ids) or numbered(*ids)
    fork_rows = np.where(fork_codes < in_table, fork_codes, -1)
    if not reaches_root(fork_rows).all():
        raise NotColumnar("a cycle of forks")
    root_rows = root_pointers(fork_rows)[0]
    turn_thread_rows = np.where(thread_codes < in_table, thread_codes, -1)
    tree_ids = turns["conversation_id"]
    if len(thread_ids):
        root_ids = thread_ids.take(pa.array(root_rows))
        tree_ids = pc.if_else(
            pa.array(turn_thread_rows >= 0),
            root_ids.take(pa.array(np.maximum(turn_thread_rows, 0))),
            tree_ids,
        )

    # Up the forks from any thread id (one not in the table ends the walk,
    # as `ParentWalk` over `forked_from` does).
    fork_up = np.concatenate(
        [fork_codes, np.full(thread_count - in_table, -1, np.int64)]
    )
    parent_rows, start_rows, tip_rows = message_numbers(messages, turns)
    del messages
    if not reaches_root(parent_rows).all():
        raise NotColumnar("a cycle of messages")
    parents = turn_parent_rows(
        dictionary_codes(tree_ids)[0],
        parent_rows,
        start_rows,
        tip_rows,
        thread_codes,
        fork_up,
    )
    node_ids = object_array(turns["id"])
    parent_ids = np.full(len(node_ids), None, dtype=object)
    has_parent = parents >= 0
    parent_ids[has_parent] = node_ids[parents[has_parent]]
    nodes = nodes_frame(node_ids, tree_ids, parent_ids, parents, turns, SOURCE)
    is_original = pa.array(root_rows == np.arange(len(root_rows)))
    names = dict(
        zip(
            pc.filter(thread_ids, is_original).to_pylist(),
            pc.filter(threads["name"], is_original).to_pylist(),
            strict=True,
        )
    )
    return nodes, names


def message_numbers(
    messages: dict[str, pa.ChunkedArray], turns: dict[str, pa.ChunkedArray]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every message numbered (its row), and the number of each message's
    parent and of each turn's input and tip (-1 for none). The hash columns
    are taken out of the tables: once numbered, they are only memory."""
    import numpy as np

    hashes = (
        messages.pop("hash"),
        messages.pop("parent_hash"),
        turns.pop("start"),
        turns.pop("tip"),
    )
    message_count, (parent_rows, start_rows, tip_rows) = numbered_by_bytes(
        *hashes
    ) or numbered(*hashes)
    # Hashes that name no message are rows past the messages, with no parent.
    parent_rows = np.concatenate(
        [parent_rows, np.full(message_count - len(hashes[0]), -1, np.int64)]
    )
    return parent_rows, start_rows, tip_rows


def _any(flags: pa.ChunkedArray) -> bool:
    """Whether any of these 0/1 flags (NULL: no) is 1."""
    import pyarrow.compute as pc

    return bool(len(flags)) and bool(pc.max(flags).as_py())
