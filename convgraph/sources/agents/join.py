"""Session groups read one after another, each joined to the tree of an earlier one it
continues: `read_sessions` (the records, or the table's columns, with what names the
trees) and its `_Joiner`. A session that continues another (a resumed session holding
the messages of the one it continues, or linking to one of them) joins the tree it
continues: its copies are read once, its links into the earlier session go to the node
that holds the message they name. `sessions` names the trees and finds their active
paths."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from types import ModuleType
from typing import Any

from convgraph.contract import CONTENT_ATTRIBUTES, SIDECHAIN
from convgraph.errors import DatabaseError
from convgraph.links.integrity import Problem
from convgraph.parts import TOOL_CALL, TOOL_RESULT
from convgraph.sources.agents.files import SessionGroup
from convgraph.sources.agents.runs import one_node_each
from convgraph.sources.chat.messages import PROMPT, Conversation, Message, text_to_iso
from convgraph.sources.chat.nodes import conversation_records
from convgraph.sources.source import log_order

#: A session group: its key, its files (the session's own first), and the
#: agent's module that reads them.
Group = tuple[str, list[Path], ModuleType]


@dataclass
class GroupRead:
    """What one session group's files gave besides its rows: each session's
    key, name, first prompt (where it has no name), the node it ended on
    and its other ids; the rows it added; its problems."""

    sessions: list[tuple[str, str | None, str | None, str | None, list[str]]] = field(
        default_factory=list
    )
    rows: int = 0
    problems: list[Problem] = field(default_factory=list)


@dataclass
class SessionsRead:
    """Session groups read in order, their trees joined but not yet named: the records
    (or `table`'s columns), a `GroupRead` per group, each session's tree, and the
    groups' files that could not be read (a folder read goes on without them)."""

    records: list[dict[str, Any]]
    table: dict[str, list[Any]] | None
    groups: list[GroupRead]
    tree_of: dict[str, str]
    unread: list[tuple[Path, str]] = field(default_factory=list)


def read_sessions(
    groups: list[Group],
    text: bool,
    table: dict[str, list[Any]] | None = None,
    done: Callable[[int], None] | None = None,
    go_on: bool = False,
) -> SessionsRead:
    """The records of these session groups in order, each group read alone
    and joined to the tree of an earlier one it continues (`_Joiner`);
    into `table`'s lists where given. `done` is told each group's file
    count once it is read. A group that cannot be read raises, or with
    `go_on` (a folder's) is left out and named in `unread`: `DatabaseError`."""
    joined = _Joiner()
    read = SessionsRead([], table, [], {})
    for key, files, module in groups:
        group_read = GroupRead()
        try:
            # Read whole before any row is kept: a file that fails half
            # way leaves nothing of its group behind.
            sessions = list(module.read_group(key, files, text))
        except DatabaseError as error:
            if not go_on:
                raise
            read.unread.append((files[0], str(error)))
            sessions = []
        for group in sessions:
            found, current = joined.add(
                group, module.SOURCE, getattr(module, "GLOBAL_IDS", False)
            )
            prompt = None
            if group.name is None:
                # Unnamed (no summary, no title): its first prompt, as the
                # agents' own session pickers show it.
                first = min(
                    (r for r in found if r["prompt"] and r[SIDECHAIN] is None),
                    key=log_order,
                    default=None,
                )
                if first is not None:
                    prompt = first["prompt"].splitlines()[0][:80]
            group_read.rows += len(found)
            if table is not None:
                for name, column in table.items():
                    column.extend([record[name] for record in found])
                found = []
            elif not text:
                for record in found:
                    for name in CONTENT_ATTRIBUTES:
                        record[name] = None
            read.records.extend(found)
            group_read.sessions.append(
                (group.key, group.name, prompt, current, group.aliases)
            )
            group_read.problems.extend(group.problems)
        read.groups.append(group_read)
        if done is not None:
            done(len(files))
    read.tree_of = joined.trees()
    return read


class _Joiner:
    """The records of session groups read one after another, each joined to
    the tree of an earlier one it continues.

    `seen` holds every message read so far with the node that holds it, and
    `group_of` each node's group: a message read again (a resumed session's
    copy) is left out, and a link to it goes to its node. A message costs
    one entry and no object of its own (its node's id is the record's), so
    that a year of sessions holds what its ids take."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}
        self.group_of: dict[str, str] = {}
        self.parent: dict[str, str] = {}
        #: Each message's time and prompt, hashed: what a copy shares (an
        #: int, not the strings: a year of sessions holds one a message).
        self.marks: dict[str, int] = {}

    def find(self, key: str) -> str:
        """The tree of group `key` (its first group's key)."""
        while self.parent[key] != key:
            key = self.parent[key]
        return key

    def join(self, key: str, earlier: str) -> None:
        """Group `key` continues the tree of group `earlier`."""
        mine, theirs = self.find(key), self.find(earlier)
        if mine != theirs:
            # The tree keeps the id of the session that began first.
            self.parent[mine] = theirs

    def trees(self) -> dict[str, str]:
        """Every group's tree."""
        return {key: self.find(key) for key in self.parent}

    def add(
        self, group: SessionGroup, source: str, global_ids: bool = False
    ) -> tuple[list[dict[str, Any]], str | None]:
        """The records of one group, and the node its session ended on. With
        `global_ids` (the agent's ids are unique across sessions) a message read before
        is a copy wherever it came from; else only in a session of the same id."""
        self.parent.setdefault(group.key, group.key)
        for session in group.continues:
            if session in self.parent:
                self.join(group.key, session)
        node_of: dict[str, str] = {}
        self._sort_copies(group, None if global_ids else group.key)
        messages = group.messages
        one_node_each(messages)
        conversation = Conversation(group.key, group.name, messages, group.current)
        records = conversation_records(conversation, source, node_of)
        _utc_times(records)
        current = next((r["id"] for r in records if r["active"]), None)
        if records:
            current = _deepest_active(records) or current
        for side in group.sidechains:
            side_nodes: dict[str, str] = {}
            one_node_each(side.messages)
            found = conversation_records(
                Conversation(group.key, None, side.messages), source, side_nodes
            )
            _utc_times(found)
            anchor = node_of.get(side.anchor) if side.anchor is not None else None
            if anchor is None and side.anchor in self.seen:
                anchor = self.seen[side.anchor]
            own = {record["id"] for record in found}
            for record in found:
                record["active"] = False
                if anchor is not None and record["parent_id"] not in own:
                    record["parent_id"] = anchor
                _mark_sidechain(record, side.agent, side.about)
            records.extend(found)
            for message, node in side_nodes.items():
                node_of.setdefault(message, node)
        own = {record["id"] for record in records}
        cache_read = _node_sums(node_of, group.cache_read)
        cache_write = _node_sums(node_of, group.cache_write)
        projects, branches, seen = group.project.get, group.git_branch.get, self.seen
        for record in records:
            node = record["id"]
            record["project"] = projects(node)
            record["git_branch"] = branches(node)
            record.setdefault(SIDECHAIN, None)
            # The failed results and the calls per tool, in one pass over
            # the node's parts (most of a session's parts are tool calls).
            errors = 0
            uses: dict[str, int] = {}
            for part in record["parts"] or ():
                kind = part["type"]
                if kind == TOOL_CALL:
                    name = part["name"] or "?"
                    uses[name] = uses.get(name, 0) + 1
                elif kind == TOOL_RESULT and part.get("error") is not None:
                    errors += 1
            record["tool_errors"] = errors
            record["tool_uses"] = uses or None
            record["cache_read_tokens"] = cache_read.get(node)
            record["cache_write_tokens"] = cache_write.get(node)
            parent = record["parent_id"]
            if parent is not None and parent not in own and parent in seen:
                node = seen[parent]
                record["parent_id"] = node
                self.join(group.key, self.group_of[node])
        if seen.keys().isdisjoint(node_of):
            # The common case (no message read twice): one update in C.
            seen.update(node_of)
        else:
            for message, node in node_of.items():
                seen.setdefault(message, node)
        for node in own:
            self.group_of.setdefault(node, group.key)
        return records, current

    def _sort_copies(self, group: SessionGroup, lineage: str | None) -> None:
        """Leave out the messages of `group` read before (a resumed session's
        copies: `_copied`), joining their tree; give a message
        whose id another message holds (another session's, or another chain
        of this one's) an id of its own: `SESSION:ID` (`+2`, ... on)."""
        chains = [group.messages, *(side.messages for side in group.sidechains)]
        ids = [list(map(_ID, chain)) for chain in chains]
        clash = any(not self.seen.keys().isdisjoint(found) for found in ids) or (
            sum(map(len, ids)) != len(set().union(*ids))
        )
        if clash:
            renamed: dict[int, dict[str, str]] = {}
            taken: set[str] = set()
            for number, chain in enumerate(chains):
                kept = []
                names = renamed.setdefault(number, {})
                here: set[str] = set()
                for message in chain:
                    node = self.seen.get(message.id)
                    if node is not None and (
                        message.id in group.copies
                        or self._copied(message, node, lineage)
                    ):
                        self.join(group.key, self.group_of[node])
                        continue
                    if node is not None or message.id in taken:
                        new = self._free(f"{group.key}:{message.id}", taken)
                        if message.id not in here:
                            # Links in its chain name it, not the other.
                            names.setdefault(message.id, new)
                            _move(group, message.id, new)
                        here.add(message.id)
                        message.id = new
                    here.add(message.id)
                    taken.add(message.id)
                    kept.append(message)
                chain[:] = kept
            for number, chain in enumerate(chains):
                names = renamed[number]
                if names:
                    for message in chain:
                        if message.parent in names:
                            message.parent = names[message.parent]
                    if number == 0 and group.current in names:
                        group.current = names[group.current]
            # An anchor names a message of the main chain.
            for side in group.sidechains:
                side.anchor = renamed[0].get(side.anchor or "", side.anchor)
        for chain in chains:
            self.marks.update({message.id: _mark(message) for message in chain})

    def _copied(self, message: Message, node: str, lineage: str | None) -> bool:
        """Whether `message` copies the one read before under its id: the
        same time and prompt (in a read with or without the texts), and the
        same session where ids are only a session's."""
        if lineage is not None and self.group_of.get(node) != lineage:
            return False
        return self.marks.get(message.id) == _mark(message)

    def _free(self, wanted: str, taken: set[str]) -> str:
        """`wanted`, or it with `+2` (`+3`, ...) where that is held."""
        found, number = wanted, 1
        while found in self.seen or found in taken:
            number += 1
            found = f"{wanted}+{number}"
        return found


def _move(group: SessionGroup, old: str, new: str) -> None:
    """A message's figures kept by id, under its new id."""
    for places in (group.project, group.git_branch):
        if old in places:
            places[new] = places.pop(old)
    for counts in (group.cache_read, group.cache_write):
        if old in counts:
            counts[new] = counts.pop(old)


_ID = attrgetter("id")


def _mark(message: Message) -> int:
    return hash((message.time, message.text if message.kind == PROMPT else None))


def _node_sums(node_of: dict[str, str], counts: dict[str, int]) -> dict[str, int]:
    """Per-message counts added up per node (`node_of`: each message's)."""
    sums: dict[str, int] = {}
    for message, count in counts.items():
        if (node := node_of.get(message)) is not None:
            sums[node] = sums.get(node, 0) + count
    return sums


def _utc_times(records: list[dict[str, Any]]) -> None:
    """The nodes' times, as the sessions store them, in UTC (`text_to_iso`):
    made for the nodes alone, not for every message."""
    for record in records:
        record["datetime_utc"] = text_to_iso(record["datetime_utc"])


def _deepest_active(records: list[dict[str, Any]]) -> str | None:
    """The active node no active node hangs under: the session's end."""
    active = {r["id"] for r in records if r["active"]}
    parents = {r["parent_id"] for r in records if r["active"]}
    ends = [node for node in active if node not in parents]
    return ends[0] if ends else None


def _mark_sidechain(record: dict[str, Any], agent: str, about: dict[str, str]) -> None:
    """Mark a subagent's node: every part carries the agent (`SIDECHAIN`)
    and what the agent says of it."""
    from convgraph.parts import node_parts

    parts = node_parts(record)
    for part in parts:
        part[SIDECHAIN] = agent
        part.update(about)
    record["parts"] = parts
    record[SIDECHAIN] = agent
