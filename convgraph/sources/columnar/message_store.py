"""The columnar read of a message store: turns, threads and messages as
columns, each turn's parent found on integers.

Each turn's tool calls are counted on arrays too (`calls`), and each tool
chain folded into one node by the row reader's rule (`runs`).

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

from convgraph.contract import INTEGER_ATTRIBUTES, TOOL_CALLS
from convgraph.sources.columnar.arrays import (
    dictionary_codes,
    ids_at,
    in_log_order,
    nodes_frame,
)
from convgraph.sources.columnar.calls import (
    CALL_COLUMNS,
    OTHER,
    ROLE_CODE,
    TooLong,
    turn_calls,
)
from convgraph.sources.columnar.numbering import numbered, numbered_by_bytes
from convgraph.sources.columnar.reader import (
    ID,
    INTEGER,
    TEXT,
    ArrowReader,
    NotColumnar,
)
from convgraph.sources.runs import RUN, TOOL_NAMES, fold_run_frame

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    from convgraph.sources.snapshot import Snapshot

#: The tables `read_store` reads.
TABLES = ("threads", "turns", "messages", "parts")


def read_store(
    reader: ArrowReader, snapshot: Snapshot
) -> tuple[pd.DataFrame, dict[str, Any], dict[str, str]]:
    """The nodes of a message store without legacy rows, structure, usage
    and tool calls only, up to `snapshot`'s bounds (of `TABLES`), with the
    message store's parent rule (`turn_parents.turn_parent_rows`) and its
    tool chains folded (`runs.fold_run_frame`); the trees' names; and the
    node of each call inside a run."""
    import numpy as np
    import pandas as pd
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
            "role": (ROLE_CODE, INTEGER),
        },
        snapshot,
    )
    if not len(turns["id"]):
        raise NotColumnar("no turns")
    # Only a tool call's row of `parts` holds anything here.
    parts = reader.table("parts", CALL_COLUMNS, snapshot)
    snapshot.report("linking the nodes", 0, None)

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
    roles = np.asarray(pc.fill_null(messages.pop("role"), OTHER).to_numpy(), np.int64)
    message_count = len(messages["hash"])
    parent_rows, start_rows, tip_rows, call_rows = message_numbers(
        messages, turns, parts.pop("call_hash")
    )
    del messages
    if not reaches_root(parent_rows).all():
        raise NotColumnar("a cycle of messages")
    try:
        calls, carries, tool_names = turn_calls(
            parent_rows,
            roles,
            start_rows,
            tip_rows,
            call_rows,
            parts,
            message_count,
        )
    except TooLong:
        raise NotColumnar("a turn of very many messages") from None
    parents = turn_parent_rows(
        dictionary_codes(tree_ids)[0],
        parent_rows,
        start_rows,
        tip_rows,
        thread_codes,
        fork_up,
    )
    node_ids = turns.pop("id")
    parent_ids = ids_at(node_ids, parents)
    nodes = nodes_frame(node_ids, tree_ids, parent_ids, parents, turns, SOURCE)
    nodes[TOOL_CALLS] = pd.arrays.IntegerArray(calls, np.zeros(len(calls), bool))
    nodes[RUN] = carries
    nodes[TOOL_NAMES] = tool_names
    # A tool chain is one node: the row reader's rule, on this table.
    nodes, inner = fold_run_frame(nodes, text=False)
    is_original = pa.array(root_rows == np.arange(len(root_rows)))
    names = dict(
        zip(
            pc.filter(thread_ids, is_original).to_pylist(),
            pc.filter(threads["name"], is_original).to_pylist(),
            strict=True,
        )
    )
    return nodes, names, inner


def message_numbers(
    messages: dict[str, pa.ChunkedArray],
    turns: dict[str, pa.ChunkedArray],
    call_hashes: pa.ChunkedArray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every message numbered (its row), and the number of each message's
    parent, of each turn's input and tip, and of each tool call's message
    (-1 for none). The hash columns are taken out of the tables: once
    numbered, they are only memory."""
    import numpy as np

    hashes = (
        messages.pop("hash"),
        messages.pop("parent_hash"),
        turns.pop("start"),
        turns.pop("tip"),
        call_hashes,
    )
    message_count, (parent_rows, start_rows, tip_rows, call_rows) = numbered_by_bytes(
        *hashes
    ) or numbered(*hashes)
    # Hashes that name no message are rows past the messages, with no parent.
    parent_rows = np.concatenate(
        [parent_rows, np.full(message_count - len(hashes[0]), -1, np.int64)]
    )
    return parent_rows, start_rows, tip_rows, call_rows
