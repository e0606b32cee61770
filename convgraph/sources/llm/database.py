"""`LogDatabase`: an llm `logs.db` of any generations, read in the node
contract. Each generation has its reader; here is what holds across them:
llm continues a legacy conversation in a thread of the same id (so its rows
belong to that thread's tree), and a record in both is read from the turns."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

from convgraph.errors import DatabaseError, UnknownConversation, UnknownNode
from convgraph.links.integrity import (
    NO_ID,
    NO_THREAD,
    ParentWalk,
    Problem,
    record_problem,
)
from convgraph.sources.llm import legacy, listing, message_store
from convgraph.sources.llm.files import connect_read_only, is_sqlite_file, llm_tables
from convgraph.sources.llm.pipeline import Read, run_on_table, run_on_tree
from convgraph.sources.llm.snapshot import Snapshot, read_consistently
from convgraph.sources.source import (
    CONVERSATION,
    NODE,
    ForestRead,
    IdMatch,
    NodeTexts,
    ProgressCallback,
    Source,
    TreeRecords,
    log_order,
    sort_log_order,
)
from convgraph.sources.tables import conform_nodes


def detect(path: Path) -> LogDatabase | None:
    """llm's database at `path`, or None where it is no SQLite file."""
    return open_database(path) if is_sqlite_file(path) else None


def open_database(path: Path) -> LogDatabase:
    """`path` opened read-only as llm's database; `DatabaseError` if SQLite
    will not read it or it holds no llm tables."""
    conn = connect_read_only(path)
    try:
        return LogDatabase(conn, path)
    except (DatabaseError, sqlite3.DatabaseError) as error:
        conn.close()
        if isinstance(error, DatabaseError):
            raise
        raise DatabaseError(f"cannot read {path}: {error}") from None


