"""Claude Code's records of the conversation as `Message`s: a `user` or `assistant`
record's API message (`content` a string or blocks, read by `claude.block_parts`; a
pasted image an attachment part, and the prompt "[1 image]" where it is all the prompt
holds), its model, and its usage, counted once per API message on the last record that
holds it. An interruption, a compaction's summary (its text the model's) and a command's
records are steps; a command the model answers a prompt (`answered`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from convgraph import parts as P
from convgraph.sources.agents.files import SessionGroup
from convgraph.sources.chat.claude import block_parts
from convgraph.sources.chat.messages import (
    ANSWER,
    INT64_LIMIT,
    PROMPT,
    STEP,
    Message,
    as_int,
    as_text,
    attachment_note,
    join_texts,
)


def record_message(
    record: dict[str, Any],
    kind: Any,
    message_id: str,
    parent: str | None,
    calls: dict[str, tuple[str, str | None]],
    usage_holder: dict[str, tuple[Message, dict[str, Any]]],
    text: bool = True,
) -> Message:
    """One record of the conversation (of type `kind`) as a `Message` (without its texts
    and their parts but a prompt's, `text=False`: `_parts`)."""
    # Run for every record of every session: the checks of the untrusted
    # values are written out (`type(x) is`) rather than called.
    raw = record.get("message")
    if type(raw) is not dict:
        raw = _NO_MESSAGE
    time = record.get("timestamp")
    # The time as stored: `AgentSessions` makes the nodes' times UTC.
    # Positional: a slotted dataclass's keywords cost more.
    message = Message(
        message_id, parent, STEP, None, time if type(time) is str and time else None
    )
    if kind == "user":
        content = raw.get("content")
        if type(content) is str:
            if text:
                parts, texts = _parts(
                    P.USER, {"content": [{"type": "text", "text": content}]}, text
                )
            else:
                # A typed prompt, the common user record: its text as it is.
                parts, texts = [], [content]
        else:
            parts, texts = _parts(P.USER, raw, text)
        results = False
        for part in parts:
            if part["type"] == P.TOOL_RESULT:
                results = True
                if part["name"] is None:
                    part["name"] = calls.get(part["id"] or "", (None, None))[1]
        if record.get("isCompactSummary") is True:
            # Written by the compaction's model, not typed: a step of the
            # turn it continues, its text the model's.
            for part in parts:
                part["role"] = P.ASSISTANT
        elif not (results or record.get("isMeta") is True):
            said = join_texts(texts, "\n\n")
            if said is not None and said.startswith(NOT_TYPED):
                # A step; a command keeps its words for `answered`.
                message.text = command(said)
            else:
                message.kind = PROMPT
                message.text = said
                if said is None and type(content) is list:
                    # A pasted picture alone: the prompt as the chat exports
                    # write it, so the turn stays the user's.
                    images = sum(
                        type(block) is dict and block.get("type") == "image"
                        for block in content
                    )
                    message.text = attachment_note(images, 0)
        message.parts = parts or None
    elif kind == "assistant":
        parts, texts = _parts(P.ASSISTANT, raw, text)
        model = raw.get("model")
        if texts and not (model == "<synthetic>" and texts == [NO_RESPONSE]):
            message.kind = ANSWER
            message.text = join_texts(texts, "\n\n") if text else None
        message.parts = parts or None
        if type(model) is str and model and model != "<synthetic>":
            message.model = model
        usage = raw.get("usage")
        if type(usage) is dict:
            # One API message is written a block a record, each with its
            # usage: counted on its last record only (`_count_usage`).
            api_id = raw.get("id")
            usage_holder[api_id if type(api_id) is str and api_id else message_id] = (
                message,
                usage,
            )
    return message


#: How the user records no one typed begin: a stop of the turn before
#: (kept on it as a step) and a command's records (`commands`).
INTERRUPTED = "[Request interrupted by user"
NOT_TYPED = (INTERRUPTED, "<command-", "<local-command-", "<bash-")

#: What Claude Code itself writes after a local command: no answer.
NO_RESPONSE = "No response requested."


def answered(message: Message, text: bool) -> None:
    """A command the model answered made the prompt it is: the command as
    typed, its record's tags left out."""
    message.kind = PROMPT
    if text and message.text is not None:
        message.parts = [P.text(P.USER, message.text)]


def command(text: str | None) -> str | None:
    """A command record's command as typed (`/name args`), else None."""
    if text is None or not text.startswith(("<command-name>", "<command-message>")):
        return None
    if (name := _tag(text, "command-name")) is None:
        return None
    args = _tag(text, "command-args")
    return f"{name} {args}" if args else name


def _tag(text: str, tag: str) -> str | None:
    start = text.find(f"<{tag}>")
    if start < 0:
        return None
    end = text.find(f"</{tag}>", start)
    end = len(text) if end < 0 else end  # a cut record: as far as it goes
    return text[start + len(tag) + 2 : end].strip() or None


#: What a record without an API message reads as.
_NO_MESSAGE: dict[str, Any] = {}


def _parts(
    role: str, raw: dict[str, Any], text: bool
) -> tuple[list[P.Part], list[str | None]]:
    """A message's parts (`claude.block_parts`) and its texts. Without `text`, only what
    the figures count is made: the tool calls and results (a result's output left empty,
    its error said), and the texts as they are, not as parts: the same calls, errors and
    kinds of message, at half the cost."""
    if text:
        content = raw.get("content")
        if type(content) is list and any(
            type(block) is dict and block.get("type") == "image" for block in content
        ):
            # A pasted picture: an attachment part (never its bytes), in its
            # place among the message's blocks.
            parts = []
            for block in content:
                if type(block) is dict and block.get("type") == "image":
                    parts.append(_image(role, block))
                else:
                    parts.extend(block_parts(role, {"content": [block]}))
        else:
            parts = block_parts(role, raw)
        texts: list[str | None] = [
            part["text"] for part in parts if part["type"] == P.TEXT
        ]
        return parts, texts
    found: list[P.Part] = []
    texts = []
    content = raw.get("content")
    if type(content) is not list:
        return found, texts
    for block in content:
        if type(block) is not dict:
            continue
        kind = block.get("type")
        if kind == "text":
            value = block.get("text")
            if type(value) is str and value:
                texts.append(value)
        elif kind == "tool_use":
            found.append(
                P.tool_call(
                    as_text(block.get("name")),
                    block.get("input"),
                    as_text(block.get("id")),
                )
            )
        elif kind == "tool_result":
            found.append(
                P.tool_result(
                    as_text(block.get("name")),
                    "",
                    as_text(block.get("tool_use_id")),
                    "error" if block.get("is_error") is True else None,
                )
            )
    return found, texts


def _image(role: str, block: dict[str, Any]) -> P.Part:
    """An image block as an attachment: its type, its size decoded (base64
    holds 3 bytes in 4 characters) or its URL."""
    source = block.get("source")
    source = source if type(source) is dict else {}
    data = source.get("data")
    size = None
    if type(data) is str:
        size = len(data) * 3 // 4 - len(data) + len(data.rstrip("="))
    return P.attachment(
        role,
        url=as_text(source.get("url")),
        mime=as_text(source.get("media_type")),
        size=size,
    )


def count_usage(
    held: Iterable[tuple[Message, dict[str, Any]]], group: SessionGroup
) -> None:
    """The usage of each API message on the last record that holds it: the
    input counts the prompt's tokens read from the cache and written to it
    too (all the model read), which the group keeps apart as well."""
    for message, usage in held:
        read = _count(usage.get("cache_read_input_tokens"))
        written = _count(usage.get("cache_creation_input_tokens"))
        given = _count(usage.get("input_tokens"))
        counted = [value for value in (given, read, written) if value is not None]
        message.input_tokens = sum(counted) if counted else None
        message.output_tokens = _count(usage.get("output_tokens"))
        if read is not None:
            group.cache_read[message.id] = read
        if written is not None:
            group.cache_write[message.id] = written


def _count(value: Any) -> int | None:
    """`as_int`, the common case (an int within the tables' range) first:
    it is asked four times of every API message."""
    if type(value) is int and -INT64_LIMIT <= value < INT64_LIMIT:
        return value
    return as_int(value)
