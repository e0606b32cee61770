"""Add the seed's `parent_response_id` column to a legacy database, safely.

The migration is a plan and its application. The plan looks at what the file
already has: the column (nullable TEXT referencing `responses.id`), its index
and one on `conversation_id`, convgraph's triggers (`convgraph.store.rules`)
and the record of the migration in `_convgraph_migrations`. Only what is missing is done, so a second run
finds nothing to do and does not write at all: not a transaction, not a byte.
Everything is applied in one `BEGIN IMMEDIATE` transaction, and SQLite's DDL
is transactional, so a process killed at any moment leaves the file as it was
or fully migrated. The record is kept apart from llm's `_llm_migrations`,
whose names llm alone assigns.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from convgraph.errors import DatabaseError, MigrationRefused
from convgraph.store.rules import (
    CONVERSATION_INDEX_NAME,
    CONVERSATION_INDEX_SQL,
    INDEX_NAME,
    INDEX_SQL,
    PARENT_COLUMN,
    install_rules,
    missing_rules,
    response_columns,
    utc_now,
)
from convgraph.store.transaction import (
    connect_read_write,
    database_path,
    reporting_locks,
    write_transaction,
)

#: convgraph's own migration log, shaped like llm's but separate from it.
RECORD_TABLE = "_convgraph_migrations"
MIGRATION_NAME = "parent_response_id"

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


@dataclass
class MigrationPlan:
    """What migrating one database would change.

    `link` is how many responses `--link-linear` would give a parent (0 when
    it was not asked for or there is nothing to link); `triggers` the rules
    to create; `notes` what the user should know that changes nothing.
    """

    path: Path
    add_column: bool = False
    link: int = 0
    add_index: bool = False
    add_conversation_index: bool = False
    triggers: list[str] = field(default_factory=list)
    add_record: bool = False
    notes: list[str] = field(default_factory=list)

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
        if self.link:
            steps.append(
                f"link {self.link} responses to the one before them in their"
                " conversation (--link-linear)"
            )
        if self.add_index:
            steps.append(f"create index {INDEX_NAME}")
        if self.add_conversation_index:
            steps.append(f"create index {CONVERSATION_INDEX_NAME}")
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
        `--link-linear` was asked for but responses already have parents
        that are not the linear ones (linking would overwrite the tree).
    """
    columns = response_columns(conn)
    if not columns:
        raise DatabaseError(
            f"{path} has no legacy responses table: nothing to migrate"
            " (the message store keeps its tree in messages.parent_hash)"
        )
    plan = MigrationPlan(path)
    plan.add_column = PARENT_COLUMN not in columns
    if link_linear:
        plan.link = _links_to_make(conn, plan.add_column)
    plan.add_index = not _has_index_on(conn, PARENT_COLUMN)
    plan.add_conversation_index = not _has_index_on(conn, "conversation_id")
    plan.triggers = missing_rules(conn)
    plan.add_record = plan.add_column or not _recorded(conn)
    if plan.add_column and not link_linear and _has_rows(conn):
        plan.notes.append(
            "existing responses get no parent, so each becomes a root of its"
            " conversation; --link-linear keeps them as chains"
        )
    if not plan.add_column and not _column_references_responses(conn):
        plan.notes.append(
            f"responses.{PARENT_COLUMN} was added without REFERENCES; the"
            " triggers hold it to the same rule (its parent must exist)"
        )
    return plan


def _has_rows(conn: sqlite3.Connection) -> bool:
    return conn.execute("select 1 from responses limit 1").fetchone() is not None


def _links_to_make(conn: sqlite3.Connection, adding_column: bool) -> int:
    """How many parents `--link-linear` would set (see `plan_migration`)."""
    to_link = conn.execute(
        f"select count(*) from ({_LINEAR_SQL}) where previous is not null"
    ).fetchone()[0]
    if adding_column:
        return to_link
    linked, different = conn.execute(
        f"""
        select count(r.{PARENT_COLUMN}),
               coalesce(sum(r.{PARENT_COLUMN} is not l.previous), 0)
        from responses r join ({_LINEAR_SQL}) l using (id)
        """
    ).fetchone()
    if different == 0:
        return 0  # already linked as chains: a second run has nothing to do
    if linked == 0:
        return to_link
    raise MigrationRefused(
        f"{linked} responses already have a parent: --link-linear would"
        " overwrite the tree; nothing was changed"
    )


