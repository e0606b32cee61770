"""Coding agents' session files read as conversation trees: `detect` opens a path
holding them, each file told by what it holds (`tell`), never by its name;
`AgentSessions` reads them as a `Source` (each agent's module groups its files,
`join` makes the nodes and joins a session to the tree it continues). A file, line
or record left out is named on stderr and reported as a problem."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from convgraph.contract import CONTENT_ATTRIBUTES
from convgraph.errors import DatabaseError, UnknownConversation, UnknownNode
from convgraph.links.integrity import Problem
from convgraph.sources.agents import claude_code, codex, copilot, gemini_cli
from convgraph.sources.agents.files import (
    AGENT_ATTRIBUTES,
    AGENT_INTEGERS,
    BAD_LINE,
    FIRST_CHUNK,
    UNREAD_FILE,
    file_problem,
    json_lines,
)
from convgraph.sources.agents.join import Group, SessionsRead, read_sessions
from convgraph.sources.source import CONVERSATION, NODE, IdMatch, Source, TreeRecords
from convgraph.text import terminal_text

if TYPE_CHECKING:
    import pandas as pd

    from convgraph.sources.source import ForestRead, ProgressCallback

#: The agents, in the order their trees are listed.
FORMATS: tuple[ModuleType, ...] = (claude_code, codex, gemini_cli, copilot)

#: What the progress callback is told as the files are read.
PHASE = "reading sessions"

#: Where a folder read names the files it left out (stderr, where nobody
#: has set up logging).
LOG = logging.getLogger("convgraph.sources.agents")

#: Why a file of a folder is left out that holds no agent's session.
NO_SESSION = "no session of Claude Code, Codex, Gemini CLI or Copilot CLI"

#: Records read past the one that told a file's agent, at most, for what
#: the agent's `session_groups` asks of its first records (a session id, a
#: time).
MORE_RECORDS = 8


# -- telling the files ---------------------------------------------------------


def detect(path: Path) -> AgentSessions | None:
    """The agents' sessions at `path` (a session file, a folder of them no deeper than
    `files.MAX_DEPTH`, or a home folder holding the agents' stores), open, or None where
    it holds none. Raises `DatabaseError` (a file given alone cannot be read)."""
    from convgraph.sources.chat.json_files import path_kind

    kind = path_kind(path)
    if kind == "folder":
        return _folder(path)
    if kind != "json":
        return None
    if (told := tell(path)) is None:
        return None
    module, records = told
    files = [path, *module.companions(path)]
    known = {path: records}
    for companion in files[1:]:
        companion_told = tell(companion)
        if companion_told is not None and companion_told[0] is module:
            known[companion] = companion_told[1]
    kept = [file for file in files if file in known]
    return AgentSessions(path, {module: kept}, known, [], alone=True)


def _folder(path: Path) -> AgentSessions | None:
    """The sessions of a folder: of the agents' stores it holds (a home
    folder), else of every file under it that is a session."""
    stores: list[tuple[ModuleType, Path]] = []
    for module in FORMATS:
        top, below = module.STORE
        for store in (path / top / below, path / below if path.name == top else None):
            if store is not None and store.is_dir():
                stores.append((module, store))
                break
    candidates: dict[Path, ModuleType | None] = {}
    if stores:
        for module, store in stores:
            candidates.update((file, module) for file in module.store_files(store))
    else:
        for module in FORMATS:
            candidates.update(
                (file, None)
                for file in module.store_files(path)
                if file not in candidates
            )
    files: dict[ModuleType, list[Path]] = {}
    known: dict[Path, list[dict[str, Any]]] = {}
    unread: list[tuple[Path, str]] = []
    for file in sorted(candidates):
        try:
            told = tell(file)
        except DatabaseError as error:
            unread.append((file, str(error)))
            continue
        wanted = candidates[file]
        if told is None or (wanted is not None and told[0] is not wanted):
            unread.append((file, NO_SESSION))
            continue
        files.setdefault(told[0], []).append(file)
        known[file] = told[1]
    return AgentSessions(path, files, known, unread) if files else None


def tell(path: Path) -> tuple[ModuleType, list[dict[str, Any]]] | None:
    """The agent whose session `path` is, with the records read to tell it (up to
    the first that only one agent writes), or None. Raises `DatabaseError`."""
    try:
        with open(path, "rb") as stream:
            head = stream.read(64).removeprefix(b"\xef\xbb\xbf").lstrip()
    except OSError as error:
        raise DatabaseError(f"cannot read {path}: {error.strerror}") from None
    if head[:1] == b"[" or (path.suffix == ".json" and head[:1] == b"{"):
        return _tell_json(path)
    if head[:1] != b"{":
        return None
    records: list[dict[str, Any]] = []
    module: ModuleType | None = None
    after = 0
    # Small reads: most files tell their agent in their first records.
    for record in json_lines(path, chunk=FIRST_CHUNK):
        # What the agents' `session_groups` ask of the first records, alone:
        # a folder's first records are held for every file until it is read.
        records.append({key: record[key] for key in TOLD if key in record})
        if module is None:
            module = _agent_of(record)
            if module is None and len(records) > MORE_RECORDS:
                # Only the records just before the one that tells are kept:
                # a long file of snapshots holds no more than a few.
                del records[0]
        else:
            after += 1
        if module is not None and (after >= MORE_RECORDS or _enough(records)):
            break
    return (module, records) if module is not None else None


#: The fields of a file's first records that say which session it holds,
#: when it began, and whether it is a subagent's.
TOLD = ("type", "sessionId", "timestamp", "isSidechain", "projectHash", "kind")


def _enough(records: list[dict[str, Any]]) -> bool:
    """Whether the records read tell a session and when it began."""
    return any("sessionId" in record for record in records) and any(
        "timestamp" in record for record in records
    )


def _agent_of(record: dict[str, Any]) -> ModuleType | None:
    """The agent only whose sessions hold `record`, or None."""
    # Codex first: its envelopes are the most distinctive.
    for module in (codex, copilot, gemini_cli, claude_code):
        if module.is_record(record):
            return module
    return None


def _tell_json(path: Path) -> tuple[ModuleType, list[dict[str, Any]]] | None:
    """A JSON file told by its first value: a Gemini CLI chat, or none."""
    from convgraph.sources.chat.json_files import file_on_disk, file_values

    try:
        value = next(iter(file_values(file_on_disk(path))), None)
    except DatabaseError:
        # A session being written, cut short: told by what it begins with.
        with open(path, "rb") as stream:
            head = stream.read(4096)
        if b'"sessionId"' in head and b'"messages"' in head:
            return gemini_cli, [{}]
        return None
    if gemini_cli.is_chat_value(value):
        told = value if isinstance(value, dict) else {}
        return gemini_cli, [{key: told[key] for key in TOLD if key in told}]
    return None


# -- the source ---------------------------------------------------------------------


class AgentSessions(Source):
    """Coding agents' sessions (a file, a project folder, an agent's store,
    or a home folder's), read like llm's `logs.db`: a tree per session,
    with the sessions that continue it."""

    def __init__(
        self,
        path: Path,
        files: dict[ModuleType, list[Path]],
        told: dict[Path, list[dict[str, Any]]],
        unread: list[tuple[Path, str]],
        alone: bool = False,
    ):
        self.path = path
        self.conn = None
        self.legacy = None
        self.store = None
        self.record_problems: list[Problem] = []
        self.calls: dict[str, str] = {}
        self._files = files
        self._told = told
        self._alone = alone
        #: The files left out, and why (named on stderr once, here).
        self.unread = unread
        self._say_unread()
        #: The session groups, in the order their sessions began.
        self._groups: list[Group] | None = None
        # Each session's key (its id, or an alias) -> its group's key.
        self._file_keys: dict[str, str] = {}
        #: Each tree's groups, and each group's tree (after a whole read).
        self._trees: dict[str, list[str]] | None = None
        self._tree_of_node: dict[str, str] = {}
        self._found: TreeRecords | None = None
        self._said: set[str] = set()

    def __repr__(self) -> str:
        return f"<AgentSessions {', '.join(self.generations)} {self.path}>"

    def close(self) -> None:
        self._found = None

    @property
    def format(self) -> str:
        """The agent (`claude-code`, `codex`, `gemini-cli`); the first of
        them where a home folder holds several."""
        return self.generations[0] if self.generations else ""

    @property
    def generations(self) -> list[str]:
        """The agents whose sessions are read, as a list like
        `LogDatabase.generations`."""
        return [module.SOURCE for module in FORMATS if self._files.get(module)]

    @property
    def files_read(self) -> int:
        """How many session files are read (the ones left out: `unread`)."""
        return sum(len(files) for files in self._files.values())

    def _say_unread(self) -> None:
        """Name on stderr each file of the folder left out, and why."""
        if self.unread:
            read, path = self.files_read, terminal_text(str(self.path))
            LOG.warning(
                "%s: %d of %d session files read; not read:",
                path,
                read,
                read + len(self.unread),
            )
        for file, why in self.unread:
            LOG.warning("  %s: %s", terminal_text(str(file)), terminal_text(why))

    def _unread_problems(self) -> list[Problem]:
        return [
            file_problem(UNREAD_FILE, str(file), f"{file}: not read: {why}")
            for file, why in self.unread
        ]

    def groups(self) -> list[Group]:
        """Every session's key, files and agent, each agent's in the order
        its sessions began."""
        if self._groups is None:
            self._groups = [
                (key, files, module)
                for module in FORMATS
                if self._files.get(module)
                for key, files in module.session_groups(self._files[module], self._told)
            ]
        return self._groups

    # -- reading ---------------------------------------------------------

    def _read(
        self,
        groups: list[Group],
        text: bool,
        table: dict[str, list[Any]] | None = None,
        done: Callable[[int], None] | None = None,
    ) -> tuple[list[dict[str, Any]], dict[str, str], dict[str, Any], list[Problem]]:
        """The records of these session groups, each group read alone (into `table`'s
        lists where given, a list for each column to fill); the tree of each group (a
        group that continues another joins its tree), the names, the problems."""
        read = read_sessions(groups, text, table, done, not self._alone)
        self._unread_groups(read)
        table, records, tree_of = read.table, read.records, read.tree_of
        names: dict[str, Any] = {}
        problems: list[Problem] = []
        currents: dict[str, str | None] = {}
        prompts: dict[str, str] = {}
        for (key, _, _), done_group in zip(groups, read.groups, strict=True):
            for session, name, prompt, current, aliases in done_group.sessions:
                self._file_keys[session] = key
                if prompt is not None:
                    prompts[session] = prompt
                names.setdefault(session, name)
                currents[session] = current
                for alias in aliases:
                    self._file_keys.setdefault(alias, key)
                    tree_of.setdefault(alias, tree_of[session])
            problems.extend(done_group.problems)
        self._say_left_out(problems)
        for record in records:
            record["tree_id"] = record["conversation_id"] = tree_of[record["tree_id"]]
        if table is not None:
            table["tree_id"] = [tree_of[key] for key in table["tree_id"]]
            table["conversation_id"] = table["tree_id"]
        # The active path of a tree is the branch its last session ended on.
        last = {tree_of[key]: current for key, current in currents.items()}
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
            if tree_names.get(tree_of[key]) is None:
                tree_names[tree_of[key]] = name
        for key in names:
            if tree_names[tree_of[key]] is None and key in prompts:
                tree_names[tree_of[key]] = prompts[key]
        return records, tree_of, tree_names, problems

    def _say_left_out(self, problems: list[Problem]) -> None:
        """Name on stderr, once, each line or file cut short: left out."""
        for problem in problems:
            if problem.kind == BAD_LINE and problem.message not in self._said:
                self._said.add(problem.message)
                LOG.warning("%s", terminal_text(problem.message))

    def _unread_groups(self, read: SessionsRead) -> None:
        """Groups a folder read could not read: left out, named, reported."""
        self.unread.extend(read.unread)
        for file, why in read.unread:
            LOG.warning(
                "%s: not read: %s", terminal_text(str(file)), terminal_text(why)
            )

    def _index(self) -> dict[str, list[str]]:
        """Each tree's session groups (one pass over every file, once)."""
        if self._trees is None:
            records, tree_of, _, _ = self._read(self.groups(), text=False)
            self._remember(
                tree_of, [r["id"] for r in records], [r["tree_id"] for r in records]
            )
        assert self._trees is not None
        return self._trees

    def _remember(
        self, tree_of: dict[str, str], ids: list[str], trees: list[str]
    ) -> None:
        self._trees = {}
        for key, tree in tree_of.items():
            self._trees.setdefault(tree, []).append(key)
        self._tree_of_node = dict(zip(ids, trees, strict=True))

    def id_matches(self, given: str, limit: int) -> list[IdMatch]:
        """The sessions (a tree, or a session that joined one, or another
        id of one) and nodes whose id begins with `given`, up to `limit` of
        each, from the index of one pass over the files."""
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
        """Every session tree's id (its first session's), each agent's in
        the order its sessions began."""
        return list(self._index())

    def tree_id_of_conversation(self, conversation_id: str) -> str:
        """The tree holding the session `conversation_id` (any of its ids)."""
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
        records, _, names, problems = self._read(groups, True)
        self._found = TreeRecords(tree_id, names.get(tree_id), records, problems)
        return self._found

    def read_all(
        self, texts: bool | Collection[str], progress: Callable[..., None]
    ) -> ForestRead:
        """Every session as one table (`read_forest`), with what the read
        left out (the files not read among it) and the calls inside runs."""
        from convgraph.sources.source import ForestRead

        nodes, names = self.read_forest(text=bool(texts), progress=progress)
        return ForestRead(nodes, names, list(self.record_problems), dict(self.calls))

    def read_forest(
        self, text: bool = True, progress: ProgressCallback | None = None
    ) -> tuple[pd.DataFrame, dict[str, Any]]:
        """Every node as one table, read session by session: the columns and types of
        `ChatExport.read_forest`, with the agents' own (`files.AGENT_ATTRIBUTES`);
        `progress` is told the files read. `record_problems` is then what the read left
        out: lines, records, files."""
        from convgraph.sources.chat.exports import FOREST_COLUMNS, _forest_frame

        # Each session's records become the table's columns as they are
        # read, the texts left out where not asked for: a year of sessions
        # is held as the table's lists, not a dict a node.
        wanted = (*FOREST_COLUMNS, *AGENT_ATTRIBUTES)
        left_out = () if text else CONTENT_ATTRIBUTES
        columns: dict[str, list[Any]] = {
            name: [] for name in wanted if name not in left_out
        }
        groups = self.groups()
        total = sum(len(files) for _, files, _ in groups)
        done = _Count(total, progress) if progress else None
        _, tree_of, names, problems = self._read(groups, text, columns, done)
        count = len(columns["id"])
        columns = {
            name: columns[name] if name in columns else [None] * count
            for name in wanted
        }
        nodes = _forest_frame(columns)
        for name in AGENT_INTEGERS:
            nodes[name] = nodes[name].astype("Int64")
        self.record_problems = [*self._unread_problems(), *problems]
        if self._trees is None:
            self._remember(tree_of, columns["id"], columns["tree_id"])
        return nodes, names


class _Count:
    """A progress callback told the files read, a group at a time."""

    def __init__(self, total: int, progress: ProgressCallback) -> None:
        self.total, self.progress, self.files = total, progress, 0
        progress(PHASE, 0, total)

    def __call__(self, files: int) -> None:
        self.files += files
        self.progress(PHASE, self.files, self.total)


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
