"""The content of llm's message store as `convgraph.parts`, in position order.

Each `parts` row becomes a text, reasoning, tool call or result, or attachment part
(never its bytes); fragments a user's text borrows through a `text_ref` come before it.
Unknown part types are left out; bad payloads and missing rows give what can be read."""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from convgraph import parts as kinds
from convgraph.parts import Part
from convgraph.sources.llm.snapshot import Snapshot
from convgraph.sources.tables import as_integer, as_text

PART_COLUMNS = ", ".join(
    [
        as_text("message_hash"),
        as_integer("position"),
        as_text("type"),
        as_text("tool_name"),
        as_text("text"),
        as_text("payload"),
        as_integer("id"),
    ]
)
#: The same columns, NULL but for a tool call (cheap to skip).
TOOL_CALL_COLUMNS = ", ".join(
    f"case when type = 'tool_call' then {column} end"
    for column in (
        as_text("message_hash"),
        as_integer("position"),
        "'tool_call'",
        as_text("tool_name"),
        "null",
        as_text("payload"),
        "null",
    )
)
SOME_MESSAGES = " where message_hash in (select value from json_each(?))"

BATCH = 20_000

#: Roles kept from the message; any other is the assistant's.
ROLES = (kinds.USER, kinds.ASSISTANT, kinds.TOOL)

FROM_MESSAGE: Any = None

#: A text part's words, or any other part (an attachment's role None).
Item = str | Part


@dataclass
class MessageContent:
    """Each message's items and tool calls' names, in position order."""

    items: dict[str, list[Item]] = field(default_factory=dict)
    tool_names: dict[str, list[str | None]] = field(default_factory=dict)

    def text_of(self, message_hash: str) -> str | None:
        words = [
            item for item in self.items.get(message_hash, ()) if isinstance(item, str)
        ]
        return "".join(words) if words else None

    def parts_of(self, message_hash: str, role: str | None) -> list[Part]:
        """The message's parts as new dicts in its role; fragments only for a
        user (an answer repeating a fragment's words references it too)."""
        role = role if role in ROLES else kinds.ASSISTANT
        found: list[Part] = []
        for item in self.items.get(message_hash, ()):
            if isinstance(item, str):
                found.append(kinds.text(role, item))
            elif item["type"] == kinds.FRAGMENT:
                if role == kinds.USER:
                    found.append(dict(item))
            elif item["type"] == kinds.ATTACHMENT and item["role"] is None:
                found.append(dict(item, role=role))
            else:
                found.append(dict(item))
        return found


def read_content(
    conn: sqlite3.Connection,
    hashes: list[str] | None,
    snapshot: Snapshot | None = None,
    attachments: bool = True,
) -> MessageContent:
    """The content of these messages (all for None); `attachments`: the file
    has the tables to name them by."""
    rows_by_message = _grouped(_part_rows(conn, hashes, snapshot, PART_COLUMNS))
    content = MessageContent()
    fragment_ids: set[Any] = set()
    attachment_parts: set[int] = set()
    # Parts naming fragments or attachments wait until those are read.
    waiting: dict[str, list[Any]] = {}
    for message_hash, rows in rows_by_message.items():
        items: list[Any] = []
        for _, _, _, part_type, tool_name, words, payload, part_id in rows:
            if words is not None and part_type == kinds.TEXT:
                items.append(words)
                continue
            decoded = (part_type, tool_name, words, _payload(payload), part_id)
            items.append(decoded)
            waiting[message_hash] = items
            if words is None and part_type in (kinds.TEXT, kinds.REASONING):
                fragment_ids.update(
                    piece["fragment"]
                    for piece in _text_refs(decoded[3])
                    if "fragment" in piece
                )
            if part_id is not None and part_type in (
                kinds.ATTACHMENT,
                kinds.TOOL_RESULT,
            ):
                attachment_parts.add(part_id)
        if items:
            content.items[message_hash] = items
    fragments = _fragments(conn, sorted(fragment_ids, key=str))
    files = _attachments(conn, sorted(attachment_parts)) if attachments else {}
    for message_hash, items in waiting.items():
        resolved: list[Item] = []
        names: list[str | None] = []
        for item in items:
            if isinstance(item, str):
                resolved.append(item)
                continue
            part_type, tool_name, words, payload, part_id = item
            resolved += _items(
                part_type, tool_name, words, payload, fragments, files, part_id
            )
            if part_type == kinds.TOOL_CALL:
                names.append(_call_name(tool_name, payload))
        if resolved:
            content.items[message_hash] = resolved
        else:
            del content.items[message_hash]
        if names:
            content.tool_names[message_hash] = names
    return content


def read_tool_names(
    conn: sqlite3.Connection, hashes: list[str] | None, snapshot: Snapshot | None = None
) -> dict[str, list[str | None]]:
    """`read_content`'s `tool_names`, without reading any text."""
    rows_by_message = _grouped(_part_rows(conn, hashes, snapshot, TOOL_CALL_COLUMNS))
    return {
        message_hash: [_call_name(row[4], _payload(row[6])) for row in rows]
        for message_hash, rows in rows_by_message.items()
    }


def _part_rows(
    conn: sqlite3.Connection,
    hashes: list[str] | None,
    snapshot: Snapshot | None,
    columns: str,
) -> Iterator[tuple[Any, ...]]:
    if hashes is None:
        snapshot = snapshot or Snapshot(conn, ["parts", "fragments"])
        for chunk in snapshot.rows("parts", columns):
            yield from chunk
        return
    for start in range(0, len(hashes), BATCH):
        batch = json.dumps(hashes[start : start + BATCH])
        yield from conn.execute(
            f"select rowid, {columns} from parts{SOME_MESSAGES}", [batch]
        )


