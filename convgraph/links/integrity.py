"""Find the parent links that break the tree's rules, and drop them.

A stored parent link can be wrong in four ways: a node is its own parent, the
parent does not exist, the parent is in another conversation (the seed's
Option A forbids it), or following parents goes round a cycle. Each is reported
as a `Problem`; the link is dropped, so the node becomes a root and every tree
convgraph builds is a real forest. The message store's threads have links of
their own (`forked_from`), and a cycle of forks is reported the same way.

Every walk up a chain of links in convgraph, of nodes, messages or threads, is
a `ParentWalk`: iterative, each id visited once, so nothing here recurses or
can loop forever.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from convgraph.text import counted

SELF_PARENT = "self-parent"
MISSING_PARENT = "missing-parent"
CROSS_CONVERSATION = "cross-conversation"
CYCLE = "cycle"
FORK_CYCLE = "fork-cycle"
#: Rows that cannot be nodes, or not all of them (data llm never writes):
#: reported, and left out of every tree.
NO_ID = "no-id"
NO_THREAD = "no-thread"
DUPLICATE_ID = "duplicate-id"


class ParentWalk:
    """The ids from `start` up a chain of parent links: `start`, its parent,
    its grandparent, and so on.

    `parent_of` is a mapping or a callable giving an id's parent, None for a
    root. Iteration ends after a root, or just before an id would come a
    second time: then `repeat` is that id (the links go round a cycle, which
    begins there), else `repeat` is None. Parents are asked for lazily, one
    step at a time, so a caller that stops early asks no further.

    Examples
    --------
    >>> walk = ParentWalk("c", {"c": "b", "b": "a", "a": None})
    >>> list(walk), walk.repeat
    (['c', 'b', 'a'], None)
    >>> walk = ParentWalk("x", {"x": "y", "y": "z", "z": "y"})
    >>> list(walk), walk.repeat
    (['x', 'y', 'z'], 'y')
    """

    __slots__ = ("parent_of", "repeat", "start")

    def __init__(
        self,
        start: str | None,
        parent_of: Mapping[str, str | None] | Callable[[str], str | None],
    ):
        self.start = start
        # callable() rather than isinstance(Mapping): a walk is made per
        # message of a million-turn read, and the ABC check costs more than
        # most walks.
        self.parent_of = parent_of if callable(parent_of) else parent_of.get
        self.repeat: str | None = None

    def __iter__(self) -> Iterator[str]:
        self.repeat = None
        parent_of = self.parent_of
        seen: set[str] = set()
        node = self.start
        while node is not None:
            if node in seen:
                self.repeat = node
                return
            seen.add(node)
            yield node
            node = parent_of(node)

    def cycle(self, walked: list[str]) -> list[str]:
        """The ids of `walked` (this walk's ids, in order) that are on the
        cycle it ended on, in parent order; [] when it ended at a root."""
        if self.repeat is None:
            return []
        return walked[walked.index(self.repeat) :]


@dataclass(frozen=True)
class Problem:
    """One broken parent link.

    `node_id` is the node whose link was dropped (it is treated as a root);
    `parent_id` the parent it named; for a cycle, `cycle` lists the nodes on
    it in parent order, starting at `node_id`. A fork cycle is a cycle of
    message-store threads (`forked_from`): there `node_id`, `parent_id`,
    `conversation_id` and `cycle` are thread ids, and `node_id` is the thread
    read as the original thread of the tree.
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


def record_problem(kind: str, count: int, table: str, node_id: str = "") -> Problem:
    """A `Problem` for rows that are no node: `count` rows of `table` without
    an id (`NO_ID`) or without a thread (`NO_THREAD`), or `count` rows more
    with the id `node_id` (`DUPLICATE_ID`)."""
    rows = f"{counted(count, 'row')} of {table}"
    messages = {
        NO_ID: f"{rows} {'have' if count != 1 else 'has'} no id: left out",
        NO_THREAD: f"{rows} {'have' if count != 1 else 'has'} no thread_id: left out",
        DUPLICATE_ID: f"{node_id} is the id of {count + 1} rows: the first"
        " logged is read, the others left out",
    }
    return Problem(kind, node_id, None, None, messages[kind])


def break_cycles(
    parents: dict[str, str | None],
    order: Iterable[str],
    conversation_of: Mapping[str, str | None],
    kind: str = CYCLE,
) -> list[Problem]:
    """Drop one link of every cycle in `parents`, in place, and report it.

    `parents` maps each node to its parent (every parent is a key or None).
    The link dropped is that of the cycle's node that comes first in `order`
    (log order), so the earliest message of a cycle becomes its root. Each
    node is walked once: linear in the number of nodes. `kind` is the
    problems' kind: `CYCLE` for nodes, `FORK_CYCLE` for threads.
    """
    position = {node: index for index, node in enumerate(order)}
    finished: set[str] = set()

    def unfinished_parent(node: str) -> str | None:
        # A walk ends where an earlier walk went: that part is done.
        parent = parents.get(node)
        return None if parent in finished else parent

    links = "forks" if kind == FORK_CYCLE else "parent links"
    problems = []
    for start in position:
        if start in finished:
            continue
        walk = ParentWalk(start, unfinished_parent)
        walked = list(walk)
        cycle = walk.cycle(walked)
        if cycle:
            first = min(cycle, key=position.__getitem__)
            turn = cycle.index(first)
            cycle = cycle[turn:] + cycle[:turn]
            problems.append(
                Problem(
                    kind,
                    first,
                    parents[first],
                    conversation_of.get(first),
                    f"{first} is on a cycle of {len(cycle)} {links}: "
                    + " -> ".join(cycle + [first]),
                    tuple(cycle),
                )
            )
            parents[first] = None
        finished.update(walked)
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
