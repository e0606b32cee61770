"""An independent count of coding agents' session files, written from the
formats (changelogs, public format notes, the files), never from
convgraph's readers. Per file: prompts (typed or pasted by a person, an
image alone included), tool calls, tool results; a record once, where a
copy (same id, same content) repeats it.

Claude Code (`projects/P/<session>.jsonl`, 0.2 to 2.1.x):
  prompt   `user` record, not `isMeta`/`isCompactSummary`/sidechain, no
           `tool_result` in it, not a command record (`<command-name>`,
           `<command-message>`, `<local-command-*>`, `<bash-*>`), nor
           `<task-notification>`, "[Request interrupted by user...]", a
           compaction summary ("This session is being continued...").
           A slash command (`<command-name>`, `<command-message>`) is a
           prompt where the model answers it: an `assistant` record not
           of model `<synthetic>` comes before the next prompt or
           `<local-command-stdout>`; a local one (/clear, /model) is not.
  call     `tool_use`/`server_tool_use` block; result `*tool_result` block.
  no message  `summary`, `system`, `progress` (hooks; a subagent's
           messages copied), `file-history-snapshot`, `queue-operation`,
           `attachment`, `permission-mode`, `mode`, `last-prompt`, `pr-link`.
  session  the file, `<session>/subagents/agent-*.jsonl`, and the loose
           `agent-*.jsonl` beside it of the same `sessionId`.
Codex CLI (`sessions/Y/M/D/rollout-*.jsonl`, before 0.30 to 0.15x):
  prompt   `event_msg` `user_message`, and a `user` `message` item no such
           event repeats and no injected context (`<environment_context>`,
           `<user_instructions>`, AGENTS.md); 0.151+ item `UserMessage`.
  call     `function_call`, `custom_tool_call`, `local_shell_call`,
           `web_search_call`, `tool_search_call`; 0.151+ items
           `CommandExecution`, `McpToolCall`, `FileChange`, `WebSearch`.
  result   `*_call_output`, `tool_search_output`; 0.151+ those items but
           `WebSearch`.
  no message  `session_meta`, `turn_context`, `compacted`, `reasoning`,
           other `event_msg`s. A line is read once (a fork copies lines).
Gemini CLI (`tmp/<hash>/chats/session-*.json` or `.jsonl`):
  prompt   `user` message, but the CLI's "System: Please continue." and a
           lone slash command; call a `toolCalls` entry; result one with a
           `result` or a `status` of `success`/`error`.
  no message  `info`, `error`, `warning`, the JSON-lines header, `$set`,
           `$rewindTo`; a later line of a message id is its newer state.
  `/chat save` lists of `{role, parts}`: a `user` text part, a
  `functionCall`, a `functionResponse`.
Copilot CLI (`session-state/<id>/events.jsonl`):
  prompt   `user.message`, not an autopilot continuation nor a message a
           skill injects (a `source` such as "skill-pdf": the session
           event schema's "hidden from the user"); call a
           `toolRequests` entry, or a `tool.execution_start` not
           requested; result `tool.execution_complete`.
  no message  `session.*`, `assistant.turn_*`, `hook.*`, `system.*`,
           `subagent.*`, `abort`, `assistant.reasoning`, usage, deltas.
"""

from __future__ import annotations

import json
import re
from collections import Counter as Tally
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Record = dict[str, Any]


@dataclass
class Counts:
    """What a file holds: prompts, tool calls, tool results."""

    prompts: int = 0
    tool_calls: int = 0
    tool_results: int = 0
    seen: set[tuple[str, str]] = field(default_factory=set, repr=False)

    def once(self, kind: str, key: str) -> bool:
        """True the first time `key` of `kind` is met."""
        if (kind, key) in self.seen:
            return False
        self.seen.add((kind, key))
        return True

    def triple(self) -> tuple[int, int, int]:
        """The three counts."""
        return (self.prompts, self.tool_calls, self.tool_results)


def json_lines(path: Path) -> Iterator[tuple[str, Record]]:
    """Each line that is a JSON object, with its text; others skipped."""
    with path.open(encoding="utf-8-sig", errors="replace") as lines:
        for line in lines:
            text = line.strip()
            try:
                record = json.loads(text)
            except ValueError:
                continue
            if isinstance(record, dict):
                yield text, record


