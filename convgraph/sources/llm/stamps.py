"""The table stamps of llm's file (`Source.table_stamps`), read from SQLite's
b-tree counts and indexes, never the rows: the schema version and, for each
table whose rows are nodes or name trees, its row count, largest rowid,
last id, and its parent links' fingerprint where `convgraph migrate`'s
index of them exists. llm only appends, and SQLite gives a new row the
rowid after the largest: since an older stamp, the rows up to its largest
rowid must be as they were (as many, the same last id, the same links), and
the rows above it, with their links, are what was logged since. Anything
else is no append; a row put back by hand at a rowid of its own choosing,
no stamp sees.
"""

from __future__ import annotations

import contextlib
import sqlite3
from typing import Any

from convgraph.errors import DatabaseError, UnknownConversation, UnknownNode
from convgraph.sources.llm.snapshot import BEFORE_FIRST_ROWID
from convgraph.sources.source import Source

#: The tables whose rows are nodes (or calls folded into one) or name trees.
STAMPED_TABLES = ("responses", "turns", "threads")
#: The trees logged since the stamp given, or None: no append.
LOGGED_SINCE = "logged_since"
#: The parent column `convgraph migrate` indexes.
PARENT = "parent_response_id"
#: Each table's new rows, as (conversation, node) ids.
_NEW_ROWS = {
    "responses": "select distinct cast(coalesce(conversation_id, id) as text),"
    " cast(id as text) from responses where rowid > ?",
    "turns": "select distinct cast(thread_id as text), cast(id as text)"
    " from turns where rowid > ?",
    "threads": "select cast(id as text), cast(id as text) from threads where rowid > ?",
}


def table_stamps(logs: Source, since: dict[str, Any] | None) -> dict[str, Any]:
    """The stamp of `logs.conn`: "schema", each of `STAMPED_TABLES` present
    as [count, largest rowid, last id, links], and with
    `since`, `LOGGED_SINCE`. Raises `DatabaseError` where SQLite cannot."""
    conn = logs.conn
    assert conn is not None
    try:
        (version,) = conn.execute("pragma schema_version").fetchone()
        tables = {
            name
            for (name,) in conn.execute(
                "select name from sqlite_master where type = 'table'"
            )
        }
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
    """The largest rowid an older stamp saw (an empty table's is below all)."""
    largest = stamp[1]
    return BEFORE_FIRST_ROWID if largest is None else int(largest)


def _has_parent_index(conn: sqlite3.Connection, table: str) -> bool:
    """Whether `table` has an index led by the parent column (what `convgraph
    migrate` makes), so that a fingerprint of the links reads it alone; a
    file without it has parents only the sqlite shell could change."""
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
    """The table's stamp, and with `bound` the same of its rows up to it
    ([count, links, id at the bound]; [] without). The whole table is
    counted by SQLite's b-tree count and a scan of the parents' index, never
    of the rows; the rows above the bound, few, are found by rowid and
    taken away."""
    (count,) = conn.execute(f'select count(*) from "{table}"').fetchone()
    (largest,) = conn.execute(f'select max(rowid) from "{table}"').fetchone()
    parents = _has_parent_index(conn, table)
    # The last character of each parent id, summed: a link moved to another
    # parent shows, in one pass over the index.
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
    """Whether the older rows' links are as `old` counted them (a sum over
    no parent is SQLite's NULL)."""
    if not old or not kept:
        return old == kept
    return [old[0], old[1] or 0] == kept


def _logged_since(
    logs: Source,
    since: dict[str, Any],
    stamp: dict[str, Any],
    kept: dict[str, list[Any]],
) -> list[str] | None:
    """The trees holding the rows logged since `since` was taken, in order,
    or None where anything else changed."""
    if since.get("schema") != stamp["schema"]:
        return None
    if {t for t in STAMPED_TABLES if t in since} != set(kept):
        return None
    conn = logs.conn
    assert conn is not None
    trees: dict[str, None] = {}
    for table, rows in kept.items():
        if len(since[table]) != len(stamp[table]):
            return None  # a stamp of another layout
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
    """The tree a newly logged row belongs to."""
    if conversation_id is not None:
        with contextlib.suppress(UnknownConversation):
            return logs.tree_id_of_conversation(conversation_id)
    with contextlib.suppress(UnknownNode):
        return logs.tree_id_of_node(node_id)
    return conversation_id or node_id
