"""Import the conversations of a ChatGPT, Claude.ai or Open WebUI export into llm's
message store, so `llm logs` lists them and `llm -c --cid` goes on from any branch. A
prompt never answered ends at an empty assistant message."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from convgraph.errors import DatabaseError, ImportRefused
from convgraph.sources.llm.files import is_sqlite_file, table_names
from convgraph.sources.source import ProgressCallback
from convgraph.store.import_plan import (
    ConversationPlan,
    PlannedTurn,
    llm_datetime,
    plan_conversation,
    stable_ulid,
)
from convgraph.store.responses import require_llm
from convgraph.store.transaction import (
    WRITE_BUSY_TIMEOUT_SECONDS,
    batched_writes,
    reporting_locks,
)
from convgraph.store.upgrade import upgrade_llm_tables

__all__ = [
    "ConversationPlan",
    "ImportRefused",
    "ImportSummary",
    "import_export",
    "plan_conversation",
    "stable_ulid",
]

#: The tables that make a file llm's.
LLM_TABLES = {"_llm_migrations", "responses", "threads"}

#: Where each imported turn came from: the export, its conversation and node.
ORIGINS = "_convgraph_imports"
ORIGINS_SQL = (
    f"create table if not exists {ORIGINS} (turn_id text primary key, app text,"
    " export text, conversation_id text, node_id text, imported_utc text)"
)


@dataclass
class ConversationResult:
    """What became of one conversation of the export."""

    conversation_id: str
    name: str | None
    #: The current branch's thread: what `llm -c --cid` continues.
    thread_id: str
    #: The nodes written (or that would be): all, or a grown one's new ones.
    nodes: int
    #: The threads made (a dry run counts only a new conversation's).
    threads: int
    #: "imported", "would import", "skipped" (already imported), or "grown",
    #: "would grow" (imported before: the export's new nodes added).
    status: str


@dataclass
class ImportSummary:
    """The outcome of an import (or of a dry run)."""

    source: Path
    target: Path
    dry_run: bool
    #: The target did not exist (or was empty) and llm's tables were made.
    created: bool = False
    #: An older llm's file that llm's migrations brought up to date first.
    upgraded: bool = False
    conversations: list[ConversationResult] = field(default_factory=list)
    #: Conversations without a prompt or answer (id, name), left out.
    empty: list[tuple[str, str | None]] = field(default_factory=list)

    def written(self) -> list[ConversationResult]:
        """The conversations written (or that would be)."""
        return [
            c for c in self.conversations if c.status in ("imported", "would import")
        ]

    @property
    def imported(self) -> int:
        """Conversations written (or that would be)."""
        return len(self.written())

    @property
    def nodes(self) -> int:
        """Nodes written as turns (or that would be)."""
        return sum(c.nodes for c in self.written())

    @property
    def threads(self) -> int:
        """Threads written (or that would be)."""
        return sum(c.threads for c in self.written())

    @property
    def skipped(self) -> int:
        """Conversations already in the file, left as they are."""
        return sum(c.status == "skipped" for c in self.conversations)

    @property
    def grown(self) -> list[ConversationResult]:
        """Conversations imported before whose new nodes were added."""
        return [c for c in self.conversations if c.status in ("grown", "would grow")]


def _messages(
    llm: Any, turn: PlannedTurn, is_root: bool
) -> tuple[list[Any], list[Any]]:
    """The turn's new input messages and its output messages, as llm's."""
    from llm.parts import Message

    record = turn.record
    given = []
    if is_root and record["system"] is not None:
        given.append(llm.system(record["system"]))
    if record["prompt"] is not None:
        given.append(llm.user(record["prompt"]))
    if record["response"] is not None:
        answer = [llm.assistant(record["response"])]
    elif record["prompt"] is not None:
        # Ending at the prompt would make the turn's tip its own input, and
        # readers would take the turn for its own parent.
        answer = [Message(role="assistant", parts=[])]
    else:
        answer = []
    return given, answer


def _turn_row(
    turn: PlannedTurn, thread_id: str, parent_hash: str | None, tip: str | None
) -> dict[str, Any]:
    """The `turns` row `LogStore.log` gives a plain response."""
    record = turn.record
    return {
        "id": turn.turn_id,
        "thread_id": thread_id,
        "parent_message_hash": parent_hash,
        "tip_message_hash": tip,
        "model": record["model"],
        "resolved_model": None,
        "options_json": None,
        "schema_id": None,
        "input_tokens": record["input_tokens"],
        "output_tokens": record["output_tokens"],
        "token_details": None,
        # llm times its own calls; an app's export mostly does not say.
        "duration_ms": record["duration_ms"],
        "datetime_utc": llm_datetime(record["datetime_utc"]),
        "response_json": None,
    }


def _ensure_chain(conn: Any, messages: list[Any], parent: str | None) -> str | None:
    """`LogStore.ensure_chain` for an import's plain text messages: the same
    rows, hashed by llm's `message_hash`, by two prepared statements."""
    from llm.logs import message_hash
    from llm.parts import TextPart

    tip = parent
    for message in messages:
        if message.provider_metadata or any(
            type(part) is not TextPart or part.provider_metadata
            for part in message.parts
        ):
            raise ValueError(f"not a plain text message: {message!r}")
        digest = message_hash(message, tip)
        added = conn.execute(
            "insert or ignore into messages"
            " (hash, parent_hash, role, provider_metadata) values (?, ?, ?, null)",
            (digest, tip, message.role),
        ).rowcount
        if added:
            # The text is its own column: the payload is NULL, as llm's.
            conn.executemany(
                "insert into parts (message_hash, position, type, tool_name,"
                " text, payload) values (?, ?, 'text', null, ?, null)",
                [(digest, n, part.text) for n, part in enumerate(message.parts)],
            )
        tip = digest
    return tip


