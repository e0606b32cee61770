"""One conversation of a ChatGPT data export, as parent-linked messages."""

from __future__ import annotations

from typing import Any

from convgraph import parts as P
from convgraph.sources.chat.messages import (
    ANSWER,
    PROMPT,
    STEP,
    Conversation,
    Message,
    as_dict,
    as_int,
    as_list,
    as_text,
    attachment_note,
    join_texts,
    latest_message,
    message_time,
)

SOURCE = "chatgpt"

#: Content an assistant shows the user as its answer.
ANSWER_TYPES = frozenset({"text", "multimodal_text", "code"})

#: Custom instructions: the person's own system prompt.
CONTEXT_TYPE = "user_editable_context"

#: The code interpreter: an assistant's message to it is a cell of code.
PYTHON = "python"

#: What the person reads; any other recipient is a tool being called.
EVERYONE = (None, "all")


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


def _pointer_file(pointer: Any) -> str | None:
    """The file id of an asset pointer (`file-service://file-abc`)."""
    text = as_text(pointer)
    return text.rpartition("://")[2] if text else None


def content_parts(
    role: str, content: dict[str, Any], uploads: list[dict[str, Any]]
) -> list[P.Part]:
    """A user's or assistant's text and pictures in the order the content
    holds them, then the uploaded files no picture named."""
    found: list[P.Part] = []
    named = {as_text(upload.get("id")): upload for upload in uploads}
    used: set[str | None] = set()
    for part in as_list(content.get("parts")):
        if isinstance(part, str):
            if part:
                found.append(P.text(role, part))
        elif isinstance(part, dict):
            spoken = as_text(part.get("text"))
            if spoken is not None:
                found.append(P.text(role, spoken))
            elif part.get("content_type") == "image_asset_pointer":
                file_id = _pointer_file(part.get("asset_pointer"))
                upload = named.get(file_id, {}) if file_id else {}
                used.add(file_id)
                pointer = as_text(part.get("asset_pointer"))
                size = as_int(part.get("size_bytes"))
                found.append(_attachment(role, upload, pointer, size))
    text = as_text(content.get("text"))
    if text is not None:
        found.append(P.text(role, text))
    for upload in uploads:
        if as_text(upload.get("id")) in used and upload.get("id") is not None:
            continue
        found.append(_attachment(role, upload))
    return found


def _attachment(
    role: str, upload: dict[str, Any], url: str | None = None, size: int | None = None
) -> P.Part:
    name, mime = as_text(upload.get("name")), as_text(upload.get("mime_type"))
    return P.attachment(role, name, url, mime, size or as_int(upload.get("size")))


def tool_output(content: dict[str, Any]) -> str:
    """What a tool's message says: its text and string parts, a browsing
    display's `result` (or `summary`), a quoted page's title and URL."""
    texts: list[str | None] = [
        as_text(content.get("title")),
        as_text(content.get("url")),
        *(part for part in as_list(content.get("parts")) if isinstance(part, str)),
        as_text(content.get("text")),
        as_text(content.get("result")) or as_text(content.get("summary")),
    ]
    return join_texts(texts) or ""


def thoughts(content: dict[str, Any]) -> list[P.Part]:
    """A reasoning model's `thoughts`, each a `reasoning` part."""
    found = []
    for thought in as_list(content.get("thoughts")):
        thought = as_dict(thought)
        text = join_texts(
            [as_text(thought.get("summary")), as_text(thought.get("content"))],
            "\n\n",
        )
        if text is not None:
            found.append(P.reasoning(text))
    return found


