"""Claude Code's sessions (`~/.claude/projects/<project>/<session>.jsonl`) as
parent-linked messages.

A session file holds one JSON record a line. The records of the
conversation (`type` `user`, `assistant`, `system`, and the newer kinds that
carry a `uuid`) link by `uuid` and `parentUuid`, so a rewind or an edited
prompt is a second child of one message; `sessionId` names the session,
`cwd` and `gitBranch` where it ran, `timestamp` when. `message` is the API
message: `content` a string or blocks (`text`, `thinking`, `tool_use`,
`tool_result`: read by `claude.block_parts`), `model`, and `usage` (the same
on every record of one API message, which Claude Code writes a block a
record: counted once, on its last record). A user record that only carries
tool results, or is `isMeta`, is a step of the run, not a prompt; a
compaction's summary (`isCompactSummary`) is the prompt of what follows it,
and its boundary (`system`, `compact_boundary`) links to the message before
the compaction by `logicalParentUuid`. `summary` records name the session
whose leaf (`leafUuid`) they point at. A subagent's records are
`isSidechain`, in the session's file (older versions) or a file of their own
(`agent-<id>.jsonl` beside the session, or under `<session>/subagents/`);
each subagent hangs under the message holding the `Task` call that started
it: the call whose result names its `agentId`, or whose `prompt` is the
subagent's first prompt. Files written before `parentUuid` (test fixtures of
other tools) are one chain in file order. Versions 0.2 to 2.x are read.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from convgraph import parts as P
from convgraph.sources.agents.files import (
    SessionGroup,
    Sidechain,
    first_records,
    json_lines,
    jsonl_files,
)
from convgraph.sources.chat.claude import block_parts
from convgraph.sources.chat.messages import (
    ANSWER,
    INT64_LIMIT,
    PROMPT,
    STEP,
    Message,
    as_int,
    as_text,
    join_texts,
    text_to_iso,
)

SOURCE = "claude-code"

#: The record kinds of a session file: the conversation's, and what Claude
#: Code writes beside it.
RECORD_TYPES = frozenset(
    {
        "user",
        "assistant",
        "system",
        "summary",
        "file-history-snapshot",
        "queue-operation",
        "progress",
        "custom-title",
    }
)

#: The tools that start a subagent.
AGENT_TOOLS = frozenset({"Task", "Agent"})


def is_record(record: dict[str, Any]) -> bool:
    """Whether a JSON record is one of a Claude Code session."""
    # A kind of any JSON type may come: only a string can be one of ours.
    kind = record.get("type")
    return (
        type(kind) is str
        and kind in RECORD_TYPES
        and ("sessionId" in record or "uuid" in record or "leafUuid" in record)
    )


def session_files(path: Path) -> list[Path]:
    """The session files at `path` (a session file, a project folder, or
    the whole `projects` folder), or [] where it holds none."""
    if path.is_file():
        records = first_records(path)
        if not records or not all(is_record(record) for record in records[:3]):
            return []
        found = [path]
        folder = path.parent / path.stem / "subagents"
        if folder.is_dir():
            found.extend(jsonl_files(folder))
        session = _session_id(records)
        for sibling in sorted(path.parent.glob("agent-*.jsonl")):
            if sibling != path and _session_id(first_records(sibling)) == session:
                found.append(sibling)
        return found
    if not path.is_dir():
        return []
    files = jsonl_files(path)
    for file in files:
        records = first_records(file, 3)
        if records:
            return files if all(is_record(record) for record in records) else []
    return []


def _session_id(records: list[dict[str, Any]]) -> str | None:
    return next(
        (
            record["sessionId"]
            for record in records
            if isinstance(record.get("sessionId"), str)
        ),
        None,
    )


def _told(records: list[dict[str, Any]]) -> bool:
    """Whether the first records read of a file tell what `session_groups`
    asks of it (its session and when it began): most files' first does,
    and the rest of their first records need not be parsed."""
    return _session_id(records) is not None and any(
        record.get("timestamp") for record in records
    )


def session_groups(files: list[Path]) -> list[tuple[str, list[Path]]]:
    """Each session's key (its `sessionId`) and files (its own first, then
    its subagents'), in the order the sessions began."""
    groups: dict[str, list[Path]] = {}
    began: dict[str, str] = {}
    for file in files:
        records = first_records(file, enough=_told)
        if not records or not is_record(records[0]):
            continue
        key = _session_id(records) or file.stem
        subagent = file.name.startswith("agent-") or any(
            record.get("isSidechain") is True for record in records[:1]
        )
        groups.setdefault(key, [])
        if subagent:
            groups[key].append(file)
        else:
            groups[key].insert(
                sum(not f.name.startswith("agent-") for f in groups[key]), file
            )
        time = next(
            (
                text_to_iso(record.get("timestamp"))
                for record in records
                if record.get("timestamp")
            ),
            None,
        )
        if time is not None and (key not in began or time < began[key]):
            began[key] = time
    return sorted(groups.items(), key=lambda item: (began.get(item[0], ""), item[0]))


