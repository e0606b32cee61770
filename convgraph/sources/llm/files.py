"""Find llm's database file, and open an SQLite file read-only, saying in one
sentence why SQLite will not let a reader in."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from convgraph.errors import DatabaseError
from convgraph.sources.llm.snapshot import BUSY_TIMEOUT_SECONDS
from convgraph.sources.tables import replacing_text

#: The first 16 bytes of every SQLite database file.
SQLITE_HEADER = b"SQLite format 3\x00"

#: A zip's first local header: there even where its end is missing.
ZIP_HEADER = b"PK\x03\x04"


def default_database_path() -> Path:
    """The `logs.db` llm logs to, as `llm logs path` says, without llm."""
    user_path = os.environ.get("LLM_USER_PATH")
    if user_path:
        return Path(user_path) / "logs.db"
    import click

    return Path(click.get_app_dir("io.datasette.llm")) / "logs.db"


def connect_read_only(path: str | os.PathLike[str]) -> sqlite3.Connection:
    """Open `path` read-only (`mode=ro`), waiting for a writer's lock.
    `DatabaseError` if there is no file or SQLite will not read it."""
    path = Path(path)
    if not path.is_file():
        raise DatabaseError(f"no database file at {path}")
    uri = f"{path.resolve().as_uri()}?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_SECONDS)
        conn.execute("select count(*) from sqlite_master").fetchone()
    except sqlite3.DatabaseError as error:
        raise DatabaseError(_why_unreadable(path, error)) from None
    conn.row_factory = sqlite3.Row
    # One byte that is not UTF-8 in one row must not make the file unreadable.
    conn.text_factory = replacing_text
    return conn


def _why_unreadable(path: Path, error: sqlite3.DatabaseError) -> str:
    code = getattr(error, "sqlite_errorname", "")
    if code.startswith("SQLITE_BUSY") or "locked" in str(error):
        # A live writer: its journal is there too, but not a stopped one's.
        return (
            f"{path} is being written by another process, which held its"
            f" lock for more than {BUSY_TIMEOUT_SECONDS:g} seconds; try again"
            " when it has finished"
        )
    if code == "SQLITE_READONLY_ROLLBACK" or (
        code.startswith("SQLITE_READONLY")
        and path.with_name(path.name + "-journal").exists()
    ):
        # A hot journal must be rolled back, which a read-only reader cannot.
        return (
            f"{path} holds an unfinished transaction of a writer that"
            " stopped; open it once with llm or sqlite3 to roll it back"
        )
    if code.startswith("SQLITE_CANTOPEN") and _is_wal(path):
        return (
            f"{path} is in WAL mode, and SQLite can read it only with its"
            f" {path.name}-shm file beside it, which it cannot create or open"
            f" in {path.parent} (a read-only directory?); read a copy made"
            " with its -wal file in a writable directory"
        )
    if _starts_with(path, ZIP_HEADER):
        return (
            f"{path} is a zip file that is truncated or damaged, not an SQLite database"
        )
    return f"{path} is not an SQLite database ({error})"


#: The columns convgraph reads of each table llm names so: a file without
#: `_llm_migrations` is llm's only where its tables carry them.
READ_COLUMNS = {
    "responses": {"id", "model", "prompt", "response", "conversation_id"},
    "turns": {"id", "thread_id", "parent_message_hash", "tip_message_hash"},
    "threads": {"id", "name", "tip_message_hash", "forked_from"},
    "messages": {"hash", "parent_hash", "role"},
    "parts": {"message_hash", "position", "type", "text", "payload"},
}


def table_names(conn: sqlite3.Connection) -> set[str]:
    """The names of the file's tables."""
    rows = conn.execute("select name from sqlite_master where type = 'table'")
    return {row[0] for row in rows}


def llm_tables(conn: sqlite3.Connection) -> set[str]:
    """The file's tables that are llm's by its schema: all of them where
    llm's migrations table is there, else those with `READ_COLUMNS`."""
    tables = table_names(conn)
    if "_llm_migrations" in tables:
        return tables
    return {
        table
        for table in tables
        if READ_COLUMNS.get(table, set())
        <= {
            row[1]
            for row in conn.execute("select * from pragma_table_info(?)", [table])
        }
    }


def is_sqlite_file(path: str | os.PathLike[str]) -> bool:
    """Whether `path` is a readable file with SQLite's header."""
    return _starts_with(Path(path), SQLITE_HEADER)


def _starts_with(path: Path, header: bytes) -> bool:
    try:
        with open(path, "rb") as file:
            return file.read(len(header)) == header
    except (OSError, ValueError):
        return False


def _is_wal(path: Path) -> bool:
    """Whether the header says WAL (format versions 2 at bytes 18 and 19)."""
    try:
        with open(path, "rb") as file:
            header = file.read(20)
    except OSError:
        return False
    return header[:16] == SQLITE_HEADER and header[18:20] == b"\x02\x02"


_NOT_A_DATABASE = ("file is not a database", "database disk image is malformed")
_UNAVAILABLE = (
    "database is locked",
    "database is busy",
    "database table is locked",
    "attempt to write a readonly database",
    "unable to open database file",
)


def database_failure(error: BaseException) -> str | None:
    """One line for an error the user's file or another program caused; None
    for any other (a bug, which shows)."""
    if isinstance(error, sqlite3.IntegrityError):
        return f"the database refused the change: {error}"
    known: tuple[str, ...]
    if isinstance(error, sqlite3.OperationalError):
        known = _UNAVAILABLE
    elif isinstance(error, sqlite3.DatabaseError):
        known = _NOT_A_DATABASE
    else:
        return None
    text = str(error).lower()
    return f"database error: {error}" if any(m in text for m in known) else None
