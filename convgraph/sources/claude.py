"""One conversation of a Claude.ai data export, as parent-linked messages.

A Claude.ai conversation has `uuid`, `name` and `chat_messages`; a message
has `uuid`, `sender` (`human` or `assistant`), `created_at` (ISO 8601), its
text both as `text` and as typed `content` blocks (`text`, `thinking`,
`tool_use`, `tool_result`), and uploads as `attachments` and `files`.
Exports that keep branches give each message `parent_message_uuid`, the
root's being the all-zero sentinel, and may name the branch in use last with
`current_leaf_message_uuid`; older exports have no links: their messages are
one chain in list order.
"""

from __future__ import annotations

from typing import Any

from convgraph.sources.chat_messages import (
    ANSWER,
    PROMPT,
    STEP,
    Conversation,
    DistinctIds,
    Message,
    as_dict,
    as_list,
    as_text,
    attachment_note,
    join_texts,
    latest_message,
    text_to_iso,
)

SOURCE = "claude"

#: The parent Claude.ai gives a conversation's first message.
ROOT_SENTINEL = "00000000-0000-4000-8000-000000000000"


def is_conversation(item: Any) -> bool:
    """Whether `item` looks like one conversation of a Claude.ai export."""
    return isinstance(item, dict) and isinstance(item.get("chat_messages"), list)


def message_text(raw: dict[str, Any]) -> str | None:
    """The text blocks of a message (its thinking and tool blocks left out),
    or its `text` where it has no blocks."""
    blocks = [as_dict(block) for block in as_list(raw.get("content"))]
    if blocks:
        return join_texts(
            [
                as_text(block.get("text"))
                for block in blocks
                if block.get("type") == "text"
            ],
            "\n\n",
        )
    return as_text(raw.get("text"))


def conversation_id(item: dict[str, Any], position: int) -> str:
    """The conversation's id; `position` names it if it has none."""
    return as_text(item.get("uuid")) or f"{SOURCE}-{position}"


def holds_message(item: dict[str, Any], position: int, message_id: str) -> bool:
    """Whether the conversation has a message of this id (ids made up for
    messages without one included)."""
    messages = parse_conversation(item, position).messages
    return any(message.id == message_id for message in messages)


def parse_conversation(item: dict[str, Any], position: int) -> Conversation:
    """One conversation of the export; `position` names it if it has no id."""
    own_id = conversation_id(item, position)
    raws = [as_dict(raw) for raw in as_list(item.get("chat_messages"))]
    linked = any("parent_message_uuid" in raw for raw in raws)
    seen = DistinctIds()
    messages: list[Message] = []
    previous: str | None = None
    for index, raw in enumerate(raws):
        message_id = seen.take(raw.get("uuid"), f"{own_id}-{index}")
        if linked:
            parent = raw.get("parent_message_uuid")
            parent = None if parent == ROOT_SENTINEL or not as_text(parent) else parent
        else:
            parent = previous
        message = Message(message_id, parent, time=text_to_iso(raw.get("created_at")))
        sender = raw.get("sender")
        text = message_text(raw)
        if sender == "human":
            message.kind = PROMPT
            uploads = len(as_list(raw.get("attachments"))) + len(
                as_list(raw.get("files"))
            )
            message.text = join_texts([text, attachment_note(0, uploads)])
        elif sender == "assistant" and text is not None:
            message.kind = ANSWER
            message.text = text
        else:
            message.kind = STEP
        messages.append(message)
        previous = message_id
    if not linked:
        current = previous
    elif as_text(item.get("current_leaf_message_uuid")):
        current = item["current_leaf_message_uuid"]
    else:
        current = latest_message(messages)
    return Conversation(
        own_id,
        as_text(item.get("name")),
        messages,
        current=current,
        model=as_text(item.get("model")),
    )
