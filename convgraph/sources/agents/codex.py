"""Codex CLI's rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`) as a chain of
messages. What the files hold, and how they are read:
docs/internals/agent-formats.md."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from convgraph import parts as P
from convgraph.sources.agents.files import (
    SessionGroup,
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
    as_list,
    as_text,
    join_texts,
)

SOURCE = "codex"

#: Where Codex keeps its rollouts, below a home folder.
STORE = (".codex", "sessions")

#: The envelopes of a rollout's records.
RECORD_TYPES = frozenset(
    "session_meta response_item event_msg turn_context compacted world_state"  # noqa: SIM905 (words)
    " inter_agent_communication_metadata".split()
)

#: Items Codex keeps that are no part of the conversation (an undo point).
QUIET_ITEMS = frozenset({"ghost_snapshot", "agent_message"})

#: The calls among the items, and their outputs.
CALL_ITEMS = frozenset(
    "function_call custom_tool_call local_shell_call tool_search_call"  # noqa: SIM905 (words)
    " image_generation_call collab_tool_call".split()
)
OUTPUT_ITEMS = frozenset(
    {"function_call_output", "custom_tool_call_output", "tool_search_output"}
)
#: The items of the conversation.
ITEM_TYPES = CALL_ITEMS | OUTPUT_ITEMS | {"message", "reasoning", "web_search_call"}

#: How the context Codex sends as user messages begins.
CONTEXT_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
)


def is_record(record: dict[str, Any]) -> bool:
    """Whether a JSON record is one of a Codex rollout (either form)."""
    kind = record.get("type")
    if type(kind) is not str:
        kind = None  # a kind of any JSON type may come: only a string is one
    if kind in RECORD_TYPES and "payload" in record:
        return True
    if kind in ITEM_TYPES or record.get("record_type") == "state":
        return True
    # The older form's first line: the session, with its instructions.
    return (
        "id" in record
        and "timestamp" in record
        and "instructions" in record
        and "type" not in record
    )


def store_files(folder: Path) -> list[Path]:
    """The rollouts under `folder` (the `sessions` folder, or a day of it)."""
    return jsonl_files(folder, "rollout-*.jsonl")


# Each rollout alone, in path order (Codex names them by date and time).
companions, session_groups = no_companions, one_file_each


def read_group(
    key: str, files: list[Path], text: bool = True
) -> Iterator[SessionGroup]:
    """One rollout as a chain of messages (read whole, `text` or not)."""
    file = files[0]
    group = SessionGroup(file.stem, None, [])
    project = branch = model = None
    names: dict[str, str | None] = {}
    time: str | None = None
    unknown: dict[str, int] = {}
    typed: list[Message] = []  # the prompts as the CLI showed them
    for number, record in enumerate(json_lines(file, group.problems)):
        kind = record.get("type")
        if type(kind) is not str:
            kind = None  # a kind of any JSON type may come: only a string is one
        payload = as_dict(record.get("payload"))
        time = as_text(record.get("timestamp")) or time
        if kind == "session_meta" or (number == 0 and "type" not in record):
            meta = payload or record
            group.key = as_text(meta.get("id")) or group.key
            project = as_text(meta.get("cwd")) or project
            branch = as_text(as_dict(meta.get("git")).get("branch")) or branch
            continue
        if kind == "turn_context":
            turn = _turn(payload)
            model = _model(turn) or model
            project = as_text(turn.get("cwd")) or project
            continue
        if kind == "event_msg":
            event = payload.get("type")
            if event == "token_count" and group.messages:
                # The turn's `last_token_usage`; its input counts the cache's.
                usage = as_dict(as_dict(payload.get("info")).get("last_token_usage"))
                group.add_usage(
                    group.messages[-1],
                    usage.get("input_tokens"),
                    usage.get("output_tokens"),
                    usage.get("cached_input_tokens"),
                )
            elif event == "user_message":
                words = as_text(payload.get("message"))
                if words is not None:
                    prompt = Message(f"{group.key}:{number}", None, PROMPT, words, time)
                    prompt.parts = [P.text(P.USER, words)]
                    typed.append(prompt)
                    group.project[prompt.id] = project
                    group.git_branch[prompt.id] = branch
            continue
        if kind in RECORD_TYPES and kind != "response_item":
            continue  # a compaction's summary, the world's state: no turn
        item = payload if kind == "response_item" else record
        item_kind = item.get("type")
        if type(item_kind) is not str or item_kind not in ITEM_TYPES:
            if record.get("record_type") == "state" or (
                type(item_kind) is str and item_kind in QUIET_ITEMS
            ):
                continue
            name = item_kind if type(item_kind) is str else str(kind)
            unknown[name] = unknown.get(name, 0) + 1
            continue
        message_id = f"{group.key}:{number}"
        message = _message(item, message_id, None, names)
        message.time = time
        if message.kind == ANSWER:
            message.model = model
        group.messages.append(message)
        group.project[message_id] = project
        group.git_branch[message_id] = branch
    group.problems.extend(count_unknown(file, unknown))
    if typed and not any(message.kind == PROMPT for message in group.messages):
        # A rollout that keeps no user message item (some `codex exec` runs):
        # the prompts are the ones the CLI showed, where they came.
        group.messages = sorted(
            [*group.messages, *typed], key=lambda m: int(m.id.rpartition(":")[2])
        )
    previous: str | None = None
    for message in group.messages:
        message.parent = previous
        previous = message.id
    group.current = previous
    group.name = first_prompt(group.messages)
    yield group


def _message(
    item: dict[str, Any],
    message_id: str,
    parent: str | None,
    names: dict[str, str | None],
) -> Message:
    """One item of the conversation as a `Message`."""
    message = Message(message_id, parent)
    kind = item.get("type")
    if kind == "message":
        role = item.get("role")
        texts = _texts(item.get("content"))
        text = join_texts(texts, "\n\n")
        if role == "user":
            part_role = P.USER
            context = text is not None and text.lstrip().startswith(CONTEXT_PREFIXES)
            message.kind = STEP if context or text is None else PROMPT
        elif role == "assistant":
            part_role = P.ASSISTANT
            message.kind = ANSWER if text is not None else STEP
        else:
            return message
        message.text = text if message.kind != STEP else None
        message.parts = [P.text(part_role, t) for t in texts if t] or None
        if message.kind == STEP and role == "user" and message.parts:
            # The context Codex adds: kept in the run, not as the prompt.
            message.parts = [P.text(P.USER, text or "")]
    elif kind == "reasoning":
        summary = join_texts(_texts(item.get("summary")), "\n\n")
        message.parts = [P.reasoning(summary or "", redacted=summary is None)]
    elif kind in CALL_ITEMS:
        name = as_text(item.get("name") or item.get("tool")) or _CALL_NAMES.get(kind)
        call_id = as_text(item.get("call_id")) or as_text(item.get("id"))
        arguments = item.get("arguments", item.get("input", item.get("action")))
        if kind == "collab_tool_call":
            # Another agent started, asked or waited for: whom, and what.
            arguments = {
                key: item[key]
                for key in ("prompt", "receiver_thread_ids", "receiver_agents")
                if item.get(key)
            }
        if isinstance(arguments, str):
            with contextlib.suppress(ValueError, RecursionError):
                arguments = json.loads(arguments)
        names[call_id or ""] = name
        message.parts = [P.tool_call(name, arguments, call_id)]
    elif kind in OUTPUT_ITEMS:
        call_id = as_text(item.get("call_id"))
        output = item.get("output")
        error = None
        if isinstance(output, dict):
            error = "error" if output.get("success") is False else None
            output = as_text(output.get("content")) or ""
        elif not isinstance(output, str):
            output = json.dumps(output)
        else:
            # The shell's output comes as JSON text with the exit code.
            output = _shell_output(output)
        message.parts = [
            P.tool_result(names.get(call_id or ""), output, call_id, error)
        ]
    elif kind == "web_search_call":
        action = as_dict(item.get("action"))
        message.parts = [
            P.tool_call("web_search", action or None, as_text(item.get("id")))
        ]
    return message


def _texts(blocks: Any) -> list[str | None]:
    return [as_text(as_dict(block).get("text")) for block in as_list(blocks)]


def _turn(payload: dict[str, Any]) -> dict[str, Any]:
    """A turn's context: the payload, or (as later versions write it, with
    no schema marker) the object inside it that holds the turn's fields."""
    if "model" in payload or "cwd" in payload:
        return payload
    for key in ("turn_context", "turn", "context"):
        inner = as_dict(payload.get(key))
        if "model" in inner or "cwd" in inner:
            return inner
    return payload


def _model(turn: dict[str, Any]) -> str | None:
    """The model of a turn: named outright, or in its collaboration mode's settings."""
    settings = as_dict(as_dict(turn.get("collaboration_mode")).get("settings"))
    return as_text(turn.get("model")) or as_text(settings.get("model"))


#: The name of a call whose item names none.
_CALL_NAMES = {
    "local_shell_call": "shell",
    "tool_search_call": "tool_search",
    "image_generation_call": "image_generation",
}


def _shell_output(output: str) -> str:
    """What a command printed, where Codex wrapped it as JSON text with its
    metadata; the text as it is otherwise."""
    if not output.startswith("{"):
        return output
    try:
        value = json.loads(output)
    except (ValueError, RecursionError):
        return output
    printed = as_dict(value).get("output")
    return printed if isinstance(printed, str) else output
