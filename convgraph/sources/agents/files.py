"""What the readers of coding agents' sessions (Claude Code, Codex CLI,
Gemini CLI) share: the `SessionGroup` a format module hands over (one
session's messages, its subagents' `Sidechain`s, where it ran), JSON lines
read one line at a time within the chat exports' bounds (`json_lines`: a
UTF-8 byte order mark is skipped, a line holding several records gives each,
a line cut short is reported and left out), the problems a read reports
(`file_problem`, `count_unknown`) and the walk that finds session files
(`jsonl_files`). The modules `claude_code`, `codex` and `gemini_cli` read
one format each; `sessions` tells them apart and reads them as a `Source`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import orjson

from convgraph.errors import DatabaseError
from convgraph.links.integrity import Problem
from convgraph.sources.chat.json_files import MAX_VALUE_BYTES
from convgraph.sources.chat.messages import Message, text_to_iso

#: The part key that marks a subagent's node (its parts are always given):
#: the agent's id, or "sidechain" where the session names none.
SIDECHAIN = "sidechain"

#: A problem kind: a line of a session file that is no JSON object (a line
#: cut short while the agent was writing, or a damaged file). The line is
#: left out, the rest of the file read.
BAD_LINE = "bad-line"

#: A problem kind: records of a kind the agent's reader does not know yet
#: (a newer version's), counted a kind a file; the file is read all the
#: same, the records left out.
UNKNOWN_RECORD = "unknown-record"

#: A problem kind: a second record with the id of an earlier one and other
#: contents. Both are kept: the second under the id with `+2` added.
DUPLICATE_RECORD = "duplicate-record"

#: A problem kind: a file where a session file was looked for that is none,
#: or could not be read; the rest of the folder is read.
UNREAD_FILE = "unread-file"

#: The columns an agent's sessions add to the contract's in the whole-file
#: table (`AgentSessions.read_forest`): the working directory and the git
#: branch of the turn (str or None), the subagent whose node it is (its id,
#: as `SIDECHAIN` marks the parts; None on the main chain), how many of its
#: tool calls failed, the prompt's tokens read from the cache and written
#: to it (counted in `input_tokens` too), and how many calls of each tool
#: its run made (a dict of name and count; None where it made none).
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
    #: What the agent says of the subagent (`agent_type`, its
    #: `agent_description`, its `worktree`): put on each of its parts.
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
    #: The working directory and git branch, by message id (the last known
    #: for the messages that do not say).
    project: dict[str, str | None] = field(default_factory=dict)
    git_branch: dict[str, str | None] = field(default_factory=dict)
    #: The tokens read from the cache and written to it, by message id.
    cache_read: dict[str, int] = field(default_factory=dict)
    cache_write: dict[str, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    #: The other session ids its files hold (a session resumed into the
    #: same file): each names the same tree.
    aliases: list[str] = field(default_factory=list)
    #: The sessions it was forked from (a branch of their tree), and the
    #: messages it holds as copies of theirs, whatever they hold now.
    continues: list[str] = field(default_factory=list)
    copies: set[str] = field(default_factory=set)


def written_before(messages: list[Message], time: str | None) -> str | None:
    """Where a subagent that nothing names hangs: under the last of the main
    chain's `messages` written at or before `time` (any offset), the first
    where it began before them all (a warm-up at the session's start), so a
    session keeps one root. None where there are no messages."""
    began = text_to_iso(time)
    before = messages[0].id if messages else None
    if began is None:
        return before
    for message in messages:
        written = text_to_iso(message.time)
        if written is not None and written <= began:
            before = message.id
    return before


def file_problem(kind: str, where: str, message: str) -> Problem:
    """A problem about a file or a line of one (no node to name): `where`
    is what `check` names it by, `message` the line it prints."""
    return Problem(kind, where, None, None, message)


def count_unknown(path: Path, kinds: dict[str, int]) -> list[Problem]:
    """One `UNKNOWN_RECORD` problem for each kind counted in `kinds`, in the
    order they came."""
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
    """The JSON objects of a JSON-lines file, read one line at a time; a
    UTF-8 byte order mark before the first skipped, blank lines skipped, a
    line holding several objects one after another (as Claude Code writes
    some) read as each, a line that is no JSON object (cut short, or
    damaged) left out and reported in `problems`.

    Raises
    ------
    DatabaseError
        A line longer than `chat_json.MAX_VALUE_BYTES`, or the file cannot
        be read.
    """
    # orjson (C, from bytes, no decode to str first) reads the records at
    # about twice the standard library's speed; what it refuses and the
    # standard library reads (NaN, a lone surrogate escape) goes to the
    # standard library's decoder, so that the same lines are read as ever.
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
                    problems.append(
                        Problem(
                            BAD_LINE,
                            f"{path.name}:{number}",
                            None,
                            None,
                            f"{path}: line {number} is no JSON object: left out",
                        )
                    )
    except OSError as error:
        raise DatabaseError(f"cannot read {path}: {error.strerror}") from None


#: The standard library's decoder, made once (not a file).
_DECODER = json.JSONDecoder()

#: What a file may begin with before its first record.
UTF8_BOM = b"\xef\xbb\xbf"


class _Several:
    """The records of a line that holds more than one, as `_stdlib_value`
    hands them back (wrapped, so that no JSON value is taken for them)."""

    __slots__ = ("records",)

    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.records = records


def _stdlib_value(line: bytes, raw_decode: Any) -> Any:
    """A line orjson refused, read by the standard library's decoder: its
    value, `[_Several]` where it holds several objects one after another,
    None where it is no JSON (cut short, damaged, or nested past Python's
    stack)."""
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


#: What `iter_lines` reads at a time: lines are cut from it in one call,
#: not a `readline` each; `first_records` reads less.
CHUNK = 4 * 2**20
FIRST_CHUNK = 16 * 2**10


def iter_lines(stream: Any, path: Path, size: int = 0) -> Iterator[bytes]:
    """The lines of a binary stream, none longer than `MAX_VALUE_BYTES`,
    read `size` bytes at a time (`CHUNK` where 0; memory holds a chunk and
    one line)."""
    # The start of a line not yet ended, in pieces: a line spanning many
    # reads is joined once, not copied again at each (small reads of a long
    # line would be quadratic).
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
    """The first `count` JSON objects of a JSON-lines file (fewer where it
    holds fewer, none where it is unreadable): enough to tell its format.
    Fewer where `enough` says the ones read tell what is asked."""
    found: list[dict[str, Any]] = []
    try:
        # Small reads: the first records are all that is wanted of a file
        # every session's is asked for before it is read.
        for record in json_lines(path, chunk=FIRST_CHUNK):
            found.append(record)
            if len(found) >= count or (enough is not None and enough(found)):
                break
    except DatabaseError:
        return []
    return found


#: How deep below the folder given session files lie, at most: Codex's
#: `sessions/YYYY/MM/DD/`, Claude Code's `projects/<project>/<session>/
#: subagents/`, Gemini's `tmp/<project>/chats/`, each from one level up.
MAX_DEPTH = 5


def jsonl_files(folder: Path, pattern: str = "*.jsonl") -> list[Path]:
    """The files under `folder` matching `pattern`, no deeper than
    `MAX_DEPTH` (so that a folder that holds no sessions, a home directory,
    is not walked whole), in path order (the agents name and nest them by
    date or project)."""
    found: list[Path] = []
    top = len(folder.parts)
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        where = Path(root)
        if len(where.parts) - top >= MAX_DEPTH:
            dirs.clear()
        # fnmatch, as Path.match matches a name alone, without making a
        # path of every file's name (a year's folder holds thousands).
        found.extend(where / name for name in sorted(files) if fnmatch(name, pattern))
    return found
