"""Add the `parent_response_id` column to a legacy database, safely
(docs/design.md#three-generations-of-llms-database)."""

from __future__ import annotations

import functools
import os
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from convgraph.errors import MigrationRefused
from convgraph.sources.llm.old_writers import MIGRATION_NAME, RECORD_TABLE
from convgraph.sources.source import ProgressCallback, no_progress
from convgraph.store.migration_plan import (
    LINKING_MARK,
    MigrationPlan,
    broken_links,
    has_index_on,
    plan_migration,
)
from convgraph.store.responses import utc_now
from convgraph.store.rules import (
    CONVERSATION_INDEX_SQL,
    INDEX_SQL,
    PARENT_COLUMN,
    install_rules,
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

#: How long one `--link-linear` transaction should hold the lock.
LINK_BATCH_SECONDS = 0.2

COLUMN_SQL = (
    f"ALTER TABLE responses ADD COLUMN {PARENT_COLUMN} TEXT REFERENCES responses(id)"
)

#: Called with each step's name before its commit: where tests kill a migration.
after_step: Callable[[str], None] | None = None


@dataclass
class MigrationResult:
    """What `migrate` did: the plan, whether it was applied, the backup."""

    plan: MigrationPlan
    applied: bool
    backup: Path | None = None


def _in_transaction(conn: sqlite3.Connection, name: str, work: Callable[[], _T]) -> _T:
    """Run `work` in one short exclusive transaction, then let writers in."""
    with exclusive_transaction(conn):
        result = work()
        if after_step is not None:
            after_step(name)
    pause_for_writers()
    return result


def _apply(
    conn: sqlite3.Connection, plan: MigrationPlan, report: ProgressCallback
) -> None:
    """Make the plan's changes, each checked again under the lock (another
    writer may have changed the file); `report` is told each step."""

    # When this run added the column: later NULL parents may be an older llm's.
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
        if not has_index_on(conn, PARENT_COLUMN):
            conn.execute(INDEX_SQL)

    def add_conversation_index() -> None:
        # Not a rule: one conversation's read, and the linking, go by it.
        if not has_index_on(conn, "conversation_id"):
            conn.execute(CONVERSATION_INDEX_SQL)

    def add_rules() -> None:
        # The rules go in after the links: the linear links are valid by
        # construction, and checking each one would walk its whole chain.
        install_rules(conn)
        _create_record_table(conn)
        # The first time stays: putting lost rules back must not move it past
        # rows an older llm logged meanwhile.
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
    """Link every conversation as a chain, a few per transaction along the
    `conversation_id` index; `report` is told the responses linked."""
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
    """How many responses the batch from `start` (None: first) to `end` linked."""
    lower, bound = ("", []) if start is None else (" and conversation_id >= ?", [start])
    query = f"select count(*) from responses where conversation_id < ?{lower}"
    return int(conn.execute(query, [end, *bound]).fetchone()[0])


def _link_batch(conn: sqlite3.Connection, start: str | None, size: int) -> str | None:
    """Link whole conversations from `start`, about `size` responses; return
    where the next batch starts, None after the last."""
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
    # llm's AFTER UPDATE trigger re-indexes the text on any update: set aside
    # and put back word for word in the same transaction, as linking changes none.
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
    """Copy the database to `target` with SQLite's online backup API, one
    consistent state; raises MigrationRefused where `target` exists."""
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
    """Migrate a legacy database: the parent column, its index and the rules. Raises
    `DatabaseError`, `DatabaseLocked`, `MigrationRefused`."""
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
            # Planned outside any transaction: an up-to-date file is only read.
            plan = plan_migration(conn, path, link_linear)
            if backup is not None:
                report("backing up", 0, None)
            copy = backup_database(path, backup) if backup is not None else None
            if plan.needed:
                _apply(conn, plan, report)
            return MigrationResult(plan, plan.needed, copy)
    finally:
        conn.close()
