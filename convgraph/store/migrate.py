"""Add the `parent_response_id` column to a legacy database, safely
(docs/design.md#three-generations-of-llms-database).

The migration is a plan and its application. The plan looks at what the file
already has: the column (nullable TEXT referencing `responses.id`), its index
and one on `conversation_id`, convgraph's triggers (`convgraph.store.rules`)
and the record of the migration in `_convgraph_migrations`. Only what is
missing is done, so a second run finds nothing to do and does not write at
all: not a transaction, not a byte. The record is kept apart from llm's
`_llm_migrations`, whose names llm alone assigns.

llm may be logging while the file migrates, so the work is cut into short
exclusive transactions with a pause between them
(`convgraph.store.transaction.exclusive_transaction`): llm's writes wait a
fraction of a second, never fail. Each transaction is whole, and each state
between two of them is one that llm and convgraph read as they read any
file: the column without the rules (as a bare ALTER TABLE by hand leaves it),
or some conversations linked by `--link-linear` and not yet the others (every
link valid). A process killed at any moment leaves the file as it was,
migrated, or in such a state, and running `migrate` again finishes the job:
an unfinished `--link-linear` is marked in `_convgraph_migrations` and goes
on even without the option. The rules go in last, with the record.

The record's time is when the column was added: from then on an llm older
than 0.32 still logging into the file writes rows with a NULL parent, which
the placing rule (`rules.PLACING_TRIGGER`) places as they are written, and
the reader places where that rule was missing (`convgraph.sources.llm.old_writers`);
a later run that puts lost rules back keeps the first time.

A file that llm has not yet brought to its current schema is refused: llm's
migration m014 rebuilds `responses`, which would drop the rules silently.
Stored links that already break the rules are listed before the rules go in.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from convgraph.errors import DatabaseError, MigrationRefused
from convgraph.links.integrity import (
    CROSS_CONVERSATION,
    MISSING_PARENT,
    SELF_PARENT,
    Problem,
    break_cycles,
    link_problem,
)
from convgraph.sources.llm.old_writers import MIGRATION_NAME, RECORD_TABLE
from convgraph.sources.source import ProgressCallback, no_progress
from convgraph.store.responses import utc_now
from convgraph.store.rules import (
    CONVERSATION_INDEX_NAME,
    CONVERSATION_INDEX_SQL,
    INDEX_NAME,
    INDEX_SQL,
    PARENT_COLUMN,
    install_rules,
    migration_recorded,
    missing_rules,
    response_columns,
)
from convgraph.store.transaction import (
    WRITER_GAP_SECONDS,
    connect_read_write,
    database_path,
    exclusive_transaction,
    pause_for_writers,
    reporting_locks,
)

__all__ = [
    "MIGRATION_NAME",
    "RECORD_TABLE",
    "MigrationPlan",
    "MigrationRefused",
    "MigrationResult",
    "backup_database",
    "broken_links",
    "migrate",
    "plan_migration",
]

_T = TypeVar("_T")

#: The mark of a `--link-linear` begun and not yet finished.
LINKING_MARK = "parent_response_id:link-linear unfinished"

#: llm's migrations that rebuild `responses` (sqlite-utils' transform(),
#: which drops every trigger on the table). A file must have had them before
#: the rules go in. No later llm migration (up to m027, llm 0.36) rebuilds it.
RESPONSES_REBUILDS = ("m014_schemas",)

#: How long one `--link-linear` transaction should hold the lock; the batch
#: size adapts to it.
LINK_BATCH_SECONDS = 0.2

COLUMN_SQL = (
    f"ALTER TABLE responses ADD COLUMN {PARENT_COLUMN} TEXT REFERENCES responses(id)"
)

# Each response's predecessor in its conversation, in the log order the
# readers use (datetime_utc, then id); a response outside any conversation is
# a conversation of its own.
_LINEAR_SQL = """
select id, lag(id) over (
  partition by coalesce(conversation_id, id)
  order by coalesce(datetime_utc, ''), id
) as previous
from responses
"""

#: Called with each step's name inside its transaction, after its writes and
#: before its commit: the seam where the tests kill a migration.
after_step: Callable[[str], None] | None = None


@dataclass
class MigrationPlan:
    """What migrating one database would change.

    `link` is how many responses `--link-linear` would give a parent (0 when
    it was not asked for or there is nothing to link); `triggers` the rules
    to create; `broken` the stored links that already break the rules (they
    stay as they are); `notes` what the user should know that changes
    nothing.
    """

    path: Path
    add_column: bool = False
    link: int = 0
    add_index: bool = False
    add_conversation_index: bool = False
    triggers: list[str] = field(default_factory=list)
    add_record: bool = False
    broken: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: Whether the file keeps its conversations in llm's message store
    #: alone (llm 0.32 and later: branches are recorded there) with an
    #: empty legacy `responses` table: it needs no migration, which would
    #: only prepare that table for an llm older than 0.32.
    store_only: bool = False

    @property
    def needed(self) -> bool:
        """Whether anything would change."""
        return bool(
            self.add_column
            or self.link
            or self.add_index
            or self.add_conversation_index
            or self.triggers
            or self.add_record
        )

    def steps(self) -> list[str]:
        """The changes, one sentence each, in the order they are made."""
        steps = []
        if self.add_column:
            steps.append(
                f"add column responses.{PARENT_COLUMN}"
                " (nullable TEXT, references responses.id)"
            )
        if self.add_index:
            steps.append(f"create index {INDEX_NAME}")
        if self.add_conversation_index:
            steps.append(f"create index {CONVERSATION_INDEX_NAME}")
        if self.link:
            steps.append(
                f"link {self.link} responses to the one before them in their"
                " conversation (--link-linear)"
            )
        for name in self.triggers:
            steps.append(f"create trigger {name}")
        if self.add_record:
            steps.append(f"record the migration in {RECORD_TABLE}")
        return steps


@dataclass
class MigrationResult:
    """What `migrate` did: the plan, whether it was applied, the backup."""

    plan: MigrationPlan
    applied: bool
    backup: Path | None = None


def plan_migration(
    conn: sqlite3.Connection, path: Path, link_linear: bool = False
) -> MigrationPlan:
    """Look at the database and say what migrating it would change.

    Raises
    ------
    DatabaseError
        There is no legacy `responses` table.
    MigrationRefused
        llm has not brought the file to its schema yet, or `--link-linear`
        was asked for but responses already have parents that are not the
        linear ones (linking would overwrite the tree).
    """
    columns = response_columns(conn)
    if not columns:
        raise DatabaseError(
            f"{path} has no legacy responses table: nothing to migrate"
            " (the message store keeps its tree in messages.parent_hash)"
        )
    _require_llm_schema(conn, path)
    plan = MigrationPlan(path)
    plan.add_column = PARENT_COLUMN not in columns
    resuming = _linking_unfinished(conn)
    if link_linear or resuming:
        plan.link = _links_to_make(conn, plan.add_column, resuming)
    plan.add_index = not _has_index_on(conn, PARENT_COLUMN)
    plan.add_conversation_index = not _has_index_on(conn, "conversation_id")
    plan.triggers = missing_rules(conn)
    plan.add_record = plan.add_column or not migration_recorded(conn)
    plan.store_only = _has_message_store(conn) and not _has_rows(conn)
    if plan.add_column and not link_linear and _has_rows(conn):
        plan.notes.append(
            "existing responses get no parent, so each becomes a root of its"
            " conversation; --link-linear keeps them as chains"
        )
    if resuming and not link_linear:
        plan.notes.append(
            "an earlier `migrate --link-linear` was interrupted: linking the"
            " rest of the responses"
        )
    if not plan.add_column and not _column_references_responses(conn):
        plan.notes.append(
            f"responses.{PARENT_COLUMN} was added without REFERENCES; the"
            " triggers hold it to the same rule (its parent must exist)"
        )
    if plan.triggers and not plan.add_column:
        plan.broken = broken_links(conn)
    if plan.broken:
        # One note each, in `check`'s words: a note is one line of output.
        plan.notes.append(
            f"{len(plan.broken)} responses already break the tree's rules (as"
            " `convgraph check` lists them below); the rules refuse new breaks,"
            " these stay as they are until you fix them"
        )
        plan.notes.extend(
            f"{problem.kind}: {problem.message}" for problem in plan.broken
        )
    return plan


def _require_llm_schema(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse a file whose `responses` llm will still rebuild.

    A file without `_llm_migrations` was not made by llm (the original
    notes' experiment, a hand-made file): there is nothing to wait for. A file
    whose log names migrations this convgraph does not know was opened by a
    newer llm, which has run the rebuilds too.
    """
    has_log = conn.execute(
        "select 1 from sqlite_master where type = 'table' and name = '_llm_migrations'"
    ).fetchone()
    if not has_log:
        return
    applied = {row[0] for row in conn.execute("select name from _llm_migrations")}
    pending = [name for name in RESPONSES_REBUILDS if name not in applied]
    if pending:
        raise MigrationRefused(
            f"llm has not yet brought {path} to its current schema (its"
            f" migration {', '.join(pending)}, which rebuilds the responses"
            " table, has not run): run llm once (0.23 or later; `llm logs status`"
            " will do) and migrate again; nothing was changed"
        )


