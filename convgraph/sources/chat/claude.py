"""One conversation of a Claude.ai data export, as parent-linked messages."""

from __future__ import annotations

from typing import Any

from convgraph import parts as P
from convgraph.sources.chat.messages import (
    ANSWER,
    PROMPT,
    STEP,
    Conversation,
    DistinctIds,
    Message,
    as_dict,
    as_int,
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


def result_text(content: Any) -> str:
    """A tool result's content as text: a string, or its blocks' texts (a
    search result's title and URL with its text)."""
    if isinstance(content, str):
        return content
    texts: list[str | None] = []
    for block in as_list(content):
        if isinstance(block, str):
            texts.append(block)
            continue
        block = as_dict(block)
        texts.append(
            join_texts(
                [
                    as_text(block.get("title")),
                    as_text(block.get("url")),
                    as_text(block.get("text")),
                ]
            )
        )
    return join_texts(texts, "\n\n") or ""


def block_parts(role: str, raw: dict[str, Any]) -> list[P.Part]:
    """A message's content blocks as parts, in order (its `text` where it has
    no blocks), then its uploads."""
    found: list[P.Part] = []
    blocks = [as_dict(block) for block in as_list(raw.get("content"))]
    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            text = as_text(block.get("text"))
            if text is not None:
                found.append(P.text(role, text))
        elif kind == "thinking":
            found.append(P.reasoning(as_text(block.get("thinking")) or ""))
        elif kind == "redacted_thinking":
            found.append(P.reasoning("", redacted=True))
        elif kind == "tool_use":
            found.append(
                P.tool_call(
                    as_text(block.get("name")),
                    block.get("input"),
                    as_text(block.get("id")),
                )
            )
        elif kind == "tool_result":
            output = result_text(block.get("content"))
            found.append(
                P.tool_result(
                    as_text(block.get("name")),
                    output,
                    as_text(block.get("tool_use_id")),
                    (output or "error") if block.get("is_error") is True else None,
                )
            )
    if not blocks:
        text = as_text(raw.get("text"))
        if text is not None:
            found.append(P.text(role, text))
    for upload in as_list(raw.get("attachments")):
        upload = as_dict(upload)
        found.append(
            P.attachment(
                role,
                as_text(upload.get("file_name")),
                mime=as_text(upload.get("file_type")),
                size=as_int(upload.get("file_size")),
            )
        )
    for upload in as_list(raw.get("files")):
        found.append(P.attachment(role, as_text(as_dict(upload).get("file_name"))))
    return found


def conversation_id(item: dict[str, Any], position: int) -> str:
    """The conversation's id; `position` names it if it has none."""
    return as_text(item.get("uuid")) or f"{SOURCE}-{position}"


def message_ids(item: dict[str, Any], position: int) -> list[str]:
    """The ids of the conversation's messages, as `parse_conversation` gives
    them (made up and made distinct where the export's are missing or
    repeated), without reading anything else."""
    own_id = conversation_id(item, position)
    seen = DistinctIds()
    return [
        seen.take(as_dict(raw).get("uuid"), f"{own_id}-{index}")
        for index, raw in enumerate(as_list(item.get("chat_messages")))
    ]


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
            message.parts = block_parts(P.USER, raw)
        else:
            if sender == "assistant" and text is not None:
                message.kind = ANSWER
                message.text = text
            else:
                message.kind = STEP
            message.parts = block_parts(P.ASSISTANT, raw) or None
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
