"""The stamps that tell whether a search index is still of its file's data
(`convgraph.search.index`; docs/design.md#search-has-an-index-of-its-own).

`quick_stamp` is what the file system and SQLite's header say without a
statement: the identity, size and modification time of each file, SQLite's
file change counter and schema cookie (bytes 24 and 40 of the header, which
a commit in rollback-journal mode moves), and in WAL mode the log's size,
time and header, whose salts change whenever the log restarts: any commit
changes it. `content_stamp` is what the rows say, read from SQLite's own
indexes, never the rows: the schema version and, for each table whose rows
are nodes or name trees, its row count, largest rowid, sum of rowids, the
id of its last row, and the parent links where `convgraph migrate`'s index
of them exists. `changed_trees` compares two content stamps: llm only
appends, and SQLite gives a new row the rowid after the largest, so the rows
up to the old largest rowid must be as they were (as many, the same sum,
the same last id: a newest row deleted and another logged in its place has
another id) and the rows above it are what was logged since, whose trees
alone are read again. Anything else (a deletion, links moved, a migration,
an export's or an agents' folder's files) builds the index again. The
branches the user hid (`convgraph hide`) are in the stamp too: a node hidden
or shown again has its tree read again, so a search never finds what every
other output leaves out.
(`PRAGMA data_version` only tells a connection about others' commits while
it stays open, so it says nothing to a new process.) What no stamp sees
short of reading every row: a text edited in place by another program that
leaves the ids, counts and links alone.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path
from typing import Any

from convgraph.errors import DatabaseError, UnknownConversation, UnknownNode
from convgraph.sources.notes import notes_file, read_notes
from convgraph.sources.source import Source

#: The tables of llm's file whose rows are nodes (or calls folded into one)
#: or name trees (a fork is a thread).
STAMPED_TABLES = ("responses", "turns", "threads")


def quick_stamp(logs: Source) -> list[Any]:
    """What the file system and SQLite's header say of the file without a
    statement: identity, size and time of each file, and for an SQLite
    file its change counter and schema cookie, and its WAL's size, time
    and header (salts). Any commit changes it."""
    path = Path(logs.path)
    if path.is_dir():
        files = sorted(file for file in path.rglob("*") if not file.is_dir())
    else:
        files = [path, path.with_name(path.name + "-wal")]
    if logs.conn is None:
        # The notes (and hidden branches) of a file convgraph only reads
        # lie beside it.
        files.append(notes_file(logs))
    found: list[Any] = []
    for file in files:
        try:
            status = file.stat()
        except OSError:
            continue
        entry: list[Any] = [
            os.fsdecode(file),
            status.st_dev,
            status.st_ino,
            status.st_size,
            status.st_mtime_ns,
        ]
        if logs.conn is not None:
            with contextlib.suppress(OSError), file.open("rb") as header:
                start = header.read(100)
                # The main file: change counter and schema cookie; the
                # WAL: its header, whose salts change when it restarts.
                entry.append((start[24:28] + start[40:44]).hex())
                entry.append(start[:32].hex() if file != path else "")
        found.append(entry)
    return found


def _parent_column(conn: sqlite3.Connection, table: str) -> str | None:
    """The parent column of `table` where an index of it exists (what
    `convgraph migrate` makes), so that a fingerprint of it reads the
    index alone; None otherwise (a file whose parents only the sqlite shell
    could change, as `migrate` adds the index with the rules)."""
    if table != "responses":
        return None
    for row in conn.execute(f'pragma index_list("{table}")').fetchall():
        columns = conn.execute(f'pragma index_info("{row[1]}")').fetchall()
        if columns and columns[0][2] == "parent_response_id":
            return "parent_response_id"
    return None


def _id_at(conn: sqlite3.Connection, table: str, rowid: int | None) -> str | None:
    """The id of the row at `rowid`, None where there is none."""
    row = conn.execute(
        f'select cast(id as text) from "{table}" where rowid = ?', [rowid]
    ).fetchone()
    return None if row is None else row[0]


def _table_stamp(
    conn: sqlite3.Connection, table: str, bound: int | None = None
) -> list[Any]:
    """[row count, largest rowid, sum of rowids, id of the last row,
    parent links' fingerprint], and with `bound` the count and sum of the
    rowids up to it: each a scan of an index of the table (its ids', its
    parents'), never of its rows."""
    below = -(2**63) if bound is None else bound
    count, largest, rowids, kept, kept_sum = conn.execute(
        f"select count(*), max(rowid), sum(rowid), sum(rowid <= ?),"
        f' sum(case when rowid <= ? then rowid end) from "{table}"',
        [below, below],
    ).fetchone()
    last = _id_at(conn, table, largest)
    links: list[Any] = []
    parent = _parent_column(conn, table)
    if parent:
        links = list(
            conn.execute(
                f"select count({parent}), sum(unicode(substr({parent}, -1, 1)))"
                f' from "{table}" where {parent} is not null'
            ).fetchone()
        )
    stamp = [count, largest, rowids or 0, last, links]
    if bound is not None:
        stamp += [kept or 0, kept_sum or 0]
    return stamp


def content_stamp(logs: Source, old: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the rows say: for llm's file the schema version and, for each
    of `STAMPED_TABLES`, its `_table_stamp` (with the rows up to the largest
    rowid of the `old` stamp counted); for an export, its quick stamp."""
    conn = logs.conn
    if conn is None:
        return {"files": quick_stamp(logs), "hidden": hidden_nodes(logs)}
    try:
        (version,) = conn.execute("pragma schema_version").fetchone()
        tables = {
            name
            for (name,) in conn.execute(
                "select name from sqlite_master where type = 'table'"
            )
        }
        stamp: dict[str, Any] = {"schema": version}
        for table in STAMPED_TABLES:
            if table in tables:
                before = (old or {}).get(table)
                bound = None
                if before:  # an empty table's bound is below every rowid
                    bound = -(2**63) if before[1] is None else before[1]
                stamp[table] = _table_stamp(conn, table, bound)
    except sqlite3.Error as error:
        raise DatabaseError(f"cannot read {logs.path}: {error}") from None
    stamp["hidden"] = hidden_nodes(logs)
    return stamp


def hidden_nodes(logs: Source) -> list[str]:
    """The nodes the user hid (`convgraph hide`), in order: convgraph's
    notes table, small enough to read whole."""
    return sorted(node for node, note in read_notes(logs).items() if note.hidden)


def changed_trees(
    logs: Source, old: dict[str, Any] | None, new: dict[str, Any]
) -> set[str] | None:
    """The trees holding rows logged since `old` was taken, or None where
    anything else changed (rows deleted, a row at a rowid used again, links
    moved, the schema, an export's files): then the index is built again.

    llm only appends, and SQLite gives a new row the rowid after the largest:
    so the rows up to the old largest rowid must be exactly as many, with
    the same sum of rowids and the same last id (a newest row deleted and
    another logged in its place has another id), and the parent links the
    same; the rows above it are what was logged since."""
    conn = logs.conn
    if conn is None or not old or old.get("schema") != new.get("schema"):
        return None
    if set(old) != set(new):
        return None
    trees: set[str] = set()
    for table in STAMPED_TABLES:
        if table not in old:
            continue
        count, largest, rowids, last, links = old[table]
        if largest is None:
            largest = -(2**63)
        now = new[table]
        if now[5:] != [count, rowids] or now[4] != links:
            return None
        if count and _id_at(conn, table, largest) != last:
            return None
        if table == "responses":
            query = (
                "select distinct cast(coalesce(conversation_id, id) as text),"
                " cast(id as text) from responses where rowid > ?"
            )
        elif table == "turns":
            query = "select distinct thread_id, id from turns where rowid > ?"
        else:
            query = "select id, id from threads where rowid > ?"
        named: set[str] = set()
        for conversation_id, node_id in conn.execute(query, [largest]).fetchall():
            if conversation_id not in named:
                named.add(conversation_id)
                trees.add(_tree_of(logs, str(conversation_id), str(node_id)))
    # A branch hidden or shown again: its tree is read again.
    for node in set(old.get("hidden", ())) ^ set(new.get("hidden", ())):
        with contextlib.suppress(UnknownNode):
            trees.add(logs.tree_id_of_node(node))
    return trees


def _tree_of(logs: Source, conversation_id: str, node_id: str) -> str:
    """The tree a newly logged row belongs to."""
    with contextlib.suppress(UnknownConversation):
        return logs.tree_id_of_conversation(conversation_id)
    with contextlib.suppress(UnknownNode):
        return logs.tree_id_of_node(node_id)
    return conversation_id


def stored(content: dict[str, Any]) -> dict[str, Any]:
    """A content stamp as the meta keeps it: each table's counts up to the
    old bound left out (they are for the comparison only)."""
    return {
        key: value[:5] if key in STAMPED_TABLES else value
        for key, value in content.items()
    }