def _has_message_store(conn: sqlite3.Connection) -> bool:
    """Whether llm 0.32 or later has made its message store in the file."""
    found = conn.execute(
        "select 1 from sqlite_master where type = 'table' and name = 'turns'"
    ).fetchone()
    return found is not None


def _has_rows(conn: sqlite3.Connection) -> bool:
    return conn.execute("select 1 from responses limit 1").fetchone() is not None


def _linking_unfinished(conn: sqlite3.Connection) -> bool:
    return migration_recorded(conn, LINKING_MARK)


def _links_to_make(
    conn: sqlite3.Connection, adding_column: bool, resuming: bool = False
) -> int:
    """How many parents `--link-linear` would set (see `plan_migration`)."""
    if adding_column:
        return int(
            conn.execute(
                "select count(conversation_id) - count(distinct conversation_id)"
                " from responses"
            ).fetchone()[0]
        )
    linked, different, to_link = conn.execute(
        f"""
        select count(r.{PARENT_COLUMN}),
               coalesce(sum(r.{PARENT_COLUMN} is not l.previous), 0),
               coalesce(sum(l.previous is not null
                            and r.{PARENT_COLUMN} is not l.previous), 0)
        from responses r join ({_LINEAR_SQL}) l using (id)
        """
    ).fetchone()
    if different == 0:
        return 0  # already linked as chains: a second run has nothing to do
    if linked == 0 or resuming:
        # Resuming our own interrupted run: what it linked is linear already.
        return int(to_link)
    raise MigrationRefused(
        f"{linked} responses already have a parent: --link-linear would"
        " overwrite the tree; nothing was changed"
    )


