"""What one conversation of a chat export becomes in llm's message store
before anything is written: its threads and turns, with ids made from the
export's (`stable_ulid`), so a second import finds them."""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from convgraph.links.integrity import check_links
from convgraph.sources import log_order
from convgraph.sources.merging import stable_ulid
from convgraph.times import utc_iso

__all__ = [
    "ConversationPlan",
    "PlannedThread",
    "PlannedTurn",
    "llm_datetime",
    "plan_conversation",
    "stable_ulid",
]


def llm_datetime(moment: str | None) -> str | None:
    """An ISO 8601 time as llm writes `turns.datetime_utc`; non-times as they are."""
    return (utc_iso(moment) or moment) if moment else None


def breadth_first(roots: list[str], children: dict[str, list[str]]) -> Iterator[str]:
    """The nodes below `roots`, parents before children (iterative)."""
    queue = deque(roots)
    while queue:
        node = queue.popleft()
        yield node
        queue.extend(children.get(node, ()))


@dataclass
class PlannedTurn:
    """One node of the export, as the turn it becomes."""

    record: dict[str, Any]
    turn_id: str
    parent: str | None
    #: The time its ids are made from (its own, else its parent's).
    moment: str | None = None


@dataclass
class PlannedThread:
    """One branch: a thread and the turns written into it, top down."""

    thread_id: str
    forked_from: str | None
    #: The node the fork starts from (None: first thread, or another root's).
    fork_node: str | None
    turns: list[PlannedTurn] = field(default_factory=list)


@dataclass
class ConversationPlan:
    """What one conversation of an export becomes in llm's database."""

    conversation_id: str
    name: str | None
    source: str
    threads: list[PlannedThread]

    @property
    def thread_id(self) -> str:
        """The conversation's first thread: the active branch, `--cid` of it."""
        return self.threads[0].thread_id

    @property
    def turn_ids(self) -> list[str]:
        return [turn.turn_id for thread in self.threads for turn in thread.turns]

    @property
    def node_count(self) -> int:
        return sum(len(thread.turns) for thread in self.threads)


def plan_conversation(
    conversation_id: str, name: str | None, records: list[dict[str, Any]], source: str
) -> ConversationPlan:
    """Which threads and turns one conversation's `records` (as a `ChatExport` reads
    them) become. Broken links are dropped as every reader drops them. Iterative."""
    records = sorted(records, key=log_order)
    parents, _ = check_links(records, {})
    by_id = {record["id"]: record for record in records}
    children: dict[str, list[str]] = defaultdict(list)
    roots: list[str] = []
    for record in records:
        parent = parents[record["id"]]
        if parent is None:
            roots.append(record["id"])
        else:
            children[parent].append(record["id"])

    # Times for the ids: a node without one takes its parent's.
    times: dict[str, str | None] = {}
    for node in breadth_first(roots, children):
        parent = parents[node]
        times[node] = by_id[node]["datetime_utc"] or (
            times[parent] if parent is not None else None
        )

    active = [record["id"] for record in records if record.get("active")]
    active_set = set(active)
    active_leaf = next(
        (node for node in active if not active_set.intersection(children[node])), None
    )
    leaves = [record["id"] for record in records if not children[record["id"]]]
    if active_leaf is None or children[active_leaf]:
        # No active branch marked: the most recently logged leaf, as llm
        # would take the most recent turn.
        active_leaf = leaves[-1]
    ordered_leaves = [active_leaf, *(leaf for leaf in leaves if leaf != active_leaf)]

    thread_of: dict[str, str] = {}
    threads: list[PlannedThread] = []
    main_id = stable_ulid(times[roots[0]] if roots else None, source, conversation_id)
    for leaf in ordered_leaves:
        branch: list[str] = []
        # Up from the leaf to the first node a thread already holds (the
        # fork point), or past the root (None).
        above: str | None = leaf
        while above is not None and above not in thread_of:
            branch.append(above)
            above = parents[above]
        if not branch:
            continue
        branch.reverse()
        if not threads:
            thread_id, forked_from = main_id, None
        else:
            thread_id = stable_ulid(
                times[branch[0]], source, conversation_id, branch[0]
            )
            forked_from = thread_of[above] if above is not None else main_id
        thread = PlannedThread(thread_id, forked_from, above)
        for node_id in branch:
            thread_of[node_id] = thread_id
            record = by_id[node_id]
            thread.turns.append(
                PlannedTurn(
                    record,
                    stable_ulid(
                        times[node_id], source, conversation_id, node_id, "turn"
                    ),
                    parents[node_id],
                    times[node_id],
                )
            )
        threads.append(thread)
    return ConversationPlan(conversation_id, name, source, threads)
