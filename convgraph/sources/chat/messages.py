"""The messages of a chat export, as the per-format readers hand them over.

`chatgpt`, `claude` and `openwebui` each turn one conversation's JSON into a
`Conversation` of `Message`s, with the small helpers here for the untrusted
JSON values real exports hold; `chat_exports` builds the nodes from them. The
helpers live apart from `chat_exports` so that the format modules and the
module that dispatches to them do not import each other.
"""

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
#: Anything else: tool calls and their output, hidden and system messages,
#: reasoning, ChatGPT's empty placeholder root. Part of a run, not its text.
STEP = "step"

#: The tables' usage columns are nullable Int64: a count is within +-2**63.
INT64_LIMIT = 2**63


@dataclass(slots=True)
class Message:
    """One message of an export, in the terms the node builder needs.

    `parent` is the link as stored (None for a root), even when it names no
    message or the message itself: the checks downstream report such links.
    """

    id: str
    parent: str | None
    kind: str = STEP
    text: str | None = None
    time: str | None = None
    model: str | None = None
    #: A system prompt this message sets for everything below it.
    system: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    duration_ms: int | None = None
    #: The message's content as parts (`convgraph.parts`), in order; None
    #: where it holds none (a placeholder, an empty system message).
    parts: list[Part] | None = None


@dataclass
class Conversation:
    """One conversation of an export, as the format modules hand it over.

    `current` is the message the person was on last (the active branch's
    end); None where the export marks none that exists.
    """

    id: str
    name: str | None
    messages: list[Message]
    current: str | None = None
    #: The model to name where the answering messages do not.
    model: str | None = None
    #: A system prompt for the whole conversation.
    system: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


# -- small helpers the format modules share ---------------------------------


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
    """An integer count (JSON numbers may come as floats), else None; a
    value past the range of the tables' 64-bit integers (`1e300`, infinity)
    is missing, as it is in llm's files."""
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
    """Epoch seconds (or milliseconds, or nanoseconds) as ISO 8601 in UTC.

    Every reader gives the same shape, so that log order is string order.
    """
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


def text_to_iso(value: Any) -> str | None:
    """An ISO 8601 timestamp (any offset, or `Z`; none is UTC) as ISO 8601
    in UTC, in the same shape as `epoch_to_iso`'s."""
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
    """The message logged last (the later in the list on a tie), for exports
    that do not say which branch was in use."""
    best = None
    for message in messages:
        if best is None or (message.time or "") >= (best.time or ""):
            best = message
    return best.id if best is not None else None


class DistinctIds:
    """Message ids made distinct within one conversation: the stored id, or
    a fallback where it is missing, with `+2`, `+3`, ... added where it is
    taken (hostile or hand-edited exports give one uuid to many messages).

    Each base id keeps the number it got to, so that n messages sharing one
    id cost n look-ups, not n squared.

    Examples
    --------
    >>> ids = DistinctIds()
    >>> [ids.take("a", "x-0"), ids.take("a", "x-1"), ids.take(None, "x-2"),
    ...  ids.take("a", "x-3")]
    ['a', 'a+2', 'x-2', 'a+3']
    """

    __slots__ = ("_next", "seen")

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self._next: dict[str, int] = {}

    def take(self, wanted: Any, fallback: str) -> str:
        """The id of the next message: `wanted` if it is a free non-empty
        string, else `fallback` (or the first free numbered form of it)."""
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
