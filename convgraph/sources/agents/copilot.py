"""GitHub Copilot CLI's sessions (`~/.copilot/session-state/<id>/events.jsonl`, before
that `session-state/<id>.jsonl`) as parent-linked messages. What the files hold, and how
they are read: docs/internals/agent-formats.md."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from convgraph import parts as P
from convgraph.sources.agents.files import (
    SessionGroup,
    Sidechain,
    climb,
    count_unknown,
    first_prompt,
    json_lines,
    jsonl_files,
    no_companions,
    one_file_each,
)
from convgraph.sources.chat.messages import (
    ANSWER,
    PROMPT,
    STEP,
    Message,
    as_dict,
    as_int,
    as_list,
    as_text,
    attachment_note,
)

SOURCE = "copilot-cli"

#: Where Copilot CLI keeps its sessions, below a home folder.
STORE = (".copilot", "session-state")

#: The events that carry the conversation.
MESSAGE_EVENTS = frozenset(
    "user.message assistant.message assistant.reasoning tool.execution_start"  # noqa: SIM905 (words)
    " tool.execution_complete".split()
)

#: Every event kind Copilot CLI writes that is read or passed through.
EVENT_TYPES = MESSAGE_EVENTS | frozenset(
    "session.start session.resume session.error session.idle"  # noqa: SIM905 (kinds as words)
    " session.title_changed session.info session.warning session.model_change"
    " session.mode_changed session.plan_changed session.workspace_file_changed"
    " session.handoff session.truncation session.snapshot_rewind"
    " session.shutdown session.usage_info session.usage_checkpoint"
    " session.auto_mode_resolved session.compaction_start"
    " session.compaction_complete session.context_changed assistant.turn_start"
    " assistant.turn_end assistant.intent assistant.message_delta"
    " assistant.reasoning_delta assistant.usage tool.user_requested"
    " tool.execution_partial_result tool.execution_progress skill.invoked"
    " subagent.started subagent.completed subagent.failed subagent.selected"
    " hook.start hook.end system.message system.notification abort".split()
)


def is_record(record: dict[str, Any]) -> bool:
    """Whether a JSON record is one of Copilot CLI's events."""
    kind = record.get("type")
    return type(kind) is str and kind in EVENT_TYPES and record.keys() >= _FIELDS


_FIELDS = {"data", "id", "parentId"}


def store_files(folder: Path) -> list[Path]:
    """The session files under `folder` (`session-state`, or a session's)."""
    return [
        file
        for file in jsonl_files(folder)
        if file.name == "events.jsonl" or file.parent == folder
    ]


companions, session_groups = no_companions, one_file_each


class _Reading:
    """What a session's events gave so far: where the session is, the
    messages by event id, the calls' names and messages."""

    def __init__(self, key: str) -> None:
        self.group = SessionGroup(key, None, [])
        self.project: str | None = None
        self.branch: str | None = None
        self.model: str | None = None
        self.through: dict[str, str | None] = {}  # passed event: its parent
        self.seen: dict[str, int] = {}  # event id: how many events hold it
        self.previous: str | None = None
        self.calls: dict[str, tuple[str, str | None]] = {}  # call: message, name
        self.sides: dict[str, Sidechain] = {}  # calling tool call: subagent
        self.outputs: dict[str, int] = {}  # message: its own outputTokens
        self.usage = False
        self.started: set[str] = set()  # calls read from their start
        self.last_answer: dict[str | None, Message] = {}  # chain: last reply


