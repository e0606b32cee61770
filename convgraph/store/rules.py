"""The tree's rules, enforced by the database itself."""

from __future__ import annotations

import os
import sqlite3

from convgraph.errors import NotMigrated
from convgraph.links.integrity import Problem
from convgraph.sources.llm.old_writers import MIGRATION_NAME, RECORD_TABLE, has_table

#: The parent column `migrate` adds, and its index.
PARENT_COLUMN = "parent_response_id"
INDEX_NAME = "idx_responses_parent_response_id"
INDEX_SQL = f"CREATE INDEX {INDEX_NAME} ON responses ({PARENT_COLUMN})"
CONVERSATION_INDEX_NAME = "idx_responses_conversation_id"
CONVERSATION_INDEX_SQL = (
    f"CREATE INDEX {CONVERSATION_INDEX_NAME} ON responses (conversation_id)"
)


#: Tells a rule's refusal from any other constraint's.
RULE_PREFIX = "convgraph: "

# The ancestors of NEW's parent. UNION keeps each id once, so the walk ends
# even where older rows already hold a cycle.
_CYCLE_CHECK = """
  SELECT RAISE(ABORT, 'convgraph: the parent link would close a cycle')
  WHERE EXISTS (
    WITH RECURSIVE ancestors(id) AS (
      SELECT NEW.parent_response_id
      UNION
      SELECT r.parent_response_id FROM responses r
      JOIN ancestors a ON r.id = a.id
      WHERE r.parent_response_id IS NOT NULL
    )
    SELECT 1 FROM ancestors WHERE id = NEW.id
  );"""

_PARENT_CHECKS = (
    """
  SELECT RAISE(ABORT, 'convgraph: parent_response_id names no response')
  WHERE NOT EXISTS (SELECT 1 FROM responses WHERE id = NEW.parent_response_id);
  SELECT RAISE(ABORT, 'convgraph: the parent response is in another conversation')
  WHERE (
    SELECT coalesce(conversation_id, id) FROM responses
    WHERE id = NEW.parent_response_id
  ) IS NOT coalesce(NEW.conversation_id, NEW.id);"""
    + _CYCLE_CHECK
)

#: For writers without a parent column (llm before 0.32): a row logged
#: without a parent gets the one logged before it in its conversation (read
#: side: `sources.llm.old_writers`). It never fails the insert: rows without a
#: conversation, or already named as a parent (only then could a cycle close),
#: are skipped. Its UPDATE fires llm's search-index trigger, so it must run
#: after llm's AFTER INSERT: `install_rules` keeps every other trigger newer.
PLACING_TRIGGER = "convgraph_place_on_insert"
# The responses of NEW's conversation logged before it.
_BEFORE = """FROM responses p
    WHERE (p.conversation_id = NEW.conversation_id
           OR (p.conversation_id IS NULL AND p.id = NEW.conversation_id))
      AND p.id IS NOT NULL AND p.id IS NOT NEW.id
      AND (coalesce(p.datetime_utc, ''), p.id)
          < (coalesce(NEW.datetime_utc, ''), NEW.id)"""
_PREVIOUS = f"""SELECT p.id {_BEFORE}
    ORDER BY coalesce(p.datetime_utc, '') DESC, p.id DESC LIMIT 1"""

