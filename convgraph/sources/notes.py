"""Read the user's branch notes (a note, a preferred answer, a hidden branch)
from convgraph's own table: in the llm database, or in `<export>.convgraph.db`
beside a file convgraph never writes. Reading never writes: no table reads
as no notes. ChatGPT's ratings (`message_feedback.json`) become the same
marks (`feedback_marks`); the user's own notes win over the app's.
"""

from __future__ import annotations

import io
import itertools
import sqlite3
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from convgraph.errors import DatabaseError
from convgraph.sources.chat.messages import as_dict, as_list, as_text
from convgraph.sources.llm.files import connect_read_only
from convgraph.sources.llm.old_writers import has_table
from convgraph.sources.source import Source

TABLE = "_convgraph_notes"

SIDE_FILE_SUFFIX = ".convgraph.db"


@dataclass(frozen=True)
class NodeNote:
    """A node's note, whether it is preferred among its alternatives, and
    whether its branch is hidden."""

    note: str | None = None
    preferred: bool = False
    hidden: bool = False


def is_export(logs: Source) -> bool:
    """Whether `logs` has no SQLite behind it, so its notes lie beside it."""
    return logs.conn is None


def notes_file(logs: Source) -> Path:
    """The SQLite file that holds `logs`' notes."""
    path = Path(logs.path)
    return path.with_name(path.name + SIDE_FILE_SUFFIX) if is_export(logs) else path


def read_notes(
    logs: Source, node_ids: Iterable[str] | None = None
) -> dict[str, NodeNote]:
    """The notes of `node_ids` (all if None) by node id, the app's marks
    combined. `DatabaseError` if an export's notes file is unreadable."""
    several: dict[str, Source] = getattr(logs, "sources", {})
    if several:
        asked = None if node_ids is None else list(node_ids)
        found = (read_notes(one, asked).items() for one in several.values())
        return dict(itertools.chain.from_iterable(found))
    if logs.conn is None:
        path = notes_file(logs)
        own: dict[str, NodeNote] = {}
        if path.is_file():
            conn = connect_read_only(path)
            try:
                own = _read(conn, node_ids)
            finally:
                conn.close()
        return combined(
            own,
            getattr(logs, "app_marks", {}),
            getattr(logs, "alternatives", {}),
            node_ids,
        )
    return _read(logs.conn, node_ids)


def combined(
    own: Mapping[str, NodeNote],
    app: Mapping[str, NodeNote],
    alternatives: Mapping[str, Any],
    node_ids: Iterable[str] | None = None,
) -> dict[str, NodeNote]:
    """The user's own notes over the app's: a note replaces the app's, a preferred node
    takes the mark from its group (`alternatives`: node -> group key)."""
    wanted = None if node_ids is None else set(node_ids)
    chosen = {
        alternatives[node]
        for node, mark in own.items()
        if mark.preferred and node in alternatives
    }
    found: dict[str, NodeNote] = {}
    for node, mark in app.items():
        if wanted is not None and node not in wanted:
            continue
        preferred = mark.preferred and alternatives.get(node) not in chosen
        if mark.note is not None or preferred:
            found[node] = NodeNote(mark.note, preferred)
    for node, mark in own.items():
        from_app = found.get(node, NodeNote())
        found[node] = NodeNote(
            mark.note if mark.note is not None else from_app.note,
            mark.preferred or from_app.preferred,
            mark.hidden,
        )
    return found


#: ChatGPT's ratings, by `rating` in lower case without punctuation.
THUMBS = {"thumbsup": "thumbs up", "thumbsdown": "thumbs down"}


def feedback_by_conversation(entries: Iterable[Any]) -> dict[str, list[dict[str, Any]]]:
    """`message_feedback.json`'s entries that name a message, by conversation."""
    found: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for entry in entries:
        entry = as_dict(entry)
        conversation = as_text(entry.get("conversation_id"))
        if conversation is not None and as_text(entry.get("message_id")):
            found[conversation].append(entry)
    return dict(found)