def _grouped(rows: Iterable[tuple[Any, ...]]) -> dict[str, list[tuple[Any, ...]]]:
    """Rows by message, NULL position first (as SQLite), then rowid."""
    grouped: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
    for row in rows:
        if row[1] is not None:
            grouped[row[1]].append(row)
    for message_rows in grouped.values():
        if len(message_rows) > 1:
            message_rows.sort(key=_position_order)
    return grouped


def _position_order(row: tuple[Any, ...]) -> tuple[bool, int, int]:
    position = row[2]
    return (position is not None, position or 0, row[0] or 0)


def _payload(payload: str | None) -> dict[str, Any]:
    """A payload as a dict, {} where it is none."""
    if not payload:
        return {}
    try:
        found = json.loads(payload)
    except (ValueError, RecursionError):
        return {}
    return found if isinstance(found, dict) else {}


def _items(
    part_type: str | None,
    tool_name: str | None,
    words: str | None,
    payload: dict[str, Any],
    fragments: dict[Any, tuple[str, str | None, int | None]],
    files: dict[int, list[Part]],
    part_id: int | None,
) -> list[Item]:
    if part_type in (kinds.TEXT, kinds.REASONING):
        refs = _text_refs(payload) if words is None else []
        borrowed: list[Item] = []
        if refs:
            words = "".join(_piece_text(piece, fragments) for piece in refs)
            borrowed = [
                kinds.fragment(source, size)
                for piece in refs
                if piece.get("fragment") in fragments
                for _, source, size in [fragments[piece["fragment"]]]
            ]
        if words is None:
            return []
        if part_type == kinds.TEXT:
            return [*borrowed, words]
        return [kinds.reasoning(words, payload.get("redacted") is True)]
    if part_type == kinds.TOOL_CALL:
        call_id = payload.get("tool_call_id")
        return [
            kinds.tool_call(
                _call_name(tool_name, payload),
                payload.get("arguments"),
                call_id if isinstance(call_id, str) else None,
            )
        ]
    if part_type == kinds.TOOL_RESULT:
        name = payload.get("name")
        call_id = payload.get("tool_call_id")
        error = payload.get("exception")
        result = kinds.tool_result(
            name if isinstance(name, str) else tool_name,
            _output(payload.get("output")),
            call_id if isinstance(call_id, str) else None,
            error if isinstance(error, str) else None,
        )
        return [result, *files.get(part_id, ())] if part_id is not None else [result]
    if part_type == kinds.ATTACHMENT:
        found = files.get(part_id, []) if part_id is not None else []
        return list(found) or [kinds.attachment(FROM_MESSAGE)]
    return []


def call_name(tool_name: str | None, payload: str | None) -> str | None:
    """A tool call's name: the payload's, else the `tool_name` column's."""
    return _call_name(tool_name, _payload(payload))


def _call_name(tool_name: str | None, payload: dict[str, Any]) -> str | None:
    name = payload.get("name")
    return name if isinstance(name, str) else tool_name


def _output(output: Any) -> str:
    if output is None:
        return ""
    return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)


def _text_refs(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """The `text_ref` pieces of llm's shapes: literal text or fragment id."""
    refs = payload.get("text_ref")
    if not isinstance(refs, list):
        return []
    return [
        piece
        for piece in refs
        if isinstance(piece, dict)
        and (
            isinstance(piece.get("literal"), str)
            or isinstance(piece.get("fragment"), int | str)
        )
    ]


def _piece_text(
    piece: dict[str, Any], fragments: dict[Any, tuple[str, str | None, int | None]]
) -> str:
    literal = piece.get("literal")
    if isinstance(literal, str) and literal:
        return literal
    found = fragments.get(piece.get("fragment"))
    return (found[0] or "") if found else ""


def _fragments(
    conn: sqlite3.Connection, fragment_ids: list[Any]
) -> dict[Any, tuple[str, str | None, int | None]]:
    """Fragments by id: content, source and size in bytes."""
    found: dict[Any, tuple[str, str | None, int | None]] = {}
    for start in range(0, len(fragment_ids), BATCH):
        batch = fragment_ids[start : start + BATCH]
        for row in conn.execute(
            f"select id, {as_text('content')}, {as_text('source')},"
            " length(cast(content as blob)) from fragments"
            " where id in (select value from json_each(?))",
            [json.dumps(batch)],
        ):
            found[row[0]] = (row[1], row[2], row[3])
    return found


def _attachments(
    conn: sqlite3.Connection, part_ids: list[int]
) -> dict[int, list[Part]]:
    """Attachment parts by part id, in order, named by their path."""
    found: dict[int, list[Part]] = defaultdict(list)
    for start in range(0, len(part_ids), BATCH):
        batch = part_ids[start : start + BATCH]
        rows = conn.execute(
            f"""
            select pa.part_id, {as_text("a.path")}, {as_text("a.url")},
                {as_text("a.type")}, length(cast(a.content as blob))
            from part_attachments pa left join attachments a
                on a.id = pa.attachment_id
            where pa.part_id in (select value from json_each(?))
            order by pa.part_id, {as_integer('pa."order"')}, pa.rowid
            """,
            [json.dumps(batch)],
        )
        for part_id, name, url, mime, size in rows:
            found[part_id].append(kinds.attachment(FROM_MESSAGE, name, url, mime, size))
    return found
