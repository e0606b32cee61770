"""Write the user's branch notes: a note, the preferred answer among its alternatives
(marking one clears the others), hidden branches. Reading is
`convgraph.sources.notes`'."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from convgraph.errors import DatabaseError
from convgraph.sources.notes import TABLE, NodeNote, notes_file, read_notes

SCHEMA = f"""
create table if not exists {TABLE} (
    node_id text primary key,
    note text,
    preferred integer not null default 0,
    updated_utc text not null,
    hidden integer not null default 0
)
"""


def set_note(
    node_id: str, text: str | None, db: str | os.PathLike[str] | None = None
) -> Path:
    """Record `text` as the note of `node_id` (None clears it) in one transaction;
    return the file written. Raises `UnknownNode`, `DatabaseError (the file cannot be
    written)`, `DatabaseLocked`."""
    node_id, path = _node_and_file(node_id, db)
    _write(path, [(node_id, "note", text)])
    return path


def set_preferred(
    node_id: str, preferred: bool = True, db: str | os.PathLike[str] | None = None
) -> list[str]:
    """Mark `node_id` preferred among its alternatives (or clear it) in one transaction;
    return the ids whose mark the marking cleared. Raises `UnknownNode`,
    `DatabaseError`, `DatabaseLocked`."""
    from convgraph.sources import open_logs

    with open_logs(db) as logs:
        # The stored rows find the alternatives without building the tree.
        node_id = logs.resolve_node(node_id)  # a unique prefix names it
        tree = logs.read_tree(logs.tree_id_of_node(node_id))
        records = tree.records
        # A call inside a tool chain names the chain's node.
        node_id = tree.calls.get(node_id, node_id)
        path = notes_file(logs)
        marks = read_notes(logs, [record["id"] for record in records])
    cleared = []
    if preferred:
        mine = next(record for record in records if record["id"] == node_id)
        cleared = [
            record["id"]
            for record in records
            if record["id"] != node_id
            and record["parent_id"] == mine["parent_id"]
            and record["prompt"] == mine["prompt"]
            and marks.get(record["id"], NodeNote()).preferred
        ]
    changes = [(node_id, "preferred", 1 if preferred else 0)]
    changes += [(other, "preferred", 0) for other in cleared]
    _write(path, changes)
    return cleared


def set_hidden(
    node_id: str, hidden: bool = True, db: str | os.PathLike[str] | None = None
) -> tuple[str, Path]:
    """Hide the branch of `node_id` (or show it again) in one transaction; return the
    node's whole id and the file written. Raises `UnknownNode`, `DatabaseError`,
    `DatabaseLocked`."""
    node_id, path = _node_and_file(node_id, db)
    _write(path, [(node_id, "hidden", 1 if hidden else 0)])
    return node_id, path


def _node_and_file(node_id: str, db: str | os.PathLike[str] | None) -> tuple[str, Path]:
    """The node `node_id` names, and the file its notes go to."""
    from convgraph.sources import open_logs

    with open_logs(db) as logs:
        # A chain's call names the chain's node; a unique prefix its id.
        return logs.node_of(logs.resolve_node(node_id)), notes_file(logs)


def _write(path: Path, changes: Sequence[tuple[str, str, object]]) -> None:
    """Set one column of each node's row, making table and rows where needed,
    in one transaction."""
    from convgraph.store.transaction import write_transaction

    _check_writable(path)
    conn = sqlite3.connect(path, timeout=5.0, isolation_level=None)
    now = datetime.now(UTC).isoformat()
    try:
        with write_transaction(conn):
            conn.execute(SCHEMA)
            columns = {row[1] for row in conn.execute(f"pragma table_info({TABLE})")}
            if "hidden" not in columns:  # a table written before hiding was kept
                conn.execute(
                    f"alter table {TABLE} add column hidden integer not null default 0"
                )
            for node_id, column, value in changes:
                conn.execute(
                    f"insert into {TABLE} (node_id, {column}, updated_utc)"
                    f" values (?, ?, ?) on conflict (node_id) do update set"
                    f" {column} = excluded.{column}, updated_utc = excluded.updated_utc",
                    [node_id, value, now],
                )
            # A row with neither note nor mark says nothing.
            conn.execute(
                f"delete from {TABLE}"
                " where note is null and preferred = 0 and hidden = 0"
            )
    except sqlite3.OperationalError as error:
        if "readonly" in str(error) or "unable to open" in str(error):
            raise DatabaseError(f"cannot write notes to {path}: {error}") from None
        raise
    finally:
        conn.close()


def _check_writable(path: Path) -> None:
    """Say in one line why `path` cannot take notes, before SQLite tries."""
    if path.exists():
        if not os.access(path, os.W_OK):
            raise DatabaseError(f"cannot write notes: {path} is read-only")
        if not os.access(path.parent, os.W_OK):
            raise DatabaseError(
                f"cannot write notes to {path}: SQLite needs to write its journal"
                f" in {path.parent}, which is read-only"
            )
    elif not os.access(path.parent, os.W_OK):
        raise DatabaseError(
            f"cannot write notes beside the export: {path.parent} is read-only"
        )