def _said(entry: dict[str, Any]) -> tuple[list[str], str | None]:
    """A rating's tags and words, from `content` (JSON, an object or words)."""
    content = entry.get("content")
    if isinstance(content, str):
        parsed = _json_object(content)
        content = parsed if parsed is not None else {"text": content}
    content = as_dict(content)
    tags = [tag for tag in as_list(content.get("tags")) if isinstance(tag, str) and tag]
    return tags, as_text(content.get("text")) or as_text(entry.get("text"))


def _json_object(text: str) -> dict[str, Any] | None:
    """`text` as a JSON object, read within the exports' bounds, or None."""
    from convgraph.sources.chat.json_files import read_errors, stream_values

    if not text.lstrip().startswith("{"):
        return None
    errors: tuple[type[BaseException], ...] = (DatabaseError, *read_errors())
    try:
        values = list(stream_values(io.BufferedReader(io.BytesIO(text.encode()))))
    except errors:
        return None
    return values[0] if len(values) == 1 and isinstance(values[0], dict) else None


def _moment(entry: dict[str, Any]) -> float:
    value = entry.get("create_time")
    return (
        float(value)
        if isinstance(value, int | float) and not isinstance(value, bool)
        else 0.0
    )


def feedback_marks(
    entries: list[dict[str, Any]],
    records: list[dict[str, Any]],
    node_of: Mapping[str, str],
    renamed: Mapping[str, str],
) -> tuple[dict[str, NodeNote], dict[str, Any]]:
    """One conversation's marks from its ratings (the latest per node
    counts), and the alternatives of each preferred node (`combined`).
    `renamed` maps export message ids to the ids read, where they differ."""
    by_id = {record["id"]: record for record in records}
    groups: dict[Any, list[str]] = defaultdict(list)
    for record in records:
        key = (record["tree_id"], record["parent_id"], record["prompt"])
        groups[key].append(record["id"])
    latest: dict[str, dict[str, Any]] = {}
    for entry in sorted(entries, key=_moment):
        message = as_text(entry.get("message_id")) or ""
        node = node_of.get(renamed.get(message, message))
        if node is not None and node in by_id:
            latest[node] = entry
    marks: dict[str, NodeNote] = {}
    preferred_in: dict[Any, str] = {}
    for node, entry in sorted(latest.items(), key=lambda item: _moment(item[1])):
        letters = "".join(filter(str.isalpha, str(entry.get("rating"))))
        rating = THUMBS.get(letters.lower())
        tags, text = _said(entry)
        record = by_id[node]
        group = (record["tree_id"], record["parent_id"], record["prompt"])
        if rating == "thumbs up" and len(groups[group]) > 1:
            preferred_in[group] = node  # the latest wins
        note = None
        if rating == "thumbs down" or tags or text:
            note = f"{rating or 'rated'} in ChatGPT"
            if tags:
                note += f" ({', '.join(tags)})"
            if text:
                note += f": {text}"
        if note is not None:
            marks[node] = NodeNote(note)
    alternatives: dict[str, Any] = {}
    for group, node in preferred_in.items():
        marks[node] = NodeNote(marks.get(node, NodeNote()).note, True)
        for member in groups[group]:
            alternatives[member] = group
    return marks, alternatives


def _read(
    conn: sqlite3.Connection, node_ids: Iterable[str] | None
) -> dict[str, NodeNote]:
    if not has_table(conn, TABLE):
        return {}
    wanted = None if node_ids is None else set(node_ids)
    columns = {row[1] for row in conn.execute(f"pragma table_info({TABLE})")}
    # Tables written before `hidden` was kept have no such column.
    hidden = "hidden" if "hidden" in columns else "0"
    notes = {}
    for node_id, note, preferred, is_hidden in conn.execute(
        f"select node_id, note, preferred, {hidden} from {TABLE}"
    ):
        if wanted is not None and node_id not in wanted:
            continue
        if note is None and not preferred and not is_hidden:
            continue
        notes[str(node_id)] = NodeNote(
            None if note is None else str(note), bool(preferred), bool(is_hidden)
        )
    return notes
