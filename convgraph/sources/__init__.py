"""Open an llm database read-only and find out which generations it holds.

`open_logs` is the one way in: it opens the file read-only, looks at which of
llm's tables are there, and returns a `LogDatabase` that answers in the node
contract of DESIGN.md whatever the storage format. Each format has its own
reader module; a database upgraded from legacy llm to the message store holds
both, and a record present in both (same id) is read once, from the turns.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convgraph.contract import NODE_ATTRIBUTES
from convgraph.errors import DatabaseError, UnknownConversation, UnknownNode
from convgraph.links.integrity import (
    DUPLICATE_ID,
    NO_ID,
    NO_THREAD,
    ParentWalk,
    Problem,
    record_problem,
)
from convgraph.sources import legacy, message_store
from convgraph.sources.source import Source, TreeRecords, log_order, sort_log_order
from convgraph.sources.tables import (
    BUSY_TIMEOUT_SECONDS,
    Snapshot,
    conform_nodes,
    replacing_text,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "NODE_ATTRIBUTES",
    "LogDatabase",
    "Source",
    "TreeRecords",
    "log_order",
    "open_logs",
    "sort_log_order",
]


#: How many times a whole-file read starts again when a writer changed rows
#: it had read (not only appended: see `tables.Snapshot`).
READ_ATTEMPTS = 3


def default_database_path() -> Path:
    """The `logs.db` that llm itself uses: `$LLM_USER_PATH`, else llm's app dir.

    Mirrors `llm logs path` without importing llm, which convgraph does not need
    for reading.
    """
    user_path = os.environ.get("LLM_USER_PATH")
    if user_path:
        return Path(user_path) / "logs.db"
    import click

    return Path(click.get_app_dir("io.datasette.llm")) / "logs.db"


def connect_read_only(path: str | os.PathLike[str]) -> sqlite3.Connection:
    """Open `path` so that nothing convgraph does can change the file.

    `mode=ro` makes SQLite refuse every write, and the busy timeout lets a
    read wait for a concurrent writer instead of failing at once.
    """
    path = Path(path)
    if not path.is_file():
        raise DatabaseError(f"no database file at {path}")
    uri = f"{path.resolve().as_uri()}?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_SECONDS)
        conn.execute("select count(*) from sqlite_master").fetchone()
    except sqlite3.DatabaseError as error:
        raise DatabaseError(_why_unreadable(path, error)) from None
    conn.row_factory = sqlite3.Row
    # One byte that is not UTF-8 in one row must not make the file unreadable.
    conn.text_factory = replacing_text
    return conn


def _why_unreadable(path: Path, error: sqlite3.DatabaseError) -> str:
    """One sentence on why SQLite would not let a read-only reader in."""
    code = getattr(error, "sqlite_errorname", "")
    if code.startswith("SQLITE_BUSY") or "locked" in str(error):
        # A live writer (llm logging, a migration) holds the lock: its
        # journal is there too, but it is not a stopped writer's.
        return (
            f"{path} is being written by another process, which held its"
            f" lock for more than {BUSY_TIMEOUT_SECONDS:g} seconds; try again"
            " when it has finished"
        )
    if code == "SQLITE_READONLY_ROLLBACK" or (
        code.startswith("SQLITE_READONLY")
        and path.with_name(path.name + "-journal").exists()
    ):
        # A writer stopped mid-transaction; SQLite must roll its journal
        # back before anyone reads, and a read-only reader cannot.
        return (
            f"{path} holds an unfinished transaction of a writer that"
            " stopped; open it once with llm or sqlite3 to roll it back"
        )
    if code.startswith("SQLITE_CANTOPEN") and _is_wal(path):
        return (
            f"{path} is in WAL mode, and SQLite can read it only with its"
            f" {path.name}-shm file beside it, which it cannot create or open"
            f" in {path.parent} (a read-only directory?); read a copy made"
            " with its -wal file in a writable directory"
        )
    return f"{path} is not an SQLite database ({error})"


def _is_wal(path: Path) -> bool:
    """Whether the file's header says WAL mode (format versions 2 at bytes
    18 and 19 of the SQLite header)."""
    try:
        with open(path, "rb") as file:
            header = file.read(20)
    except OSError:
        return False
    return header[:16] == b"SQLite format 3\x00" and header[18:20] == b"\x02\x02"


class LogDatabase(Source):
    """An llm `logs.db`, whichever generations of llm wrote it."""

    def __init__(self, conn: sqlite3.Connection, path: Path):
        self.conn = conn
        self.path = path
        tables = {
            row[0]
            for row in conn.execute(
                "select name from sqlite_master where type = 'table'"
            )
        }
        self.legacy = legacy.LegacyReader(conn) if "responses" in tables else None
        has_store = {"messages", "threads", "turns"} <= tables
        self.store = message_store.MessageStoreReader(conn) if has_store else None
        if self.legacy is None and self.store is None:
            raise DatabaseError(
                f"{path} has no llm tables (neither responses nor turns)"
            )
        if self.legacy is not None and self.store is not None:
            self.legacy.skip_ids_in_turns = True
        #: Rows that are no node (no id, no thread, an id seen before), found
        #: by the last `read_forest` or `read_tree`.
        self.record_problems: list[Problem] = []
        #: Whether the last `read_forest` was the columnar one, which takes
        #: no file with a cycle of forks: then there are none to look for.
        self._forks_acyclic = False

    def close(self) -> None:
        self.conn.close()

    @property
    def generations(self) -> list[str]:
        """Which storage formats the file holds, oldest first."""
        found = []
        if self.legacy is not None:
            found.append("responses+parent" if self.legacy.has_parent else "responses")
        if self.store is not None:
            found.append("message-store")
        return found

    # -- naming trees ---------------------------------------------------

    def tree_id_of_node(self, node_id: str) -> str:
        """The id of the conversation tree that holds `node_id`."""
        if self.store is not None:
            thread_id = self.store.thread_of_turn(node_id)
            if thread_id is not None:
                return self.store.root_thread(thread_id)
        if self.legacy is not None:
            conversation_id = self.legacy.conversation_of(node_id)
            if conversation_id is not None:
                return self._tree_id_of_legacy_conversation(conversation_id)
        raise UnknownNode(node_id)

    def tree_id_of_conversation(self, conversation_id: str) -> str:
        """The tree that `conversation_id` (a conversation or thread id) names."""
        if self.store is not None and self.store.has_thread(conversation_id):
            return self.store.root_thread(conversation_id)
        if self.legacy is not None and self.legacy.has_conversation(conversation_id):
            return conversation_id
        raise UnknownConversation(conversation_id)

    def _tree_id_of_legacy_conversation(self, conversation_id: str) -> str:
        # llm continues a legacy conversation in a thread of the same id, so
        # the legacy rows belong to that thread's tree.
        if self.store is not None and self.store.has_thread(conversation_id):
            return self.store.root_thread(conversation_id)
        return conversation_id

    def path_by_links(self, node_id: str) -> list[str] | None:
        """The ids from the root down to `node_id`, read by walking the stored
        parent links up the primary key: no other row of the conversation is
        read. None where that walk cannot give the tree's answer: no parent
        column, turns in the file, or a broken link on the way up (the tree
        decides how broken links are dropped)."""
        if self.legacy is None or not self.legacy.has_parent:
            return None
        if self.store is not None and self.store.has_turns():
            return None
        links = self.legacy.links_above(node_id)
        if node_id not in links:
            raise UnknownNode(node_id)
        conversation = links[node_id][1]
        walk = ParentWalk(node_id, lambda node: links[node][0])
        path = []
        for node in walk:
            if node not in links or links[node][1] != conversation:
                return None
            path.append(node)
        if walk.repeat is not None:
            return None
        path.reverse()
        return path

    # -- reading --------------------------------------------------------

    def tree_ids(self) -> list[str]:
        """Every conversation tree's id, in the order of its first node."""
        seen: dict[str, None] = {}
        if self.legacy is not None:
            for conversation_id in self.legacy.conversation_ids():
                seen[self._tree_id_of_legacy_conversation(conversation_id)] = None
        if self.store is not None:
            seen.update(dict.fromkeys(self.store.tree_ids()))
        return list(seen)

    def read_tree(self, tree_id: str) -> TreeRecords:
        """The rows of one tree, read with queries about that tree only."""
        records: list[dict[str, Any]] = []
        problems: list[Problem] = []
        name = None
        conversation_ids = [tree_id]
        if self.store is not None and self.store.has_thread(tree_id):
            threads = self.store.member_threads(tree_id)
            conversation_ids = list(threads)
            name = threads[tree_id]["name"]
            records.extend(self.store.read_turns(threads, tree_id))
            problems = self.store.fork_problems(threads)
        if self.legacy is not None:
            legacy_records, legacy_name = self.legacy.read_conversations(
                conversation_ids, tree_id
            )
            # llm names a conversation by its first prompt; a thread made
            # when llm 0.32+ went on with it is named by the later prompt.
            name = legacy_name or name
            records = _join_generations(
                legacy_records, records, linked=self.legacy.has_parent
            )
        records, duplicates = _first_of_each_id(records)
        self.record_problems = duplicates
        return TreeRecords(tree_id, name, records, problems + duplicates)

    def fork_problems(self) -> list[Problem]:
        """The cycles of forks among the message store's threads (a thread
        forked, through others, from itself): none without a message store."""
        if self.store is None or self._forks_acyclic:
            return []
        return self.store.fork_problems()

    def _response_texts(self, node_ids: list[str]) -> dict[str, str | None]:
        """Legacy responses' answers by id (for matching history read
        without its texts)."""
        rows = self.conn.execute(
            "select cast(id as text), cast(response as text) from responses"
            " where id in (select value from json_each(?))",
            [json.dumps(node_ids)],
        )
        return {row[0]: row[1] for row in rows}

    def read_forest(self, text: bool = True) -> tuple[pd.DataFrame, dict[str, Any]]:
        """Every node as one table, and the name of every tree.

        `text=False` leaves out the prompt, system and response columns (as
        None), which is most of the file's bytes, for work that needs only the
        structure and the usage figures.

        The tables are read in short steps, so that llm can log meanwhile,
        as they were when the read began (see `tables.Snapshot`); where a
        writer did more than append, the read starts again. Rows that are no
        node are left out and listed in `record_problems`.
        """
        # Whole columns through Arrow where pyarrow and ADBC are installed
        # and the file is one it reads exactly (see `columnar`).
        from convgraph.sources import columnar

        found = columnar.read_forest(self, text=text)
        self._forks_acyclic = found is not None
        if found is not None:
            self.record_problems = []
            return found
        for _ in range(READ_ATTEMPTS):
            snapshot = Snapshot(self.conn, self._tables())
            result = self._read_forest(text, snapshot)
            if not snapshot.changed():
                break
        return result

    def _tables(self) -> list[str]:
        tables = []
        if self.store is not None:
            tables += self.store.tables()
        if self.legacy is not None:
            tables += self.legacy.tables()
        return tables

    def _rows_without_id(self) -> list[Problem]:
        """Responses and turns without an id, and turns outside any thread:
        no node of any tree (each count one short statement on an index)."""
        problems = []
        if self.legacy is not None:
            count = self.legacy.count_without_id()
            if count:
                problems.append(record_problem(NO_ID, count, "responses"))
        if self.store is not None:
            without_id, without_thread = self.store.count_unplaced()
            if without_id:
                problems.append(record_problem(NO_ID, without_id, "turns"))
            if without_thread:
                problems.append(record_problem(NO_THREAD, without_thread, "turns"))
        return problems

    def _read_forest(
        self, text: bool, snapshot: Snapshot
    ) -> tuple[pd.DataFrame, dict[str, Any]]:
        import pandas as pd

        frames = []
        names: dict[str, Any] = {}
        thread_roots: dict[str, str] = {}
        self.record_problems = self._rows_without_id()
        if self.store is not None:
            store_frame, store_names, thread_roots = self.store.read_all(
                text=text, snapshot=snapshot
            )
            frames.append(store_frame)
            names.update(store_names)
        if self.legacy is not None:
            legacy_frame, legacy_names = self.legacy.read_all(
                text=text, snapshot=snapshot
            )
            if self.store is not None and len(legacy_frame) and len(store_frame):
                # A record in both generations is read from the turns.
                in_turns = legacy_frame["id"].isin(store_frame["id"]).to_numpy()
                if in_turns.any():
                    legacy_frame = legacy_frame[~in_turns].reset_index(drop=True)
            if thread_roots:
                legacy_frame["tree_id"] = legacy_frame["tree_id"].map(
                    lambda cid: thread_roots.get(cid, cid)
                )
            for tree_id, name in legacy_names.items():
                # llm's own conversation name, as in read_tree.
                root = thread_roots.get(tree_id, tree_id)
                if name is not None and (root == tree_id or names.get(root) is None):
                    names[root] = name
                else:
                    names.setdefault(root, name)
            frames.insert(0, legacy_frame)
        # llm 0.32 and later make the legacy tables and leave them empty:
        # concatenating an empty frame would only lose the categories.
        frames = [frame for frame in frames if len(frame)] or frames[:1]
        nodes = sort_log_order(
            pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
        )
        repeated = nodes["id"].duplicated().to_numpy()
        if repeated.any():
            counts = nodes["id"][repeated].value_counts(sort=False)
            self.record_problems += [
                record_problem(DUPLICATE_ID, int(count), "the log", str(node_id))
                for node_id, count in counts.items()
            ]
            nodes = nodes[~repeated].reset_index(drop=True)
        if self.legacy is not None and not self.legacy.has_parent:
            legacy.link_frame_as_chains(nodes)
        if self.legacy is not None and self.store is not None:
            _join_generations_frame(
                nodes,
                linked=self.legacy.has_parent,
                response_texts=None if text else self._response_texts,
            )
        return conform_nodes(nodes.drop(columns="_continues")), names