def _has_index_on(conn: sqlite3.Connection, column: str) -> bool:
    """Whether some index on responses starts with `column` (ours, or one the
    user made, as the seed's notes suggested for the parent column)."""
    for index in conn.execute("pragma index_list(responses)").fetchall():
        first = conn.execute(f"pragma index_info('{index[1]}')").fetchone()
        if first is not None and first[2] == column:
            return True
    return False


def _recorded(conn: sqlite3.Connection) -> bool:
    exists = conn.execute(
        "select 1 from sqlite_master where type = 'table' and name = ?",
        [RECORD_TABLE],
    ).fetchone()
    if not exists:
        return False
    return (
        conn.execute(
            f"select 1 from {RECORD_TABLE} where name = ?", [MIGRATION_NAME]
        ).fetchone()
        is not None
    )


def _column_references_responses(conn: sqlite3.Connection) -> bool:
    return any(
        row[3] == PARENT_COLUMN and row[2] == "responses"
        for row in conn.execute("pragma foreign_key_list(responses)")
    )


def _apply(conn: sqlite3.Connection, plan: MigrationPlan) -> None:
    """Make the plan's changes; the caller holds the transaction."""
    if plan.add_column:
        conn.execute(COLUMN_SQL)
    if plan.link:
        _link_linear(conn)
    if plan.add_index:
        conn.execute(INDEX_SQL)
    if plan.add_conversation_index:
        # Not a tree rule: it lets a reader fetch one conversation without
        # scanning every response (llm never made this index).
        conn.execute(CONVERSATION_INDEX_SQL)
    # The rules go in after the links: the linear links are valid by
    # construction, and checking each one would walk its whole chain.
    install_rules(conn)
    if plan.add_record:
        conn.execute(
            f"create table if not exists {RECORD_TABLE}"
            " (name TEXT PRIMARY KEY, applied_at TEXT)"
        )
        conn.execute(
            f"insert or replace into {RECORD_TABLE} (name, applied_at) values (?, ?)",
            [MIGRATION_NAME, utc_now()],
        )


def _link_linear(conn: sqlite3.Connection) -> None:
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
        with linear as ({_LINEAR_SQL})
        update responses set {PARENT_COLUMN} = linear.previous
        from linear
        where linear.id = responses.id and linear.previous is not null
          and responses.{PARENT_COLUMN} is not linear.previous
        """
    )
    if fts_trigger is not None:
        conn.execute(fts_trigger[0])


def backup_database(
    path: str | os.PathLike[str], target: str | os.PathLike[str]
) -> Path:
    """Copy the database to a new file with SQLite's online backup API.

    The copy is read through a read-only connection of its own: SQLite cannot
    back up from the connection that holds the write transaction, but another
    connection can read while that one holds the lock and has not yet
    written, which is how `migrate` gets a copy of exactly the state before.

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
) -> MigrationResult:
    """Migrate a legacy database: the parent column, its index and the rules.

    Parameters
    ----------
    db
        The database; llm's own logs.db when None.
    backup
        Copy the database there first (SQLite's backup API, taken under the
        write lock, so it is exactly the state the migration started from).
    dry_run
        Only plan: open the file read-only and change nothing.
    link_linear
        Set each existing response's parent to the response before it in its
        conversation (log order: datetime_utc, then id).
    timeout
        Seconds to wait for another writer's lock.

    Returns
    -------
    MigrationResult
        With `applied` False when nothing needed doing (or on a dry run).

    Raises
    ------
    DatabaseError, DatabaseLocked, MigrationRefused
    """
    path = database_path(db)
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
            # Planned outside any transaction first: an up-to-date file is only
            # read, so a second run leaves it byte for byte as it was.
            plan = plan_migration(conn, path, link_linear)
            if not plan.needed:
                copy = backup_database(path, backup) if backup is not None else None
                return MigrationResult(plan, False, copy)
            with write_transaction(conn):
                # Planned again under the write lock: another writer may have
                # changed the file in between.
                plan = plan_migration(conn, path, link_linear)
                copy = backup_database(path, backup) if backup is not None else None
                if plan.needed:
                    _apply(conn, plan)
            return MigrationResult(plan, plan.needed, copy)
    finally:
        conn.close()
