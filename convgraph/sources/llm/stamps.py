"""The table stamps of llm's file (`Source.table_stamps`), from SQLite's
b-tree counts and indexes, never the rows. llm only appends, each new row
at the rowid after the largest: since an older stamp, the rows up to its
largest rowid must be as they were, and those above are what was logged
since. A row put back by hand at a rowid of its choosing, no stamp sees."""

from __future__ import annotations

import contextlib
import sqlite3
from typing import Any

from convgraph.errors import DatabaseError, UnknownConversation, UnknownNode
from convgraph.sources.llm.files import table_names
from convgraph.sources.llm.snapshot import BEFORE_FIRST_ROWID
from convgraph.sources.source import Source

STAMPED_TABLES = ("responses", "turns", "threads")
LOGGED_SINCE = "logged_since"
PARENT = "parent_response_id"
_NEW_ROWS = {
    "responses": "select distinct cast(coalesce(conversation_id, id) as text),"
    " cast(id as text) from responses where rowid > ?",
    "turns": "select distinct cast(thread_id as text), cast(id as text)"
    " from turns where rowid > ?",
    "threads": "select cast(id as text), cast(id as text) from threads where rowid > ?",
}


def table_stamps(logs: Source, since: dict[str, Any] | None) -> dict[str, Any]:
    """ "schema", each of `STAMPED_TABLES` as [count, largest rowid, last id,
    links], and with `since`, `LOGGED_SINCE`; `DatabaseError` on failure."""
    conn = logs.conn
    assert conn is not None
    try:
        (version,) = conn.execute("pragma schema_version").fetchone()
        tables = table_names(conn)
        stamp: dict[str, Any] = {"schema": version}
        kept: dict[str, list[Any]] = {}
        for table in STAMPED_TABLES:
            if table in tables:
                before = (since or {}).get(table)
                bound = _bound(before) if before else None
                stamp[table], kept[table] = _table_stamp(conn, table, bound)
        if since is not None:
            stamp[LOGGED_SINCE] = _logged_since(logs, since, stamp, kept)
    except sqlite3.Error as error:
        raise DatabaseError(f"cannot read {logs.path}: {error}") from None
    return stamp


def _bound(stamp: list[Any]) -> int:
    largest = stamp[1]
    return BEFORE_FIRST_ROWID if largest is None else int(largest)


def _has_parent_index(conn: sqlite3.Connection, table: str) -> bool:
    """Whether `convgraph migrate`'s parent index exists to fingerprint the
    links; without it only the sqlite shell could change parents."""
    if table != "responses":
        return False
    for row in conn.execute(f'pragma index_list("{table}")').fetchall():
        columns = conn.execute(f'pragma index_info("{row[1]}")').fetchall()
        if columns and columns[0][2] == PARENT:
            return True
    return False


def _id_at(conn: sqlite3.Connection, table: str, rowid: int | None) -> str | None:
    row = conn.execute(
        f'select cast(id as text) from "{table}" where rowid = ?', [rowid]
    ).fetchone()
    return None if row is None else str(row[0])


def _table_stamp(
    conn: sqlite3.Connection, table: str, bound: int | None
) -> tuple[list[Any], list[Any]]:
    """The table's stamp, and with `bound` [count, links, id at the bound]
    of its rows up to it (the few above it counted and taken away)."""
    (count,) = conn.execute(f'select count(*) from "{table}"').fetchone()
    (largest,) = conn.execute(f'select max(rowid) from "{table}"').fetchone()
    parents = _has_parent_index(conn, table)
    # Parent ids' last characters summed: a moved link shows, in one pass.
    last = f"unicode(substr({PARENT}, -1, 1))"
    links: list[Any] = []
    if parents:
        links = list(
            conn.execute(
                f"select count({PARENT}), sum({last})"
                f' from "{table}" where {PARENT} is not null'
            ).fetchone()
        )
    stamp = [count, largest, _id_at(conn, table, largest), links]
    if bound is None:
        return stamp, []
    counted = "count(*)"
    if parents:
        counted += f", count({PARENT}), sum({last})"
    above = conn.execute(
        f'select {counted} from "{table}" where rowid > ?', [bound]
    ).fetchone()
    kept_links: list[Any] = []
    if parents:
        kept_links = [links[0] - above[1], (links[1] or 0) - (above[2] or 0)]
    return stamp, [count - above[0], kept_links, _id_at(conn, table, bound)]


def _same_links(old: list[Any], kept: list[Any]) -> bool:
    """Whether the older rows' links are as `old` (a NULL sum is 0)."""
    if not old or not kept:
        return old == kept
    return [old[0], old[1] or 0] == kept


def _logged_since(
    logs: Source,
    since: dict[str, Any],
    stamp: dict[str, Any],
    kept: dict[str, list[Any]],
) -> list[str] | None:
    """The trees of the rows logged since `since`, or None if not appends."""
    if since.get("schema") != stamp["schema"]:
        return None
    if {t for t in STAMPED_TABLES if t in since} != set(kept):
        return None
    conn = logs.conn
    assert conn is not None
    trees: dict[str, None] = {}
    for table, rows in kept.items():
        if len(since[table]) != len(stamp[table]):
            return None
        count, _, last, links = since[table]
        if [rows[0], rows[2]] != [count, last] or not _same_links(links, rows[1]):
            return None
        named: set[str] = set()
        for conversation, node in conn.execute(
            _NEW_ROWS[table], [_bound(since[table])]
        ).fetchall():
            if conversation not in named:
                named.add(conversation)
                trees[_tree_of(logs, conversation, node)] = None
    return list(trees)


def _tree_of(logs: Source, conversation_id: str | None, node_id: str) -> str:
    if conversation_id is not None:
        with contextlib.suppress(UnknownConversation):
            return logs.tree_id_of_conversation(conversation_id)
    with contextlib.suppress(UnknownNode):
        return logs.tree_id_of_node(node_id)
    return conversation_id or node_id