def write_conversation(
    store: Any,
    plan: ConversationPlan,
    held: dict[str, tuple[str, str | None, bool]] | None = None,
    export: str | None = None,
) -> int:
    """Write one planned conversation inside the caller's transaction: its messages node
    by node (each chain from its parent's tip), then its threads, turns, search rows and
    origins, a statement each. `held`: the nodes the file has (thread, tip, whether at
    its thread's tip), not written again: a new branch goes on in the thread whose tip
    it continues, else forks. The threads made are counted."""
    import llm
    from llm.logs import TURN_SEARCH_INSERT_SQL

    conn = store.db.conn
    held = held or {}
    tips = {node: tip for node, (_, tip, _) in held.items()}
    thread_of = {node: thread for node, (thread, _, _) in held.items()}
    ends = {thread: node for node, (thread, _, end) in held.items() if end}
    existing = {thread for thread, _, _ in held.values()}
    turn_rows: list[dict[str, Any]] = []
    thread_rows: dict[str, list[str | None]] = {}
    moved: dict[str, str | None] = {}
    # One moment for the conversation's threads, in llm's form.
    now = str(datetime.now(UTC))
    for thread in plan.threads:
        turns = [turn for turn in thread.turns if turn.record["id"] not in held]
        if not turns:
            continue
        above = turns[0].parent
        thread_id, forked_from = thread.thread_id, thread.forked_from
        if held and above is not None and ends.get(thread_of[above]) == above:
            thread_id, forked_from = thread_of[above], None
        elif held:
            first = turns[0]
            thread_id = stable_ulid(
                first.moment, plan.source, plan.conversation_id, first.record["id"]
            )
            forked_from = thread_of[above] if above is not None else plan.thread_id
        tip = tips[above] if above is not None else None
        for turn in turns:
            given, answer = _messages(llm, turn, turn.parent is None)
            above = tips[turn.parent] if turn.parent is not None else None
            parent_hash = _ensure_chain(conn, given, above)
            tip = _ensure_chain(conn, answer, parent_hash)
            tips[turn.record["id"]] = tip
            thread_of[turn.record["id"]] = thread_id
            turn_rows.append(_turn_row(turn, thread_id, parent_hash, tip))
        ends[thread_id] = turns[-1].record["id"]
        # The thread's tip is its last turn's, as llm moves it turn by turn.
        if thread_id in existing:
            moved[thread_id] = tip
        elif thread_id in thread_rows:
            thread_rows[thread_id][2] = tip
        else:
            thread_rows[thread_id] = [thread_id, plan.name, tip, forked_from, now]
    if not turn_rows:
        return 0
    conn.executemany(
        "insert into threads (id, name, tip_message_hash, forked_from,"
        " datetime_utc) values (?, ?, ?, ?, ?)",
        list(thread_rows.values()),
    )
    conn.executemany(
        "update threads set tip_message_hash = ? where id = ?",
        [(tip, thread) for thread, tip in moved.items()],
    )
    columns = list(turn_rows[0])
    conn.executemany(
        f"insert into turns ({', '.join(columns)})"
        f" values ({', '.join('?' * len(columns))})",
        [tuple(row.values()) for row in turn_rows],
    )
    conn.executemany(
        TURN_SEARCH_INSERT_SQL, [{"turn_id": row["id"]} for row in turn_rows]
    )
    nodes = {turn.turn_id: turn.record["id"] for t in plan.threads for turn in t.turns}
    conn.execute(ORIGINS_SQL)
    where = (plan.source, export, plan.conversation_id)
    conn.executemany(
        f"insert or replace into {ORIGINS} values (?, ?, ?, ?, ?, ?)",
        [(row["id"], *where, nodes[row["id"]], now) for row in turn_rows],
    )
    return len(thread_rows)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def check_target(source: Path, target: Path) -> str:
    """What the target is: "new" (missing or empty) or "llm"; raises
    ImportRefused where it is the export itself or not an llm database."""
    if _same_file(source, target):
        raise ImportRefused(
            f"{target} is the export being imported, not llm's database"
        )
    if target.is_dir():
        raise ImportRefused(f"{target} is a directory, not an llm database")
    if not target.exists() or target.stat().st_size == 0:
        return "new"
    if not is_sqlite_file(target):
        raise ImportRefused(f"{target} is not an llm database (not SQLite)")
    conn = sqlite3.connect(f"{target.resolve().as_uri()}?mode=ro", uri=True)
    try:
        tables = table_names(conn)
    except sqlite3.DatabaseError as error:
        raise ImportRefused(f"{target} is not an llm database ({error})") from None
    finally:
        conn.close()
    if not tables:
        return "new"
    if not tables & LLM_TABLES:
        raise ImportRefused(
            f"{target} is an SQLite database but not llm's (no llm tables)"
        )
    return "llm"


