"""Claude Code's sessions (`~/.claude/projects/<project>/<session>.jsonl`) as
parent-linked messages. What the files hold, and how they are read:
docs/internals/agent-formats.md."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from convgraph import parts as P
from convgraph.sources.agents.claude_messages import (
    answered,
    count_usage,
    record_message,
)
from convgraph.sources.agents.files import (
    DUPLICATE_RECORD,
    SessionGroup,
    Sidechain,
    climb,
    count_unknown,
    file_problem,
    first_records,
    json_lines,
    jsonl_files,
    written_before,
)
from convgraph.sources.chat.messages import PROMPT, STEP, Message, as_text, text_to_iso

SOURCE = "claude-code"

#: Message ids are unique across sessions: a resumed session's copy of an
#: earlier session's message is one wherever it is (`join`).
GLOBAL_IDS = True

#: Where Claude Code keeps its sessions, below a home folder.
STORE = (".claude", "projects")

#: The records of the conversation.
CONVERSATION_TYPES = frozenset({"user", "assistant"})

#: Records in the chain of links that carry no conversation: a link to one
#: goes on to what it hangs under.
PASSED_THROUGH = frozenset({"progress", "attachment", "system"})

#: Every record kind Claude Code writes (to 2.1): the conversation's, the
#: ones passed through, and what it keeps beside them (titles, snapshots of
#: the files it edited, the queue of typed prompts, modes and settings).
RECORD_TYPES = (
    CONVERSATION_TYPES
    | PASSED_THROUGH
    | frozenset(
        "summary custom-title ai-title agent-name file-history-snapshot"  # noqa: SIM905 (kinds as words)
        " queue-operation permission-mode mode last-prompt worktree-state pr-link"
        " frame-link tag started result relocated bridge-session atis-latch".split()
    )
)

#: The tools that start a subagent.
AGENT_TOOLS = frozenset({"Task", "Agent"})


def is_record(record: dict[str, Any]) -> bool:
    """Whether a JSON record is one only Claude Code writes: a kind of its
    own with a session, message or leaf id (a file whose records never are,
    a snapshot alone, tells nothing)."""
    # A kind of any JSON type may come: only a string can be one of ours.
    kind = record.get("type")
    return (
        type(kind) is str
        and kind in RECORD_TYPES
        and ("sessionId" in record or "uuid" in record or "leafUuid" in record)
    )


def store_files(folder: Path) -> list[Path]:
    """The files under `folder` that may be sessions (every `.jsonl` file of
    a project folder, or of the whole `projects` folder)."""
    return jsonl_files(folder)


def companions(path: Path) -> list[Path]:
    """The files read with the session file `path` alone: its subagents' (under
    `<session>/subagents/`, or an `agent-*.jsonl` beside it whose `sessionId` is the
    session's: a project folder holds other sessions' too)."""
    found: list[Path] = []
    folder = path.parent / path.stem / "subagents"
    if folder.is_dir():
        found.extend(jsonl_files(folder))
    if path.name.startswith("agent-"):
        return found
    own = {path.stem, _session_id(first_records(path, 64, _told_session))}
    for sibling in sorted(path.parent.glob("agent-*.jsonl")):
        if sibling.is_file() and sibling not in found:
            session = _session_id(first_records(sibling, 64, _told_session))
            if session in own:
                found.append(sibling)
    return found


def _told_session(records: list[dict[str, Any]]) -> bool:
    return _session_id(records) is not None


def _session_id(records: list[dict[str, Any]]) -> str | None:
    found = (record.get("sessionId") for record in records)
    return next((one for one in found if isinstance(one, str) and one), None)


def session_groups(
    files: list[Path], told: dict[Path, list[dict[str, Any]]]
) -> list[tuple[str, list[Path]]]:
    """Each session's key (its `sessionId`) and files (its own first, then
    its subagents'), in the order the sessions began. `told` holds each
    file's first records (those that told it a Claude Code file)."""
    groups: dict[str, list[Path]] = {}
    began: dict[str, str] = {}
    for file in files:
        records = told.get(file, [])
        key = _session_id(records) or file.stem
        subagent = file.name.startswith("agent-") or any(
            record.get("isSidechain") is True
            for record in records
            if record.get("type") in ("user", "assistant")
        )
        groups.setdefault(key, [])
        if subagent:
            groups[key].append(file)
        else:
            groups[key].insert(
                sum(not f.name.startswith("agent-") for f in groups[key]), file
            )
        times = (text_to_iso(r["timestamp"]) for r in records if r.get("timestamp"))
        time = next(times, None)
        if time is not None and (key not in began or time < began[key]):
            began[key] = time
    return sorted(groups.items(), key=lambda item: (began.get(item[0], ""), item[0]))


