"""What migrating a legacy database would change: `plan_migration` looks at
the file and lists only what is missing, so a second run writes nothing."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from convgraph.errors import DatabaseError, MigrationRefused
from convgraph.links.integrity import (
    CROSS_CONVERSATION,
    MISSING_PARENT,
    SELF_PARENT,
    Problem,
    break_cycles,
    link_problem,
)
from convgraph.sources.llm.old_writers import RECORD_TABLE, has_table
from convgraph.store.rules import (
    CONVERSATION_INDEX_NAME,
    INDEX_NAME,
    PARENT_COLUMN,
    migration_recorded,
    missing_rules,
    response_columns,
)

#: The mark of a `--link-linear` begun and not yet finished.
LINKING_MARK = "parent_response_id:link-linear unfinished"

#: llm's migrations that rebuild `responses` (sqlite-utils' transform(),
#: which drops every trigger on the table). A file must have had them before
#: the rules go in. No later llm migration (up to m027, llm 0.36) rebuilds it.
RESPONSES_REBUILDS = ("m014_schemas",)

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
    """What migrating one database would change."""

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
        steps.extend(f"create trigger {name}" for name in self.triggers)
        if self.add_record:
            steps.append(f"record the migration in {RECORD_TABLE}")
        return steps


def plan_migration(
    conn: sqlite3.Connection, path: Path, link_linear: bool = False
) -> MigrationPlan:
    """Look at the database and say what migrating it would change. Raises
    `DatabaseError` (no legacy `responses` table), `MigrationRefused` (llm has not
    brought the file to its schema yet, or `--link-linear` was asked for but responses
    have parents that are not the linear ones: linking would overwrite the tree)."""
    columns = response_columns(conn)
    if not columns:
        raise DatabaseError(
            f"{path} has no legacy responses table: nothing to migrate"
            " (the message store keeps its tree in messages.parent_hash)"
        )
    _require_llm_schema(conn, path)
    plan = MigrationPlan(path)
    plan.add_column = PARENT_COLUMN not in columns
    resuming = migration_recorded(conn, LINKING_MARK)
    if link_linear or resuming:
        plan.link = _links_to_make(conn, plan.add_column, resuming)
    plan.add_index = not has_index_on(conn, PARENT_COLUMN)
    plan.add_conversation_index = not has_index_on(conn, "conversation_id")
    plan.triggers = missing_rules(conn)
    plan.add_record = plan.add_column or not migration_recorded(conn)
    plan.store_only = has_table(conn, "turns") and not _has_rows(conn)
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
    """Refuse a file whose `responses` llm will still rebuild."""
    if not has_table(conn, "_llm_migrations"):
        return
    applied = {row[0] for row in conn.execute("select name from _llm_migrations")}
    if pending := [name for name in RESPONSES_REBUILDS if name not in applied]:
        raise MigrationRefused(
            f"llm has not yet brought {path} to its current schema (its"
            f" migration {', '.join(pending)}, which rebuilds the responses"
            " table, has not run): run llm once (0.23 or later; `llm logs status`"
            " will do) and migrate again; nothing was changed"
        )


def _has_rows(conn: sqlite3.Connection) -> bool:
    return conn.execute("select 1 from responses limit 1").fetchone() is not None


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


def has_index_on(conn: sqlite3.Connection, column: str) -> bool:
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