def _has_store(conn: Any) -> bool:
    """Whether the file has llm's message store (llm 0.32 and later)."""
    return {"threads", "turns", "messages"} <= table_names(conn)


def _held(
    conn: Any, plan: ConversationPlan
) -> dict[str, tuple[str, str | None, bool]] | None:
    """The nodes of the conversation the file holds (by the import's ids: their
    thread, tip and whether at their thread's tip); None where its first
    thread is not in the file."""
    if not _has_store(conn):
        return None
    execute = conn.execute
    if not execute("select 1 from threads where id = ?", [plan.thread_id]).fetchone():
        return None
    node_of = {
        turn.turn_id: turn.record["id"] for t in plan.threads for turn in t.turns
    }
    rows = execute(
        "select turns.id, turns.thread_id, turns.tip_message_hash,"
        " threads.tip_message_hash is turns.tip_message_hash from turns"
        " join threads on threads.id = turns.thread_id"
        " where turns.id in (select value from json_each(?))",
        [json.dumps(list(node_of))],
    )
    return {node_of[row[0]]: (row[1], row[2], bool(row[3])) for row in rows}


def _status(held: Collection[str] | None, plan: ConversationPlan) -> tuple[str, int]:
    """ "new", "skipped" or "grown", and the nodes to write."""
    if held is None:
        return "new", plan.node_count
    new = plan.node_count - len(held)
    return ("grown" if new else "skipped"), new


def _plans(
    export: Any, empty: list[tuple[str, str | None]]
) -> Iterator[ConversationPlan]:
    """Every conversation with nodes, planned one at a time as the export streams, then
    the later copies of those it lists twice; the others go into `empty`."""
    from convgraph.sources.chat.exports import conversation_records

    kind = export.format or ""
    for conversation in export.conversations():
        if records := conversation_records(conversation, kind):
            yield plan_conversation(conversation.id, conversation.name, records, kind)
        else:
            empty.append((conversation.id, conversation.name))
    # Written as a grown export is: the nodes the first copy lacks.
    for item in export.repeated:
        conversation = export._parse(item)
        if records := conversation_records(conversation, kind):
            yield plan_conversation(conversation.id, conversation.name, records, kind)


