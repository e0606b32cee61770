"""The columnar read of a message store: turns, threads and messages as
columns; trees by pointer jumping up `forked_from`, hashes numbered as
integers, parents by `turn_parents_table`; the pipeline folds tool chains.

With `text`, texts are gathered on arrays too, only where every part is a
text with its words (others need `message_parts`). The answer is the row
reader's exactly; a cycle of messages or forks raises `NotColumnar`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from convgraph import parts as kinds
from convgraph.contract import INTEGER_ATTRIBUTES, PARTS, TOOL_CALLS
from convgraph.sources.llm.columnar.arrays import (
    ids_at,
    in_log_order,
    nodes_frame,
    object_array,
)
from convgraph.sources.llm.columnar.calls import CALL_COLUMNS, turn_calls
from convgraph.sources.llm.columnar.numbering import numbered
from convgraph.sources.llm.columnar.reader import (
    ID,
    INTEGER,
    TEXT,
    ArrowReader,
    NotColumnar,
    _empty,
)
from convgraph.sources.llm.message_chains import (
    OTHER,
    ROLE_CODE,
    TOOL,
    USER,
    TooLong,
    own_messages_table,
)
from convgraph.sources.llm.runs import RUN, TOOL_NAMES
from convgraph.sources.llm.turn_parents import first_two

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    import pyarrow as pa

    from convgraph.sources.llm.snapshot import Snapshot

TABLES = ("threads", "turns", "messages", "parts")

SCAN_ROWS = 200_000

#: "plain" is 1 for a text part with its words, the only kind read here.
TEXT_COLUMNS = {
    "text_hash": ("message_hash", TEXT),
    "text_position": ("position", INTEGER),
    "words": ("text", TEXT),
    "plain": ("(type = 'text' and text is not null)", INTEGER),
}

ROLE_NAMES = {USER: kinds.USER, TOOL: kinds.TOOL, OTHER: kinds.ASSISTANT}


def read_store(
    reader: ArrowReader, snapshot: Snapshot, text: bool = False
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The pipeline's input of a message store without legacy rows (every
    turn, tool chains unfolded) and the trees' names."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    from convgraph.links.pointer_jumping import reaches_root, root_pointers
    from convgraph.sources.llm.message_store import SOURCE
    from convgraph.sources.llm.turn_parents import turn_parents_table

    threads = reader.table(
        "threads",
        {
            "id": ("id", ID),
            "name": ("name", TEXT),
            "forked_from": ("forked_from", TEXT),
        },
        snapshot,
        key="id",
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
        key="id",
    )
    messages = reader.table(
        "messages",
        {
            "hash": ("hash", ID),
            "parent_hash": ("parent_hash", TEXT),
            "role": (ROLE_CODE, INTEGER),
            **(
                {"system": ("(cast(role as text) = 'system')", INTEGER)} if text else {}
            ),
        },
        snapshot,
        key="hash",
    )
    if not len(turns["id"]):
        raise NotColumnar("no turns")
    # Without texts or calls, `parts` is only counted.
    parts = (
        reader.table("parts", CALL_COLUMNS | (TEXT_COLUMNS if text else {}), snapshot)
        if text or has_tool_calls(reader, snapshot)
        else _empty(CALL_COLUMNS)
    )
    if text and not all_plain(parts.pop("plain")):
        raise NotColumnar("parts other than text with its words")
    snapshot.report("linking the nodes", 0, None)

    # Rows are nearly always in log order already (llm appends): check first.
    if not in_log_order(turns["datetime_utc"], turns["id"])[0]:
        order = pc.sort_indices(
            pa.table(
                {"key": pc.fill_null(turns["datetime_utc"], ""), "id": turns["id"]}
            ),
            [("key", "ascending"), ("id", "ascending")],
        )
        turns = {name: values.take(order) for name, values in turns.items()}

    roles = np.asarray(pc.fill_null(messages.pop("role"), OTHER).to_numpy(), np.int64)
    system = messages.pop("system", None)
    message_count = len(messages["hash"])
    part_hashes = [parts.pop("call_hash")]
    if text:
        part_hashes.append(parts.pop("text_hash"))
    parent_rows, start_rows, tip_rows, *part_rows = message_numbers(
        messages, turns, *part_hashes
    )
    call_rows = part_rows[0]
    del messages, part_hashes

    # A cycle of forks is the row reader's to name and report.
    thread_ids = threads["id"]
    in_table = len(thread_ids)
    ids = (thread_ids, threads["forked_from"], turns["conversation_id"])
    thread_count, (fork_codes, thread_codes) = numbered(*ids)
    fork_rows = np.where(fork_codes < in_table, fork_codes, -1)
    if not reaches_root(fork_rows).all():
        raise NotColumnar("a cycle of forks")
    root_rows = root_pointers(fork_rows)[0]
    # A tree is its original thread's row, or a thread not in the table.
    known = thread_codes < in_table
    tree_numbers = thread_codes.copy()
    tree_numbers[known] = root_rows[thread_codes[known]]
    thread_names = turns.pop("conversation_id")
    conversations = first_seen(thread_codes, thread_names)
    tree_ids = first_seen(tree_numbers, thread_names, thread_ids)
    del thread_names, tree_numbers

    fork_up = np.concatenate(
        [fork_codes, np.full(thread_count - in_table, -1, np.int64)]
    )
    if not reaches_root(parent_rows).all():
        raise NotColumnar("a cycle of messages")
    try:
        calls, carries, tool_names = turn_calls(
            parent_rows, roles, start_rows, tip_rows, call_rows, parts, message_count
        )
    except TooLong:
        raise NotColumnar("a turn of very many messages") from None
    parents = turn_parents_table(
        tree_ids.codes.astype(np.int64),
        parent_rows,
        start_rows,
        tip_rows,
        thread_codes,
        fork_up,
    )
    turn_parts = None
    if text:
        texts, turn_parts = turn_texts(
            parent_rows,
            roles,
            system,
            start_rows,
            tip_rows,
            part_rows[1],
            parts,
            message_count,
        )
        turns |= texts
    del parent_rows, part_rows, parts
    del start_rows, tip_rows, thread_codes, roles
    node_ids = turns.pop("id")
    parent_ids = ids_at(node_ids, parents)
    turns["conversation_id"] = conversations
    nodes = nodes_frame(node_ids, tree_ids, parent_ids, parents, turns, SOURCE)
    if turn_parts is not None:
        nodes[PARTS] = pd.Series(turn_parts, dtype=object)
    nodes[TOOL_CALLS] = pd.arrays.IntegerArray(calls, np.zeros(len(calls), bool))
    nodes[RUN] = carries
    nodes[TOOL_NAMES] = tool_names
    is_original = pa.array(root_rows == np.arange(len(root_rows)))
    names = dict(
        zip(
            pc.filter(thread_ids, is_original).to_pylist(),
            pc.filter(threads["name"], is_original).to_pylist(),
            strict=True,
        )
    )
    return nodes, names


def first_seen(
    numbers: np.ndarray,
    names: pa.ChunkedArray,
    thread_ids: pa.ChunkedArray | None = None,
) -> pd.Categorical:
    """Rows numbered by `numbers` as a categorical in first-seen order, as
    `arrays.category` makes it: a number below `len(thread_ids)` names that
    thread, any other the name of its first row."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    codes, uniques = pd.factorize(numbers)
    first = np.zeros(len(uniques), np.int64)
    first[codes[::-1]] = np.arange(len(codes) - 1, -1, -1)
    values = names.take(pa.array(first))
    if thread_ids is not None and len(thread_ids):
        in_table = uniques < len(thread_ids)
        values = pc.if_else(
            pa.array(in_table),
            thread_ids.take(pa.array(np.where(in_table, uniques, 0))),
            values,
        )
    return pd.Categorical.from_codes(codes, pd.Index(object_array(values)))