class _Reading:
    """What one session group's records gave, gathered before the links
    are followed: the messages in file order, the records passed through,
    what names the session and its subagents' calls."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.side: dict[str, bool] = {}  # message: written as a sidechain
        self.agent: dict[str, str] = {}  # message: the agentId it carries
        self.through: dict[str, str | None] = {}  # passed-through record: parent
        self.summaries: dict[str, str] = {}
        self.first_summary: str | None = None
        self.title: str | None = None
        self.calls: dict[str, tuple[str, str | None]] = {}  # tool_use: message, name
        self.agent_calls: dict[str, str] = {}  # agentId: message holding its call
        self.task_prompts: dict[str, str] = {}  # a Task call's prompt: message
        self.usage: dict[str, tuple[Message, dict[str, Any]]] = {}
        self.contents: dict[str, Any] = {}  # message: what it held (duplicates)
        self.sessions: list[str] = []
        self.about: dict[str, dict[str, str]] = {}  # agentId: its .meta.json


def read_group(
    key: str, files: list[Path], text: bool = True
) -> Iterator[SessionGroup]:
    """The session `key` from its files: its main chain, its subagents;
    without their texts (but the prompts'), `text=False`."""
    group = SessionGroup(key, None, [])
    reading = _Reading()
    project = branch = None
    projects, branches = group.project, group.git_branch
    for file in files:
        previous: str | None = None
        unknown: dict[str, int] = {}
        commands: list[Message] = []  # typed, not yet answered
        if file.name.startswith("agent-"):
            _read_meta(file, reading)
        for record in json_lines(file, group.problems):
            kind = record.get("type")
            if type(kind) is not str or kind not in RECORD_TYPES:
                name = kind if type(kind) is str else "(none)"
                unknown[name] = unknown.get(name, 0) + 1
                continue
            boundary = kind == "system" and record.get("subtype") == "compact_boundary"
            if kind not in CONVERSATION_TYPES and not boundary:
                previous = _beside(record, kind, reading, previous)
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
            if boundary:
                # A compaction's boundary: a step of the run it ends, under
                # the message before the compaction.
                parent = as_text(record.get("logicalParentUuid")) or parent
            forked = record.get("forkedFrom")
            if type(forked) is dict:
                message_id = _forked(forked, message_id, reading, group)
            message_id = _distinct(record, message_id, reading, group, file)
            if message_id is None:
                continue  # the same record again: one copy read
            previous = message_id
            session = record.get("sessionId")
            if type(session) is str and session and session not in reading.sessions:
                reading.sessions.append(session)
            message = record_message(
                record, kind, message_id, parent, reading.calls, reading.usage, text
            )
            _note_calls(record, message, reading)
            # Where a record does not say, the last one that did.
            value = record.get("cwd")
            if type(value) is str and value:
                project = value
            value = record.get("gitBranch")
            if type(value) is str and value:
                branch = value
            projects[message_id] = project
            branches[message_id] = branch
            reading.messages.append(message)
            if record.get("isSidechain") is not True:
                # A command is a prompt where the model answers it before
                # the next prompt; a local one (`/clear`, `/model`) a step.
                if kind == "assistant":
                    if not _synthetic(record):
                        for typed in commands:
                            answered(typed, text)
                    commands.clear()
                elif message.kind == PROMPT or _local_output(record):
                    commands.clear()
                elif message.kind == STEP and message.text is not None:
                    commands.append(message)
            else:
                reading.side[message_id] = True
                agent = record.get("agentId")
                if type(agent) is str and agent:
                    reading.agent[message_id] = agent
        group.problems.extend(count_unknown(file, unknown))
    count_usage(reading.usage.values(), group)
    _follow_links(reading)
    _place(reading, group)
    group.aliases = [session for session in reading.sessions if session != key]
    # Named by its own title, else the summary of its last leaf that has
    # one, else the first summary it holds (of the session it continues).
    summaries = reading.summaries
    last = (summaries[m.id] for m in reversed(group.messages) if m.id in summaries)
    group.name = reading.title or next(last, None) or reading.first_summary
    yield group


def _synthetic(record: dict[str, Any]) -> bool:
    """Whether an assistant record is Claude Code's own ("No response
    requested."), not the model's."""
    raw = record.get("message")
    return type(raw) is dict and raw.get("model") == "<synthetic>"


def _local_output(record: dict[str, Any]) -> bool:
    """Whether a user record is what a local command printed."""
    raw = record.get("message")
    content = raw.get("content") if type(raw) is dict else None
    if type(content) is list and content and type(content[0]) is dict:
        content = content[0].get("text")
    return type(content) is str and content.startswith("<local-command-stdout>")


def _beside(
    record: dict[str, Any], kind: str, reading: _Reading, previous: str | None
) -> str | None:
    """A record beside the conversation: a title or a summary kept, a record
    in the chain of links passed through (`reading.through`), a progress
    record's subagent noted. Returns the message a record without
    `parentUuid` that follows hangs under."""
    if kind == "summary":
        summary = as_text(record.get("summary"))
        leaf = as_text(record.get("leafUuid"))
        if summary is not None:
            reading.first_summary = reading.first_summary or summary
            if leaf is not None:
                reading.summaries.setdefault(leaf, summary)
    elif kind in ("custom-title", "ai-title"):
        title = as_text(record.get("customTitle")) or as_text(record.get("aiTitle"))
        title = title or as_text(record.get("title"))
        # The person's own title wins over the one the model gave.
        if title is not None and (kind == "custom-title" or reading.title is None):
            reading.title = title
    elif kind in PASSED_THROUGH:
        record_id = record.get("uuid")
        if type(record_id) is str and record_id:
            parent = record.get("parentUuid") if "parentUuid" in record else previous
            logical = as_text(record.get("logicalParentUuid"))
            reading.through.setdefault(
                record_id, logical or (parent if type(parent) is str else None)
            )
            if kind == "progress":
                _note_progress(record, reading)
            return record_id
    return previous


def _note_progress(record: dict[str, Any], reading: _Reading) -> None:
    """A subagent's progress names its agent and the call that started it."""
    data = record.get("data")
    if type(data) is not dict or data.get("type") != "agent_progress":
        return
    agent = as_text(data.get("agentId"))
    call = reading.calls.get(as_text(record.get("parentToolUseID")) or "")
    if agent is not None and call is not None:
        reading.agent_calls.setdefault(agent, call[0])


def _distinct(
    record: dict[str, Any],
    message_id: str,
    reading: _Reading,
    group: SessionGroup,
    file: Path,
) -> str | None:
    """The id to read a record under: its own; None where the same record
    came before (a copy); its id with `+2` (`+3`, ...) where one with other
    contents did, reported (both are kept)."""
    held = (record.get("type"), record.get("message"), record.get("parentUuid"))
    if message_id not in reading.contents:
        reading.contents[message_id] = held
        return message_id
    if reading.contents[message_id] == held:
        return None
    number = 2
    while f"{message_id}+{number}" in reading.contents:
        number += 1
    distinct = f"{message_id}+{number}"
    reading.contents[distinct] = held
    said = f"{file}: {message_id} names two records with different contents"
    message = f"{said}: both read, the later as {distinct}"
    group.problems.append(file_problem(DUPLICATE_RECORD, distinct, message))
    return distinct


def _note_calls(record: dict[str, Any], message: Message, reading: _Reading) -> None:
    """The tool calls a message makes, and the subagents its results name."""
    for part in message.parts or ():
        kind = part["type"]
        if kind == P.TOOL_CALL:
            if part["id"] is None:
                continue
            reading.calls[part["id"]] = (message.id, part["name"])
            arguments = part["arguments"]
            prompt = arguments.get("prompt") if type(arguments) is dict else None
            if part["name"] in AGENT_TOOLS and isinstance(prompt, str):
                reading.task_prompts.setdefault(prompt, message.id)
        elif kind == P.TOOL_RESULT:
            result = record.get("toolUseResult")
            agent = as_text(result.get("agentId")) if type(result) is dict else None
            call = reading.calls.get(part["id"] or "")
            if agent is not None and call is not None:
                reading.agent_calls[agent] = call[0]


def _follow_links(reading: _Reading) -> None:
    """Each message's parent made a message: a link to a record passed
    through goes on to what that record hangs under."""
    through = reading.through
    if not through:
        return
    for message in reading.messages:
        message.parent = climb(message.parent, through)


def _place(reading: _Reading, group: SessionGroup) -> None:
    """The main chain and the subagents' chains (`join` reads each as
    lived), each subagent anchored (`_anchor`)."""
    main = [m for m in reading.messages if m.id not in reading.side]
    group.messages = main
    group.current = main[-1].id if main else None
    # A subagent is told by the agent its records carry, else by the first
    # record of its chain (older files keep several in the session's file).
    chain_of: dict[str, str] = {}
    sidechains: dict[str, Sidechain] = {}
    for message in reading.messages:
        if message.id not in reading.side:
            continue
        agent = reading.agent.get(message.id) or chain_of.get(message.parent or "")
        agent = agent or message.id
        chain_of[message.id] = agent
        sidechains.setdefault(agent, Sidechain(agent, [])).messages.append(message)
    for side in sidechains.values():
        side.anchor = _anchor(side, reading, main)
        side.about = reading.about.get(side.agent, {})
    group.sidechains = list(sidechains.values())


def _read_meta(file: Path, reading: _Reading) -> None:
    """What `agent-<id>.meta.json` beside a subagent's file says of it (its
    type, purpose, worktree); a compaction's own agent (`agent-acompact-*`)
    is of type `compaction` where nothing says otherwise."""
    agent = file.stem.removeprefix("agent-")
    about: dict[str, str] = {}
    if agent.startswith("acompact"):
        about["agent_type"] = "compaction"
    try:
        value = json.loads(file.with_name(f"{file.stem}.meta.json").read_bytes())
    except (OSError, ValueError, RecursionError):
        value = {}
    for key, name in _META.items():
        found = as_text(value.get(key)) if type(value) is dict else None
        if found is not None:
            about[name] = found
    if about:
        reading.about[agent] = about


#: The fields of a subagent's `.meta.json` kept, and the part keys they go to.
_META = {
    "agentType": "agent_type",
    "description": "agent_description",
    "worktreePath": "worktree",
}


def _forked(
    forked: dict[str, Any], message_id: str, reading: _Reading, group: SessionGroup
) -> str:
    """A record of a session forked from another (`forkedFrom`): a copy of
    the message it names, read under that message's id, and the session a
    branch of the one it came from."""
    session = as_text(forked.get("sessionId"))
    if session is not None and session not in group.continues:
        group.continues.append(session)
    if (original := as_text(forked.get("messageUuid"))) is None:
        return message_id
    group.copies.add(original)
    if original != message_id:
        reading.through.setdefault(message_id, original)
    return original


def _anchor(chain: Sidechain, reading: _Reading, main: list[Message]) -> str | None:
    """The main chain's message a subagent hangs under: the one holding the
    call whose result or progress names it, or whose prompt is its first;
    else the last one written at or before its first record's time."""
    anchor = reading.agent_calls.get(chain.agent)
    if anchor is None and chain.messages:
        anchor = reading.task_prompts.get(chain.messages[0].text or "")
    if anchor is not None or not chain.messages:
        return anchor
    return written_before(main, chain.messages[0].time)
