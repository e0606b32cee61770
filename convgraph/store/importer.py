"""Import the conversations of a ChatGPT, Claude.ai or Open WebUI export into
llm's database, as llm's message store, so that `llm logs` lists them and
`llm -c --cid` goes on from any branch.

Each conversation of the export becomes one conversation tree of llm's message
store (docs/design.md#three-generations-of-llms-database): a node becomes a
turn, its prompt a user message, its response an assistant message, its system
prompt a system message at the root of the chain; the branch the person was on
last (the active path) is the conversation's first thread, and every other
branch a thread forked from the thread it leaves, at the message where it
leaves it (the plan: `convgraph.store.import_plan`). Messages are hashed by
llm's own `message_hash`, the search rows written with llm's own SQL. The
message, part, thread and turn rows are written by hand, column for column as
`LogStore.ensure_chain`, `create_thread` and `log` write them, a prepared
statement each: `log` takes a whole history per call and hashes it again, which
for a 2,000-step conversation is four million hashes and lookups, it cannot
keep the export's ids, times and model names, and its sqlite-utils inserts (as
`ensure_chain`'s) cost most of an import's time (tests/test_import.py proves
the rows equal to `log`'s).

An import is recognised by its ids, which are made from the export's: every
turn and thread id is a ULID whose time is the node's original time (so
`llm logs` and `llm -c` order them among llm's own by when they happened)
and whose random part is a hash of the app, the conversation id and the node
id. A conversation whose first thread is already in the file is skipped, so a
second import of the same export writes nothing. Conversations are written
in exclusive transactions, taken only when no other connection holds a lock:
many conversations a transaction (up to half a second of writing) while
nobody else uses the file, one each once another writer is seen, and the
file is left free for a moment after each half second of them, so an llm
logging beside the import loses nothing; each conversation is a savepoint,
whole or absent (`convgraph.store.transaction.batched_writes`; a 2,000-node
conversation holds the lock for about 1.2 s).

Where the store says less than an export: a prompt never answered ends at an
assistant message without parts (ending at the prompt, the turn's tip would
be its own input); an answer above the first prompt adds no user message; the
system prompt is a system message at the root of the chain, as llm keeps it,
so one that changes inside a conversation reads back as its root's. A file
that does not exist is made by llm's own migrations, and an older llm's file
is brought up to date by them first, as llm's next command would, but in one
transaction (`convgraph.store.upgrade`): killed meanwhile, the file is as it
was.
"""

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

#: The tables that make a file llm's: its migrations' record, the legacy
#: responses, or the message store.
LLM_TABLES = {"_llm_migrations", "responses", "threads"}


# -- writing ---------------------------------------------------------------------


@dataclass
class ConversationResult:
    """What became of one conversation of the export."""

    conversation_id: str
    name: str | None
    #: The thread of the conversation's current branch (the one the export
    #: marks, else the leaf logged last): the id `llm -c --cid` takes to
    #: continue where the conversation was left, and its tree's id.
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
    #: The target was an older llm's file that llm's migrations brought up
    #: to date first.
    upgraded: bool = False
    conversations: list[ConversationResult] = field(default_factory=list)
    #: The export's conversations without a prompt or an answer (id, name):
    #: nothing to write, and left out.
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
        # A prompt never answered ends at an assistant message without parts.
        # Ending at the prompt itself (as llm does for a call that returned
        # nothing) would make the turn's tip its own input, and readers that
        # look for the nearest tip above a turn's input (convgraph's among
        # them) would take the turn for its own parent and lose its place.
        answer = [Message(role="assistant", parts=[])]
    else:
        answer = []
    return given, answer


