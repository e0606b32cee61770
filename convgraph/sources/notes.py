"""Read the user's branch notes: a note on a node, and the answer preferred
among its alternatives, kept in a table of convgraph's own.

For an llm database the table is `_convgraph_notes` in the same SQLite file;
a chat export is the app's file, which convgraph never writes, so its notes
lie in a small SQLite file beside it, `<export>.convgraph.db`. This is the
read side, which every reader of trees and forests uses; writing them
(`set_note`, `set_preferred`) is `convgraph.store.notes`, which builds on
these names. Reading notes never writes: a file without the table, or an
export without its notes file, reads as no notes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from convgraph.sources.files import connect_read_only
from convgraph.sources.source import Source

#: convgraph's table of notes, in the llm database or the file beside an export.
TABLE = "_convgraph_notes"

#: What a chat export's notes file adds to the export's name.
SIDE_FILE_SUFFIX = ".convgraph.db"


@dataclass(frozen=True)
class NodeNote:
    """What the user recorded about one node."""

    note: str | None = None
    preferred: bool = False


def is_export(logs: Source) -> bool:
    """Whether `logs` is a chat export (read-only: notes go beside it)."""
    return getattr(logs, "conn", None) is None


def notes_file(logs: Source) -> Path:
    """The SQLite file that holds `logs`' notes: the llm database itself, or
    `<export>.convgraph.db` beside a chat export."""
    path = Path(logs.path)
    if is_export(logs):
        return path.with_name(path.name + SIDE_FILE_SUFFIX)
    return path


def read_notes(
    logs: Source, node_ids: Iterable[str] | None = None
) -> dict[str, NodeNote]:
    """The notes of `node_ids` (every note when None), by node id; nodes
    without a note or mark are left out. Reads only: a file without the
    table, or an export without its notes file, has none.

    Raises
    ------
    DatabaseError
        The notes file beside an export is not a database convgraph can read.
    """
    if is_export(logs):
        path = notes_file(logs)
        if not path.is_file():
            return {}
        conn = connect_read_only(path)
        try:
            return _read(conn, node_ids)
        finally:
            conn.close()
    return _read(logs.conn, node_ids)


def _read(
    conn: sqlite3.Connection, node_ids: Iterable[str] | None
) -> dict[str, NodeNote]:
    found = conn.execute(
        "select 1 from sqlite_master where type = 'table' and name = ?", [TABLE]
    ).fetchone()
    if found is None:
        return {}
    wanted = None if node_ids is None else set(node_ids)
    notes = {}
    # The table holds what a person typed: small enough to read whole.
    for node_id, note, preferred in conn.execute(
        f"select node_id, note, preferred from {TABLE}"
    ):
        if wanted is not None and node_id not in wanted:
            continue
        if note is None and not preferred:
            continue
        notes[str(node_id)] = NodeNote(
            None if note is None else str(note), bool(preferred)
        )
    return notes