def import_export(
    source: str | os.PathLike[str],
    db: str | os.PathLike[str] | None = None,
    *,
    dry_run: bool = False,
    timeout: float | None = None,
    progress: ProgressCallback | None = None,
) -> ImportSummary:
    """Write the conversations of a chat export (`source`: a zip, its JSON or a
    folder) into llm's database (`db`, llm's own when None; made where missing).
    Raises `DatabaseError` (the source is not a chat export, or cannot be read),
    `ImportRefused` (the target is the export itself or not an llm database, or
    llm is missing), `DatabaseLocked` (another writer kept the file busy; the
    conversations written before stay)."""
    from convgraph.sources import open_logs
    from convgraph.sources.chat.exports import ChatExport
    from convgraph.store.transaction import database_path

    source = Path(source)
    target = database_path(db)
    export = open_logs(source)
    if not isinstance(export, ChatExport):
        export.close()
        raise DatabaseError(
            f"{source} is an llm database, not a ChatGPT, Claude.ai or Open WebUI export"
        )
    kind = check_target(source, target)
    summary = ImportSummary(source, target, dry_run, created=kind == "new")
    if progress is not None:
        _count_bytes(export, progress)

    written: dict[str, ConversationResult] = {}

    def record(plan: ConversationPlan, status: str, nodes: int, threads: int) -> None:
        if plan.conversation_id in written:
            # A later copy of a conversation this run wrote: one result.
            written[plan.conversation_id].nodes += nodes
            written[plan.conversation_id].threads += threads
            return
        result = ConversationResult(
            plan.conversation_id, plan.name, plan.thread_id, nodes, threads, status
        )
        if "import" in status:
            written[plan.conversation_id] = result
        summary.conversations.append(result)

    if dry_run:
        # One read-only connection for the whole run: nothing is written.
        conn = (
            None
            if kind == "new"
            else sqlite3.connect(f"{target.resolve().as_uri()}?mode=ro", uri=True)
        )
        try:
            if conn is not None:
                summary.upgraded = not _has_store(conn)
            # What this run would have written: a conversation listed twice.
            planned: dict[str, set[str]] = {}
            for plan in _plans(export, summary.empty):
                found = None if conn is None else _held(conn, plan)
                held = None if found is None else set(found)
                nodes = {turn.record["id"] for t in plan.threads for turn in t.turns}
                if plan.conversation_id in planned:
                    held = (held or set()) | (nodes & planned[plan.conversation_id])
                planned.setdefault(plan.conversation_id, set()).update(nodes)
                status, count = _status(held, plan)
                made = len(plan.threads) if status == "new" else 0
                record(plan, DRY.get(status, status), count, made)
        finally:
            if conn is not None:
                conn.close()
        return summary

    require_llm("importing writes llm's database with llm's own code", ImportRefused)
    import sqlite_utils
    from llm.logs import LogStore

    target.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(
        target,
        timeout=WRITE_BUSY_TIMEOUT_SECONDS if timeout is None else timeout,
        isolation_level=None,
    )
    conn.row_factory = sqlite3.Row
    try:
        with reporting_locks(conn):
            database = sqlite_utils.Database(conn)
            before = set(database.table_names())
            # llm's migrations in one transaction: a kill leaves the file as it was.
            upgrade_llm_tables(conn)
            store = LogStore(database)  # type: ignore[no-untyped-call]
            summary.upgraded = kind == "llm" and not {"threads", "turns"} <= before
            origin = str(source.resolve())

            def write(plan: ConversationPlan) -> tuple[str, int, int]:
                held = _held(conn, plan)
                status, count = _status(held, plan)
                threads = write_conversation(store, plan, held, origin) if count else 0
                return status, count, threads

            for plan, (status, count, threads) in batched_writes(
                conn,
                _plans(export, summary.empty),
                write,
                weight=lambda plan: plan.node_count,
                timeout=timeout,
            ):
                record(plan, "imported" if status == "new" else status, count, threads)
    finally:
        conn.close()
    return summary


#: A status as a dry run says it.
DRY = {"new": "would import", "grown": "would grow"}

#: The phase an import reports, in bytes of the export's JSON read.
IMPORTING = "importing conversations"


def _count_bytes(export: Any, report: ProgressCallback) -> None:
    """Make the export's streams (its `_files`, whose `open` is replaced) tell
    `report` the bytes of JSON read against their sum: the one size known before
    the import begins."""
    import dataclasses
    import io
    import itertools
    import zipfile

    def size(file: Any) -> int:
        if not file.in_zip:
            return os.path.getsize(file.name)
        with zipfile.ZipFile(export.path) as archive:
            return archive.getinfo(file.name[len(str(export.path)) + 1 :]).file_size

    sizes = [size(file) for file in export._files]
    total = sum(sizes)
    step = max(1, total // 200)
    reported = [0]

    class Counted(io.RawIOBase):
        """A file's bytes as they are read, told to `report` now and then."""

        def __init__(self, stream: Any, before: int):
            self.stream, self.done = stream, before

        def readable(self) -> bool:
            return True

        def readinto(self, buffer: Any) -> int:
            data = self.stream.read(len(buffer))
            buffer[: len(data)] = data
            self.done += len(data)
            if self.done - reported[0] >= step or (not data and self.done):
                reported[0] = self.done
                report(IMPORTING, min(self.done, total), total)
            return len(data)

        def close(self) -> None:
            self.stream.close()
            super().close()

    def counted(file: Any, before: int) -> Any:
        def open_counted() -> Any:
            return io.BufferedReader(Counted(file.open(), before))

        return dataclasses.replace(file, open=open_counted)

    starts = list(itertools.accumulate(sizes, initial=0))[:-1]
    export._files = [
        counted(file, before)
        for file, before in zip(export._files, starts, strict=True)
    ]
    report(IMPORTING, 0, total)