def _step_parts(
    role: Any,
    content: dict[str, Any],
    content_type: Any,
    recipient: Any,
    author: dict[str, Any],
) -> list[P.Part]:
    """The parts of a message that is no prompt and no answer: a tool call,
    a code cell, their results, reasoning."""
    if role == "assistant":
        if content_type == "thoughts":
            return thoughts(content)
        if content_type == "reasoning_recap" or recipient in EVERYONE:
            return []
        text = as_text(content.get("text")) or tool_output(content)
        if recipient == PYTHON and content_type == "code":
            language = as_text(content.get("language"))
            return [P.code(text, PYTHON if language in (None, "unknown") else language)]
        return [P.tool_call(str(recipient), text)]
    if role == "tool":
        name = as_text(author.get("name"))
        if content_type == "execution_output":
            return [P.code_output(as_text(content.get("text")) or "")]
        if content_type == "system_error":
            error = join_texts(
                [as_text(content.get("name")), as_text(content.get("text"))], ": "
            )
            return [P.tool_result(name, "", error=error or "error")]
        found = [P.tool_result(name, tool_output(content))]
        # A tool's pictures (an image generator's) are shown to the person.
        found += [
            part
            for part in content_parts(P.ASSISTANT, content, [])
            if part["type"] == P.ATTACHMENT
        ]
        return found
    return []


def parse_message(node_id: str, node: dict[str, Any], texts: bool = True) -> Message:
    """One mapping entry as a `Message` (the placeholder root as a step); a
    prompt's or answer's text and parts, and system prompts, only with `texts`."""
    parent = node.get("parent")
    message = Message(node_id, parent if isinstance(parent, str) else None)
    raw = node.get("message")
    if not isinstance(raw, dict):
        return message
    author = as_dict(raw.get("author"))
    role = author.get("role")
    content = as_dict(raw.get("content"))
    content_type = content.get("content_type")
    metadata = as_dict(raw.get("metadata"))
    hidden = bool(metadata.get("is_visually_hidden_from_conversation"))
    recipient = raw.get("recipient")
    text, images, others = content_text(content) if texts else (None, 0, 0)
    message.epoch = raw.get("create_time")
    if texts:
        message_time(message)
    message.model = as_text(metadata.get("model_slug"))

    if content_type == CONTEXT_TYPE:
        message.system = custom_instructions(content) if texts else None
    elif role == "system":
        message.system = text
    elif role == "user" and not hidden:
        message.kind = PROMPT
        if not texts:
            return message
        uploads = [as_dict(item) for item in as_list(metadata.get("attachments"))]
        files = sum(
            not str(item.get("mime_type") or "").startswith("image/")
            for item in uploads
        )
        note = attachment_note(images, files + others)
        message.text = join_texts([text, note])
        message.parts = content_parts(P.USER, content, uploads)
    elif (
        role == "assistant"
        and not hidden
        and recipient in EVERYONE
        and content_type in ANSWER_TYPES
    ):
        message.kind = ANSWER
        message.text = text
        if content_type == "code" and texts:
            language = as_text(content.get("language"))
            message.parts = [P.code(text or "", language)]
        elif texts:
            message.parts = content_parts(P.ASSISTANT, content, [])
    else:
        message.kind = STEP
        found = _step_parts(role, content, content_type, recipient, author)
        # Hidden tool messages that say nothing (a search's spinner) are
        # the app's own bookkeeping, not a result.
        if hidden:
            found = [
                part
                for part in found
                if part.get("output") or part.get("error") or part.get("text")
            ]
        message.parts = found or None
    return message


def conversation_id(item: dict[str, Any], position: int) -> str:
    """The conversation's id; `position` names it if it has none."""
    return (
        as_text(item.get("conversation_id"))
        or as_text(item.get("id"))
        or f"{SOURCE}-{position}"
    )


def message_ids(item: dict[str, Any], position: int) -> list[str]:
    """The ids of the conversation's messages (the mapping's keys), without
    reading anything else."""
    return [str(node_id) for node_id in as_dict(item.get("mapping"))]


def structural_ids(item: dict[str, Any], position: int) -> set[str]:
    """The ids of the mapping's roots that hold no message: the app's own
    scaffolding (`client-created-root` in every conversation of a current
    export), which conversations share by design, not by copying."""
    return {
        str(node_id)
        for node_id, node in as_dict(item.get("mapping")).items()
        if as_dict(node).get("message") is None and as_dict(node).get("parent") is None
    }


def parse_conversation(
    item: dict[str, Any], position: int, texts: bool = True
) -> Conversation:
    """One conversation of the export; `position` names it if it has no id."""
    messages = [
        parse_message(str(node_id), as_dict(node), texts)
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
