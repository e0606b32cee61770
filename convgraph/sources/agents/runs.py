"""Each message of an agent's chain in exactly one node, whatever its links
say (`one_node_each`): `chat.nodes` puts the messages above a fork in a run
into the node of every end below them, so each run is read as the chain it
was lived in (a step under the run's message written last before it, a
prompt under the run's end: a rewind is a sibling), and a run of tool calls
with no prompt or answer is kept as a node without a prompt."""

from __future__ import annotations

from operator import attrgetter

from convgraph.parts import TOOL_CALL, TOOL_RESULT
from convgraph.sources.chat.messages import ANSWER, PROMPT, Message

_ID = attrgetter("id")


def one_node_each(messages: list[Message]) -> None:
    """Relink `messages` (ids distinct, in the order written) in place: each
    run one chain, its prompts below its end, a cycle cut where entered."""
    present: set[str] | None = None  # every id, made where first asked
    rootless = False  # a run no prompt starts
    run_of: dict[str, str] = {}  # message: its run (its prompt, or first)
    last: dict[str, str] = {}
    below: dict[str, list[Message]] = {}  # run: the prompts under it
    waiting: dict[str, list[Message]] = {}  # message: children read before it

    def place(message: Message) -> None:
        nonlocal rootless
        parent = message.parent
        run = run_of.get(parent) if parent is not None else None
        if message.kind == PROMPT:
            if run is not None:
                below.setdefault(run, []).append(message)
            run = message.id
        elif run is not None:
            message.parent = last[run]
        else:
            run = message.id
            rootless = True
        run_of[message.id] = run
        last[run] = message.id

    def settle(message: Message) -> None:
        stack = [message]
        while stack:
            current = stack.pop()
            if current.id in run_of:
                continue  # waited on a message of its own cycle
            place(current)
            stack.extend(reversed(waiting.pop(current.id, ())))

    def settle_below(message: Message) -> None:
        for child in waiting.pop(message.id, ()):
            settle(child)

    for message in messages:
        parent = message.parent
        if parent is None or parent in run_of:
            # `place`, written out: this loop runs for every message read.
            run = run_of.get(parent) if parent is not None else None
            if message.kind == PROMPT:
                if run is not None:
                    below.setdefault(run, []).append(message)
                run = message.id
            elif run is not None:
                message.parent = last[run]
            else:
                run = message.id
                rootless = True
            run_of[message.id] = run
            last[run] = message.id
            if waiting and message.id in waiting:
                settle_below(message)
            continue
        if present is None:
            present = set(map(_ID, messages))
        if parent in present and parent != message.id:
            # Linked to a message written later: placed once that one is.
            waiting.setdefault(parent, []).append(message)
        else:
            settle(message)
    if waiting:
        for message in messages:
            if message.id not in run_of and message.id in waiting:
                message.parent = None
                settle(message)
    for run, prompts in below.items():
        for prompt in prompts:
            prompt.parent = last[run]
    if rootless:
        _keep_loose_runs(messages, run_of)


def _keep_loose_runs(messages: list[Message], run_of: dict[str, str]) -> None:
    """A run without prompt or answer that holds tool calls or results: its
    first message starts a node without a prompt."""
    loose: dict[str, bool] = {}  # run: holds a call or result
    for message in messages:
        run = run_of[message.id]
        if run == message.id and message.kind != PROMPT:
            loose[run] = False
        if run in loose:
            if message.kind == ANSWER:
                del loose[run]
            elif any(
                part["type"] in (TOOL_CALL, TOOL_RESULT) for part in message.parts or ()
            ):
                loose[run] = True
    if any(loose.values()):
        for message in messages:
            if loose.get(message.id):
                message.kind = PROMPT
                message.text = None
