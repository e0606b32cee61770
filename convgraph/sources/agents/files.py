"""What the agents' readers share: the `SessionGroup` a format module hands
over, JSON lines read within the chat exports' bounds (`json_lines`), the
problems a read reports, and the walk that finds session files."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import orjson

from convgraph.contract import SIDECHAIN
from convgraph.errors import DatabaseError
from convgraph.links.integrity import Problem
from convgraph.sources.chat.json_files import MAX_VALUE_BYTES
from convgraph.sources.chat.messages import PROMPT, Message, as_int, text_to_iso

#: A problem kind: a line that is no JSON object (cut short, or damaged):
#: left out, the rest of the file read.
BAD_LINE = "bad-line"

#: A problem kind: records of a kind not known yet, counted a kind a file
#: and left out.
UNKNOWN_RECORD = "unknown-record"

#: A problem kind: a second record with the id of an earlier one and other
#: contents. Both are kept: the second under the id with `+2` added.
DUPLICATE_RECORD = "duplicate-record"

#: A problem kind: a file of a folder that is no session, or unreadable.
UNREAD_FILE = "unread-file"

#: The columns an agent's sessions add to the contract's: the turn's working
#: directory and git branch, its subagent (None on the main chain), failed
#: tool calls, cache tokens read and written (within `input_tokens`), and
#: the calls of each tool (a dict; None where there were none).
AGENT_ATTRIBUTES = (
    "project",
    "git_branch",
    SIDECHAIN,
    "tool_errors",
    "cache_read_tokens",
    "cache_write_tokens",
    "tool_uses",
)

#: The integer columns among them (nullable Int64).
AGENT_INTEGERS = ("tool_errors", "cache_read_tokens", "cache_write_tokens")


@dataclass
class Sidechain:
    """A subagent's run: its messages, and the message holding the tool
    call that started it (None where the session does not say)."""

    agent: str
    messages: list[Message]
    anchor: str | None = None
    #: `agent_type`, `agent_description`, `worktree`: put on its parts.
    about: dict[str, str] = field(default_factory=dict)


@dataclass
class SessionGroup:
    """One session as its files hold it: the main chain's messages, the
    message it ended on, its subagents, and what names it."""

    key: str
    name: str | None
    messages: list[Message]
    current: str | None = None
    sidechains: list[Sidechain] = field(default_factory=list)
    #: The working directory and git branch, by message id.
    project: dict[str, str | None] = field(default_factory=dict)
    git_branch: dict[str, str | None] = field(default_factory=dict)
    #: The tokens read from the cache and written to it, by message id.
    cache_read: dict[str, int] = field(default_factory=dict)
    cache_write: dict[str, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    #: The other session ids its files hold: each names the same tree.
    aliases: list[str] = field(default_factory=list)
    #: The sessions it was forked from, and its copies of their messages.
    continues: list[str] = field(default_factory=list)
    copies: set[str] = field(default_factory=set)

    def add_usage(
        self,
        message: Message,
        given: Any,
        said: Any,
        read: Any = None,
        written: Any = None,
    ) -> None:
        """Add one model call's tokens (JSON values, counted where whole
        numbers) to `message`: `given` and `said` to its own, the cache's
        `read` and `written` to this group's."""
        for name, value in (("input_tokens", given), ("output_tokens", said)):
            if (count := as_int(value)) is not None:
                setattr(message, name, (getattr(message, name) or 0) + count)
        for counts, value in ((self.cache_read, read), (self.cache_write, written)):
            if (count := as_int(value)) is not None:
                counts[message.id] = counts.get(message.id, 0) + count


def written_before(messages: list[Message], time: str | None) -> str | None:
    """Where a subagent nothing names hangs: the last of `messages` written
    at or before `time`, else the first (a warm-up); None where none."""
    began = text_to_iso(time)
    before = messages[0].id if messages else None
    if began is None:
        return before
    for message in messages:
        written = text_to_iso(message.time)
        if written is not None and written <= began:
            before = message.id
    return before


def climb(parent: str | None, through: dict[str, str | None]) -> str | None:
    """Where a link ends once it goes on through `through`'s links; bounded,
    as hostile links may go round a cycle."""
    steps = 0
    while parent in through and steps <= len(through):
        parent = through[parent]
        steps += 1
    return parent


def file_problem(kind: str, where: str, message: str) -> Problem:
    """A problem about a file or a line of one: `where` names it in `check`."""
    return Problem(kind, where, None, None, message)


def count_unknown(path: Path, kinds: dict[str, int]) -> list[Problem]:
    """One `UNKNOWN_RECORD` problem for each kind counted in `kinds`."""
    return [
        file_problem(
            UNKNOWN_RECORD,
            f"{path.name}:{kind}",
            f"{path}: {count} record{'s' if count != 1 else ''} of a kind not"
            f" known ({kind!r}): left out",
        )
        for kind, count in kinds.items()
    ]


# -- reading JSON lines, within bounds ------------------------------------------