def read_group(
    key: str, files: list[Path], text: bool = True
) -> Iterator[SessionGroup]:
    """One session as parent-linked messages (read whole, `text` or not)."""
    file = files[0]
    reading = _Reading(file.parent.name if file.name == "events.jsonl" else file.stem)
    group = reading.group
    unknown: dict[str, int] = {}
    for record in json_lines(file, group.problems):
        kind = record.get("type")
        if type(kind) is not str or kind not in EVENT_TYPES:
            name = kind if type(kind) is str else "(none)"
            unknown[name] = unknown.get(name, 0) + 1
            continue
        event = _event_id(record, reading)
        parent = _parent(record, reading)
        data = as_dict(record.get("data"))
        if kind in MESSAGE_EVENTS:
            message = _message(kind, data, event, parent, record, reading)
            if message is not None:
                _keep(message, _caller(data, record), reading)
                reading.previous = event
                continue
        _beside(kind, data, reading)
        reading.through[event] = parent
        reading.previous = event
    group.problems.extend(count_unknown(file, unknown))
    _follow(reading)
    if not reading.usage:
        for message in [*group.messages, *_side_messages(reading.sides)]:
            if message.id in reading.outputs:
                message.output_tokens = reading.outputs[message.id]
    group.sidechains = list(reading.sides.values())
    group.current = group.messages[-1].id if group.messages else None
    group.name = first_prompt(group.messages)
    yield group


def _side_messages(sides: dict[str, Sidechain]) -> list[Message]:
    return [message for side in sides.values() for message in side.messages]


def _event_id(record: dict[str, Any], reading: _Reading) -> str:
    """The event's id, made distinct where an earlier event holds it (ids
    trimmed to one placeholder): `ID+2`, `ID+3`, ..."""
    event = as_text(record.get("id")) or f"{reading.group.key}:{len(reading.seen)}"
    count = reading.seen.get(event, 0) + 1
    reading.seen[event] = count
    return event if count == 1 else f"{event}+{count}"


def _parent(record: dict[str, Any], reading: _Reading) -> str | None:
    """The event a record hangs under: its `parentId` where that names one
    earlier event, the event before otherwise."""
    if (named := as_text(record.get("parentId"))) is None:
        return None if not reading.seen or len(reading.seen) == 1 else reading.previous
    if reading.seen.get(named) == 1 and named != as_text(record.get("id")):
        return named
    return reading.previous


def _beside(kind: str, data: dict[str, Any], reading: _Reading) -> None:
    """An event passed through: where the session ran, its model, usage."""
    if kind in ("session.start", "session.resume"):
        context = as_dict(data.get("context"))
        reading.project = as_text(context.get("cwd")) or reading.project
        reading.branch = as_text(context.get("branch")) or reading.branch
        reading.model = as_text(data.get("selectedModel")) or reading.model
        if kind == "session.start":
            reading.group.key = as_text(data.get("sessionId")) or reading.group.key
    elif kind == "session.model_change":
        reading.model = as_text(data.get("newModel")) or reading.model
    elif kind == "assistant.usage":
        reading.usage = True
        if (answer := reading.last_answer.get(_caller(data, {}))) is not None:
            reading.group.add_usage(
                answer,
                data.get("inputTokens"),
                data.get("outputTokens"),
                data.get("cacheReadTokens"),
                data.get("cacheWriteTokens"),
            )
    elif kind == "subagent.started":
        call = as_text(data.get("toolCallId"))
        if call is not None:
            about = {
                "agent_type": as_text(data.get("agentName")),
                "agent_description": as_text(data.get("agentDescription")),
            }
            _side(call, reading).about = {k: v for k, v in about.items() if v}


def _side(call: str, reading: _Reading) -> Sidechain:
    side = reading.sides.get(call)
    if side is None:
        anchor = reading.calls.get(call, (None, None))[0]
        side = reading.sides[call] = Sidechain(call, [], anchor)
    return side