def _has_index_on(conn: sqlite3.Connection, column: str) -> bool:
    """Whether some index on responses starts with `column` (ours, or one the
    user made, as the original notes suggested for the parent column)."""
    for index in conn.execute("pragma index_list(responses)").fetchall():
        first = conn.execute(f"pragma index_info('{index[1]}')").fetchone()
        if first is not None and first[2] == column:
            return True
    return False


def _column_references_responses(conn: sqlite3.Connection) -> bool:
    return any(
        row[3] == PARENT_COLUMN and row[2] == "responses"
        for row in conn.execute("pragma foreign_key_list(responses)")
    )


def broken_links(conn: sqlite3.Connection) -> list[Problem]:
    """The stored parent links that break the tree's rules, as `check`
    reports them: self-parents, missing parents, parents in another
    conversation, then one link of each cycle among the rest."""
    links = conn.execute(
        f"""
        select r.id, r.{PARENT_COLUMN}, r.conversation_id,
               p.id is not null, coalesce(p.conversation_id, p.id)
        from responses r left join responses p on p.id = r.{PARENT_COLUMN}
        where r.{PARENT_COLUMN} is not null
        order by coalesce(r.datetime_utc, ''), r.id
        """
    ).fetchall()
    problems = []
    parents: dict[str, str | None] = {}
    conversation_of: dict[str, str | None] = {}
    for node, parent, conversation, exists, parent_conversation in links:
        conversation_of[node] = conversation
        if parent == node:
            problems.append(link_problem(SELF_PARENT, node, parent, conversation))
        elif not exists:
            problems.append(link_problem(MISSING_PARENT, node, parent, conversation))
        elif parent_conversation != (
            conversation if conversation is not None else node
        ):
            problems.append(
                link_problem(
                    CROSS_CONVERSATION, node, parent, conversation, parent_conversation
                )
            )
        else:
            parents[node] = parent
    for parent in list(parents.values()):
        parents.setdefault(parent, None)  # type: ignore[arg-type]
    problems.extend(break_cycles(parents, list(parents), conversation_of))
    return problems


# -- applying the plan, in short transactions -----------------------------------


def _in_transaction(conn: sqlite3.Connection, name: str, work: Callable[[], _T]) -> _T:
    """Run `work` in one short exclusive transaction, then let waiting
    writers in."""
    with exclusive_transaction(conn):
        result = work()
        if after_step is not None:
            after_step(name)
    pause_for_writers()
    return result


