"""Gemini CLI's chats as a chain of messages: the chats `/chat save TAG`
keeps (`~/.gemini/tmp/<project>/checkpoint-TAG.json`) and the sessions newer
versions record (`~/.gemini/tmp/<project>/chats/session-*.json`).

A saved chat is the API's history: a JSON array of contents, each with a
`role` (`user` or `model`) and `parts` (`text`, `thought` text,
`functionCall` with `name` and `args`, `functionResponse` with `name` and
`response`); a user content that only answers function calls is a step of
the run, not a prompt. A recorded session is an object with `sessionId` and
`messages`, each with `id`, `timestamp`, `type` (`user`, `gemini`, `info`,
`error`), `content`, the model's `thoughts`, `toolCalls` (with their
`result`), `tokens` and `model`. Either is read with the chat exports'
bounded JSON reader (`chat_json`); each file is one tree, linear.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from convgraph import parts as P
from convgraph.errors import DatabaseError
from convgraph.sources.agents.files import SessionGroup, jsonl_files
from convgraph.sources.chat.json_files import file_on_disk, file_values, path_kind
from convgraph.sources.chat.messages import (
    ANSWER,
    PROMPT,
    STEP,
    Message,
    as_dict,
    as_int,
    as_list,
    as_text,
    join_texts,
)

SOURCE = "gemini-cli"


def _first_value(path: Path) -> Any:
    try:
        return next(iter(file_values(file_on_disk(path))), None)
    except DatabaseError:
        return None


def is_content(value: Any) -> bool:
    """Whether a JSON value is one content of a saved chat."""
    return (
        isinstance(value, dict)
        and value.get("role") in ("user", "model")
        and isinstance(value.get("parts"), list)
    )


def is_session(value: Any) -> bool:
    """Whether a JSON value is a recorded session."""
    return (
        isinstance(value, dict)
        and "sessionId" in value
        and isinstance(value.get("messages"), list)
    )


def _is_chat(path: Path) -> bool:
    if path_kind(path) != "json":
        return False
    value = _first_value(path)
    return is_content(value) or is_session(value)


def session_files(path: Path) -> list[Path]:
    """The chats at `path` (one file, or a folder: `~/.gemini/tmp`), or []."""
    if path.is_file():
        return [path] if _is_chat(path) else []
    if not path.is_dir():
        return []
    files = sorted(
        file
        for pattern in ("checkpoint-*.json", "session-*.json")
        for file in jsonl_files(path, pattern)
    )
    return [file for file in files if _is_chat(file)]


def session_groups(files: list[Path]) -> list[tuple[str, list[Path]]]:
    """Each chat by its path, in path order."""
    return [(str(file), [file]) for file in files]


def read_group(
    key: str, files: list[Path], text: bool = True
) -> Iterator[SessionGroup]:
    """One chat as a chain of messages (read whole, `text` or not)."""
    file = files[0]
    values = list(file_values(file_on_disk(file)))
    if values and is_session(values[0]):
        group = _session(values[0], file)
    else:
        group = _saved_chat([v for v in values if is_content(v)], file)
    group.name = next(
        (
            m.text.splitlines()[0][:80]
            for m in group.messages
            if m.kind == PROMPT and m.text
        ),
        None,
    )
    yield group


def _saved_chat(contents: list[dict[str, Any]], file: Path) -> SessionGroup:
    key = f"{file.parent.name}/{file.stem}"
    group = SessionGroup(key, None, [])
    previous = None
    for number, content in enumerate(contents):
        message = Message(f"{key}:{number}", previous)
        role = P.USER if content.get("role") == "user" else P.ASSISTANT
        found: list[P.Part] = []
        for part in as_list(content.get("parts")):
            part = as_dict(part)
            text = as_text(part.get("text"))
            if "functionCall" in part:
                call = as_dict(part["functionCall"])
                found.append(
                    P.tool_call(
                        as_text(call.get("name")),
                        call.get("args"),
                        as_text(call.get("id")),
                    )
                )
            elif "functionResponse" in part:
                reply = as_dict(part["functionResponse"])
                response = reply.get("response")
                output = as_dict(response).get("output", response)
                found.append(
                    P.tool_result(
                        as_text(reply.get("name")),
                        output if isinstance(output, str) else json.dumps(output),
                        as_text(reply.get("id")),
                    )
                )
            elif part.get("thought") is True:
                found.append(P.reasoning(text or ""))
            elif text is not None:
                found.append(P.text(role, text))
        texts = [part["text"] for part in found if part["type"] == P.TEXT]
        if texts:
            message.kind = PROMPT if role == P.USER else ANSWER
            message.text = join_texts(texts, "\n\n")
        message.parts = found or None
        group.messages.append(message)
        previous = message.id
    group.current = previous
    return group


def _session(session: dict[str, Any], file: Path) -> SessionGroup:
    key = as_text(session.get("sessionId")) or file.stem
    group = SessionGroup(key, None, [])
    previous = None
    for number, raw in enumerate(as_list(session.get("messages"))):
        raw = as_dict(raw)
        message_id = as_text(raw.get("id")) or f"{key}:{number}"
        message = Message(message_id, previous, time=as_text(raw.get("timestamp")))
        text = as_text(raw.get("content"))
        kind = raw.get("type")
        found: list[P.Part] = []
        if kind == "user":
            message.kind = PROMPT if text is not None else STEP
            if text is not None:
                found.append(P.text(P.USER, text))
        elif kind == "gemini":
            for thought in as_list(raw.get("thoughts")):
                thought = as_dict(thought)
                found.append(
                    P.reasoning(
                        join_texts(
                            [
                                as_text(thought.get("subject")),
                                as_text(thought.get("description")),
                            ]
                        )
                        or ""
                    )
                )
            if text is not None:
                message.kind = ANSWER
                found.append(P.text(P.ASSISTANT, text))
            for call in as_list(raw.get("toolCalls")):
                call = as_dict(call)
                name, call_id = as_text(call.get("name")), as_text(call.get("id"))
                found.append(P.tool_call(name, call.get("args"), call_id))
                output = _result_text(call.get("result"))
                error = "error" if call.get("status") == "error" else None
                found.append(P.tool_result(name, output, call_id, error))
            message.model = as_text(raw.get("model"))
            tokens = as_dict(raw.get("tokens"))
            message.input_tokens = as_int(tokens.get("input"))
            message.output_tokens = as_int(tokens.get("output"))
            cached = as_int(tokens.get("cached"))
            if cached is not None:
                group.cache_read[message_id] = cached
        else:
            continue
        message.text = text if message.kind != STEP else None
        message.parts = found or None
        group.messages.append(message)
        group.project[message_id] = None
        previous = message_id
    group.current = previous
    return group


def _result_text(result: Any) -> str:
    """A tool call's result as text: the `output` of its function
    responses, else the result as JSON."""
    if isinstance(result, str):
        return result
    outputs = [
        as_dict(as_dict(as_dict(item).get("functionResponse")).get("response")).get(
            "output"
        )
        for item in as_list(result)
    ]
    texts = [output for output in outputs if isinstance(output, str)]
    if texts and len(texts) == len(outputs):
        return "\n".join(texts)
    return json.dumps(result)