def message_numbers(
    messages: dict[str, pa.ChunkedArray],
    turns: dict[str, pa.ChunkedArray],
    *part_hashes: pa.ChunkedArray,
) -> list[np.ndarray]:
    """Row numbers of each message's parent, each turn's input and tip, and
    each part's message (unknown hashes past the messages); the hash
    columns are popped, being only memory once numbered."""
    import numpy as np

    keys = messages.pop("hash")
    others = [messages.pop("parent_hash"), turns.pop("start"), turns.pop("tip")]
    message_count, numbers = numbered(keys, *others, *part_hashes)
    numbers[0] = np.concatenate(
        [numbers[0], np.full(message_count - len(keys), -1, np.int64)]
    )
    return numbers


def has_tool_calls(reader: ArrowReader, snapshot: Snapshot) -> bool:
    """Whether `parts` holds a tool call, counted in SQLite per `SCAN_ROWS`;
    where none, the rows are `counted` as a read would."""
    last_rowid = snapshot.bounds["parts"]
    first_rowid = reader.one("select min(rowid) from parts")[0]
    if last_rowid is None or first_rowid is None:
        snapshot.counted("parts", 0)
        return False
    count = 0
    for start in range(first_rowid - 1, last_rowid, SCAN_ROWS):
        rows, calls = reader.one(
            "select count(*), count(case when type = 'tool_call' then 1 end)"
            f" from parts where rowid > {start}"
            f" and rowid <= {min(start + SCAN_ROWS, last_rowid)}"
        )
        if calls:
            return True
        count += rows
    snapshot.counted("parts", count)
    return False