#: The triggers by name, compared with sqlite_master's text on migrate.
TRIGGERS: dict[str, str] = {
    "convgraph_parent_on_insert": f"""CREATE TRIGGER convgraph_parent_on_insert
BEFORE INSERT ON responses
WHEN NEW.parent_response_id IS NOT NULL
BEGIN
  SELECT RAISE(ABORT, 'convgraph: a response cannot be its own parent')
  WHERE NEW.parent_response_id = NEW.id;{_PARENT_CHECKS}
END""",
    "convgraph_parent_on_update": f"""CREATE TRIGGER convgraph_parent_on_update
BEFORE UPDATE OF parent_response_id, conversation_id, id ON responses
WHEN NEW.parent_response_id IS NOT NULL
BEGIN
  SELECT RAISE(ABORT, 'convgraph: a response cannot be its own parent')
  WHERE NEW.parent_response_id IN (NEW.id, OLD.id);{_PARENT_CHECKS}
END""",
    # A REPLACE of a row children name must keep them in its conversation.
    "convgraph_children_on_insert": """CREATE TRIGGER convgraph_children_on_insert
BEFORE INSERT ON responses
WHEN EXISTS (
  SELECT 1 FROM responses
  WHERE parent_response_id = NEW.id AND id IS NOT NEW.id
    AND coalesce(conversation_id, id) IS NOT coalesce(NEW.conversation_id, NEW.id)
)
BEGIN
  SELECT RAISE(ABORT, 'convgraph: responses in another conversation name this id as their parent');
END""",
    "convgraph_children_on_update": """CREATE TRIGGER convgraph_children_on_update
BEFORE UPDATE OF id, conversation_id ON responses
WHEN EXISTS (
  SELECT 1 FROM responses WHERE parent_response_id = OLD.id AND id IS NOT OLD.id
)
BEGIN
  SELECT RAISE(ABORT, 'convgraph: a response with children keeps its id')
  WHERE NEW.id IS NOT OLD.id;
  SELECT RAISE(ABORT, 'convgraph: a response with children stays in its conversation')
  WHERE coalesce(NEW.conversation_id, NEW.id) IS NOT coalesce(OLD.conversation_id, OLD.id);
END""",
    # REPLACE deletes the row it collides with without firing delete
    # triggers, and a trigger cannot tell REPLACE from ABORT: so every insert
    # or rename onto a parent's id is refused (a plain one fails anyway).
    "convgraph_replace_on_insert": """CREATE TRIGGER convgraph_replace_on_insert
BEFORE INSERT ON responses
WHEN EXISTS (SELECT 1 FROM responses WHERE id = NEW.id)
  AND EXISTS (
    SELECT 1 FROM responses WHERE parent_response_id = NEW.id AND id IS NOT NEW.id
  )
BEGIN
  SELECT RAISE(ABORT, 'convgraph: a response with children cannot be replaced (update it instead)');
END""",
    "convgraph_replace_on_update": """CREATE TRIGGER convgraph_replace_on_update
BEFORE UPDATE OF id ON responses
WHEN NEW.id IS NOT OLD.id
  AND EXISTS (SELECT 1 FROM responses WHERE id = NEW.id)
  AND EXISTS (
    SELECT 1 FROM responses WHERE parent_response_id = NEW.id AND id IS NOT NEW.id
  )
BEGIN
  SELECT RAISE(ABORT, 'convgraph: a response with children cannot be replaced (update it instead)');
END""",
    "convgraph_children_on_delete": """CREATE TRIGGER convgraph_children_on_delete
BEFORE DELETE ON responses
WHEN EXISTS (
  SELECT 1 FROM responses WHERE parent_response_id = OLD.id AND id IS NOT OLD.id
)
BEGIN
  SELECT RAISE(ABORT, 'convgraph: a response with children cannot be deleted (convgraph delete --reparent or --cascade)');
END""",
    PLACING_TRIGGER: f"""CREATE TRIGGER {PLACING_TRIGGER}
AFTER INSERT ON responses
WHEN NEW.parent_response_id IS NULL AND NEW.id IS NOT NULL
  AND NEW.conversation_id IS NOT NULL
  AND EXISTS (SELECT 1 {_BEFORE})
BEGIN
  UPDATE responses SET parent_response_id = ({_PREVIOUS})
  WHERE id = NEW.id AND parent_response_id IS NULL
    AND NOT EXISTS (
      SELECT 1 FROM responses WHERE parent_response_id = NEW.id
    );
END""",
}


def response_columns(conn: sqlite3.Connection) -> list[str]:
    """The columns of `responses`, in table order ([] if there is no table)."""
    return [row[1] for row in conn.execute("pragma table_info(responses)")]


def stored_triggers(conn: sqlite3.Connection) -> dict[str, str]:
    """convgraph's triggers as the database holds them: name -> SQL."""
    rows = conn.execute(
        "select name, sql from sqlite_master where type = 'trigger'"
        " and tbl_name = 'responses' and name like 'convgraph\\_%' escape '\\'"
    )
    return {row[0]: row[1] for row in rows}


def missing_rules(conn: sqlite3.Connection) -> list[str]:
    """The triggers absent or differing from `TRIGGERS`, and the placing one
    where another trigger on responses would run after it."""
    stored = stored_triggers(conn)
    missing = [name for name, sql in TRIGGERS.items() if stored.get(name) != sql]
    if PLACING_TRIGGER not in missing and _others_older(conn):
        missing.append(PLACING_TRIGGER)
    return missing


