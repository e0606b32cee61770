"""Find the parent links that break the tree's rules, and drop them.

A stored parent link can be wrong in four ways: a node is its own parent, the
parent does not exist, the parent is in another conversation (the seed's
Option A forbids it), or following parents goes round a cycle. Each is reported
as a `Problem`; the link is dropped, so the node becomes a root and every tree
convgraph builds is a real forest. Nothing here recurses or can loop forever.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

SELF_PARENT = "self-parent"
MISSING_PARENT = "missing-parent"
CROSS_CONVERSATION = "cross-conversation"
CYCLE = "cycle"


@dataclass(frozen=True)
class Problem:
    """One broken parent link.

    `node_id` is the node whose link was dropped (it is treated as a root);
    `parent_id` the parent it named; for a cycle, `cycle` lists the nodes on
    it in parent order, starting at `node_id`.
    """

    kind: str
    node_id: str
    parent_id: str | None
    conversation_id: str | None
    message: str
    cycle: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        record = asdict(self)
        record["cycle"] = list(self.cycle)
        return record


def link_problem(
    kind: str,
    node_id: str,
    parent_id: str,
    conversation_id: str | None,
    detail: str = "",
) -> Problem:
    """A `Problem` for a self, missing or cross-conversation parent."""
    messages = {
        SELF_PARENT: f"{node_id} is its own parent",
        MISSING_PARENT: f"{node_id} has parent {parent_id}, which does not exist",
        CROSS_CONVERSATION: f"{node_id} has parent {parent_id}"
        f" in another conversation ({detail})",
    }
    return Problem(kind, node_id, parent_id, conversation_id, messages[kind])


def break_cycles(
    parents: dict[str, str | None],
    order: Iterable[str],
    conversation_of: Mapping[str, str | None],
) -> list[Problem]:
    """Drop one link of every cycle in `parents`, in place, and report it.

    `parents` maps each node to its parent (every parent is a key or None).
    The link dropped is that of the cycle's node that comes first in `order`
    (log order), so the earliest message of a cycle becomes its root. Each
    node is walked once: linear in the number of nodes.
    """
    position = {node: index for index, node in enumerate(order)}
    state: dict[str, int] = {}  # 1: on the current walk, 2: finished
    problems = []
    for start in position:
        walk = []
        node: str | None = start
        while node is not None and node not in state:
            state[node] = 1
            walk.append(node)
            node = parents.get(node)
        if node is not None and state[node] == 1:
            cycle = walk[walk.index(node) :]
            first = min(cycle, key=position.__getitem__)
            turn = cycle.index(first)
            cycle = cycle[turn:] + cycle[:turn]
            problems.append(
                Problem(
                    CYCLE,
                    first,
                    parents[first],
                    conversation_of.get(first),
                    f"{first} is on a cycle of {len(cycle)} parent links: "
                    + " -> ".join(cycle + [first]),
                    tuple(cycle),
                )
            )
            parents[first] = None
        for walked in walk:
            state[walked] = 2
    return problems


def check_links(
    records: list[dict[str, Any]],
    conversation_of_outsiders: Mapping[str, str],
) -> tuple[dict[str, str | None], list[Problem]]:
    """The valid parent of each record of one tree, and the problems found.

    `records` are one tree's rows in log order, with `id`, `parent_id` and
    `conversation_id`; `conversation_of_outsiders` says which conversation a
    parent outside the tree is in (a parent in neither is missing).
    """
    ids = {record["id"] for record in records}
    parents: dict[str, str | None] = {}
    problems = []
    conversation_of = {record["id"]: record["conversation_id"] for record in records}
    for record in records:
        node, parent = record["id"], record["parent_id"]
        if parent is None or parent in ids and parent != node:
            parents[node] = parent
            continue
        parents[node] = None
        if parent == node:
            kind, detail = SELF_PARENT, ""
        elif parent in conversation_of_outsiders:
            kind, detail = CROSS_CONVERSATION, conversation_of_outsiders[parent]
        else:
            kind, detail = MISSING_PARENT, ""
        problems.append(
            link_problem(kind, node, parent, record["conversation_id"], detail)
        )
    problems.extend(break_cycles(parents, parents, conversation_of))
    return parents, problems
