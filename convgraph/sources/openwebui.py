"""One chat of an Open WebUI export, as parent-linked messages.

Open WebUI exports a JSON array of chats (or one chat): each has `id`,
`title` and `chat`, whose `history.messages` maps ids to messages with
`parentId`, `childrenIds`, `role`, `content`, `model`, `timestamp` (epoch
seconds) and usage figures, and whose `history.currentId` is the message the
person was on last. Several models answering one prompt are sibling answers.
Older chats have only the list `chat.messages`: one chain in list order.
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
    as_int,
    as_list,
    as_text,
    attachment_note,
    epoch_to_iso,
    join_texts,
    latest_message,
)

SOURCE = "openwebui"


def _chat(item: Any) -> dict[str, Any] | None:
    if not isinstance(item, dict):
        return None
    chat = item.get("chat")
    if isinstance(chat, dict) and ("history" in chat or "messages" in chat):
        return chat
    return None


def is_conversation(item: Any) -> bool:
    """Whether `item` looks like one chat of an Open WebUI export."""
    return _chat(item) is not None


def content_text(content: Any) -> str | None:
    """A message's text: a string, or the text items of a list of parts."""
    if isinstance(content, list):
        return join_texts(
            [as_text(as_dict(part).get("text")) for part in content], "\n"
        )
    return as_text(content)


def _usage(raw: dict[str, Any]) -> tuple[int | None, int | None, int | None]:
    """Tokens in and out and the time taken, from `usage` (OpenAI's names)
    or `info` (Ollama's: counts and a duration in nanoseconds)."""
    for figures in (as_dict(raw.get("usage")), as_dict(raw.get("info"))):
        tokens_in = as_int(figures.get("prompt_tokens"))
        if tokens_in is None:
            tokens_in = as_int(figures.get("prompt_eval_count"))
        tokens_out = as_int(figures.get("completion_tokens"))
        if tokens_out is None:
            tokens_out = as_int(figures.get("eval_count"))
        duration = as_int(figures.get("total_duration"))
        duration_ms = duration // 1_000_000 if duration is not None else None
        if tokens_in is not None or tokens_out is not None or duration_ms is not None:
            return tokens_in, tokens_out, duration_ms
    return None, None, None


def parse_message(message_id: str, parent: Any, raw: dict[str, Any]) -> Message:
    """One message as a `Message`; `parent` as stored."""
    message = Message(
        message_id,
        parent if isinstance(parent, str) and parent else None,
        time=epoch_to_iso(raw.get("timestamp")),
        model=as_text(raw.get("model")),
    )
    role = raw.get("role")
    text = content_text(raw.get("content"))
    if role == "user":
        message.kind = PROMPT
        files = [as_dict(item) for item in as_list(raw.get("files"))]
        images = sum(item.get("type") == "image" for item in files)
        message.text = join_texts([text, attachment_note(images, len(files) - images)])
    elif role == "assistant" and text is not None:
        message.kind = ANSWER
        message.text = text
    else:
        message.kind = STEP
        if role == "system":
            message.system = text
    if role == "assistant":
        message.input_tokens, message.output_tokens, message.duration_ms = _usage(raw)
    return message


def conversation_id(item: dict[str, Any], position: int) -> str:
    """The chat's id; `position` names it if it has none."""
    chat = _chat(item) or {}
    return as_text(item.get("id")) or as_text(chat.get("id")) or f"{SOURCE}-{position}"


def holds_message(item: dict[str, Any], position: int, message_id: str) -> bool:
    """Whether the chat has a message of this id (ids made up for messages
    without one included)."""
    messages = parse_conversation(item, position).messages
    return any(message.id == message_id for message in messages)


def parse_conversation(item: dict[str, Any], position: int) -> Conversation:
    """One chat of the export; `position` names it if it has no id."""
    chat = _chat(item) or {}
    own_id = conversation_id(item, position)
    history = as_dict(chat.get("history"))
    stored = as_dict(history.get("messages"))
    messages: list[Message] = []
    if stored:
        for message_id, raw in stored.items():
            raw = as_dict(raw)
            messages.append(parse_message(str(message_id), raw.get("parentId"), raw))
        if as_text(history.get("currentId")):
            current = history["currentId"]
        else:
            current = latest_message(messages)
    else:
        seen = DistinctIds()
        previous: str | None = None
        for index, raw in enumerate(as_list(chat.get("messages"))):
            raw = as_dict(raw)
            message_id = seen.take(raw.get("id"), f"{own_id}-{index}")
            messages.append(parse_message(message_id, previous, raw))
            previous = message_id
        current = previous
    params = as_dict(chat.get("params"))
    models = [as_text(model) for model in as_list(chat.get("models"))]
    return Conversation(
        own_id,
        as_text(item.get("title")) or as_text(chat.get("title")),
        messages,
        current=current,
        model=next((model for model in models if model), None),
        system=as_text(params.get("system")) or as_text(chat.get("system")),
    )
