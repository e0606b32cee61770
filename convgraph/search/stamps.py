"""The stamps that tell whether a search index still holds its file's data
(`convgraph.search.index`; docs/design.md#search-has-an-index-of-its-own).

`quick_stamp`: what the file system and SQLite's header say without a
statement (each file's identity, size and time; SQLite's change counter and
schema cookie; the WAL's header, whose salts change when it restarts): any
commit moves it. `content_stamp`: what the rows say, asked of the source
(`Source.table_stamps`: counts, rowids and links from SQLite's own indexes),
and the branches the user hid. `changed_trees`: given the old content stamp,
the trees to read again (rows appended since, a branch hidden or shown), or
None where anything else changed and the index is built again.
`PRAGMA data_version` would say nothing to a new process; what no stamp sees
short of reading every row is a text edited in place that leaves the ids,
counts and links alone.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from convgraph.errors import UnknownNode
from convgraph.sources.notes import notes_file, read_notes
from convgraph.sources.source import Source

#: The key of `Source.table_stamps` that names the trees of the rows logged
#: since the stamp it was given.
LOGGED_SINCE = "logged_since"


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


def content_stamp(logs: Source, old: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the rows say: the file's table stamps (`Source.table_stamps`,
    taken since `old`) and the hidden branches; for a file without tables
    (an export), its quick stamp and the hidden branches."""
    stamp = logs.table_stamps(old)
    if stamp is None:
        stamp = {"files": quick_stamp(logs)}
    stamp["hidden"] = hidden_nodes(logs)
    return stamp


def hidden_nodes(logs: Source) -> list[str]:
    """The nodes the user hid (`convgraph hide`), in order: convgraph's
    notes table, small enough to read whole."""
    return sorted(node for node, note in read_notes(logs).items() if note.hidden)


def changed_trees(
    logs: Source, old: dict[str, Any] | None, new: dict[str, Any]
) -> set[str] | None:
    """The trees to read again since `old` (`new` is `content_stamp(logs,
    old)`): those holding rows logged since, and those whose branches were
    hidden or shown again; None where anything else changed (rows deleted or
    moved, the schema, an export's files): then the index is built again."""
    logged = new.get(LOGGED_SINCE)
    if not old or logged is None:
        return None
    trees = set(logged)
    for node in set(old.get("hidden", ())) ^ set(new.get("hidden", ())):
        with contextlib.suppress(UnknownNode):
            trees.add(logs.tree_id_of_node(node))
    return trees


def stored(content: dict[str, Any]) -> dict[str, Any]:
    """A content stamp as the meta keeps it: what it says of an older one
    left out."""
    return {key: value for key, value in content.items() if key != LOGGED_SINCE}
