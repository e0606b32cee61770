"""What a user would run without convgraph: the baselines the benchmarks beat.

Two families. The seed's helpers (the original notes' `tree_utils.py`,
docs/design.md#where-it-started), rewritten here in their style for the legacy
`responses` table: one SQL query per node visited, recursion for subtrees, a
visited set against cycles. And llm's own `message_tree` view for the message
store: one query that draws every message tree of the file, from which the same
answers are read off in Python. Both give the answers convgraph gives (the
tests check it on small databases); they are written to be typical, not slow on
purpose.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from typing import Any

# -- the seed's helpers, on a legacy responses table -----------------------


def get_children(conn: sqlite3.Connection, response_id: str) -> list[str]:
    """The direct children of a response, in log order (one query)."""
    rows = conn.execute(
        "select id from responses where parent_response_id = ?"
        " order by datetime_utc, id",
        [response_id],
    )
    return [row[0] for row in rows]


def get_parent(conn: sqlite3.Connection, response_id: str) -> str | None:
    """The parent of a response, or None for a root (one query)."""
    row = conn.execute(
        "select parent_response_id from responses where id = ?", [response_id]
    ).fetchone()
    return row[0] if row else None


def get_path_to_root(conn: sqlite3.Connection, response_id: str) -> list[str]:
    """The ids from the root down to the response: one query per ancestor,
    with the seed's visited set against cycles."""
    path = [response_id]
    visited = {response_id}
    current = get_parent(conn, response_id)
    while current is not None and current not in visited:
        visited.add(current)
        path.append(current)
        current = get_parent(conn, current)
    path.reverse()
    return path


def get_all_descendants(
    conn: sqlite3.Connection, response_id: str, visited: set[str] | None = None
) -> list[str]:
    """Every response below this one, depth first: the seed's recursion, one
    children query per node visited.

    Raises RecursionError on a chain deeper than Python's recursion limit
    (see `deep_recursion`).
    """
    if visited is None:
        visited = {response_id}
    found = []
    for child in get_children(conn, response_id):
        if child in visited:
            continue
        visited.add(child)
        found.append(child)
        found.extend(get_all_descendants(conn, child, visited))
    return found


def get_root_nodes(conn: sqlite3.Connection, conversation_id: str) -> list[str]:
    """The responses of a conversation without a parent, in log order."""
    rows = conn.execute(
        "select id from responses where conversation_id = ?"
        " and parent_response_id is null order by datetime_utc, id",
        [conversation_id],
    )
    return [row[0] for row in rows]


def get_leaf_nodes(conn: sqlite3.Connection, conversation_id: str) -> list[str]:
    """The responses of a conversation without children, in log order: the
    conversation's responses, then a children query for each one."""
    rows = conn.execute(
        "select id from responses where conversation_id = ? order by datetime_utc, id",
        [conversation_id],
    )
    return [row[0] for row in rows.fetchall() if not get_children(conn, row[0])]


class deep_recursion:
    """Raise Python's recursion limit for the seed's recursive helpers on a
    deep chain (a 10,000-deep chain needs about 10,000 frames), and restore it
    after."""

    def __init__(self, limit: int):
        self.limit = limit

    def __enter__(self) -> None:
        self.previous = sys.getrecursionlimit()
        sys.setrecursionlimit(max(self.previous, self.limit))

    def __exit__(self, *exc: object) -> None:
        sys.setrecursionlimit(self.previous)


# -- llm's message_tree view, on the message store ----------------------------

# The first message of the tree a turn belongs to: a walk up parent_hash
# (llm's messages are keyed by hash, so each step is an index lookup).
ROOT_MESSAGE_SQL = """
with recursive up(hash, parent_hash) as (
    select m.hash, m.parent_hash from messages m
    join turns t on m.hash = t.tip_message_hash where t.id = ?
    union
    select m.hash, m.parent_hash from messages m join up on m.hash = up.parent_hash
)
select hash from up where parent_hash is null
"""


def root_message_of_turn(conn: sqlite3.Connection, turn_id: str) -> str | None:
    """The root message of the tree that holds the turn's answer."""
    row = conn.execute(ROOT_MESSAGE_SQL, [turn_id]).fetchone()
    return row[0] if row else None


def root_message_of_thread(conn: sqlite3.Connection, thread_id: str) -> str | None:
    """The root message of the tree a thread's first turn is in."""
    row = conn.execute(
        "select id from turns where thread_id = ? order by datetime_utc, id limit 1",
        [thread_id],
    ).fetchone()
    return root_message_of_turn(conn, row[0]) if row else None


def view_rows(conn: sqlite3.Connection, root_hash: str | None) -> list[dict[str, Any]]:
    """llm's `message_tree` view for one tree: a row per message, each with its
    `path` (the rowids from the root, `/`-separated) and depth-indented text."""
    conn.row_factory = sqlite3.Row
    try:
        rows = conn.execute(
            "select root_hash, datetime, message, tools, message_hash, path"
            " from message_tree where root_hash = ?",
            [root_hash],
        ).fetchall()
    finally:
        conn.row_factory = None
    return [dict(row) for row in rows]


def _turns_at_tips(
    conn: sqlite3.Connection, paths: dict[str, str]
) -> list[tuple[str, str]]:
    """(view path, turn id) of every turn whose answer is one of these
    messages, in path order (and log order among turns sharing an answer)."""
    rows = conn.execute(
        "select id, tip_message_hash from turns where tip_message_hash in"
        " (select value from json_each(?)) order by datetime_utc, id",
        [json.dumps(list(paths))],
    )
    found = [(paths[tip], turn_id) for turn_id, tip in rows]
    found.sort(key=lambda pair: pair[0])
    return found


def view_path(conn: sqlite3.Connection, turn_id: str) -> list[str]:
    """The turns from the root down to `turn_id`, read off the view: the turns
    whose answers lie on the view path of this turn's answer."""
    rows = view_rows(conn, root_message_of_turn(conn, turn_id))
    tip = conn.execute(
        "select tip_message_hash from turns where id = ?", [turn_id]
    ).fetchone()[0]
    target = next(row["path"] for row in rows if row["message_hash"] == tip)
    above = {
        row["message_hash"]: row["path"]
        for row in rows
        if target == row["path"] or target.startswith(row["path"] + "/")
    }
    return [turn for _, turn in _turns_at_tips(conn, above)]


def view_descendants(conn: sqlite3.Connection, turn_id: str) -> list[str]:
    """The turns below `turn_id`, read off the view (in view path order)."""
    rows = view_rows(conn, root_message_of_turn(conn, turn_id))
    tip = conn.execute(
        "select tip_message_hash from turns where id = ?", [turn_id]
    ).fetchone()[0]
    target = next(row["path"] for row in rows if row["message_hash"] == tip) + "/"
    below = {
        row["message_hash"]: row["path"]
        for row in rows
        if row["path"].startswith(target)
    }
    return [turn for _, turn in _turns_at_tips(conn, below)]


def view_leaves(conn: sqlite3.Connection, thread_id: str) -> list[str]:
    """The turns of a thread's tree with no turn below them, read off the view:
    in path order, a turn is a leaf when the next turn is not under it."""
    rows = view_rows(conn, root_message_of_thread(conn, thread_id))
    turns = _turns_at_tips(conn, {row["message_hash"]: row["path"] for row in rows})
    leaves = []
    for index, (path, turn) in enumerate(turns):
        following = turns[index + 1][0] if index + 1 < len(turns) else ""
        if not following.startswith(path + "/"):
            leaves.append(turn)
    return leaves