def _apply(
    conn: sqlite3.Connection, plan: MigrationPlan, report: ProgressCallback
) -> None:
    """Make the plan's changes. Each step checks again, under the lock, that
    it is still needed: another writer may have changed the file between.
    `report` is told each step as it begins, the linking response by
    response (`_link_linear`)."""

    # When this run added the column: from then on a NULL parent may be an
    # older llm's, which the reader places (convgraph.sources.llm.old_writers).
    added_at: list[str] = []

    def add_column() -> None:
        if PARENT_COLUMN not in response_columns(conn):
            conn.execute(COLUMN_SQL)
            added_at.append(utc_now())
        if plan.link:
            _create_record_table(conn)
            conn.execute(
                f"insert or ignore into {RECORD_TABLE} (name, applied_at)"
                " values (?, ?)",
                [LINKING_MARK, added_at[0] if added_at else utc_now()],
            )

    def add_index() -> None:
        if not _has_index_on(conn, PARENT_COLUMN):
            conn.execute(INDEX_SQL)

    def add_conversation_index() -> None:
        # Not a tree rule: it lets a reader fetch one conversation without
        # scanning every response (llm never made this index), and lets the
        # linking below go a few conversations at a time.
        if not _has_index_on(conn, "conversation_id"):
            conn.execute(CONVERSATION_INDEX_SQL)

    def add_rules() -> None:
        # The rules go in after the links: the linear links are valid by
        # construction, and checking each one would walk its whole chain.
        install_rules(conn)
        _create_record_table(conn)
        # The first migration's time stays: a run that puts lost rules back
        # must not move it past rows an older llm logged meanwhile. It is
        # when the column was added (by this run, or by the interrupted run
        # this one finishes), else now.
        resumed = conn.execute(
            f"select applied_at from {RECORD_TABLE} where name = ?", [LINKING_MARK]
        ).fetchone()
        since = added_at[0] if added_at else resumed[0] if resumed else utc_now()
        conn.execute(
            f"insert or ignore into {RECORD_TABLE} (name, applied_at) values (?, ?)",
            [MIGRATION_NAME, since],
        )
        conn.execute(f"delete from {RECORD_TABLE} where name = ?", [LINKING_MARK])

    if plan.add_column or plan.link:
        report("adding the parent column", 0, None)
        _in_transaction(conn, "add column", add_column)
    if plan.add_index:
        report("indexing the parents", 0, None)
        _in_transaction(conn, "add index", add_index)
    if plan.add_conversation_index or plan.link:
        report("indexing the conversations", 0, None)
        _in_transaction(conn, "add conversation index", add_conversation_index)
    if plan.link:
        _link_linear(conn, report)
    report("adding the rules", 0, None)
    _in_transaction(conn, "add rules", add_rules)


#: The phase of `--link-linear`, counted in responses.
LINKING = "linking responses"


def _create_record_table(conn: sqlite3.Connection) -> None:
    conn.execute(
        f"create table if not exists {RECORD_TABLE}"
        " (name TEXT PRIMARY KEY, applied_at TEXT)"
    )


def _link_linear(conn: sqlite3.Connection, report: ProgressCallback) -> None:
    """Link every conversation as a chain, a few conversations per
    transaction, in `conversation_id` order along its index; `report` is
    told the responses of the conversations linked so far."""
    start: str | None = None
    size = 20_000
    # A count along the conversation index made just before.
    total = conn.execute("select count(conversation_id) from responses").fetchone()[0]
    done = 0
    report(LINKING, 0, total)
    while True:
        began = time.perf_counter()
        begin = start
        start = end = _in_transaction(
            conn, "link", functools.partial(_link_batch, conn, start, size)
        )
        # Counted along the conversation index, outside the transaction.
        done = total if end is None else done + _responses_between(conn, begin, end)
        report(LINKING, min(done, total), total)
        if end is None:
            return
        # Aim each batch at LINK_BATCH_SECONDS, whatever the machine.
        elapsed = max(time.perf_counter() - began - WRITER_GAP_SECONDS, 0.001)
        size = int(min(max(size * LINK_BATCH_SECONDS / elapsed, 1_000), 500_000))


def _responses_between(conn: sqlite3.Connection, start: str | None, end: str) -> int:
    """How many responses a batch from `start` (None: the first) up to `end`
    linked."""
    lower = "" if start is None else " and conversation_id >= ?"
    return int(
        conn.execute(
            f"select count(*) from responses where conversation_id < ?{lower}",
            [end, *([] if start is None else [start])],
        ).fetchone()[0]
    )