def agent_of(path: Path) -> str:
    """Which agent wrote `path`: claude-code, codex, gemini-cli or copilot."""
    if path.suffix == ".json":
        return "gemini-cli"
    for _, record in json_lines(path):
        kind = str(record.get("type", ""))
        if kind.startswith(("session.", "user.", "assistant.", "tool.")):
            return "copilot"
        if kind in ("session_meta", "response_item", "event_msg", "turn_context"):
            return "codex"
        if "sessionId" in record and "messages" not in record and "kind" in record:
            return "gemini-cli"
        if kind in ("gemini", "$set") or "$set" in record:
            return "gemini-cli"
        if "uuid" in record or kind in ("user", "assistant", "summary"):
            return "claude-code"
        if kind in ("message", "function_call", "reasoning"):
            return "codex"
    return "claude-code"


def count(path: Path) -> Counts:
    """The counts of the session `path` holds (with its subagents' files)."""
    agent = agent_of(path)
    if agent == "codex":
        return count_codex(path)
    if agent == "gemini-cli":
        return count_gemini(path)
    if agent == "copilot":
        return count_copilot(path)
    return count_claude(path)


# Claude Code

NOT_PROMPTS = (
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<task-notification>",
    "[Request interrupted by user",
    "This session is being continued from a previous conversation",
)


def session_id(path: Path) -> str | None:
    """The `sessionId` of a Claude Code file's first record that has one."""
    for _, record in json_lines(path):
        if isinstance(record.get("sessionId"), str):
            return str(record["sessionId"])
    return None


def claude_files(path: Path) -> list[Path]:
    """A session file and its subagents' files."""
    files = [path]
    subagents = path.with_suffix("") / "subagents"
    if subagents.is_dir():
        files += sorted(subagents.rglob("agent-*.jsonl"))
    if not path.name.startswith("agent-"):
        own = session_id(path)
        for loose in sorted(path.parent.glob("agent-*.jsonl")):
            if own is not None and session_id(loose) == own:
                files.append(loose)
    return files


def is_prompt(record: Record) -> bool:
    """Whether a `user` record is a person's prompt."""
    if (
        record.get("isMeta")
        or record.get("isCompactSummary")
        or record.get("isSidechain")
    ):
        return False
    content = (record.get("message") or {}).get("content")
    if isinstance(content, str):
        texts = [content]
    elif isinstance(content, list):
        blocks = [b for b in content if isinstance(b, dict)]
        if any(str(b.get("type", "")).endswith("tool_result") for b in blocks):
            return False
        texts = [str(b.get("text", "")) for b in blocks if b.get("type") == "text"]
        if not texts:
            return any(b.get("type") in ("image", "document") for b in blocks)
    else:
        return False
    first = texts[0].lstrip()
    return not first.startswith(NOT_PROMPTS)


COMMANDS = ("<command-name>", "<command-message>")


def first_text(record: Record) -> str:
    """The first text of a record's message, stripped at its start."""
    content = (record.get("message") or {}).get("content")
    if isinstance(content, list):
        content = next(
            (b.get("text") for b in content if isinstance(b, dict) and "text" in b),
            "",
        )
    return str(content or "").lstrip()


def answered(records: list[Record], at: int) -> bool:
    """Whether the model answers the slash command at `records[at]`."""
    for record in records[at + 1 :]:
        if record.get("type") == "assistant":
            model = (record.get("message") or {}).get("model")
            if model != "<synthetic>":
                return True
        elif record.get("type") == "user" and not record.get("isMeta"):
            text = first_text(record)
            if is_prompt(record) or text.startswith("<local-command-stdout>"):
                return False
    return False


def count_claude(path: Path) -> Counts:
    """Claude Code: the session file with its subagents' files."""
    counts = Counts()
    for file in claude_files(path):
        records: list[Record] = []
        for number, (_, record) in enumerate(json_lines(file)):
            if record.get("type") not in ("user", "assistant"):
                continue
            message = json.dumps(record.get("message"), sort_keys=True)
            key = f"{record.get('uuid') or f'{file.name}:{number}'}:{message}"
            if counts.once("record", key):
                records.append(record)
        for at, record in enumerate(records):
            kind = record.get("type")
            if (
                kind == "user"
                and is_prompt(record)
                or (
                    kind == "user"
                    and not record.get("isMeta")
                    and not record.get("isSidechain")
                    and first_text(record).startswith(COMMANDS)
                    and answered(records, at)
                )
            ):
                counts.prompts += 1
            content = (record.get("message") or {}).get("content")
            if not isinstance(content, list):
                continue
            for block in content:
                btype = str(block.get("type", "")) if isinstance(block, dict) else ""
                if kind == "assistant" and btype in ("tool_use", "server_tool_use"):
                    counts.tool_calls += 1
                elif kind == "user" and btype.endswith("tool_result"):
                    counts.tool_results += 1
    return counts


# Codex CLI