def _turn_row(
    turn: PlannedTurn, thread_id: str, parent_hash: str | None, tip: str | None
) -> dict[str, Any]:
    """The `turns` row, with the columns and values `LogStore.log` gives a
    response without options, schema, tools or provider payload."""
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
    """`LogStore.ensure_chain` for the plain messages an import makes (text
    parts only, no metadata, no fragments or attachments): the same rows,
    hashed by llm's own `message_hash`, written by two prepared statements
    where llm's goes through sqlite-utils a row at a time (most of the
    import's time). tests/test_import.py proves the rows equal to llm's."""
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
            # A part's text is its own column; nothing is left for the
            # payload (llm writes NULL there then).
            conn.executemany(
                "insert into parts (message_hash, position, type, tool_name,"
                " text, payload) values (?, ?, 'text', null, ?, null)",
                [(digest, n, part.text) for n, part in enumerate(message.parts)],
            )
        tip = digest
    return tip


def write_conversation(store: Any, plan: ConversationPlan) -> None:
    """Write one planned conversation (inside the caller's transaction):
    its messages node by node (each node's chain hangs from its parent's
    tip, `_ensure_chain`), then its threads (at their tips: each fork's
    first turn hangs from the message it leaves), its turns and their
    search rows, a statement each for the whole conversation (the rows
    `LogStore.create_thread` and `log` write: sqlite-utils' `insert`, a row
    at a time, looked the table up again each time, half the import)."""
    import llm
    from llm.logs import TURN_SEARCH_INSERT_SQL

    conn = store.db.conn
    tips: dict[str, str | None] = {}
    turn_rows: list[dict[str, Any]] = []
    thread_rows: list[tuple[str, str | None, str | None, str | None, str]] = []
    # One moment for the conversation's threads (llm's create_thread takes
    # the time of each call, its form the same).
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


# -- the target -------------------------------------------------------------------


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def check_target(source: Path, target: Path) -> str:
    """What the target is: "new" (missing or empty: llm's tables will be
    made), "llm" (an llm database).

    Raises
    ------
    ImportRefused
        The target is the export itself, or not an llm database.
    """
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
    """ "new", "skipped" or "changed": whether the conversation's first thread
    is in the file, and whether all its turns are."""
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


# -- the whole import ---------------------------------------------------------------


def _plans(
    export: Any, empty: list[tuple[str, str | None]]
) -> Iterator[ConversationPlan]:
    """Every conversation of the export with nodes, planned, one at a time
    (the export is streamed once); the others are added to `empty`."""
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
    """Write the conversations of a chat export into llm's database.

    Parameters
    ----------
    source
        A ChatGPT, Claude.ai or Open WebUI export (a zip, its JSON, a folder).
    db
        The llm database; llm's own logs.db when None. Made, with llm's
        migrations, when it does not exist.
    dry_run
        Only say what would be written; the file is not opened for writing.
    timeout
        How long each transaction waits for a moment free of other writers.
    progress
        Told how much of the export's JSON has been read, in bytes
        (`("importing conversations", done, total)`, about every half
        percent): the conversations are written as they are read.

    Returns
    -------
    ImportSummary

    Raises
    ------
    DatabaseError
        The source is not a chat export, or cannot be read.
    ImportRefused
        The target is the export itself or not an llm database, or llm is
        not installed.
    DatabaseLocked
        Another writer kept the file busy; conversations written before stay.
    """
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
            # llm's own migrations, all in one transaction: a new file gets
            # llm's tables, an older llm's file is brought up to date, and a
            # kill meanwhile leaves it as it was (convgraph.store.upgrade).
            # LogStore then finds nothing left to migrate.
            upgrade_llm_tables(conn)
            store = LogStore(database)  # type: ignore[no-untyped-call]
            summary.upgraded = kind == "llm" and not {"threads", "turns"} <= before

            def write(plan: ConversationPlan) -> str:
                status = _status(conn, plan)
                if status == "new":
                    write_conversation(store, plan)
                return status

            # Many conversations a transaction while the file is idle, one
            # while another writer uses it (convgraph.store.transaction).
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
    """Make the export's streams tell `report` how many bytes of its JSON
    have been read, against their sum (a zip's members uncompressed): each
    file is opened through a counting stream, so the import is measured by
    the one thing known before it begins, the size of what it reads.

    The export keeps its files in `_files` (`chat_json.ExportFile`, whose
    `open` is replaced here); the stream is read once, in order."""
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