def _link_batch(conn: sqlite3.Connection, start: str | None, size: int) -> str | None:
    """Link the conversations from `start` on, about `size` responses of
    them (whole conversations); return the conversation the next batch
    starts at, None after the last."""
    lower = "conversation_id is not null" if start is None else "conversation_id >= ?"
    bounds = [] if start is None else [start]
    row = conn.execute(
        f"select conversation_id from responses where {lower}"
        " order by conversation_id limit 1 offset ?",
        [*bounds, size],
    ).fetchone()
    end = None if row is None else row[0]
    if end is not None and end == start:
        # One conversation longer than the batch: take it whole.
        end = conn.execute(
            "select min(conversation_id) from responses where conversation_id > ?",
            [start],
        ).fetchone()[0]
    upper = "" if end is None else " and conversation_id < ?"
    # Rows without a conversation are conversations of their own: no links.
    linear = f"""
        select id, lag(id) over (
          partition by conversation_id order by coalesce(datetime_utc, ''), id
        ) as previous
        from responses where {lower}{upper}
    """
    # llm's AFTER UPDATE trigger re-indexes a row's prompt and response in
    # responses_fts on any update. Linking changes neither, so the trigger is
    # set aside for the update and put back, word for word, in the same
    # transaction: a million responses are not re-indexed for nothing.
    fts_trigger = conn.execute(
        "select sql from sqlite_master where type = 'trigger' and name = 'responses_au'"
        " and tbl_name = 'responses'"
    ).fetchone()
    if fts_trigger is not None:
        conn.execute('drop trigger "responses_au"')
    conn.execute(
        f"""
        with linear as ({linear})
        update responses set {PARENT_COLUMN} = linear.previous
        from linear
        where linear.id = responses.id and linear.previous is not null
          and responses.{PARENT_COLUMN} is not linear.previous
        """,
        [*bounds, *([] if end is None else [end])],
    )
    if fts_trigger is not None:
        conn.execute(fts_trigger[0])
    return end


def backup_database(
    path: str | os.PathLike[str], target: str | os.PathLike[str]
) -> Path:
    """Copy the database to a new file with SQLite's online backup API.

    The copy is read through a read-only connection of its own, in one step,
    so it is one consistent state of the file.

    Raises
    ------
    MigrationRefused
        `target` already exists (it is never overwritten).
    """
    from convgraph.sources import connect_read_only

    target = Path(target)
    if target.exists():
        raise MigrationRefused(
            f"backup file {target} already exists; nothing was changed"
        )
    source = connect_read_only(path)
    copy = sqlite3.connect(target)
    try:
        source.backup(copy)
    except BaseException:
        copy.close()
        target.unlink(missing_ok=True)
        raise
    finally:
        source.close()
    copy.close()
    return target


def migrate(
    db: str | os.PathLike[str] | None = None,
    *,
    backup: str | os.PathLike[str] | None = None,
    dry_run: bool = False,
    link_linear: bool = False,
    timeout: float | None = None,
    progress: ProgressCallback | None = None,
) -> MigrationResult:
    """Migrate a legacy database: the parent column, its index and the rules.

    Parameters
    ----------
    db
        The database; llm's own logs.db when None.
    backup
        Copy the database there first (SQLite's backup API, just before the
        first change).
    dry_run
        Only plan: open the file read-only and change nothing.
    link_linear
        Set each existing response's parent to the response before it in its
        conversation (log order: datetime_utc, then id).
    timeout
        Seconds to wait for a moment when no other connection uses the file.
    progress
        Told each step as it begins, `(phase, done, total)`: "planning",
        "backing up", "adding the parent column", "indexing the parents",
        "indexing the conversations", "linking responses" (a report per
        transaction), "adding the rules".

    Returns
    -------
    MigrationResult
        With `applied` False when nothing needed doing (or on a dry run).

    Raises
    ------
    DatabaseError, DatabaseLocked, MigrationRefused
    """
    path = database_path(db)
    report = progress or no_progress
    report("planning", 0, None)
    if dry_run:
        from convgraph.sources import connect_read_only

        conn = connect_read_only(path)
        try:
            return MigrationResult(plan_migration(conn, path, link_linear), False)
        finally:
            conn.close()

    if backup is not None and Path(backup).exists():
        raise MigrationRefused(
            f"backup file {backup} already exists; nothing was changed"
        )
    conn = connect_read_write(path, timeout)
    try:
        with reporting_locks(conn):
            # Planned outside any transaction: an up-to-date file is only
            # read, so a second run leaves it byte for byte as it was.
            plan = plan_migration(conn, path, link_linear)
            if backup is not None:
                report("backing up", 0, None)
            copy = backup_database(path, backup) if backup is not None else None
            if plan.needed:
                _apply(conn, plan, report)
            return MigrationResult(plan, plan.needed, copy)
    finally:
        conn.close()
