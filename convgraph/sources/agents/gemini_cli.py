"""Gemini CLI's chats as chains of messages: the chats `/chat save TAG` keeps
(`~/.gemini/tmp/<project>/checkpoint-TAG.json`) and the sessions it records
(`~/.gemini/tmp/<project>/chats/session-*.json`, and since 0.40 `session-*.jsonl`; a
subagent's under `chats/<session id>/`). What the files hold, and how they are read:
docs/internals/agent-formats.md."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from convgraph import parts as P
from convgraph.errors import DatabaseError
from convgraph.links.integrity import Problem
from convgraph.sources.agents.files import (
    BAD_LINE,
    SessionGroup,
    Sidechain,
    count_unknown,
    file_problem,
    first_prompt,
    json_lines,
    jsonl_files,
    written_before,
)
from convgraph.sources.chat.json_files import MAX_VALUE_BYTES
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
from convgraph.text import counted

SOURCE = "gemini-cli"

#: Where Gemini CLI keeps its chats, below a home folder.
STORE = (".gemini", "tmp")

#: The kinds of a recorded session's messages: the conversation's, and the
#: CLI's own notices (no part of a turn).
MESSAGE_TYPES = frozenset({"user", "gemini"})
NOTICE_TYPES = frozenset({"info", "error", "warning"})


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


def is_record(record: dict[str, Any]) -> bool:
    """Whether a JSON-lines record is one of a recorded session: its first
    line, a `$set` or `$rewindTo` line, or a message."""
    if "$rewindTo" in record or isinstance(record.get("$set"), dict):
        return True
    if isinstance(record.get("$patch"), dict) or (
        isinstance(record.get("sessionId"), str) and "projectHash" in record
    ):
        return True
    kind = record.get("type")
    return (
        isinstance(record.get("id"), str)
        and type(kind) is str
        and kind in MESSAGE_TYPES | NOTICE_TYPES
        and "timestamp" in record
        and "uuid" not in record
    )


def is_chat_value(value: Any) -> bool:
    """Whether the first value of a JSON file is a chat (a saved chat's first
    content, or a recorded session)."""
    return is_content(value) or is_session(value)


def store_files(folder: Path) -> list[Path]:
    """The chats under `folder` (`~/.gemini/tmp`, a project's folder, or its
    `chats`)."""
    patterns = ("checkpoint-*.json", "session-*.json", "session-*.jsonl")
    found = {file for pattern in patterns for file in jsonl_files(folder, pattern)}
    # A subagent's session: `chats/<session id>/<its id>.jsonl`.
    found.update(
        f for f in jsonl_files(folder, "*.jsonl") if f.parent.parent.name == "chats"
    )
    return sorted(found)


def companions(path: Path) -> list[Path]:
    """The files read with the session file `path` alone: its subagents'
    (`chats/<session id>/*.jsonl`, where its first line names the id)."""
    if path.suffix != ".jsonl":
        return []
    session = as_text(next(iter(_records(path, [])), {}).get("sessionId"))
    folder = path.parent / session if session else None
    if folder is None or not folder.is_dir() or folder.name != session:
        return []
    return sorted(file for file in folder.glob("*.jsonl") if file.is_file())


def session_groups(
    files: list[Path], told: dict[Path, list[dict[str, Any]]]
) -> list[tuple[str, list[Path]]]:
    """Each chat by its path, in path order, a subagent's session with the
    session whose folder holds it."""
    groups: dict[str, list[Path]] = {}
    by_session: dict[str, str] = {}
    for file in files:
        if file.parent.parent.name == "chats" and file.suffix == ".jsonl":
            continue
        groups[str(file)] = [file]
        session = as_text((told.get(file) or [{}])[0].get("sessionId"))
        if session is not None:
            by_session.setdefault(session, str(file))
    for file in files:
        if file.parent.parent.name == "chats" and file.suffix == ".jsonl":
            if (key := by_session.get(file.parent.name)) is None:
                groups[str(file)] = [file]
            else:
                groups[key].append(file)
    return list(groups.items())


def read_group(
    key: str, files: list[Path], text: bool = True
) -> Iterator[SessionGroup]:
    """One chat (with its subagents' sessions) as a chain of messages, read
    whole (`text` or not)."""
    first, *subagents = files
    group = _read_file(first)
    for file in subagents:
        side = _read_file(file)
        group.problems.extend(side.problems)
        group.cache_read.update(side.cache_read)
        chain = Sidechain(side.key, side.messages)
        began = side.messages[0].time if side.messages else None
        chain.anchor = written_before(group.messages, began)
        group.sidechains.append(chain)
    group.name = group.name or first_prompt(group.messages)
    yield group


def _read_file(file: Path) -> SessionGroup:
    """One file: a saved chat, a recorded session, or its JSON lines."""
    problems: list[Problem] = []
    if file.suffix == ".jsonl":
        group = _jsonl_session(file, problems)
    else:
        value = _json_value(file, problems)
        if is_session(value):
            group = _session(value, file)
        else:
            contents = value if isinstance(value, list) else []
            group = _saved_chat([v for v in contents if is_content(v)], file)
    group.problems[:0] = problems
    return group


def _json_value(file: Path, problems: list[Problem]) -> Any:
    """A JSON file's value; of one cut short (a session being written), the
    messages read before the cut, reported."""
    try:
        if file.stat().st_size > MAX_VALUE_BYTES:
            raise DatabaseError(
                f"cannot read {file}: larger than {MAX_VALUE_BYTES // 2**20} MiB"
            )
        data = file.read_bytes()
    except OSError as error:
        raise DatabaseError(f"cannot read {file}: {error.strerror}") from None
    data = data.removeprefix(b"\xef\xbb\xbf")
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        pass
    import ijson

    found: dict[str, Any] = {"messages": []}
    for name, path in (("sessionId", "sessionId"), ("messages", "messages.item")):
        try:
            for value in ijson.items(io.BytesIO(data), path):
                if name == "messages":
                    found["messages"].append(value)
                else:
                    found[name] = value
        except (ijson.JSONError, ValueError):
            pass
    read = counted(len(found["messages"]), "message")
    message = f"{file}: cut short after {read}: read as far as it goes"
    problems.append(file_problem(BAD_LINE, file.name, message))
    return found if "sessionId" in found else []


def _records(path: Path, problems: list[Problem]) -> Iterator[dict[str, Any]]:
    try:
        yield from json_lines(path, problems)
    except DatabaseError:
        return


def _jsonl_session(file: Path, problems: list[Problem]) -> SessionGroup:
    """A session written as JSON lines, replayed: messages by id (a later
    copy replaces the earlier's content in its place), `$rewindTo` making
    what follows a sibling of the message rewound to."""
    group = SessionGroup(file.stem, None, [])
    messages: dict[str, Message] = {}
    raws: dict[str, dict[str, Any]] = {}
    tip: str | None = None
    unknown: dict[str, int] = {}
    for number, record in enumerate(json_lines(file, problems)):
        if "$rewindTo" in record:
            rewound = messages.get(as_text(record.get("$rewindTo")) or "")
            # Back to before that message: the next hangs where it hung.
            tip = rewound.parent if rewound is not None else None
            continue
        patch = record.get("$patch")
        if isinstance(patch, dict) and as_text(patch.get("id")) in raws:
            # Some fields of a message written before, changed.
            record = {**raws[patch["id"]], **patch}
        elif "$set" in record or "$patch" in record:
            fields = as_dict(record.get("$set", patch))
            summary = as_text(fields.get("summary"))
            group.name = summary or group.name
            continue
        if isinstance(record.get("sessionId"), str) and "id" not in record:
            group.key = record["sessionId"]
            continue
        kind = record.get("type")
        if type(kind) is not str or kind not in MESSAGE_TYPES:
            if type(kind) is not str or kind not in NOTICE_TYPES:
                name = kind if type(kind) is str else "(none)"
                unknown[name] = unknown.get(name, 0) + 1
            continue
        message_id = as_text(record.get("id")) or f"{group.key}:{number}"
        raws[message_id] = record
        earlier = messages.get(message_id)
        message = _message(record, message_id, tip, group)
        if earlier is not None:
            # Written again as it changed: its content, where it was.
            message.parent = earlier.parent
            group.messages[group.messages.index(earlier)] = message
        else:
            group.messages.append(message)
            tip = message_id
        messages[message_id] = message
    group.problems.extend(count_unknown(file, unknown))
    group.current = tip
    return group


def _saved_chat(contents: list[dict[str, Any]], file: Path) -> SessionGroup:
    key = f"{file.parent.name}/{file.stem}"
    group = SessionGroup(key, None, [])
    previous = None
    for number, content in enumerate(contents):
        message = Message(f"{key}:{number}", previous)
        role = P.USER if content.get("role") == "user" else P.ASSISTANT
        found = _api_parts(role, as_list(content.get("parts")))
        if texts := [part["text"] for part in found if part["type"] == P.TEXT]:
            message.kind = PROMPT if role == P.USER else ANSWER
            message.text = join_texts(texts, "\n\n")
        message.parts = found or None
        group.messages.append(message)
        previous = message.id
    group.current = previous
    return group


def _api_parts(role: str, parts: list[Any]) -> list[P.Part]:
    """The API's parts as convgraph's: texts, thoughts, calls, responses."""
    found: list[P.Part] = []
    for part in parts:
        part = as_dict(part)
        text = as_text(part.get("text"))
        if "functionCall" in part:
            call = as_dict(part["functionCall"])
            name, call_id = as_text(call.get("name")), as_text(call.get("id"))
            found.append(P.tool_call(name, call.get("args"), call_id))
        elif "functionResponse" in part:
            reply = as_dict(part["functionResponse"])
            response = reply.get("response")
            output = as_dict(response).get("output", response)
            output = output if isinstance(output, str) else json.dumps(output)
            name, call_id = as_text(reply.get("name")), as_text(reply.get("id"))
            found.append(P.tool_result(name, output, call_id))
        elif part.get("thought") is True:
            found.append(P.reasoning(text or ""))
        elif text is not None:
            found.append(P.text(role, text))
    return found


def _session(session: dict[str, Any], file: Path) -> SessionGroup:
    key = as_text(session.get("sessionId")) or file.stem
    group = SessionGroup(key, None, [])
    previous = None
    used: set[str] = set()
    for number, raw in enumerate(as_list(session.get("messages"))):
        raw = as_dict(raw)
        if raw.get("type") not in ("user", "gemini"):
            continue
        message_id = as_text(raw.get("id")) or f"{key}:{number}"
        if message_id in used:
            # An id written twice in one file: the later as `ID+N`.
            message_id = f"{message_id}+{number}"
        used.add(message_id)
        group.messages.append(_message(raw, message_id, previous, group))
        previous = message_id
    group.current = previous
    return group


#: What Gemini CLI writes as the user's when a turn stopped short.
GO_ON = "System: Please continue."


def _message(
    raw: dict[str, Any], message_id: str, parent: str | None, group: SessionGroup
) -> Message:
    """One message of a recorded session (`user` or `gemini`)."""
    message = Message(message_id, parent, time=as_text(raw.get("timestamp")))
    content = raw.get("content")
    if isinstance(content, list):
        text = join_texts([as_text(as_dict(part).get("text")) for part in content], "")
    else:
        text = as_text(content)
    found: list[P.Part] = []
    if raw.get("type") == "user":
        # The CLI's own nudge after a turn that stopped: a step of it.
        typed = text is not None and text.strip() != GO_ON
        message.kind = PROMPT if typed else STEP
        if text is not None:
            found.append(P.text(P.USER, text))
    else:
        for thought in map(as_dict, as_list(raw.get("thoughts"))):
            said = [as_text(thought.get(key)) for key in ("subject", "description")]
            found.append(P.reasoning(join_texts(said) or ""))
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
        if (cached := as_int(tokens.get("cached"))) is not None:
            group.cache_read[message_id] = cached
    message.text = text if message.kind != STEP else None
    message.parts = found or None
    group.project[message_id] = None
    return message


def _result_text(result: Any) -> str:
    """A tool call's result as text: the `output` of its function
    responses, else the result as JSON."""
    if isinstance(result, str):
        return result
    replies = (
        as_dict(as_dict(item).get("functionResponse")) for item in as_list(result)
    )
    outputs = [as_dict(reply.get("response")).get("output") for reply in replies]
    texts = [output for output in outputs if isinstance(output, str)]
    if texts and len(texts) == len(outputs):
        return "\n".join(texts)
    return json.dumps(result)