def json_lines(
    path: Path, problems: list[Problem] | None = None, chunk: int = 0
) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSON-lines file, a line at a time: a leading byte order
    mark and blank lines skipped, several objects on a line read as each, a line that is
    no JSON object left out and put in `problems`. Raises `DatabaseError` for a line
    past `MAX_VALUE_BYTES` or an unreadable file."""
    # orjson first (C, from bytes); what it refuses and the standard
    # library reads (NaN, a lone surrogate) goes to the standard library.
    loads = orjson.loads
    raw_decode = _DECODER.raw_decode
    try:
        with open(path, "rb") as stream:
            for number, line in enumerate(iter_lines(stream, path, chunk), 1):
                if number == 1 and line.startswith(UTF8_BOM):
                    line = line[len(UTF8_BOM) :]
                if not line or line.isspace():
                    continue
                try:
                    value = loads(line)
                except (ValueError, RecursionError):
                    value = _stdlib_value(line, raw_decode)
                if type(value) is list and value and type(value[0]) is _Several:
                    yield from value[0].records
                elif isinstance(value, dict):
                    yield value
                elif problems is not None:
                    message = f"{path}: line {number} is no JSON object: left out"
                    where = f"{path.name}:{number}"
                    problems.append(file_problem(BAD_LINE, where, message))
    except OSError as error:
        raise DatabaseError(f"cannot read {path}: {error.strerror}") from None


_DECODER = json.JSONDecoder()

#: What a file may begin with before its first record.
UTF8_BOM = b"\xef\xbb\xbf"


class _Several:
    """The records of a line holding several (wrapped: no JSON value)."""

    __slots__ = ("records",)

    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.records = records


def _stdlib_value(line: bytes, raw_decode: Any) -> Any:
    """A line orjson refused, read by the standard library: its value,
    `[_Several]` for several objects, None where it is no JSON."""
    try:
        text = line.decode().strip()
        value, end = raw_decode(text)
        if end == len(text):
            return value
        found = [value]
        while end < len(text):
            start = end
            while start < len(text) and text[start].isspace():
                start += 1
            if start == len(text):
                break
            value, end = raw_decode(text, start)
            found.append(value)
        if all(isinstance(item, dict) for item in found):
            return [_Several(found)]
        return None
    except (ValueError, RecursionError):
        return None


#: What `iter_lines` reads at a time (`first_records` reads less).
CHUNK = 4 * 2**20
FIRST_CHUNK = 16 * 2**10


def iter_lines(stream: Any, path: Path, size: int = 0) -> Iterator[bytes]:
    """The lines of a binary stream, none longer than `MAX_VALUE_BYTES`, read `size`
    bytes at a time (`CHUNK` where 0; memory holds a chunk and one line)."""
    # A line spanning many reads is joined once, not at each (quadratic).
    pending: list[bytes] = []
    held = 0
    while True:
        chunk = stream.read(size or CHUNK)
        if not chunk:
            break
        if b"\n" not in chunk:
            pending.append(chunk)
            held += len(chunk)
        else:
            if pending:
                pending.append(chunk)
                chunk = b"".join(pending)
            lines = chunk.split(b"\n")
            rest = lines.pop()
            pending = [rest] if rest else []
            held = len(rest)
            yield from lines
        if held > MAX_VALUE_BYTES:
            raise DatabaseError(
                f"cannot read {path}: a line is longer than"
                f" {MAX_VALUE_BYTES // 2**20} MiB (convgraph reads none longer)"
            )
    if pending:
        yield b"".join(pending)


def first_records(
    path: Path,
    count: int = 8,
    enough: Callable[[list[dict[str, Any]]], bool] | None = None,
) -> list[dict[str, Any]]:
    """The first `count` JSON objects of a JSON-lines file (none where it
    is unreadable), fewer where `enough` says those read suffice."""
    found: list[dict[str, Any]] = []
    try:
        for record in json_lines(path, chunk=FIRST_CHUNK):
            found.append(record)
            if len(found) >= count or (enough is not None and enough(found)):
                break
    except DatabaseError:
        return []
    return found


#: How deep below the folder given session files lie, at most (Claude
#: Code's `projects/<project>/<session>/subagents/` from one level up).
MAX_DEPTH = 5


def jsonl_files(folder: Path, pattern: str = "*.jsonl") -> list[Path]:
    """The files under `folder` matching `pattern`, no deeper than
    `MAX_DEPTH` (a home folder is not walked whole), in path order."""
    found: list[Path] = []
    top = len(folder.parts)
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        where = Path(root)
        if len(where.parts) - top >= MAX_DEPTH:
            dirs.clear()
        # fnmatch: no Path made of every file's name.
        found.extend(where / name for name in sorted(files) if fnmatch(name, pattern))
    return found


def no_companions(path: Path) -> list[Path]:
    """No file beside a session file is read with it."""
    return []


def one_file_each(
    files: list[Path], told: dict[Path, list[dict[str, Any]]]
) -> list[tuple[str, list[Path]]]:
    """Each session file alone, by its path (the key), in path order."""
    return [(str(file), [file]) for file in files]


def first_prompt(messages: list[Message]) -> str | None:
    """A session's name where it keeps none: its first prompt's first line."""
    prompts = (m.text for m in messages if m.kind == PROMPT and m.text)
    return next((text.splitlines()[0][:80] for text in prompts), None)
