"""Writing responses: convgraph's own legacy rows, their ids, and llm.
`log_response` writes a legacy row, leaving enforcement to the triggers of
`store.rules`; `require_llm` imports llm or says in one line why not."""

from __future__ import annotations

import datetime
import json
import os
import secrets
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from types import ModuleType
from typing import Any, NamedTuple

from convgraph.errors import ConvgraphError, DatabaseError, RuleViolation
from convgraph.sources.llm.old_writers import ROOTS_TABLE
from convgraph.store.rules import (
    PARENT_COLUMN,
    migration_recorded,
    require_rules,
    response_columns,
    rule_message,
)
from convgraph.store.transaction import connect_read_write, write_transaction


class LoggedNode(NamedTuple):
    """A node just written: its id and its conversation's id."""

    node_id: str
    conversation_id: str


_last_id = 0
_id_lock = threading.Lock()


def new_response_id() -> str:
    """A new id in llm's form: a lower-case ULID, sorting in the order made (llm
    continues a legacy conversation in id order); within one millisecond, or when
    the clock steps back, the last one plus one."""
    from ulid import ULID

    global _last_id
    with _id_lock:
        value = _last_id = max(int(ULID()), _last_id + 1)
    return str(ULID.from_int(value)).lower()


def utc_now() -> str:
    """The time as llm stores `datetime_utc`: ISO 8601 with the UTC offset."""
    return datetime.datetime.now(datetime.UTC).isoformat()


@contextmanager
def _atomic(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One transaction of our own, or a savepoint inside the caller's."""
    if not conn.in_transaction:
        with write_transaction(conn):
            yield conn
        return
    name = f"convgraph_{secrets.token_hex(8)}"
    conn.execute(f"savepoint {name}")
    try:
        yield conn
    except BaseException:
        if conn.in_transaction:
            conn.execute(f"rollback to savepoint {name}")
            conn.execute(f"release savepoint {name}")
        raise
    conn.execute(f"release savepoint {name}")


def log_response(
    db: str | os.PathLike[str] | sqlite3.Connection | None = None,
    *,
    prompt: str | None,
    response: str | None,
    model: str | None,
    parent_response_id: str | None = None,
    conversation_id: str | None = None,
    system: str | None = None,
    response_id: str | None = None,
    datetime_utc: str | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    duration_ms: int | None = None,
    columns: Mapping[str, Any] | None = None,
    timeout: float | None = None,
) -> LoggedNode:
    """Write one legacy response, held to the tree's rules. Raises `RuleViolation` (the
    triggers refused the parent, or the id is taken); `NotMigrated` (A parent was given
    but the file has no parent column or rules); `DatabaseError`, `DatabaseLocked`."""
    conn = db if isinstance(db, sqlite3.Connection) else connect_read_write(db, timeout)
    try:
        with _atomic(conn):
            return _log(
                conn,
                response_id or new_response_id(),
                parent_response_id,
                conversation_id,
                {
                    "model": model,
                    "prompt": prompt,
                    "system": system,
                    "response": response,
                    "datetime_utc": datetime_utc or utc_now(),
                    "input_tokens": input_tokens,
                    "output_tokens": output_tokens,
                    "duration_ms": duration_ms,
                    **dict(columns or {}),
                },
            )
    finally:
        if not isinstance(db, sqlite3.Connection):
            conn.close()


def _log(
    conn: sqlite3.Connection,
    response_id: str,
    parent_response_id: str | None,
    conversation_id: str | None,
    values: dict[str, Any],
) -> LoggedNode:
    table_columns = response_columns(conn)
    if not table_columns:
        raise DatabaseError("the database has no legacy responses table")
    if parent_response_id is not None:
        require_rules(conn, table_columns)
    if conversation_id is None and parent_response_id is not None:
        row = conn.execute(
            "select coalesce(conversation_id, id) from responses where id = ?",
            [parent_response_id],
        ).fetchone()
        if row is None:
            raise RuleViolation(
                f"cannot log a child of {parent_response_id!r}: no response has that id"
            )
        conversation_id = row[0]
    if conversation_id is None:
        conversation_id = new_response_id()
    has_conversations = conn.execute(
        "select 1 from sqlite_master where type = 'table' and name = 'conversations'"
    ).fetchone()
    if has_conversations:
        conn.execute(
            "insert or ignore into conversations (id, name, model) values (?, ?, ?)",
            [conversation_id, _conversation_name(values), values.get("model")],
        )
    # llm reads options_json back with json.loads, so it is never NULL there.
    values.setdefault("options_json", "{}")
    if values["options_json"] is None:
        values["options_json"] = "{}"
    row_values = {
        "id": response_id,
        "conversation_id": conversation_id,
        **{key: value for key, value in values.items() if key in table_columns},
    }
    if parent_response_id is not None:
        row_values[PARENT_COLUMN] = parent_response_id
    names = ", ".join(f'"{name}"' for name in row_values)
    marks = ", ".join("?" * len(row_values))
    try:
        conn.execute(
            f"insert into responses ({names}) values ({marks})",
            list(row_values.values()),
        )
    except sqlite3.IntegrityError as error:
        if (rule := rule_message(error)) is not None:
            raise RuleViolation(
                f"cannot log response {response_id!r} with parent"
                f" {parent_response_id!r}: {rule}"
            ) from None
        if "UNIQUE" in str(error):
            raise RuleViolation(
                f"cannot log response {response_id!r}: that id is taken"
            ) from None
        raise RuleViolation(f"cannot log response {response_id!r}: {error}") from None
    if parent_response_id is None and PARENT_COLUMN in table_columns:
        keep_as_roots(conn, [response_id])
    return LoggedNode(response_id, conversation_id)


def keep_as_roots(conn: sqlite3.Connection, node_ids: list[str]) -> None:
    """Make these responses roots on purpose, in the caller's transaction: the placing
    rule would give them the response before, as an older llm meant."""
    ids = json.dumps(list(node_ids))
    conn.execute(
        f"update responses set {PARENT_COLUMN} = null"
        f" where id in (select value from json_each(?)) and {PARENT_COLUMN} is not null",
        [ids],
    )
    if migration_recorded(conn):
        conn.execute(f"create table if not exists {ROOTS_TABLE} (id TEXT PRIMARY KEY)")
        conn.execute(
            f"insert or ignore into {ROOTS_TABLE} (id) select value from json_each(?)",
            [ids],
        )


def _conversation_name(values: Mapping[str, Any]) -> str:
    # llm names a new conversation after the start of its first prompt.
    return " ".join((values.get("prompt") or values.get("system") or "").split())[:32]


def require_llm(why: str, error: type[ConvgraphError]) -> ModuleType:
    """The `llm` package, or `error` saying "`why`, which is not installed"."""
    try:
        import llm
    except ImportError:
        raise error(f"{why}, which is not installed: pip install llm") from None
    return llm