def _first_of_each_id(
    records: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[Problem]]:
    """The records (in log order) with one per id, the first logged, and a
    problem for each id that had more (a table without a primary key)."""
    seen: dict[str, int] = {}
    for record in records:
        seen[record["id"]] = seen.get(record["id"], 0) + 1
    if len(seen) == len(records):
        return records, []
    kept, taken = [], set()
    for record in records:
        if record["id"] not in taken:
            taken.add(record["id"])
            kept.append(record)
    problems = [
        record_problem(DUPLICATE_ID, count - 1, "the log", node_id)
        for node_id, count in seen.items()
        if count > 1
    ]
    return kept, problems


def _join_generations(
    legacy_records: list[dict[str, Any]],
    turn_records: list[dict[str, Any]],
    linked: bool = False,
) -> list[dict[str, Any]]:
    """One tree's legacy rows and turns together, in log order.

    When llm 0.32+ continues a legacy conversation (`llm -c`), or a
    `LogStore.fork` starts at one of its rebuilt messages, the turn carries
    the old history in its messages but no turn to point at: its parent is
    the legacy response its history ends at (`legacy_parent`), whatever was
    logged later. `linked`: the responses carry `parent_response_id`.
    """
    conversations = None
    for record in turn_records:
        continuation = record.pop("_continues", None)
        if continuation is None or record["parent_id"] is not None:
            continue
        if conversations is None:
            conversations = _conversations_in_id_order(
                (r["id"], r["conversation_id"], r["parent_id"], r["response"])
                for r in legacy_records
            )
        record["parent_id"] = legacy_parent(continuation, conversations, linked)
    if not legacy_records:
        return turn_records
    joined = legacy_records + turn_records
    joined.sort(key=log_order)
    return joined


