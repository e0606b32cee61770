"""llm's own migrations run in one exclusive transaction, an SQLite authorizer refusing
any statement that would begin, commit or roll one back: a kill leaves the file as it
was or upgraded, never half-way (which llm itself cannot open)."""

from __future__ import annotations

import sqlite3
from typing import Any

from convgraph.errors import DatabaseError
from convgraph.sources.llm.old_writers import has_table
from convgraph.store.transaction import _file_of, write_transaction

__all__ = ["pending_migrations", "upgrade_llm_tables"]


def pending_migrations(conn: sqlite3.Connection) -> list[str]:
    """llm's migrations the file has not had, in llm's order."""
    from llm.migrations import MIGRATIONS

    names = [migration.__name__ for migration in MIGRATIONS]
    if not has_table(conn, "_llm_migrations"):
        return names
    applied = {row[0] for row in conn.execute("select name from _llm_migrations")}
    return [name for name in names if name not in applied]


def _refuse_transaction_control(action: int, *_: Any) -> int:
    # Savepoints, which sqlite-utils nests in an open transaction, stay allowed.
    if action == sqlite3.SQLITE_TRANSACTION:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def upgrade_llm_tables(conn: sqlite3.Connection) -> list[str]:
    """Run llm's pending migrations on `conn`'s file (autocommit) in one
    transaction; return those applied. Raises DatabaseError (a migration failed)
    or DatabaseLocked, nothing changed either way."""
    if not pending_migrations(conn):
        return []
    import sqlite_utils
    from llm.migrations import migrate

    database = sqlite_utils.Database(conn)
    with write_transaction(conn):
        pending = pending_migrations(conn)
        if not pending:
            return []
        conn.set_authorizer(_refuse_transaction_control)
        try:
            migrate(database)  # type: ignore[no-untyped-call]
        except Exception as error:
            # Whatever failed, the transaction is rolled back as this leaves it.
            raise DatabaseError(
                f"llm's migrations could not bring {_file_of(conn)} up to date"
                f" in one transaction ({type(error).__name__}: {error});"
                " nothing was changed: run llm once (`llm logs -n 1`) to"
                " upgrade it, then try again"
            ) from None
        finally:
            conn.set_authorizer(None)
    return pending