CONTEXTS = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
)
CALLS = (
    "function_call",
    "custom_tool_call",
    "local_shell_call",
    "web_search_call",
    "tool_search_call",
)
RESULTS = ("function_call_output", "custom_tool_call_output", "tool_search_output")
ITEM_CALLS = ("CommandExecution", "McpToolCall", "FileChange", "WebSearch")


def count_codex(path: Path) -> Counts:
    """Codex CLI: one rollout."""
    counts = Counts()
    records = [(text, r) for text, r in json_lines(path) if counts.once("line", text)]
    # A prompt is written twice since 0.30 (an item and an event): the
    # items an event repeats are left to the event.
    typed = Tally(
        str((r.get("payload") or {}).get("message", "")).strip()
        for _, r in records
        if r.get("type") == "event_msg"
        and (r.get("payload") or {}).get("type") == "user_message"
    )
    for _, record in records:
        envelope = record.get("type") if "payload" in record else "response_item"
        payload = record.get("payload") if "payload" in record else record
        if not isinstance(payload, dict):
            continue
        kind = payload.get("type")
        if envelope == "event_msg":
            if kind == "user_message":
                counts.prompts += 1
            elif kind == "item_completed":
                count_item(counts, payload.get("item") or {})
            continue
        if envelope != "response_item":
            continue
        if kind == "message" and payload.get("role") == "user":
            texts = [
                str(c.get("text", ""))
                for c in payload.get("content") or []
                if isinstance(c, dict)
            ]
            said = "".join(texts).strip()
            if typed[said] > 0:
                typed[said] -= 1
            elif not said.startswith(CONTEXTS):
                counts.prompts += 1
        elif kind in CALLS:
            counts.tool_calls += 1
        elif kind in RESULTS:
            counts.tool_results += 1
    return counts


def count_item(counts: Counts, item: Record) -> None:
    """A 0.151+ `item_completed` item."""
    kind = item.get("type")
    if kind == "UserMessage":
        counts.prompts += 1
    elif kind in ITEM_CALLS:
        counts.tool_calls += 1
        counts.tool_results += kind != "WebSearch"


# Gemini CLI

SLASH = re.compile(r"^/\S+$")


def gemini_messages(path: Path) -> list[Record]:
    """A recorded session's messages, each id once, in file order."""
    if path.suffix == ".jsonl":
        found = [r for _, r in json_lines(path) if "type" in r and "id" in r]
    else:
        document = json.loads(path.read_text(encoding="utf-8-sig"))
        if isinstance(document, list):
            return document
        found = [m for m in document.get("messages") or [] if isinstance(m, dict)]
    latest: dict[str, Record] = {}
    for number, message in enumerate(found):
        latest[str(message.get("id", number))] = message
    return list(latest.values())


def gemini_text(content: Any) -> str:
    """The text of a message's content (a string or a list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def count_gemini(path: Path) -> Counts:
    """Gemini CLI: a recorded session or a saved chat."""
    counts = Counts()
    for message in gemini_messages(path):
        if "role" in message:
            parts = [p for p in message.get("parts") or [] if isinstance(p, dict)]
            if message["role"] == "user" and any("text" in p for p in parts):
                counts.prompts += 1
            counts.tool_calls += sum("functionCall" in p for p in parts)
            counts.tool_results += sum("functionResponse" in p for p in parts)
            continue
        if message.get("type") == "user":
            text = gemini_text(message.get("content")).strip()
            if text != "System: Please continue." and not SLASH.match(text):
                counts.prompts += 1
        for call in message.get("toolCalls") or []:
            if isinstance(call, dict):
                counts.tool_calls += 1
                ran = call.get("status") in ("success", "error")
                counts.tool_results += call.get("result") is not None or ran
    return counts


# GitHub Copilot CLI


def count_copilot(path: Path) -> Counts:
    """Copilot CLI: one session's events."""
    counts = Counts()
    events = [e for text, e in json_lines(path) if counts.once("event", text)]
    requested = {
        str(request.get("toolCallId"))
        for event in events
        if event.get("type") == "assistant.message"
        for request in (event.get("data") or {}).get("toolRequests") or []
        if isinstance(request, dict)
    }
    for event in events:
        kind = event.get("type")
        data = event.get("data") or {}
        injected = str(data.get("source") or "user") != "user"
        if (
            kind == "user.message"
            and not data.get("isAutopilotContinuation")
            and not injected
        ):
            counts.prompts += 1
        elif kind == "assistant.message":
            counts.tool_calls += len(data.get("toolRequests") or [])
        elif kind == "tool.execution_start":
            counts.tool_calls += str(data.get("toolCallId")) not in requested
        elif kind == "tool.execution_complete":
            counts.tool_results += 1
    return counts