def _other_triggers(conn: sqlite3.Connection) -> list[tuple[int, str, str]]:
    """The triggers on responses that are not convgraph's, oldest first."""
    rows = conn.execute(
        "select rowid, name, sql from sqlite_master where type = 'trigger'"
        " and tbl_name = 'responses' and name not like 'convgraph\\_%' escape '\\'"
        " order by rowid"
    )
    return [(row[0], row[1], row[2]) for row in rows]


def _others_older(conn: sqlite3.Connection) -> bool:
    """Whether another trigger on responses is older than the placing one, so
    SQLite (newest first) would run it after."""
    row = conn.execute(
        "select rowid from sqlite_master where type = 'trigger' and name = ?",
        [PLACING_TRIGGER],
    ).fetchone()
    if row is None:
        return False
    return any(rowid < row[0] for rowid, _, _ in _other_triggers(conn))


#: The `Problem` kind `rule_problems` reports.
MISSING_RULES = "missing-rules"


def rule_problems(db: str | os.PathLike[str] | None = None) -> list[Problem]:
    """A problem where a file convgraph migrated has lost its tree rules (a
    table rebuild, llm's own or another tool's, drops every trigger silently);
    [] for a file never migrated or whose rules are in place. Read-only."""
    from convgraph.sources import LogDatabase, open_logs
    from convgraph.store.transaction import database_path

    with open_logs(database_path(db)) as logs:
        if not isinstance(logs, LogDatabase):
            return []  # an export, agents' sessions: never migrated
        if not migration_recorded(logs.conn):
            return []
        missing = missing_rules(logs.conn)
    if not missing:
        return []
    if missing == [PLACING_TRIGGER]:
        message = (
            "the rule that places responses an llm older than 0.32 logs without"
            " a parent is missing, so the file leaves them as roots (convgraph"
            " reads them in place): run `convgraph migrate` to put it back"
        )
        return [Problem(MISSING_RULES, None, None, None, message)]  # type: ignore[arg-type]
    message = (
        f"the tree rules are missing ({len(missing)} of {len(TRIGGERS)} triggers"
        " on responses), so nothing stops a write from breaking the tree:"
        " run `convgraph migrate` to put them back"
    )
    return [Problem(MISSING_RULES, None, None, None, message)]  # type: ignore[arg-type]


def migration_recorded(conn: sqlite3.Connection, name: str = MIGRATION_NAME) -> bool:
    """Whether convgraph's migration (or step `name`) is recorded in the file."""
    if not has_table(conn, RECORD_TABLE):
        return False
    found = conn.execute(
        f"select 1 from {RECORD_TABLE} where name = ?", [name]
    ).fetchone()
    return found is not None


def install_rules(conn: sqlite3.Connection) -> list[str]:
    """Create the missing triggers (replacing outdated ones) in the caller's
    transaction; return the names created."""
    created = []
    stored = stored_triggers(conn)
    for name in missing_rules(conn):
        if name in stored:
            conn.execute(f"DROP TRIGGER {name}")
        conn.execute(TRIGGERS[name])
        created.append(name)
    if PLACING_TRIGGER in created:
        # Made anew in their order, the others run before the placing one.
        for _, name, sql in _other_triggers(conn):
            quoted = name.replace('"', '""')
            conn.execute(f'DROP TRIGGER "{quoted}"')
            conn.execute(sql)
    return created


def rule_message(error: sqlite3.IntegrityError) -> str | None:
    """The rule a trigger's refusal names, without the prefix (None otherwise)."""
    message = str(error)
    return message[len(RULE_PREFIX) :] if message.startswith(RULE_PREFIX) else None


def require_rules(
    conn: sqlite3.Connection, table_columns: list[str] | None = None
) -> None:
    """Raise `NotMigrated` unless the parent column and every refusing rule
    are there."""
    if table_columns is None:
        table_columns = response_columns(conn)
    if PARENT_COLUMN not in table_columns:
        raise NotMigrated(
            "the database has no parent_response_id column yet: run `convgraph migrate`"
        )
    # convgraph's writes name their parents: the placing rule is not needed.
    if missing := [name for name in missing_rules(conn) if name != PLACING_TRIGGER]:
        raise NotMigrated(
            "the database has parent_response_id but not convgraph's rules"
            f" ({len(missing)} triggers missing): run `convgraph migrate`,"
            " which adds only what is missing"
        )
