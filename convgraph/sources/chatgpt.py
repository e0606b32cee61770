"""One conversation of a ChatGPT data export, as parent-linked messages.

ChatGPT keeps a conversation as `mapping`: message nodes by id, each with its
`parent` and `children`, an empty placeholder at the root (`message` null),
and `current_node` naming the message the person was on last. A message has
`author.role` (system, user, assistant, tool), `content` typed by
`content_type` (`text` and `multimodal_text` carry `parts`; `code`,
`execution_output` and others carry `text`), `create_time` in epoch seconds,
`recipient` (`all` for what the user reads; a tool's name for a call) and
`metadata` (`model_slug`, `is_visually_hidden_from_conversation`, uploaded
`attachments`). Custom instructions come as a hidden user message of type
`user_editable_context`: they are the system prompt here, not a prompt.
"""

from __future__ import annotations

from typing import Any

from convgraph.sources.chat_messages import (
    ANSWER,
    PROMPT,
    STEP,
    Conversation,
    Message,
    as_dict,
    as_list,
    as_text,
    attachment_note,
    epoch_to_iso,
    join_texts,
    latest_message,
)

SOURCE = "chatgpt"

#: Content an assistant shows the user as its answer.
ANSWER_TYPES = frozenset({"text", "multimodal_text", "code"})

#: Custom instructions: the person's own system prompt.
CONTEXT_TYPE = "user_editable_context"


def is_conversation(item: Any) -> bool:
    """Whether `item` looks like one conversation of a ChatGPT export."""
    return isinstance(item, dict) and isinstance(item.get("mapping"), dict)


def content_text(content: dict[str, Any]) -> tuple[str | None, int, int]:
    """The text of a message's content, and how many images and other
    non-text parts it held besides."""
    texts: list[str | None] = []
    images = others = 0
    for part in as_list(content.get("parts")):
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            # An audio transcription carries its words; pictures and other
            # assets only a pointer.
            spoken = as_text(part.get("text"))
            if spoken is not None:
                texts.append(spoken)
            elif part.get("content_type") == "image_asset_pointer":
                images += 1
            else:
                others += 1
    texts.append(as_text(content.get("text")))
    return join_texts(texts), images, others


def custom_instructions(content: dict[str, Any]) -> str | None:
    """The custom instructions of a `user_editable_context` message."""
    return join_texts(
        [
            as_text(content.get("user_profile")),
            as_text(content.get("user_instructions")),
        ],
        "\n\n",
    )


def parse_message(node_id: str, node: dict[str, Any]) -> Message:
    """One mapping entry as a `Message` (the placeholder root as a step)."""
    parent = node.get("parent")
    message = Message(node_id, parent if isinstance(parent, str) else None)
    raw = node.get("message")
    if not isinstance(raw, dict):
        return message
    role = as_dict(raw.get("author")).get("role")
    content = as_dict(raw.get("content"))
    content_type = content.get("content_type")
    metadata = as_dict(raw.get("metadata"))
    hidden = bool(metadata.get("is_visually_hidden_from_conversation"))
    recipient = raw.get("recipient")
    text, images, others = content_text(content)
    message.time = epoch_to_iso(raw.get("create_time"))
    message.model = as_text(metadata.get("model_slug"))

    if content_type == CONTEXT_TYPE:
        message.system = custom_instructions(content)
    elif role == "system":
        message.system = text
    elif role == "user" and not hidden:
        message.kind = PROMPT
        uploads = [as_dict(item) for item in as_list(metadata.get("attachments"))]
        files = sum(
            not str(item.get("mime_type") or "").startswith("image/")
            for item in uploads
        )
        note = attachment_note(images, files + others)
        message.text = join_texts([text, note])
    elif (
        role == "assistant"
        and not hidden
        and recipient in (None, "all")
        and content_type in ANSWER_TYPES
    ):
        message.kind = ANSWER
        message.text = text
    else:
        message.kind = STEP
    return message


def conversation_id(item: dict[str, Any], position: int) -> str:
    """The conversation's id; `position` names it if it has none."""
    return (
        as_text(item.get("conversation_id"))
        or as_text(item.get("id"))
        or f"{SOURCE}-{position}"
    )


def holds_message(item: dict[str, Any], position: int, message_id: str) -> bool:
    """Whether the conversation has a message of this id (without parsing it)."""
    return message_id in as_dict(item.get("mapping"))


def parse_conversation(item: dict[str, Any], position: int) -> Conversation:
    """One conversation of the export; `position` names it if it has no id."""
    messages = [
        parse_message(str(node_id), as_dict(node))
        for node_id, node in as_dict(item.get("mapping")).items()
    ]
    current: str | None
    if "current_node" in item and item["current_node"] is not None:
        current = str(item["current_node"])
    else:
        current = latest_message(messages)
    return Conversation(
        conversation_id(item, position),
        as_text(item.get("title")),
        messages,
        current=current,
        model=as_text(item.get("default_model_slug")),
    )
