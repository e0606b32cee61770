"""The benchmark databases, built once and kept under `benchmarks/data/`.

Each file is named by its kind (legacy or message store), shape and size, and
by `BUILD_VERSION`, which changes whenever the builders change what they
write, so a stale file is never measured. A build goes to a temporary name
and is renamed when complete: an interrupted build leaves nothing behind.
This module also picks what the suite measures in each database: the middle
conversation, its root and its last node.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks import synthetic

DATA_DIR = Path(__file__).resolve().parent / "data"
BUILD_VERSION = 1
#: Responses per conversation in the linear and bushy shapes.
CONVERSATION_SIZE = 10
#: Responses per conversation in the deep shape: each one chain this deep.
DEEP_CHAIN = 10_000


def conversations_for(shape: str, size: int) -> int:
    """How many conversations a database of this shape and size holds:
    100,000 for a million responses in the linear and bushy shapes, and
    10,000-deep chains in the deep shape (one chain below 10,000)."""
    per = DEEP_CHAIN if shape == "deep" else CONVERSATION_SIZE
    return max(1, size // per)


def database_path(kind: str, shape: str, size: int, data_dir: Path = DATA_DIR) -> Path:
    return data_dir / f"{kind}-{shape}-{size}-v{BUILD_VERSION}.db"


def ensure(
    kind: str, shape: str, size: int, data_dir: Path = DATA_DIR, log=print
) -> Path:
    """The cached database of this kind, shape and size; built if missing.

    `kind` is ``"legacy"`` (llm 0.31's responses with parent_response_id),
    ``"store"`` (llm 0.36's message store) or ``"legacy-indexed"`` (the legacy
    file plus indexes on `conversation_id` and `parent_response_id`, which llm
    never creates: for the diagnosis of what an index would change).
    """
    path = database_path(kind, shape, size, data_dir)
    if path.exists():
        return path
    partial = path.with_suffix(".partial")
    started = time.perf_counter()
    conversations = conversations_for(shape, size)
    if kind == "legacy":
        synthetic.build_legacy(partial, size, conversations, shape)
    elif kind == "store":
        synthetic.build_message_store(partial, size, conversations, shape)
    elif kind == "legacy-indexed":
        source = ensure("legacy", shape, size, data_dir, log)
        shutil.copyfile(source, partial)
        conn = sqlite3.connect(partial)
        conn.execute(
            "create index responses_conversation on responses (conversation_id)"
        )
        conn.execute("create index responses_parent on responses (parent_response_id)")
        conn.commit()
        conn.close()
    else:
        raise ValueError(f"unknown kind of database {kind!r}")
    os.replace(partial, path)
    log(
        f"built {path.name}: {size:,} {'turns' if kind == 'store' else 'responses'}"
        f" in {conversations:,} conversations, {time.perf_counter() - started:.1f} s,"
        f" {path.stat().st_size / 2**20:,.0f} MB"
    )
    return path


@dataclass
class Targets:
    """What the per-node measurements ask about, in one database."""

    conversation: str  # the legacy conversation, or the original thread
    root: str  # the conversation's first node
    node: str  # its last node in log order (the deepest, in these shapes)
    conversation_size: int


def targets(kind: str, shape: str, size: int, path: Path) -> Targets:
    """The middle conversation of a synthetic database, its root and last node.

    The builders write conversations as consecutive blocks in log order, so
    the rows are found by rowid without reading the table.
    """
    sizes = list(synthetic.conversation_sizes(size, conversations_for(shape, size)))
    middle = len(sizes) // 2
    start = sum(sizes[:middle])
    count = sizes[middle]
    table, conversation = (
        ("turns", "thread_id") if kind == "store" else ("responses", "conversation_id")
    )
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        root, conversation_id = conn.execute(
            f"select id, {conversation} from {table} where rowid = ?", [start + 1]
        ).fetchone()
        (node,) = conn.execute(
            f"select id from {table} where rowid = ?", [start + count]
        ).fetchone()
    finally:
        conn.close()
    return Targets(conversation_id, root, node, count)