def all_plain(plain: pa.ChunkedArray) -> bool:
    """Whether every part row is a text with its words."""
    import pyarrow.compute as pc

    return not len(plain) or (plain.null_count == 0 and pc.min(plain).as_py() == 1)


def turn_texts(
    parent_rows: np.ndarray,
    roles: np.ndarray,
    system: pa.ChunkedArray | None,
    start_rows: np.ndarray,
    tip_rows: np.ndarray,
    text_rows: np.ndarray,
    parts: dict[str, pa.ChunkedArray],
    message_count: int,
) -> tuple[dict[str, pa.Array], np.ndarray]:
    """Each turn's prompt, response and system texts, and its parts (None
    when plain): `message_chains.add_texts` and `system_of` on arrays.
    Arguments as `turn_calls`; `parts` columns are popped as used."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from convgraph.links.pointer_jumping import nearest_marked

    # Message m's text parts, in the row reader's order, are `words` rows
    # `part_rows[offsets[m]:offsets[m + 1]]`; "" at the end for none.
    chunks = parts.pop("words").cast(pa.large_string()).chunks
    words = pa.chunked_array(
        [*chunks, pa.array([""], pa.large_string())], pa.large_string()
    ).combine_chunks()
    del chunks
    nothing = len(words) - 1
    position = parts.pop("text_position")
    has_position = pc.is_valid(position).to_numpy(zero_copy_only=False)
    position = pc.fill_null(position, 0).to_numpy(zero_copy_only=False)
    rows = np.flatnonzero((text_rows >= 0) & (text_rows < message_count))
    owners = text_rows[rows]
    order = np.lexsort((rows, position[rows], has_position[rows], owners))
    del position, has_position
    part_rows = rows[order]
    counts = np.bincount(owners, minlength=message_count)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    del rows, owners, order

    in_walk, out_walk = own_messages_table(
        parent_rows, roles, start_rows, tip_rows, message_count
    )
    steps = [*reversed(in_walk), *reversed(out_walk)]
    turn_count = len(start_rows)
    taken = [np.flatnonzero(step >= 0) for step in steps]
    turn_of = np.concatenate([np.zeros(0, np.int64), *taken])
    message_of = np.concatenate(
        [
            np.zeros(0, np.int64),
            *(step[at] for step, at in zip(steps, taken, strict=True)),
        ]
    )
    is_input = np.concatenate(
        [np.zeros(0, bool)]
        + [np.full(len(at), index < len(in_walk)) for index, at in enumerate(taken)]
    )
    order = np.argsort(turn_of, kind="stable")
    turn_of, message_of, is_input = turn_of[order], message_of[order], is_input[order]
    del steps, taken, order

    def joined(turns: np.ndarray, messages: np.ndarray) -> pa.Array:
        """These messages' words joined per turn (`turns` ascending)."""
        sizes = counts[messages]
        per_turn = np.bincount(turns, weights=sizes, minlength=turn_count)
        flat = np.repeat(offsets[messages] - (np.cumsum(sizes) - sizes), sizes)
        wanted = part_rows[flat + np.arange(len(flat))]
        if per_turn.max(initial=0) <= 1:
            chosen = np.full(turn_count, nothing, np.int64)
            chosen[np.repeat(turns, sizes)] = wanted
            return words.take(pa.array(chosen))
        bounds = np.concatenate([[0], np.cumsum(per_turn)]).astype(np.int64)
        return pc.binary_join(
            pa.LargeListArray.from_arrays(
                pa.array(bounds), words.take(pa.array(wanted))
            ),
            pa.scalar("", pa.large_string()),
        )

    kind = roles[np.minimum(message_of, message_count - 1)]
    prompt = is_input & (kind == USER)
    texts = {
        "prompt": joined(turn_of[prompt], message_of[prompt]),
        "response": joined(turn_of[~is_input], message_of[~is_input]),
        "system": pa.nulls(turn_count, pa.large_string()),
    }
    del prompt
    if system is not None and len(system) and pc.max(system).as_py() == 1:
        marked = np.zeros(len(parent_rows), bool)
        marked[:message_count] = pc.fill_null(system, 0).to_numpy() == 1
        nearest = nearest_marked(parent_rows, marked)
        found = np.where(start_rows >= 0, nearest[np.maximum(start_rows, 0)], -1)
        has_words = found >= 0
        has_words[has_words] = counts[found[has_words]] > 0
        told = np.flatnonzero(has_words)
        texts["system"] = pc.if_else(
            pa.array(has_words),
            joined(told, found[told]),
            pa.scalar(None, pa.large_string()),
        )

    # Plain (`parts.is_plain`): the first two parts of a turn tell.
    sizes = counts[message_of]
    total = np.bincount(turn_of, weights=sizes, minlength=turn_count)
    filled = np.flatnonzero(sizes > 0)
    first, second, _ = first_two(turn_of[filled], filled, turn_count)
    first_kind = np.where(first >= 0, kind[np.maximum(first, 0)], -1)
    second_kind = np.where(second >= 0, kind[np.maximum(second, 0)], -1)
    single = (first >= 0) & (sizes[np.maximum(first, 0)] == 1)
    plain = (
        (total == 0)
        | ((total == 1) & (first_kind != TOOL))
        | ((total == 2) & single & (first_kind == USER) & (second_kind == OTHER))
    )
    turn_parts = np.full(turn_count, None, dtype=object)
    odd = np.flatnonzero(~plain)
    if len(odd):
        starts = np.searchsorted(turn_of, odd)
        ends = np.searchsorted(turn_of, odd, side="right")
        for turn, start, end in zip(odd.tolist(), starts, ends, strict=True):
            found_parts = []
            for step in range(start, end):
                row = int(message_of[step])
                role = ROLE_NAMES[int(kind[step])]
                found_parts += [
                    kinds.text(role, text)
                    for text in words.take(
                        pa.array(part_rows[offsets[row] : offsets[row + 1]])
                    ).to_pylist()
                ]
            turn_parts[turn] = None if kinds.is_plain(found_parts) else found_parts
    return texts, turn_parts