def read_group(
    key: str, files: list[Path], text: bool = True
) -> Iterator[SessionGroup]:
    """The session `key` from its files: its main chain, its subagents;
    without their texts (but the prompts'), `text=False`."""
    group = SessionGroup(key, None, [])
    summaries: dict[str, str] = {}
    first_summary: str | None = None
    calls: dict[str, tuple[str, str | None]] = {}  # tool_use id: message, name
    agent_calls: dict[str, str] = {}  # agentId: message holding its call
    task_prompts: dict[str, str] = {}  # a Task call's prompt: its message
    sidechains: dict[str, Sidechain] = {}
    side_of: dict[str, str] = {}
    usage_holder: dict[str, tuple[Message, dict[str, Any]]] = {}
    project = branch = None
    # Bound once: the loop below runs for every record of every session.
    projects, branches = group.project, group.git_branch
    main = group.messages
    for file in files:
        previous: str | None = None
        for record in json_lines(file, group.problems):
            kind = record.get("type")
            if kind == "summary":
                summary = as_text(record.get("summary"))
                leaf = as_text(record.get("leafUuid"))
                if summary is not None:
                    first_summary = first_summary or summary
                    if leaf is not None:
                        summaries.setdefault(leaf, summary)
                continue
            if kind == "custom-title":
                title = as_text(record.get("customTitle"))
                if title is not None:
                    group.name = title
                continue
            # The fields every record has, read inline: this loop is most of
            # a whole-folder read beside the JSON itself.
            message_id = record.get("uuid")
            if type(message_id) is not str or not message_id:
                continue
            if "parentUuid" in record:
                parent = record["parentUuid"]
                if type(parent) is not str or not parent:
                    parent = None
            else:
                parent = previous
            if "logicalParentUuid" in record:
                parent = as_text(record["logicalParentUuid"]) or parent
            previous = message_id
            message = _message(
                record, kind, message_id, parent, calls, usage_holder, text
            )
            for part in message.parts or ():
                kind = part["type"]
                if kind == P.TOOL_CALL:
                    if part["id"] is None:
                        continue
                    calls[part["id"]] = (message_id, part["name"])
                    arguments = part["arguments"]
                    prompt = (
                        arguments.get("prompt") if type(arguments) is dict else None
                    )
                    if part["name"] in AGENT_TOOLS and isinstance(prompt, str):
                        task_prompts.setdefault(prompt, message_id)
                elif kind == P.TOOL_RESULT:
                    result = record.get("toolUseResult")
                    agent = (
                        as_text(result.get("agentId")) if type(result) is dict else None
                    )
                    call = calls.get(part["id"] or "")
                    if agent is not None and call is not None:
                        agent_calls[agent] = call[0]
            # Where a record does not say, the last one that did.
            value = record.get("cwd")
            if type(value) is str and value:
                project = value
            value = record.get("gitBranch")
            if type(value) is str and value:
                branch = value
            projects[message_id] = project
            branches[message_id] = branch
            if record.get("isSidechain") is True:
                side = side_of.get(parent or "")
                if side is None:
                    side = as_text(record.get("agentId")) or message_id
                    sidechains.setdefault(side, Sidechain(side, []))
                side_of[message_id] = side
                sidechains[side].messages.append(message)
            else:
                main.append(message)
                group.current = message_id
    _count_usage(usage_holder.values(), group)
    for chain in sidechains.values():
        chain.anchor = agent_calls.get(chain.agent)
        if chain.anchor is None and chain.messages:
            chain.anchor = task_prompts.get(chain.messages[0].text or "")
    group.sidechains = list(sidechains.values())
    # Named by its own title, else the summary of its last leaf that has
    # one, else the first summary it holds (of the session it continues).
    group.name = (
        group.name
        or next(
            (
                summaries[message.id]
                for message in reversed(group.messages)
                if message.id in summaries
            ),
            None,
        )
        or first_summary
    )
    yield group


def _message(
    record: dict[str, Any],
    kind: Any,
    message_id: str,
    parent: str | None,
    calls: dict[str, tuple[str, str | None]],
    usage_holder: dict[str, tuple[Message, dict[str, Any]]],
    text: bool = True,
) -> Message:
    """One record of the conversation (of type `kind`) as a `Message`
    (without its texts and their parts but a prompt's, `text=False`:
    `_parts`)."""
    # Run for every record of every session: the checks of the untrusted
    # values are written out (`type(x) is`) rather than called.
    raw = record.get("message")
    if type(raw) is not dict:
        raw = _NO_MESSAGE
    time = record.get("timestamp")
    # The time as stored: `AgentSessions` makes the nodes' times UTC.
    # Positional: the keywords of a slotted dataclass cost a tenth more.
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
        if record.get("isCompactSummary") is True or not (
            results or record.get("isMeta") is True
        ):
            message.kind = PROMPT
            message.text = join_texts(texts, "\n\n")
        message.parts = parts or None
    elif kind == "assistant":
        parts, texts = _parts(P.ASSISTANT, raw, text)
        if texts:
            message.kind = ANSWER
            message.text = join_texts(texts, "\n\n") if text else None
        message.parts = parts or None
        model = raw.get("model")
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
    else:
        message.kind = STEP
    return message


#: What a record without an API message reads as.
_NO_MESSAGE: dict[str, Any] = {}


def _parts(
    role: str, raw: dict[str, Any], text: bool
) -> tuple[list[P.Part], list[str | None]]:
    """A message's parts (`claude.block_parts`) and its texts. Without
    `text`, only what the figures count is made: the tool calls and results
    (a result's output left empty, its error said), and the texts as they
    are, not as parts: the same calls, errors and kinds of message, at half
    the cost."""
    if text:
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
            error = "error" if block.get("is_error") is True else None
            found.append(
                P.tool_result(
                    as_text(block.get("name")),
                    "",
                    as_text(block.get("tool_use_id")),
                    error,
                )
            )
    return found, texts


def _count_usage(
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
