"""Import the conversations of a ChatGPT, Claude.ai or Open WebUI export into llm's
message store, so `llm logs` lists them and `llm -c --cid` goes on from any branch. A
prompt never answered ends at an empty assistant message."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from convgraph.errors import DatabaseError, ImportRefused
from convgraph.sources.llm.files import is_sqlite_file
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


@dataclass
class ConversationResult:
    """What became of one conversation of the export."""

    conversation_id: str
    name: str | None
    #: The current branch's thread: what `llm -c --cid` continues.
    thread_id: str
    nodes: int
    threads: int
    #: "imported", "would import", "skipped" (already imported) or
    #: "changed" (imported before; the export has nodes the file lacks).
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

    def _written(self) -> list[ConversationResult]:
        return [
            c for c in self.conversations if c.status in ("imported", "would import")
        ]

    @property
    def imported(self) -> int:
        """Conversations written (or that would be)."""
        return len(self._written())

    @property
    def nodes(self) -> int:
        """Nodes written as turns (or that would be)."""
        return sum(c.nodes for c in self._written())

    @property
    def threads(self) -> int:
        """Threads written (or that would be)."""
        return sum(c.threads for c in self._written())

    @property
    def skipped(self) -> int:
        """Conversations already in the file, left as they are."""
        return len(self.conversations) - self.imported

    @property
    def changed(self) -> list[ConversationResult]:
        """Skipped conversations whose export holds nodes the file lacks."""
        return [c for c in self.conversations if c.status == "changed"]


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


def write_conversation(store: Any, plan: ConversationPlan) -> None:
    """Write one planned conversation inside the caller's transaction: its
    messages node by node (each chain from its parent's tip), then its threads,
    turns and search rows, a statement each for the whole conversation."""
    import llm
    from llm.logs import TURN_SEARCH_INSERT_SQL

    conn = store.db.conn
    tips: dict[str, str | None] = {}
    turn_rows: list[dict[str, Any]] = []
    thread_rows: list[tuple[str, str | None, str | None, str | None, str]] = []
    # One moment for the conversation's threads, in llm's form.
    now = str(datetime.now(UTC))
    for thread in plan.threads:
        tip = tips[thread.fork_node] if thread.fork_node is not None else None
        for turn in thread.turns:
            given, answer = _messages(llm, turn, turn.parent is None)
            above = tips[turn.parent] if turn.parent is not None else None
            parent_hash = _ensure_chain(conn, given, above)
            tip = _ensure_chain(conn, answer, parent_hash)
            tips[turn.record["id"]] = tip
            turn_rows.append(_turn_row(turn, thread.thread_id, parent_hash, tip))
        # The thread's tip is its last turn's, as llm moves it turn by turn.
        thread_rows.append((thread.thread_id, plan.name, tip, thread.forked_from, now))
    if not turn_rows:
        return
    conn.executemany(
        "insert into threads (id, name, tip_message_hash, forked_from,"
        " datetime_utc) values (?, ?, ?, ?, ?)",
        thread_rows,
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
        tables = {
            row[0]
            for row in conn.execute(
                "select name from sqlite_master where type = 'table'"
            )
        }
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
    found = conn.execute(
        "select count(*) from sqlite_master where type = 'table'"
        " and name in ('threads', 'turns', 'messages')"
    ).fetchone()[0]
    return bool(found == 3)


def _status(conn: Any, plan: ConversationPlan) -> str:
    """ "new", "skipped" or "changed": whether the conversation's first thread is
    in the file, and whether all its turns are."""
    execute = conn.execute
    if not _has_store(conn):
        return "new"
    if not execute("select 1 from threads where id = ?", [plan.thread_id]).fetchone():
        return "new"
    found = execute(
        "select count(*) from turns where id in (select value from json_each(?))",
        [json.dumps(plan.turn_ids)],
    ).fetchone()[0]
    return "skipped" if found == len(plan.turn_ids) else "changed"


def _plans(
    export: Any, empty: list[tuple[str, str | None]]
) -> Iterator[ConversationPlan]:
    """Every conversation with nodes, planned one at a time as the export
    streams; the others go into `empty`."""
    from convgraph.sources.chat.exports import conversation_records

    for conversation in export.conversations():
        records = conversation_records(conversation, export.format or "")
        if records:
            yield plan_conversation(
                conversation.id, conversation.name, records, export.format or ""
            )
        else:
            empty.append((conversation.id, conversation.name))


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

    Raises
    ------
    DatabaseError
        The source is not a chat export, or cannot be read.
    ImportRefused
        The target is the export itself or not an llm database, or llm is
        missing.
    DatabaseLocked
        Another writer kept the file busy; conversations written before stay."""
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

    def record(plan: ConversationPlan, status: str) -> None:
        result = ConversationResult(
            plan.conversation_id,
            plan.name,
            plan.thread_id,
            plan.node_count,
            len(plan.threads),
            status,
        )
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
            for plan in _plans(export, summary.empty):
                status = "new" if conn is None else _status(conn, plan)
                record(plan, "would import" if status == "new" else status)
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

            def write(plan: ConversationPlan) -> str:
                status = _status(conn, plan)
                if status == "new":
                    write_conversation(store, plan)
                return status

            for plan, status in batched_writes(
                conn,
                _plans(export, summary.empty),
                write,
                weight=lambda plan: plan.node_count,
                timeout=timeout,
            ):
                record(plan, "imported" if status == "new" else status)
    finally:
        conn.close()
    return summary


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
        member = file.name[len(str(export.path)) + 1 :]
        with zipfile.ZipFile(export.path) as archive:
            return archive.getinfo(member).file_size

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
