"""Nodes from a chat export's messages: the node contract's rule for apps
that keep a conversation as parent-linked messages."""

from __future__ import annotations

from collections import deque
from typing import Any

from convgraph.parts import TOOL_CALL, Part, is_plain, tool_names
from convgraph.sources.chat.messages import (
    ANSWER,
    INT64_LIMIT,
    PROMPT,
    Conversation,
    Message,
    join_texts,
    message_time,
)
from convgraph.sources.source import log_order

#: The usage figures a node sums over the messages of its run.
USAGE = ("input_tokens", "output_tokens", "duration_ms")


def conversation_records(
    conversation: Conversation,
    source: str,
    node_of: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The nodes of one conversation, in log order, as `TreeRecords` records. A prompt
    never answered is a node by itself."""
    messages: dict[str, Message] = {}
    for message in conversation.messages:
        messages.setdefault(message.id, message)
    # Run for every message of every session a whole-folder read holds: the
    # children's kinds are kept as two sets (a message with a prompt below
    # it, one with anything else below it) rather than listed per message.
    children: dict[str, list[str]] = {}
    prompt_below: set[str] = set()
    other_below: set[str] = set()
    starts = []
    for message_id, message in messages.items():
        parent = message.parent
        if parent is not None and parent != message_id and parent in messages:
            below = children.get(parent)
            if below is None:
                children[parent] = [message_id]
            else:
                below.append(message_id)
            (prompt_below if message.kind == PROMPT else other_below).add(parent)
        else:
            starts.append(message_id)

    # Parents before children; messages that no root reaches hang off a
    # cycle, and are started from where they come in the export.
    order: list[str] = []
    reached: set[str] = set()
    for start in [*starts, *messages] if children else starts:
        if start in reached:
            continue
        reached.add(start)
        queue = deque([start])
        while queue:
            current = queue.popleft()
            order.append(current)
            for child in children.get(current, ()):
                if child not in reached:
                    reached.add(child)
                    queue.append(child)
    started = set(starts)

    prompt_of: dict[str, str | None] = {}
    answered: dict[str, bool] = {}
    above: dict[str, str | None] = {}
    is_end: dict[str, bool] = {}
    effective_parent: dict[str, str | None] = {}
    # A system prompt is followed down only where one is set (never in an
    # agent's session): most conversations skip that bookkeeping.
    system_of: dict[str, str | None] | None = None
    if conversation.system is not None or any(
        message.system for message in messages.values()
    ):
        system_of = {}

    for message_id in order:
        message = messages[message_id]
        parent = None
        if message_id not in started and message.parent in prompt_of:
            parent = message.parent
        effective_parent[message_id] = parent
        # A root's stored link that names nothing (or the message itself,
        # or goes round a cycle) is kept, for the checks to report.
        if message.kind == PROMPT:
            prompt_of[message_id] = message_id
            answered[message_id] = False
            if parent is None:
                above[message_id] = message.parent
            else:
                above[message_id] = parent if is_end[parent] else above[parent]
            is_end[message_id] = message_id not in other_below
        else:
            if parent is None:
                prompt = None
                answered[message_id] = done = message.kind == ANSWER
                above[message_id] = message.parent
            else:
                prompt = prompt_of[parent]
                answered[message_id] = done = message.kind == ANSWER or answered[parent]
                above[message_id] = above[parent]
            prompt_of[message_id] = prompt
            is_end[message_id] = (
                message_id not in other_below or message_id in prompt_below
            ) and (prompt is not None or done)
        if system_of is not None:
            system_of[message_id] = message.system or (
                system_of[parent] if parent is not None else conversation.system
            )

    records: dict[str, dict[str, Any]] = {}
    for message_id in order:
        if is_end[message_id]:
            record = _node_record(
                message_id, messages, effective_parent, prompt_of, conversation, node_of
            )
            record["parent_id"] = above[message_id]
            record["system"] = system_of[message_id] if system_of is not None else None
            record["source"] = source
            records[message_id] = record

    for record_id in _active_nodes(
        conversation.current, messages, children, is_end, above, records
    ):
        records[record_id]["active"] = True
    found = list(records.values())
    found.sort(key=log_order)
    return found


def _node_record(
    end: str,
    messages: dict[str, Message],
    effective_parent: dict[str, str | None],
    prompt_of: dict[str, str | None],
    conversation: Conversation,
    node_of: dict[str, str] | None,
) -> dict[str, Any]:
    """One node's attributes, from its run (walked up from its end)."""
    prompt_id = prompt_of[end]
    # One walk up the run gathers what is not in order: its last model and
    # time, its usage sums, and each message's node.
    run: list[Message] = []
    model = time = None
    inputs = outputs = durations = None
    current: str | None = end
    while current is not None and current != prompt_id:
        message = messages[current]
        run.append(message)
        if model is None and message.model:
            model = message.model
        if time is None:
            time = message_time(message)
        if message.input_tokens is not None:
            inputs = message.input_tokens + (inputs or 0)
        if message.output_tokens is not None:
            outputs = message.output_tokens + (outputs or 0)
        if message.duration_ms is not None:
            durations = message.duration_ms + (durations or 0)
        if node_of is not None:
            node_of.setdefault(current, end)
        current = effective_parent[current]
    run.reverse()
    prompt = messages[prompt_id] if prompt_id is not None else None
    if prompt is not None and node_of is not None:
        node_of.setdefault(prompt.id, end)
    answers = [message.text for message in run if message.kind == ANSWER]
    model = model or (conversation.model if answers else None)
    steps = [prompt, *run] if prompt is not None else run
    parts: list[Part] = [part for message in steps for part in message.parts or ()]
    calls = sum(part.get("type") == TOOL_CALL for part in parts)
    record: dict[str, Any] = {
        "id": end,
        "tree_id": conversation.id,
        "parent_id": None,
        "conversation_id": conversation.id,
        "prompt": prompt.text if prompt is not None else None,
        "system": None,
        "response": join_texts(answers, "\n\n"),
        "model": model,
        "datetime_utc": time or (message_time(prompt) if prompt is not None else None),
        "source": None,
        # More than two parts are never plain (`is_plain`): not asked.
        "parts": None if len(parts) <= 2 and is_plain(parts) else parts,
        "tool_calls": calls,
        "tools": ", ".join(tool_names(parts)) or None if calls else None,
        "active": False,
    }
    # Each figure fits the tables' Int64; a hostile sum need not.
    for name, total in zip(USAGE, (inputs, outputs, durations), strict=True):
        record[name] = total if total is None or abs(total) < INT64_LIMIT else None
    return record


def _active_nodes(
    current: str | None,
    messages: dict[str, Message],
    children: dict[str, list[str]],
    is_end: dict[str, bool],
    above: dict[str, str | None],
    records: dict[str, dict[str, Any]],
) -> list[str]:
    """The nodes from the root down to the one holding `current`."""
    if current is None or current not in is_end:
        return []
    steps = 0
    while not is_end[current] and steps <= len(messages):
        below = children.get(current, [])
        if not below:
            break
        going_on = [child for child in below if messages[child].kind != PROMPT]
        current = (going_on or below)[-1]
        steps += 1
    node = current if is_end[current] else above[current]
    found: list[str] = []
    seen: set[str] = set()
    while node is not None and node in records and node not in seen:
        found.append(node)
        seen.add(node)
        node = records[node]["parent_id"]
    return found
