"""One chat of an Open WebUI export, as parent-linked messages. A picture Open WebUI
keeps inline, as a `data:` URL, is named by its type and size: its bytes never become a
part."""

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
    epoch_to_iso,
    join_texts,
    latest_message,
)

SOURCE = "openwebui"


def _chat(item: Any) -> dict[str, Any] | None:
    """The chat object of an export's element (its `chat`), or of a single
    chat's download (the object itself)."""
    if not isinstance(item, dict):
        return None
    chat = item.get("chat")
    if isinstance(chat, dict) and ("history" in chat or "messages" in chat):
        return chat
    if isinstance(item.get("history"), dict) or isinstance(item.get("messages"), list):
        return item
    return None


def is_conversation(item: Any) -> bool:
    """Whether `item` looks like one chat of an Open WebUI export."""
    return _chat(item) is not None


def _data_url(url: str) -> tuple[str | None, int]:
    """The type and the size in bytes of what a `data:` URL holds."""
    header, _, data = url.partition(",")
    mime = header[5:].split(";")[0] or None
    if header.endswith(";base64"):
        return mime, len(data) * 3 // 4 - data[-2:].count("=")
    return mime, len(data)


def file_parts(role: str, files: list[dict[str, Any]]) -> list[P.Part]:
    """A message's `files` as `attachment` parts."""
    found = []
    for item in files:
        stored = as_dict(item.get("file"))
        meta = as_dict(stored.get("meta"))
        url = as_text(item.get("url"))
        mime = as_text(meta.get("content_type"))
        size = as_int(item.get("size"))
        if size is None:
            size = as_int(meta.get("size"))
        if url is not None and url[:5].lower() == "data:":
            mime, size = _data_url(url)
            url = None
        found.append(
            P.attachment(
                role,
                as_text(item.get("name"))
                or as_text(meta.get("name"))
                or as_text(stored.get("filename")),
                url,
                mime,
                size,
            )
        )
    return found


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
    files = [as_dict(item) for item in as_list(raw.get("files"))]
    if role == "user":
        message.kind = PROMPT
        images = sum(item.get("type") == "image" for item in files)
        message.text = join_texts([text, attachment_note(images, len(files) - images)])
        said = [P.text(P.USER, text)] if text is not None else []
        message.parts = said + file_parts(P.USER, files)
    elif role == "assistant" and text is not None:
        message.kind = ANSWER
        message.text = text
        message.parts = [P.text(P.ASSISTANT, text), *file_parts(P.ASSISTANT, files)]
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


def message_ids(item: dict[str, Any], position: int) -> list[str]:
    """The ids of the chat's messages, as `parse_conversation` gives them,
    without reading anything else."""
    chat = _chat(item) or {}
    stored = as_dict(as_dict(chat.get("history")).get("messages"))
    if stored:
        return [str(message_id) for message_id in stored]
    own_id = conversation_id(item, position)
    seen = DistinctIds()
    return [
        seen.take(as_dict(raw).get("id"), f"{own_id}-{index}")
        for index, raw in enumerate(as_list(chat.get("messages")))
    ]


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