def _join_generations_frame(
    nodes: pd.DataFrame,
    linked: bool = False,
    response_texts: Callable[[list[str]], dict[str, str | None]] | None = None,
) -> None:
    """The table form of `_join_generations`, for the whole forest (in place;
    `nodes` is in log order). Only the few turns that go on from legacy
    history are looked at one by one. `response_texts` reads legacy answers
    by id when the table was read without its texts."""
    from convgraph.sources.message_store import Continuation

    flags = nodes["_continues"]
    continues = flags.notna() & flags.astype(bool) & nodes["parent_id"].isna()
    if not continues.any():
        return
    rows = nodes.index[continues]
    continuations: list[Continuation] = list(flags[rows])
    wanted = {thread for c in continuations for thread in c.threads}
    legacy_rows = nodes[
        (nodes["source"] == legacy.SOURCE)
        & nodes["conversation_id"].astype(object).isin(wanted)
    ]
    ids = legacy_rows["id"].tolist()
    answers = legacy_rows["response"].tolist()
    if response_texts is not None:
        texts = response_texts(ids)
        answers = [texts.get(node_id) for node_id in ids]
    conversations = _conversations_in_id_order(
        zip(
            ids,
            legacy_rows["conversation_id"].astype(object).tolist(),
            legacy_rows["parent_id"].tolist(),
            answers,
            strict=True,
        )
    )
    nodes.loc[rows, "parent_id"] = [
        legacy_parent(continuation, conversations, linked)
        for continuation in continuations
    ]