class LogDatabase(Source):
    """An llm `logs.db`: `legacy` reads `responses`, `store` the message
    store (each None where the file has none)."""

    conn: sqlite3.Connection

    def __init__(self, conn: sqlite3.Connection, path: Path):
        self.conn, self.path = conn, path
        tables = llm_tables(conn)
        self.legacy = legacy.LegacyReader(conn) if "responses" in tables else None
        has_store = {"messages", "threads", "turns"} <= tables
        self.store = message_store.MessageStoreReader(conn) if has_store else None
        if self.legacy is None and self.store is None:
            raise DatabaseError(
                f"{path} has no llm tables (no responses or turns with the"
                " columns llm writes)"
            )
        if self.legacy is not None and self.store is not None:
            self.legacy.skip_ids_in_turns = True

    def close(self) -> None:
        self.conn.close()

    @property
    def generations(self) -> list[str]:
        found = []
        if self.legacy is not None:
            found.append("responses+parent" if self.legacy.has_parent else "responses")
        if self.store is not None:
            found.append("message-store")
        return found

    def tree_id_of_node(self, node_id: str) -> str:
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
        if self.store is not None and self.store.has_thread(conversation_id):
            return self.store.root_thread(conversation_id)
        if self.legacy is not None and self.legacy.has_conversation(conversation_id):
            return conversation_id
        raise UnknownConversation(conversation_id)

    def id_matches(self, given: str, limit: int) -> list[IdMatch]:
        """Each kind's ids from a range on its primary key: no scan."""
        found = []
        if self.store is not None:
            for turn_id, thread_id, text in self.store.turns_from(given, limit):
                tree_id = self.store.root_thread(thread_id)
                found.append(IdMatch(NODE, turn_id, tree_id, text))
            for thread_id, name in self.store.threads_from(given, limit):
                tree_id = self.store.root_thread(thread_id)
                found.append(IdMatch(CONVERSATION, thread_id, tree_id, name))
        if self.legacy is not None:
            for node_id, conversation_id, prompt in self.legacy.responses_from(
                given, limit
            ):
                tree_id = self._tree_id_of_legacy_conversation(conversation_id)
                found.append(IdMatch(NODE, node_id, tree_id, prompt))
                if conversation_id == node_id:
                    # A response outside any conversation is one of its own.
                    found.append(IdMatch(CONVERSATION, node_id, tree_id, prompt))
            for conversation_id, name in self.legacy.conversations_from(given, limit):
                tree_id = self._tree_id_of_legacy_conversation(conversation_id)
                found.append(IdMatch(CONVERSATION, conversation_id, tree_id, name))
        if not found:
            # No index holds conversation ids only responses name: whole ids
            # only, and only when nothing else matched.
            found = self.exact_matches(given)
        return found

    def is_id(self, given: str, kind: str) -> bool:
        """On primary keys alone (see `id_matches` for the rest)."""
        if kind == NODE:
            return super().is_id(given, kind)
        if self.store is not None and self.store.has_thread(given):
            return True
        if self.legacy is None:
            return False
        first = self.legacy.conversations_from(given, 1)
        return bool(first) and first[0][0] == given

    def _tree_id_of_legacy_conversation(self, conversation_id: str) -> str:
        # llm continues a legacy conversation in a thread of the same id, so
        # the legacy rows belong to that thread's tree.
        if self.store is not None and self.store.has_thread(conversation_id):
            return self.store.root_thread(conversation_id)
        return conversation_id

    def path_by_links(self, node_id: str) -> list[str] | None:
        """Walks stored parent links up the primary key; None where only the
        tree answers (no parent column, turns, tool chains, broken links)."""
        if self.legacy is None or not self.legacy.has_parent:
            return None
        if self.store is not None and self.store.has_turns():
            return None
        if self.legacy.parts.sent_results():
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

    def tree_ids(self) -> list[str]:
        # Both generations by one key, as in the table `read_all` gives.
        first: dict[str, tuple[str, str]] = {}
        found: list[tuple[str, str, str]] = []
        if self.legacy is not None:
            found += [
                (self._tree_id_of_legacy_conversation(cid), time, node)
                for cid, time, node in self.legacy.first_responses()
            ]
        if self.store is not None:
            found += self.store.first_turns()
        for tree_id, time, node in found:
            key = (time, node)
            if tree_id not in first or key < first[tree_id]:
                first[tree_id] = key
        return sorted(first, key=first.__getitem__)

    def read_tree(self, tree_id: str) -> TreeRecords:
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
            # llm names a conversation by its first prompt, the thread that
            # 0.32+ went on in by the later one. An empty name is a name.
            name = name if legacy_name is None else legacy_name
            if legacy_records:
                records = legacy_records + records
                records.sort(key=log_order)
        read = self._pipeline_read()
        records = run_on_tree(records, read)
        unplaced = self.legacy.unplaced if self.legacy is not None else []
        return TreeRecords(
            tree_id, name, records, problems + read.problems + unplaced, read.calls
        )

    def _pipeline_read(self, text: bool = True) -> Read:
        return Read(
            legacy=self.legacy is not None,
            store=self.store is not None,
            linked=self.legacy is not None and self.legacy.has_parent,
            text=text,
            response_texts=self.answers,
        )

    def conversations_of(self, node_ids: list[str]) -> dict[str, str]:
        """Which legacy conversation each of these responses is in."""
        if self.legacy is None or not node_ids:
            return {}
        return self.legacy.conversation_of_ids(node_ids)

    def answers(self, node_ids: list[str]) -> dict[str, str | None]:
        """Legacy answers by id (a turn's are read with its prompt)."""
        rows = self.conn.execute(
            "select cast(id as text), cast(response as text) from responses"
            " where id in (select value from json_each(?))",
            [json.dumps(node_ids)],
        )
        return {row[0]: row[1] for row in rows}

    def read_all(
        self, texts: bool | Collection[str], progress: ProgressCallback
    ) -> ForestRead:
        """Columnar where it applies, else by rows (`snapshot` rules both);
        row readers read every text column."""
        from convgraph.sources.llm import columnar

        found = columnar.read_forest(self, text=texts, progress=progress)
        if found is not None:
            # The columnar read takes no file with a cycle of forks.
            return found
        read = read_consistently(
            self.conn,
            self._tables(),
            lambda snapshot: self._read_forest(bool(texts), snapshot),
            progress,
        )
        if self.store is not None:
            read.problems += self.store.fork_problems()
        return read

    def text_batches(
        self, progress: ProgressCallback | None = None
    ) -> Iterator[NodeTexts] | None:
        """A file of legacy responses without parts or turns, or a message store
        without legacy responses (`store_texts`)."""
        if self.store is not None and (
            self.legacy is None
            or not self.conn.execute(
                "select exists(select 1 from responses)"
            ).fetchone()[0]
        ):
            from convgraph.sources.llm.store_texts import text_batches

            return text_batches(self.conn, self.path)
        if self.legacy is None:
            return None
        tables = self.legacy.parts.tables()
        if self.store is not None:
            tables += ["turns"]
        if any(
            self.conn.execute(f'select exists(select 1 from "{table}")').fetchone()[0]
            for table in tables
        ):
            return None
        return self.legacy.text_batches(progress)

    def _tables(self) -> list[str]:
        tables = []
        if self.store is not None:
            tables += self.store.tables()
        if self.legacy is not None:
            tables += self.legacy.tables()
        return tables

    def _rows_without_id(self) -> list[Problem]:
        """Rows that are no node: without an id, or turns outside any thread."""
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

    def _read_forest(self, text: bool, snapshot: Snapshot) -> ForestRead:
        import pandas as pd

        frames = []
        names: dict[str, Any] = {}
        thread_roots: dict[str, str] = {}
        problems = self._rows_without_id()
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
                root = thread_roots.get(tree_id, tree_id)
                if name is not None and (root == tree_id or names.get(root) is None):
                    names[root] = name
                else:
                    names.setdefault(root, name)
            frames.insert(0, legacy_frame)
        snapshot.report("linking the nodes", 0, None)
        # llm 0.32+ leaves the legacy tables empty: concatenating an empty
        # frame would lose the categories.
        frames = [frame for frame in frames if len(frame)] or frames[:1]
        nodes = sort_log_order(
            pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
        )
        read = self._pipeline_read(text)
        nodes = run_on_table(nodes, read)
        problems += read.problems
        if self.legacy is not None:
            problems += self.legacy.unplaced
        return ForestRead(conform_nodes(nodes), names, problems, read.calls)

    def tree_names(self) -> list[tuple[str, str | None]]:
        return listing.tree_names(self)

    def tree_counts(self) -> list[listing.TreeCount]:
        return listing.tree_counts(self)

    def table_stamps(self, since: dict[str, Any] | None = None) -> dict[str, Any]:
        from convgraph.sources.llm.stamps import table_stamps

        return table_stamps(self, since)
