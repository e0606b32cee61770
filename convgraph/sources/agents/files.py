"""What the readers of coding agents' sessions (Claude Code, Codex CLI,
Gemini CLI) share: the `SessionGroup` a format module hands over (one
session's messages, its subagents' `Sidechain`s, where it ran), and JSON
lines read one line at a time within the chat exports' bounds
(`json_lines`: a line cut short is reported and left out). The modules
`claude_code`, `codex` and `gemini_cli` read one format each;
`agent_sessions` tells them apart and reads them as a `Source`.
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
from convgraph.sources.chat.messages import Message

#: The part key that marks a subagent's node (its parts are always given):
#: the agent's id, or "sidechain" where the session names none.
SIDECHAIN = "sidechain"

#: A problem kind: a line of a session file that is no JSON object (a line
#: cut short while the agent was writing, or a damaged file). The line is
#: left out, the rest of the file read.
BAD_LINE = "bad-line"

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


# -- reading JSON lines, within bounds ------------------------------------------


def json_lines(
    path: Path, problems: list[Problem] | None = None, chunk: int = 0
) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSON-lines file, one a line, read one line at a
    time; blank lines skipped, a line that is no JSON object (cut short, or
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
    raw_decode, decode = _DECODER.raw_decode, _DECODER.decode
    try:
        with open(path, "rb") as stream:
            for number, line in enumerate(iter_lines(stream, path, chunk), 1):
                if not line or line.isspace():
                    continue
                try:
                    value = loads(line)
                except (ValueError, RecursionError):
                    value = _stdlib_value(line, raw_decode, decode)
                if isinstance(value, dict):
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


def _stdlib_value(line: bytes, raw_decode: Any, decode: Any) -> Any:
    """A line orjson refused, read by the standard library's decoder (None
    where it is no JSON either)."""
    try:
        text = line.decode()
        try:
            value, end = raw_decode(text)
            if end < len(text) and not text[end:].isspace():
                value = None
        except ValueError:
            # Space before the record, or no JSON at all.
            value = decode(text)
    except (ValueError, RecursionError):
        # Cut short, damaged, or nested past Python's stack.
        value = None
    return value


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