#: A legacy response as `legacy_parent` matches it: id, parent id, answer.
LegacyResponse = tuple[str, Any, Any]


def _conversations_in_id_order(
    rows: Iterable[tuple[str, str, Any, Any]],
) -> dict[str, list[LegacyResponse]]:
    """Legacy responses (id, conversation, parent, answer) by conversation,
    each in id order: the order llm replays a legacy conversation in."""
    conversations: dict[str, list[LegacyResponse]] = {}
    for node_id, conversation_id, parent_id, answer in rows:
        conversations.setdefault(conversation_id, []).append(
            (node_id, parent_id, answer)
        )
    for responses in conversations.values():
        responses.sort(key=lambda response: response[0])
    return conversations


def legacy_parent(
    continuation: Any,
    conversations: dict[str, list[LegacyResponse]],
    linked: bool = False,
) -> str | None:
    """The legacy response whose answer a turn's rebuilt history ends at.

    The conversation is the first of the turn's threads (its own, then the
    ones it was forked from) that has legacy responses. The parent is the
    response whose answer is the history's last answer; where several
    responses gave that answer, the one whose earlier history (down the
    stored parent links where there are some, as a `convgraph branch` sends
    a path of the tree; else the responses before it in id order, as llm
    replays a legacy conversation) matches the history's earlier answers
    longest, the first in id order on a tie. Matching from the end keeps a
    turn in place when a response above it was deleted, or when another
    was logged later; where the last answers match no response (deleted),
    the last one that does stands for them. Where no answer matches at all
    (the responses changed), the n-th answer is the n-th response in id
    order.
    """
    answers = continuation.answers
    responses = next(
        (conversations[t] for t in continuation.threads if t in conversations),
        None,
    )
    if not answers or not responses:
        return None
    # The last answer a response still gives (a deleted response's is
    # gone: the turn then hangs where the history's rest leads).
    by_answer: dict[Any, list[int]] = {}
    for i, response in enumerate(responses):
        by_answer.setdefault(response[2], []).append(i)
    found = next(
        (k for k in range(len(answers), 0, -1) if answers[k - 1] in by_answer), 0
    )
    if not found:
        return responses[min(len(answers), len(responses)) - 1][0]
    answers = answers[:found]
    candidates = by_answer[answers[-1]]
    if len(candidates) == 1:
        return responses[candidates[0]][0]
    position = {response[0]: i for i, response in enumerate(responses)}

    def before(i: int) -> int | None:
        if linked:
            return position.get(responses[i][1])
        return i - 1 if i else None

    def matching(i: int | None) -> int:
        # At most len(answers) steps, so a cycle of parent links ends too.
        count = 0
        for answer in reversed(answers):
            if i is None or responses[i][2] != answer:
                break
            count += 1
            i = before(i)
        return count

    return responses[max(candidates, key=matching)][0]


def open_logs(path: str | os.PathLike[str] | None = None) -> LogDatabase:
    """Open an llm database read-only; llm's own `logs.db` when `path` is None.

    Raises
    ------
    DatabaseError
        The file is missing, is not SQLite, or holds no llm tables.
    """
    path = Path(path) if path is not None else default_database_path()
    # Not SQLite: a ChatGPT, Claude.ai or Open WebUI export, told by content.
    from convgraph.sources.chat_exports import open_source

    try:
        export = open_source(path)
    except PermissionError as error:
        raise DatabaseError(f"cannot read {path}: {error.strerror}") from None
    if export is not None:
        return export
    if path.is_dir():
        raise DatabaseError(
            f"{path} is a directory, not an llm database or chat export"
        )
    conn = connect_read_only(path)
    try:
        return LogDatabase(conn, path)
    except (DatabaseError, sqlite3.DatabaseError) as error:
        conn.close()
        if isinstance(error, DatabaseError):
            raise
        raise DatabaseError(f"cannot read {path}: {error}") from None
