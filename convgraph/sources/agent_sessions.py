"""Coding agents' session files read as conversation trees.

An agent keeps its history as files of its own (JSON lines one session a
file, or JSON), never as one export. `open_agent_source` tells such a file
or folder by content (the first records of the first session file), and
`AgentSessions` reads it as a `Source`, like a chat export: the format
module (`claude_code`, `codex`, `gemini_cli`) finds the session files and
says which belong together (a session's own file and its subagents'
files), and turns one such group into `agent_files.SessionGroup`s of
`Message`s; the nodes come from `chat_nodes.conversation_records`, the chat
exports' rule (a node is a user turn and the run that answered it). One group is read at a time, so
memory holds one session's records besides the table being built. A
session that continues another (a resumed session holding the messages of
the one it continues, or linking to one of them) joins the tree it
continues: its copies are read once, its links into the earlier session go
to the node that holds the message they name, and the active path is the
branch the last session ended on. Reading never writes into the folders.
"""

from __future__ import annotations

from operator import attrgetter
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from convgraph.contract import CONTENT_ATTRIBUTES
from convgraph.errors import UnknownConversation, UnknownNode
from convgraph.links.integrity import Problem
from convgraph.parts import TOOL_CALL, TOOL_RESULT
from convgraph.sources import claude_code, codex, gemini_cli
from convgraph.sources.agent_files import (
    AGENT_ATTRIBUTES,
    AGENT_INTEGERS,
    SIDECHAIN,
    SessionGroup,
)
from convgraph.sources.chat_messages import Conversation, Message, text_to_iso
from convgraph.sources.chat_nodes import conversation_records
from convgraph.sources.source import (
    CONVERSATION,
    NODE,
    IdMatch,
    Source,
    TreeRecords,
    log_order,
)
from convgraph.sources.tables import no_garbage_collection

if TYPE_CHECKING:
    import pandas as pd

#: The agents, in the order they are tried.
FORMATS: tuple[ModuleType, ...] = (claude_code, codex, gemini_cli)


# -- telling the format ----------------------------------------------------------


def open_agent_source(path: Path) -> AgentSessions | None:
    """An agent's sessions at `path` (a session file, or a folder of them),
    or None where `path` holds none, so that the caller tries the others."""
    for module in FORMATS:
        files = module.session_files(path)
        if files:
            return AgentSessions(path, module, files)
    return None


# -- the source ---------------------------------------------------------------------


