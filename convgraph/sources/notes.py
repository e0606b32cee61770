"""Read the user's branch notes: a note on a node, and the answer preferred
among its alternatives, kept in a table of convgraph's own.

For an llm database the table is `_convgraph_notes` in the same SQLite file;
a chat export is the app's file, which convgraph never writes, so its notes
lie in a small SQLite file beside it, `<export>.convgraph.db`. This is the
read side, which every reader of trees and forests uses; writing them
(`set_note`, `set_preferred`) is `convgraph.store.notes`, which builds on
these names. Reading notes never writes: a file without the table, or an
export without its notes file, reads as no notes.

An export may also hold what the person said in the app: ChatGPT's
`message_feedback.json` rates messages thumbs up or down, with tags and
words. They become the same marks (`feedback_marks`): a thumbs-up on an
answer that has alternatives marks it preferred (the latest such rating in
a group of alternatives wins), and a thumbs-down, or a rating with tags or
words, becomes its note ("thumbs down in ChatGPT (not-helpful): ..."). The
user's own notes win over the app's: their note replaces the app's note of
that node, and their preferred mark replaces the app's in that group of
alternatives.
"""

from __future__ import annotations

import io
import sqlite3
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from convgraph.errors import DatabaseError
from convgraph.sources.chat.messages import as_dict, as_list, as_text
from convgraph.sources.llm.files import connect_read_only
from convgraph.sources.source import Source

#: convgraph's table of notes, in the llm database or the file beside an export.
TABLE = "_convgraph_notes"

#: What a chat export's notes file adds to the export's name.
SIDE_FILE_SUFFIX = ".convgraph.db"


@dataclass(frozen=True)
class NodeNote:
    """What the user recorded about one node: a note, whether it is the
    answer preferred among its alternatives, and whether its branch is
    hidden (left out of every output unless asked for)."""

    note: str | None = None
    preferred: bool = False
    hidden: bool = False


def is_export(logs: Source) -> bool:
    """Whether `logs` is a file with no SQLite behind it (a chat export,
    agents' sessions: read-only, so notes go beside it)."""
    return logs.conn is None


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
    """The user's own notes over the app's (`feedback_marks`): the user's
    note replaces the app's note of a node, and a node the user prefers
    takes the app's preferred mark from its alternatives (`alternatives`
    gives each node of a group the app marked its group's key).
    """
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


# -- what the person said in the app ------------------------------------------

#: ChatGPT's ratings, by `rating` in lower case without punctuation.
THUMBS = {"thumbsup": "thumbs up", "thumbsdown": "thumbs down"}


def feedback_by_conversation(entries: Iterable[Any]) -> dict[str, list[dict[str, Any]]]:
    """The entries of ChatGPT's `message_feedback.json` (a list of objects
    with `conversation_id`, `message_id`, `rating` and `content`, a JSON
    text of `tags` and `text`), by conversation; entries that name no
    conversation or message are left out."""
    found: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for entry in entries:
        entry = as_dict(entry)
        conversation = as_text(entry.get("conversation_id"))
        if conversation is not None and as_text(entry.get("message_id")):
            found[conversation].append(entry)
    return dict(found)


def _said(entry: dict[str, Any]) -> tuple[list[str], str | None]:
    """A rating's tags and words: its `content` is JSON text (or an object)
    with `tags` and `text`, or the words themselves."""
    content = entry.get("content")
    if isinstance(content, str):
        parsed = _json_object(content)
        content = parsed if parsed is not None else {"text": content}
    content = as_dict(content)
    tags = [tag for tag in as_list(content.get("tags")) if isinstance(tag, str) and tag]
    text = as_text(content.get("text")) or as_text(entry.get("text"))
    return tags, text


def _json_object(text: str) -> dict[str, Any] | None:
    """`text` as a JSON object, read within the bounds every export value is
    read in; None where it is none."""
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
    """The marks one conversation's ratings give its nodes, and the
    alternatives of each node the app prefers (a key per group).

    `records` are the conversation's nodes, `node_of` the node of each
    message, `renamed` the message ids the conversation is read with where
    they differ from the export's (`chat_exports.shared_ids`). A rating of a
    message that ends no node is its node's. The latest rating of a node
    counts (by `create_time`, then the file's order).
    """
    by_id = {record["id"]: record for record in records}
    groups: dict[Any, list[str]] = defaultdict(list)
    for record in records:
        groups[(record["tree_id"], record["parent_id"], record["prompt"])].append(
            record["id"]
        )
    latest: dict[str, dict[str, Any]] = {}
    for entry in sorted(entries, key=_moment):
        message = as_text(entry.get("message_id")) or ""
        node = node_of.get(renamed.get(message, message))
        if node is not None and node in by_id:
            latest[node] = entry
    marks: dict[str, NodeNote] = {}
    preferred_in: dict[Any, str] = {}
    for node, entry in sorted(latest.items(), key=lambda item: _moment(item[1])):
        rating = THUMBS.get(
            "".join(filter(str.isalpha, str(entry.get("rating")))).lower()
        )
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
    found = conn.execute(
        "select 1 from sqlite_master where type = 'table' and name = ?", [TABLE]
    ).fetchone()
    if found is None:
        return {}
    wanted = None if node_ids is None else set(node_ids)
    columns = {row[1] for row in conn.execute(f"pragma table_info({TABLE})")}
    # Tables written before `hidden` was kept have no such column.
    hidden = "hidden" if "hidden" in columns else "0"
    notes = {}
    # The table holds what a person typed: small enough to read whole.
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
