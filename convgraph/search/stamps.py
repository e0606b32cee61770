"""Whether a search index still holds its file's data: `quick_stamp` (the files and
SQLite's header, moved by any commit), `content_stamp` (the rows, `Source.table_stamps`,
and the hidden branches), `changed_trees` (the trees to read again, or None: build
again)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from convgraph.errors import UnknownNode
from convgraph.sources.notes import notes_file, read_notes
from convgraph.sources.several import LOGGED_SINCE, RENEWED
from convgraph.sources.source import Source


def quick_stamp(logs: Source) -> list[Any]:
    """Each file's identity, size and time, and for SQLite its header's
    change counter and schema cookie and its WAL's header (salts)."""
    several: dict[str, Source] = getattr(logs, "sources", {})
    if several:  # sources read as one: each one's
        return [quick_stamp(one) for one in several.values()]
    path = Path(logs.path)
    if path.is_dir():
        files = sorted(file for file in path.rglob("*") if not file.is_dir())
    else:
        files = [path, path.with_name(path.name + "-wal")]
    if logs.conn is None:
        # The notes of a file convgraph only reads lie beside it.
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
                # The WAL's salts change whenever it restarts.
                entry.append((start[24:28] + start[40:44]).hex())
                entry.append(start[:32].hex() if file != path else "")
        found.append(entry)
    return found


def content_stamp(logs: Source, old: dict[str, Any] | None = None) -> dict[str, Any]:
    """The file's table stamps since `old` (its quick stamp where it has no
    tables) and the hidden branches."""
    stamp = logs.table_stamps(old)
    if stamp is None:
        stamp = {"files": quick_stamp(logs)}
    stamp["hidden"] = hidden_nodes(logs)
    return stamp


def hidden_nodes(logs: Source) -> list[str]:
    """The nodes the user hid (`convgraph hide`), in order."""
    return sorted(node for node, note in read_notes(logs).items() if note.hidden)


def changed_trees(
    logs: Source, old: dict[str, Any] | None, new: dict[str, Any]
) -> set[str] | None:
    """The trees to read again since `old` (`new` is `content_stamp(logs, old)`): rows
    logged since, branches hidden or shown; None where anything else changed."""
    logged = new.get(LOGGED_SINCE)
    if not old or logged is None:
        return None
    trees = set(logged)
    for node in set(old.get("hidden", ())) ^ set(new.get("hidden", ())):
        with contextlib.suppress(UnknownNode):
            trees.add(logs.tree_id_of_node(node))
    return trees


def stored(content: dict[str, Any]) -> dict[str, Any]:
    """A content stamp as the meta keeps it."""
    return {k: v for k, v in content.items() if k not in (LOGGED_SINCE, RENEWED)}