class AgentSessions(Source):
    """A coding agent's sessions (a file, a project folder, or all of them),
    read like llm's `logs.db`: a tree per session, with the sessions that
    continue it."""

    def __init__(self, path: Path, module: ModuleType, files: list[Path]):
        self.path = path
        self.conn = None
        self.legacy = None
        self.store = None
        self.record_problems = []
        self.calls = {}
        self.format: str = module.SOURCE
        self._module = module
        self._files = files
        #: The session groups' files, in the order their sessions began.
        self._groups: list[tuple[str, list[Path]]] | None = None
        # Each session's key (its id) -> the key of the files it was read from
        # (Codex keys its files by path, the sessions by the id they hold).
        self._file_keys: dict[str, str] = {}
        #: Each tree's groups, and each group's tree (after a whole read).
        self._trees: dict[str, list[str]] | None = None
        self._tree_of_node: dict[str, str] = {}
        self._found: TreeRecords | None = None

    def __repr__(self) -> str:
        return f"<AgentSessions {self.format} {self.path}>"

    def close(self) -> None:
        self._found = None

    @property
    def generations(self) -> list[str]:
        """The agent (`claude-code`, `codex`, `gemini-cli`), as a list like
        `LogDatabase.generations`."""
        return [self.format]

    def groups(self) -> list[tuple[str, list[Path]]]:
        """Every session's key and files, in the order the sessions began."""
        if self._groups is None:
            self._groups = self._module.session_groups(self._files)
        return self._groups

    # -- reading ---------------------------------------------------------

    def _read(
        self, groups: list[tuple[str, list[Path]]], text: bool = True
    ) -> tuple[list[dict[str, Any]], dict[str, str], dict[str, Any], list[Problem]]:
        """The records of these session groups, each group read alone; the
        tree of each group (a group that continues another joins its tree),
        the names, the problems."""
        # Every record's dicts and messages are made and dropped here, none
        # in a cycle: the collector walking them cost a fifteenth of a read.
        with no_garbage_collection():
            return self._read_groups(groups, text)

    def _read_groups(
        self,
        groups: list[tuple[str, list[Path]]],
        text: bool,
        table: dict[str, list[Any]] | None = None,
    ) -> tuple[list[dict[str, Any]], dict[str, str], dict[str, Any], list[Problem]]:
        """`_read`, the collector paused. Where `table` is given (a list for
        each column to fill), each group's records go into it as they are
        read, and none is returned: a year of sessions is held as the
        table's lists, not a dict a node."""
        joined = _Joiner()
        records: list[dict[str, Any]] = []
        names: dict[str, Any] = {}
        problems: list[Problem] = []
        currents: dict[str, str | None] = {}
        prompts: dict[str, str] = {}
        for key, files in groups:
            for group in self._module.read_group(key, files, text):
                self._file_keys[group.key] = key
                found, current = joined.add(group, self.format)
                if group.name is None:
                    # Unnamed (no summary, no title): its first prompt, as the
                    # agents' own session pickers show it.
                    first = min(
                        (r for r in found if r["prompt"] and r[SIDECHAIN] is None),
                        key=log_order,
                        default=None,
                    )
                    if first is not None:
                        prompts[group.key] = first["prompt"].splitlines()[0][:80]
                if table is not None:
                    for name, column in table.items():
                        column.extend([record[name] for record in found])
                    found = []
                elif not text:
                    for record in found:
                        for name in CONTENT_ATTRIBUTES:
                            record[name] = None
                records.extend(found)
                names.setdefault(group.key, group.name)
                problems.extend(group.problems)
                currents[group.key] = current
        tree_of = joined.trees()
        for record in records:
            record["tree_id"] = record["conversation_id"] = tree_of[record["tree_id"]]
        if table is not None:
            table["tree_id"] = [tree_of[key] for key in table["tree_id"]]
            table["conversation_id"] = table["tree_id"]
        # The active path of a tree is the branch its last session ended on.
        last: dict[str, str | None] = {}
        for key, current in currents.items():
            last[tree_of[key]] = current
        if len(set(tree_of.values())) < len(tree_of):
            if table is None:
                on_path = _active_path(
                    [r["id"] for r in records], [r["parent_id"] for r in records], last
                )
                for record in records:
                    record["active"] = record["id"] in on_path
            else:
                on_path = _active_path(table["id"], table["parent_id"], last)
                table["active"] = [node in on_path for node in table["id"]]
        tree_names: dict[str, Any] = {}
        for key, name in names.items():
            tree = tree_of[key]
            if tree_names.get(tree) is None:
                tree_names[tree] = name
        for key in names:
            tree = tree_of[key]
            if tree_names[tree] is None and key in prompts:
                tree_names[tree] = prompts[key]
        return records, tree_of, tree_names, problems

    def _index(self) -> dict[str, list[str]]:
        """Each tree's session groups (one pass over every file, once)."""
        if self._trees is None:
            records, tree_of, _, _ = self._read(self.groups(), text=False)
            self._trees = {}
            for key, tree in tree_of.items():
                self._trees.setdefault(tree, []).append(key)
            self._tree_of_node = {record["id"]: record["tree_id"] for record in records}
        return self._trees

    def id_matches(self, given: str, limit: int) -> list[IdMatch]:
        """The sessions (a tree, or a session that joined one) and nodes
        whose id begins with `given`, up to `limit` of each, from the index
        of one pass over the files, not a read of every tree."""
        trees = self._index()
        conversations = [
            IdMatch(CONVERSATION, key, tree)
            for tree, keys in trees.items()
            for key in dict.fromkeys([tree, *keys])
            if key.startswith(given)
        ][:limit]
        nodes = [
            IdMatch(NODE, node, tree)
            for node, tree in self._tree_of_node.items()
            if node.startswith(given)
        ][:limit]
        return conversations + nodes

    def tree_ids(self) -> list[str]:
        """Every session tree's id (its first session's), in the order the
        sessions began."""
        return list(self._index())

    def tree_id_of_conversation(self, conversation_id: str) -> str:
        """The tree holding the session `conversation_id`."""
        trees = self._index()
        if conversation_id in trees:
            return conversation_id
        for tree, keys in trees.items():
            if conversation_id in keys:
                return tree
        raise UnknownConversation(conversation_id)

    def tree_id_of_node(self, node_id: str) -> str:
        """The tree holding the node `node_id`."""
        self._index()
        if node_id not in self._tree_of_node:
            raise UnknownNode(node_id)
        return self._tree_of_node[node_id]

    def read_tree(self, tree_id: str) -> TreeRecords:
        """One tree's records, only its sessions' files read (none for an
        unknown id)."""
        if self._found is not None and self._found.tree_id == tree_id:
            return self._found
        keys = set(self._index().get(tree_id, ()))
        if not keys:
            return TreeRecords(tree_id, None, [])
        file_keys = {self._file_keys.get(key, key) for key in keys}
        groups = [group for group in self.groups() if group[0] in file_keys]
        records, _, names, problems = self._read(groups)
        self._found = TreeRecords(tree_id, names.get(tree_id), records, problems)
        return self._found

    def read_forest(self, text: bool = True) -> tuple[pd.DataFrame, dict[str, Any]]:
        """Every node as one table, read session by session: the columns and
        types of `ChatExport.read_forest`, with `project` and `git_branch`."""
        from convgraph.sources.chat_exports import FOREST_COLUMNS, _forest_frame

        # Each session's records become the table's columns as they are
        # read (`_read_groups`), the texts left out where not asked for; the
        # collector stays paused until the table is made: collecting over
        # the lists while it is made cost as much as making it.
        wanted = (*FOREST_COLUMNS, *AGENT_ATTRIBUTES)
        left_out = () if text else CONTENT_ATTRIBUTES
        columns: dict[str, list[Any]] = {
            name: [] for name in wanted if name not in left_out
        }
        with no_garbage_collection():
            _, tree_of, names, problems = self._read_groups(
                self.groups(), text, columns
            )
            count = len(columns["id"])
            columns = {
                name: columns[name] if name in columns else [None] * count
                for name in wanted
            }
            nodes = _forest_frame(columns)
            for name in AGENT_INTEGERS:
                nodes[name] = nodes[name].astype("Int64")
        self.record_problems = problems
        if self._trees is None:
            self._trees = {}
            for key, tree in tree_of.items():
                self._trees.setdefault(tree, []).append(key)
            self._tree_of_node = dict(
                zip(columns["id"], columns["tree_id"], strict=True)
            )
        return nodes, names


