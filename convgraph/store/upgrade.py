"""Bringing an older llm's file (or a new, empty one) up to llm's current
tables with llm's own migrations, all of them in one transaction, so that a
process killed at any moment of the upgrade leaves the file either as it was
or fully upgraded, never half-way (half-way, llm itself can no longer open it:
`table "messages" already exists`).

llm's `migrate` commits after each migration and records it, and
sqlite-utils, which the migrations are written with, joins a transaction that
is already open (its `atomic()` becomes a savepoint, its scripts run
statement by statement). So the migrations run inside one exclusive
transaction of convgraph's connection, and an SQLite authorizer refuses any
statement that would begin, commit or roll back a transaction meanwhile: the
one commit is convgraph's own, whatever a future llm or sqlite-utils does.
A migration that cannot run inside a transaction (a VACUUM, say) fails,
everything is rolled back, and the user is told to run llm once, which
upgrades the file with llm's own commits. SQLite's rollback journal (or its
write-ahead log) does the rest: a transaction killed before its commit is
rolled back by the next connection that opens the file.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from convgraph.errors import DatabaseError
from convgraph.store.transaction import _file_of, write_transaction

__all__ = ["pending_migrations", "upgrade_llm_tables"]


def pending_migrations(conn: sqlite3.Connection) -> list[str]:
    """The names of llm's migrations the file has not had, in llm's order
    (every one for a file without llm's record of them)."""
    from llm.migrations import MIGRATIONS

    names = [migration.__name__ for migration in MIGRATIONS]
    recorded = conn.execute(
        "select 1 from sqlite_master where type = 'table' and name = '_llm_migrations'"
    ).fetchone()
    if recorded is None:
        return names
    applied = {row[0] for row in conn.execute("select name from _llm_migrations")}
    return [name for name in names if name not in applied]


def _refuse_transaction_control(action: int, *_: Any) -> int:
    # BEGIN, COMMIT, END and ROLLBACK are SQLITE_TRANSACTION; savepoints,
    # which sqlite-utils nests inside an open transaction, stay allowed.
    if action == sqlite3.SQLITE_TRANSACTION:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def upgrade_llm_tables(conn: sqlite3.Connection) -> list[str]:
    """Run llm's pending migrations on `conn`'s file in one transaction.

    `conn` is an autocommit connection (`isolation_level=None`) outside any
    transaction. The transaction is an exclusive one, taken when no other
    connection holds a lock (`convgraph.store.transaction`), and the pending
    migrations are read again inside it, so an llm that upgraded the file
    meanwhile leaves nothing to do.

    Returns
    -------
    list of str
        The migrations applied (empty: the file was up to date).

    Raises
    ------
    DatabaseError
        A migration failed inside the transaction; nothing was changed.
    DatabaseLocked
        Other connections kept the file busy; nothing was changed.
    """
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
            # Whatever failed (SQLite's "not authorized" for a commit, a
            # refusal of sqlite-utils', a migration's own error), the
            # transaction is rolled back as this leaves it.
            raise DatabaseError(
                f"llm's migrations could not bring {_file_of(conn)} up to date"
                f" in one transaction ({type(error).__name__}: {error});"
                " nothing was changed: run llm once (`llm logs -n 1`) to"
                " upgrade it, then try again"
            ) from None
        finally:
            conn.set_authorizer(None)
    return pending
