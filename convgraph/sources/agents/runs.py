"""Each message of an agent's chain in exactly one node, whatever its links
say: `one_node_each` reads the runs as lived and leaves each a chain.

`chat.nodes` makes a node of a prompt and the run below it, up to each end;
where a run forks, or goes on below a message a later prompt hangs under,
the messages above the fork are in the node of every end below them (a
regenerated answer shares its prompt on purpose). An agent's turn is lived
in the order its records were written, so a run is read as that chain: a
message that is no prompt goes under the run's message written last before
it, whatever it names (a parallel call's result names its call, a hook's
output the call it ran for), and a prompt under the run's last message (a
rewind or an edited prompt is a sibling of the prompt it replaces). A run
that no prompt starts and no answer ends, yet holds tool calls or results
(a resumed session going on from a copied call), is made a node of its own
with no prompt, so that its parts are kept.
"""

from __future__ import annotations

from operator import attrgetter

from convgraph.parts import TOOL_CALL, TOOL_RESULT
from convgraph.sources.chat.messages import ANSWER, PROMPT, Message

_ID = attrgetter("id")


def one_node_each(messages: list[Message]) -> None:
    """Relink `messages` (ids distinct, in the order written) in place so
    that every run is one chain with its prompts below its last message; a
    link that goes round a cycle is cut where the cycle was entered."""
    present = set(map(_ID, messages))
    run_of: dict[str, str] = {}  # message: its run (its prompt, or first)
    last: dict[str, str] = {}  # run: its message written last
    below: dict[str, list[Message]] = {}  # run: the prompts hung under it
    waiting: dict[str, list[Message]] = {}  # message: children read before it

    def place(message: Message) -> None:
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

    for message in messages:
        parent = message.parent
        if (
            parent is not None
            and parent not in run_of
            and parent in present
            and parent != message.id
        ):
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
    _keep_loose_runs(messages, run_of)


def _keep_loose_runs(messages: list[Message], run_of: dict[str, str]) -> None:
    """A run no prompt starts and no answer ends, holding tool calls or
    results: its first message made the node's start, without a prompt."""
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