class _Joiner:
    """The records of session groups read one after another, each joined to
    the tree of an earlier one it continues.

    `seen` holds every message read so far with the node that holds it, and
    `group_of` each node's group: a message read again (a resumed session's
    copy) is left out, and a link to it goes to its node. A message costs
    one entry and no object of its own (its node's id is the record's), so
    that a year of sessions holds what its ids take.
    """

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}
        self.group_of: dict[str, str] = {}
        self.parent: dict[str, str] = {}

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
        self, group: SessionGroup, source: str
    ) -> tuple[list[dict[str, Any]], str | None]:
        """The records of one group, and the node its session ended on."""
        self.parent.setdefault(group.key, group.key)
        node_of: dict[str, str] = {}
        messages = self._new(group, group.messages)
        conversation = Conversation(group.key, group.name, messages, group.current)
        records = conversation_records(conversation, source, node_of)
        _utc_times(records)
        current = next((r["id"] for r in records if r["active"]), None)
        if records:
            current = _deepest_active(records) or current
        for side in group.sidechains:
            side_nodes: dict[str, str] = {}
            side_messages = self._new(group, side.messages)
            found = conversation_records(
                Conversation(group.key, None, side_messages), source, side_nodes
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
                _mark_sidechain(record, side.agent)
            records.extend(found)
            node_of.update(
                (message, node)
                for message, node in side_nodes.items()
                if message not in node_of
            )
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

    def _new(self, group: SessionGroup, messages: list[Message]) -> list[Message]:
        """The messages not read before; a group holding one read before
        continues that message's tree."""
        if self.seen.keys().isdisjoint(map(_ID, messages)):
            # Most sessions continue none: one test in C, not one a message.
            return messages
        kept = []
        for message in messages:
            if message.id in self.seen:
                self.join(group.key, self.group_of[self.seen[message.id]])
            else:
                kept.append(message)
        return kept


_ID = attrgetter("id")


def _node_sums(node_of: dict[str, str], counts: dict[str, int]) -> dict[str, int]:
    """Per-message counts added up per node (`node_of`: each message's)."""
    sums: dict[str, int] = {}
    for message, count in counts.items():
        node = node_of.get(message)
        if node is not None:
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


def _mark_sidechain(record: dict[str, Any], agent: str) -> None:
    """Mark a subagent's node: every part carries the agent (`SIDECHAIN`)."""
    from convgraph.parts import node_parts

    parts = node_parts(record)
    for part in parts:
        part[SIDECHAIN] = agent
    record["parts"] = parts
    record[SIDECHAIN] = agent


def _active_path(
    ids: list[str], parents: list[str | None], ends: dict[str, str | None]
) -> set[str]:
    """The nodes `active` in joined trees: the path from each tree's last
    end up (`ids` and their `parents`, every tree's)."""
    parent = dict(zip(ids, parents, strict=True))
    on_path: set[str] = set()
    for end in ends.values():
        node = end
        while node is not None and node not in on_path and node in parent:
            on_path.add(node)
            node = parent[node]
    return on_path
