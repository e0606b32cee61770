"""The messages of a chat export as the per-app readers hand them over, and
the helpers they share for untrusted JSON values (apart, so that the app
modules and the module that dispatches to them do not import each other)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from convgraph.parts import Part
from convgraph.text import counted
from convgraph.times import utc_iso

#: A user message that starts a node.
PROMPT = "prompt"
#: Text the assistant addressed to the user: the node's response.
ANSWER = "answer"
#: Anything else (tool calls, hidden messages, reasoning): part of a run.
STEP = "step"

INT64_LIMIT = 2**63


@dataclass(slots=True)
class Message:
    """One message of an export; `parent` is the link as stored, for the checks."""

    id: str
    parent: str | None
    kind: str = STEP
    text: str | None = None
    time: str | None = None
    model: str | None = None
    #: A system prompt for everything below.
    system: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    duration_ms: int | None = None
    parts: list[Part] | None = None
    #: A time as epoch seconds, made `time` where it is read (`message_time`).
    epoch: Any = None


@dataclass
class Conversation:
    """One conversation of an export; `current` is the active branch's end, if any."""

    id: str
    name: str | None
    messages: list[Message]
    current: str | None = None
    model: str | None = None
    system: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def as_dict(value: Any) -> dict[str, Any]:
    """`value` if it is a JSON object, else an empty one (hostile input)."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """`value` if it is a JSON array, else an empty one (hostile input)."""
    return value if isinstance(value, list) else []


def as_text(value: Any) -> str | None:
    """A non-empty string, else None."""
    return value if isinstance(value, str) and value != "" else None


def as_int(value: Any) -> int | None:
    """An integer count (a JSON float too), else None; past 64 bits it is missing."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if not -INT64_LIMIT <= value < INT64_LIMIT:
        return None
    return int(value)


def join_texts(texts: list[str | None], separator: str = "\n") -> str | None:
    """The non-empty texts joined, or None when there are none."""
    kept = [text for text in texts if text]
    return separator.join(kept) if kept else None


def epoch_to_iso(value: Any) -> str | None:
    """Epoch seconds (or milli-, nanoseconds) as ISO 8601 in UTC, one shape for all."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    seconds = float(value)
    if seconds > 1e14:  # nanoseconds
        seconds /= 1e9
    elif seconds > 1e11:  # milliseconds
        seconds /= 1e3
    try:
        moment = datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return moment.isoformat(timespec="microseconds")


def message_time(message: Message) -> str | None:
    """The message's `time`, made from its `epoch` on first use: only the
    times that end a node are made."""
    if message.epoch is not None:
        message.time, message.epoch = epoch_to_iso(message.epoch), None
    return message.time or None


def text_to_iso(value: Any) -> str | None:
    """An ISO 8601 time (no offset is UTC) in `epoch_to_iso`'s shape."""
    return utc_iso(value, timespec="microseconds")


def attachment_note(images: int, files: int) -> str | None:
    """What a prompt carried besides text, counted: `[1 image, 2 files]`."""
    parts = []
    if images:
        parts.append(counted(images, "image"))
    if files:
        parts.append(counted(files, "file"))
    return f"[{', '.join(parts)}]" if parts else None


def latest_message(messages: list[Message]) -> str | None:
    """The message logged last (the later on a tie), where no branch is marked."""
    best = None
    for message in messages:
        if best is None or (message_time(message) or "") >= (best.time or ""):
            best = message
    return best.id if best is not None else None


class DistinctIds:
    """Message ids made distinct within a conversation: the stored id, else a
    fallback, with `+2`, `+3`, ... where it is taken (each base remembers its
    number, so n messages sharing one id cost n look-ups)."""

    __slots__ = ("_next", "seen")

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self._next: dict[str, int] = {}

    def take(self, wanted: Any, fallback: str) -> str:
        """`wanted` if a free non-empty string, else `fallback`, numbered where taken."""
        base = wanted if isinstance(wanted, str) and wanted else fallback
        candidate = base
        if candidate in self.seen:
            number = self._next.get(base, 2)
            while f"{base}+{number}" in self.seen:
                number += 1
            candidate = f"{base}+{number}"
            self._next[base] = number + 1
        self.seen.add(candidate)
        return candidate
