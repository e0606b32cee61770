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
branch the last session ended on (`agent_join` reads and joins the
groups; a large folder's whole table is read by worker processes,
`agent_workers`). Reading never writes into the folders.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from convgraph.contract import CONTENT_ATTRIBUTES
from convgraph.errors import UnknownConversation, UnknownNode
from convgraph.links.integrity import Problem
from convgraph.sources.agents import claude_code, codex, gemini_cli
from convgraph.sources.agents.files import AGENT_ATTRIBUTES, AGENT_INTEGERS
from convgraph.sources.agents.join import SessionsRead, read_sessions
from convgraph.sources.agents.workers import PHASE, read_in_workers
from convgraph.sources.source import (
    CONVERSATION,
    NODE,
    ForestRead,
    IdMatch,
    ProgressCallback,
    Source,
    TreeRecords,
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
        read: SessionsRead | None = None,
    ) -> tuple[list[dict[str, Any]], dict[str, str], dict[str, Any], list[Problem]]:
        """`_read`, the collector paused. Where `table` is given (a list for
        each column to fill), each group's records go into it as they are
        read, and none is returned: a year of sessions is held as the
        table's lists, not a dict a node. Where `read` is given (the groups
        read already, by worker processes), its trees are named alone."""
        if read is None:
            read = read_sessions(self._module, groups, text, table)
        table = read.table
        records = read.records
        names: dict[str, Any] = {}
        problems: list[Problem] = []
        currents: dict[str, str | None] = {}
        prompts: dict[str, str] = {}
        for (key, _), done in zip(groups, read.groups, strict=True):
            for session, name, prompt, current in done.sessions:
                self._file_keys[session] = key
                if prompt is not None:
                    prompts[session] = prompt
                names.setdefault(session, name)
                currents[session] = current
            problems.extend(done.problems)
        tree_of = read.tree_of
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

    def read_all(
        self, texts: bool | Collection[str], progress: ProgressCallback
    ) -> ForestRead:
        """Every session as one table (`read_forest`), with what the read
        left out and the calls inside runs."""
        nodes, names = self.read_forest(text=bool(texts), progress=progress)
        return ForestRead(nodes, names, list(self.record_problems), dict(self.calls))

    def read_forest(
        self,
        text: bool = True,
        progress: Callable[[str, int, int | None], None] | None = None,
    ) -> tuple[pd.DataFrame, dict[str, Any]]:
        """Every node as one table, read session by session: the columns and
        types of `ChatExport.read_forest`, with `project` and `git_branch`.
        A large folder is read by worker processes where that gives the
        same table (`agent_workers.read_in_workers`); `progress` is told
        the files read."""
        from convgraph.sources.chat.exports import FOREST_COLUMNS, _forest_frame

        # Each session's records become the table's columns as they are
        # read (`_read_groups`), the texts left out where not asked for; the
        # collector stays paused until the table is made: collecting over
        # the lists while it is made cost as much as making it.
        wanted = (*FOREST_COLUMNS, *AGENT_ATTRIBUTES)
        left_out = () if text else CONTENT_ATTRIBUTES
        columns: dict[str, list[Any]] = {
            name: [] for name in wanted if name not in left_out
        }
        groups = self.groups()
        with no_garbage_collection():
            read = read_in_workers(self._module, groups, text, list(columns), progress)
            if read is None:
                total = sum(len(files) for _, files in groups)
                done = _Count(PHASE, total, progress) if progress else None
                read = read_sessions(self._module, groups, text, columns, done=done)
            columns = read.table or columns
            _, tree_of, names, problems = self._read_groups(groups, text, read=read)
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


class _Count:
    """A progress callback told the files read, a group at a time."""

    def __init__(
        self, phase: str, total: int, progress: Callable[[str, int, int | None], None]
    ) -> None:
        self.phase, self.total, self.progress, self.files = phase, total, progress, 0
        progress(phase, 0, total)

    def __call__(self, files: int) -> None:
        self.files += files
        self.progress(self.phase, self.files, self.total)


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
