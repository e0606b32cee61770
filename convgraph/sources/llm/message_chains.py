"""The message tree of llm's message store walked up once per message
(`Chains`), and a turn's texts and system prompt from it."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from convgraph.links.integrity import ParentWalk
from convgraph.parts import ASSISTANT, TEXT, is_plain
from convgraph.sources.llm.message_parts import (
    ROLES,
    MessageContent,
)
from convgraph.sources.llm.turn_parents import NearestAbove

if TYPE_CHECKING:
    pass


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
