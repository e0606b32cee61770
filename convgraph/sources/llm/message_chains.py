"""The message tree of llm's message store walked up once per message (`Chains`), and a
turn's texts and system prompt from it. A turn's own messages, the rule both store
readers share, in its two forms: `own_messages` (by `Chains`) and `own_messages_table`
(every turn at once on arrays, a message a round)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from convgraph.links.integrity import ParentWalk
from convgraph.links.rules import TURNS, rule, table_form
from convgraph.parts import ASSISTANT, TEXT, is_plain
from convgraph.sources.llm.message_parts import ROLES, MessageContent
from convgraph.sources.llm.turn_parents import NearestAbove, TurnRecord

if TYPE_CHECKING:
    import numpy as np

#: Role codes on arrays: a turn's input is its trailing user and tool messages.
USER, TOOL, OTHER = 1, 2, 0
ROLE_CODE = (
    f"(case role when 'user' then {USER} when 'tool' then {TOOL} else {OTHER} end)"
)
#: Rounds a walk on arrays may take; only hand-made files need more.
MAX_ROUNDS = 64


class TooLong(Exception):
    """A turn's walk is longer than `MAX_ROUNDS` messages."""


class Chains:
    """Walks up the message tree, each message visited once however many
    turns share it: `nearest` remembers the nearest tip (or system message)
    above each message walked."""

    def __init__(self, messages: dict[str, tuple[str | None, str]]):
        self.messages = messages
        self.nearest = NearestAbove(self.parent)

    def parent(self, message_hash: str | None) -> str | None:
        if message_hash is None or message_hash not in self.messages:
            return None
        return self.messages[message_hash][0]

    def own_input(self, parent_message_hash: str | None) -> list[str]:
        """The trailing run of user and tool messages: this turn's new input
        (the rule `llm logs` uses), oldest first."""
        hashes = []
        for current in ParentWalk(parent_message_hash, self.parent):
            if current not in self.messages:
                break
            if self.messages[current][1] not in ("user", "tool"):
                break
            hashes.append(current)
        hashes.reverse()
        return hashes

    def own_output(self, tip: str | None, parent_message_hash: str | None) -> list[str]:
        """The messages this turn appended: below its input, down to its tip."""
        hashes = []
        for current in ParentWalk(tip, self.parent):
            if current not in self.messages or current == parent_message_hash:
                break
            hashes.append(current)
        hashes.reverse()
        return hashes

    def answers_above(self, message_hash: str | None) -> list[str]:
        """The assistant messages at or above `message_hash`, oldest first
        (a walk to the top: asked only for turns with no parent turn)."""
        found = []
        for current in ParentWalk(message_hash, self.parent):
            if current not in self.messages:
                break
            if self.messages[current][1] == "assistant":
                found.append(current)
        found.reverse()
        return found


#: The roles of a run's text parts, in order, where those are all its parts
#: and `parts.is_plain` holds of them (then the node keeps no parts).
PLAIN_ROLES = {
    roles
    for count in range(3)
    for roles in itertools.product(ROLES, repeat=count)
    if is_plain([{"role": role, "type": TEXT} for role in roles])
}


def add_texts(
    record: dict[str, Any],
    content: MessageContent,
    messages: dict[str, tuple[str | None, str]],
    input_hashes: list[str],
    output_hashes: list[str],
) -> None:
    """A turn's prompt (the text of its input's user messages), response
    (the text of the messages it appended) and parts (every part of both, in
    order; None where that is only a prompt and an answer)."""
    items = content.items
    prompt: list[str] = []
    response: list[str] = []
    kinds: list[str] = []
    plain = True  # every part a text: then the roles alone tell plain
    for hashes, into in ((input_hashes, prompt), (output_hashes, response)):
        for message_hash in hashes:
            found = items.get(message_hash)
            if not found:
                continue
            role = messages[message_hash][1]
            for item in found:
                if not isinstance(item, str):
                    plain = False
                    continue
                if into is response or role == "user":
                    into.append(item)
                kinds.append(role if role in ROLES else ASSISTANT)
    record["prompt"] = "".join(prompt)
    record["response"] = "".join(response)
    if plain and tuple(kinds) in PLAIN_ROLES:
        record["parts"] = None
        return
    parts = [
        part
        for message_hash in (*input_hashes, *output_hashes)
        for part in content.parts_of(message_hash, messages[message_hash][1])
    ]
    record["parts"] = None if is_plain(parts) else parts


def system_of(
    content: MessageContent,
    chains: Chains,
    parent_message_hash: str | None,
    system_hashes: set[str],
) -> str | None:
    """The system prompt in force for a turn: the last system message in the
    history it was sent. A turn sent several (`convgraph branch -s`, or
    `llm -s` continuing legacy history, put a new one after the history) was
    told the latest; llm's own `logs` shows only the first."""
    if not system_hashes:
        return None
    nearest = chains.nearest(parent_message_hash, system_hashes, "\0system")
    return None if nearest is None else content.text_of(nearest)


@rule(TURNS)
def own_messages(
    turns: Sequence[TurnRecord], chains: Chains
) -> list[tuple[list[str], list[str]]]:
    """Each turn's own input and the messages it appended, oldest first."""
    return [
        (
            chains.own_input(turn["parent_message_hash"]),
            chains.own_output(turn["tip_message_hash"], turn["parent_message_hash"]),
        )
        for turn in turns
    ]


@table_form(own_messages)
def own_messages_table(
    parent_rows: np.ndarray,
    roles: np.ndarray,
    start_rows: np.ndarray,
    tip_rows: np.ndarray,
    message_count: int,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """`own_messages` as rows: per round, each turn's message (-1 for none),
    newest first, up its input and up from its tip. Rows of `parent_rows`
    past `message_count` are unknown hashes; `roles` are coded; `TooLong`."""
    import numpy as np

    input_role = np.zeros(len(parent_rows), bool)
    input_role[:message_count] = roles != OTHER
    return (
        _walk(parent_rows, start_rows, message_count, keep=input_role),
        _walk(parent_rows, tip_rows, message_count, stop=start_rows),
    )


def _walk(
    parent_rows: np.ndarray,
    starts: np.ndarray,
    message_count: int,
    stop: np.ndarray | None = None,
    keep: np.ndarray | None = None,
) -> list[np.ndarray]:
    """Per round, each turn's message up from its start (-1: ended at an
    unknown hash, at `stop`, or at a message not in `keep`)."""
    import numpy as np

    current = starts.copy()
    rounds: list[np.ndarray] = []
    while True:
        going = (current >= 0) & (current < message_count)
        if stop is not None:
            going &= current != stop
        if keep is not None:
            going[going] = keep[current[going]]
        if not going.any():
            return rounds
        if len(rounds) == MAX_ROUNDS:
            raise TooLong
        rounds.append(np.where(going, current, -1))
        current = np.full(len(current), -1)
        current[going] = parent_rows[rounds[-1][going]]