def _message(
    kind: str,
    data: dict[str, Any],
    event: str,
    parent: str | None,
    record: dict[str, Any],
    reading: _Reading,
) -> Message | None:
    """One event of the conversation as a `Message` (None for a reply
    with nothing in it)."""
    message = Message(event, parent, STEP, None, as_text(record.get("timestamp")))
    if kind == "user.message":
        words = as_text(data.get("content"))
        attachments = [as_dict(item) for item in as_list(data.get("attachments"))]
        images = sum(item.get("type") == "image" for item in attachments)
        # What the autopilot or a skill says for the person is a step.
        injected = data.get("isAutopilotContinuation") is True or (
            as_text(data.get("source")) or ""
        ).startswith("skill")
        message.kind = STEP if injected else PROMPT
        if not injected:
            message.text = words or attachment_note(images, len(attachments) - images)
        found = [P.text(P.USER, words)] if words else []
        named = (
            as_text(i.get("displayName")) or as_text(i.get("path")) for i in attachments
        )
        found.extend(P.attachment(P.USER, name=name) for name in named)
        message.parts = found or None
    elif kind == "assistant.message":
        found = []
        thinking = as_text(data.get("reasoningText"))
        if thinking:
            found.append(P.reasoning(thinking))
        words = as_text(data.get("content"))
        if words:
            message.kind = ANSWER
            message.text = words
            found.append(P.text(P.ASSISTANT, words))
        for request in as_list(data.get("toolRequests")):
            request = as_dict(request)
            call = as_text(request.get("toolCallId"))
            name = as_text(request.get("name"))
            if call is not None and call in reading.started:
                continue  # its start came first: the call is read once
            arguments = request.get("arguments")
            if isinstance(arguments, str):
                with contextlib.suppress(ValueError, RecursionError):
                    arguments = json.loads(arguments)
            found.append(P.tool_call(name, arguments, call))
            if call is not None:
                reading.calls[call] = (event, name)
        message.model = as_text(data.get("model")) or reading.model
        if (outputs := as_int(data.get("outputTokens"))) is not None:
            reading.outputs[event] = outputs
        if not found:
            return None
        message.parts = found
        reading.last_answer[_caller(data, record)] = message
    elif kind == "tool.execution_start":
        # A call no reply requested (a file may hold no replies at all) is
        # a call all the same, with or without its result.
        call, name = as_text(data.get("toolCallId")), as_text(data.get("toolName"))
        if call is not None and call in reading.calls:
            return None
        message.parts = [P.tool_call(name, data.get("arguments"), call)]
        if call is not None:
            reading.calls[call] = (event, name)
            reading.started.add(call)
    elif kind == "assistant.reasoning":
        thinking = as_text(data.get("content"))
        if not thinking:
            return None
        message.parts = [P.reasoning(thinking)]
    else:
        call = as_text(data.get("toolCallId"))
        result = as_dict(data.get("result"))
        error = as_dict(data.get("error"))
        output = as_text(result.get("content")) or as_text(error.get("message")) or ""
        failed = data.get("success") is False
        name = reading.calls.get(call or "", (None, None))[1]
        message.parts = [
            P.tool_result(name, output, call, "error" if failed or error else None)
        ]
    return message


def _caller(data: dict[str, Any], record: dict[str, Any]) -> str | None:
    """The subagent whose event this is: the call that started it, or the
    agent the event names; None for the session's own."""
    caller = as_text(data.get("parentToolCallId"))
    if caller is None and as_text(record.get("agentId")):
        caller = f"agent:{record['agentId']}"
    return caller


def _keep(message: Message, caller: str | None, reading: _Reading) -> None:
    """A message in its chain (a subagent's, or the session's own), and where it ran."""
    group = reading.group
    group.project[message.id] = reading.project
    group.git_branch[message.id] = reading.branch
    if caller is not None:
        _side(caller, reading).messages.append(message)
    else:
        group.messages.append(message)


def _follow(reading: _Reading) -> None:
    """Each message's parent made a message: a link to an event passed through goes on
    to what that event hangs under, and a link from the session's own chain to a
    subagent's message goes on to what the subagent's messages hang under."""
    through = reading.through
    side_messages = _side_messages(reading.sides)
    for message in [*reading.group.messages, *side_messages]:
        message.parent = climb(message.parent, through)
    side_parent = {message.id: message.parent for message in side_messages}
    for message in reading.group.messages:
        message.parent = climb(message.parent, side_parent)
    for call, side in reading.sides.items():
        if side.anchor is None:
            side.anchor = reading.calls.get(call, (None, None))[0]
        if side.anchor is None and side.messages:
            # No call names it: under the session's message it came after.
            side.anchor = climb(side.messages[0].parent, side_parent)
