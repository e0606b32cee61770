"""Databases for the tests: hand-made legacy ones, and ones llm itself writes.

`legacy_database` starts from the schema that llm 0.31 created (dumped into
tests/data with its migration log), so the files look like a user's old
logs.db to llm 0.36 as well as to convgraph. `LlmLog` drives the real llm 0.36
with its offline echo model: conversations continued with `-c`, and forks made
with `LogStore.fork`, as a user of the message store makes them.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from convgraph.store import migrate

SCHEMA_0_31 = Path(__file__).parent / "data" / "llm-0.31-schema.sql"


def legacy_database(path: Path, with_parent: bool = True) -> sqlite3.Connection:
    """A new llm 0.31 logs.db at `path`; `with_parent` adds the parent column
    (as a bare ALTER TABLE, the way the original notes' experiment did:
    docs/design.md#where-it-started)."""
    conn = sqlite3.connect(path)
    # A test's database need not survive a power cut: without a disk sync at
    # every commit (executescript commits each CREATE), making one takes
    # milliseconds instead of most of a second on a busy disk. The journal
    # is written and removed as before.
    conn.execute("pragma synchronous = off")
    conn.executescript(SCHEMA_0_31.read_text())
    if with_parent:
        conn.execute("alter table responses add column parent_response_id text")
    conn.commit()
    return conn


def add_response(
    conn: sqlite3.Connection,
    response_id: str,
    conversation_id: str | None,
    prompt: str = "",
    *,
    parent: str | None = None,
    response: str | None = None,
    model: str = "echo",
    datetime_utc: str | None = None,
    system: str | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    duration_ms: int | None = None,
    name: str | None = None,
) -> None:
    """Insert one legacy response (and its conversation, if new)."""
    if conversation_id is not None:
        conn.execute(
            "insert or ignore into conversations (id, name, model) values (?, ?, ?)",
            [conversation_id, name or prompt[:32], model],
        )
    columns = {
        "id": response_id,
        "model": model,
        "prompt": prompt,
        "system": system,
        "options_json": "{}",  # as llm 0.31 wrote it; llm 0.36 reads it back
        "response": response if response is not None else f"answer to {prompt}",
        "conversation_id": conversation_id,
        "datetime_utc": datetime_utc,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "duration_ms": duration_ms,
    }
    if parent is not None:
        columns["parent_response_id"] = parent
    names = ", ".join(columns)
    marks = ", ".join("?" * len(columns))
    conn.execute(
        f"insert into responses ({names}) values ({marks})", list(columns.values())
    )


def timestamp(index: int) -> str:
    """A distinct, ordered `datetime_utc` for the index-th response."""
    return f"2025-09-27T10:{index // 60:02d}:{index % 60:02d}.000000+00:00"


def add_tree(
    conn: sqlite3.Connection,
    conversation_id: str,
    links: list[tuple[str, str | None]],
    start: int = 0,
) -> None:
    """Add a conversation given as (node, parent) pairs in log order."""
    for index, (node, parent) in enumerate(links):
        add_response(
            conn,
            node,
            conversation_id,
            f"prompt {node}",
            parent=parent,
            datetime_utc=timestamp(start + index),
            input_tokens=10 + index,
            output_tokens=20 + index,
            duration_ms=100 * (index + 1),
        )
    conn.commit()


# The four test scenarios (docs/design.md#the-four-scenarios), as (node, parent)
# pairs in log order.
LINEAR = [("root", None), ("a", "root"), ("b", "a"), ("c", "b")]
BRANCH = [("root", None), ("b", "root"), ("c", "root")]
COMPLEX = [
    ("root", None),
    ("b", "root"),
    ("c", "b"),
    ("d", "b"),
    ("e", "root"),
    ("f", "e"),
    ("g", "e"),
]
MULTIPLE_ROOTS = [
    ("root1", None),
    ("a", "root1"),
    ("b", "a"),
    ("root2", None),
    ("x", "root2"),
    ("y", "x"),
]


def seed_database(path: Path) -> Path:
    """The four scenarios, one conversation each ("seed": the original
    notes, docs/design.md#where-it-started); node ids are prefixed with the
    conversation ("linear-a", "complex-g", ...)."""
    conn = legacy_database(path)
    start = 0
    for name, links in [
        ("linear", LINEAR),
        ("branch", BRANCH),
        ("complex", COMPLEX),
        ("multiple-roots", MULTIPLE_ROOTS),
    ]:
        prefixed = [
            (f"{name}-{node}", f"{name}-{parent}" if parent else None)
            for node, parent in links
        ]
        add_tree(conn, name, prefixed, start)
        start += len(links)
    conn.close()
    return path


#: The bytes of each file `built_once` has built, by name.
_BUILT: dict[str, bytes] = {}


def built_once(name: str, build: Callable[[Path], object], path: Path) -> Path:
    """`path` holding the file that `build(a path)` writes: built the first
    time `name` is asked for in the session, copied after. For files whose
    making is not what a test is about and takes a while (`migrate` leaves
    the file free for other writers for a moment after each of its steps)."""
    if name not in _BUILT:
        with tempfile.TemporaryDirectory() as directory:
            built = Path(directory) / "logs.db"
            build(built)
            _BUILT[name] = built.read_bytes()
    path.write_bytes(_BUILT[name])
    return path


def migrated_complex(path: Path) -> Path:
    """The complex tree of the four scenarios in conversation "t", and a
    one-node conversation "other", migrated (built once, then copied)."""
    return built_once("migrated complex", _migrated_complex, path)


def _migrated_complex(path: Path) -> None:
    conn = legacy_database(path, with_parent=False)
    conn.close()
    migrate(path)
    conn = sqlite3.connect(path)
    conn.execute("pragma synchronous = off")  # as in legacy_database
    add_tree(conn, "t", COMPLEX)
    add_response(conn, "lone", "other", "elsewhere", datetime_utc="2025-09-28")
    conn.commit()
    conn.close()


#: A tool for the echo model to call (`LlmLog.tool_chain`).
SHOUT = """
def shout(word: str) -> str:
    "Say a word loudly."
    return word.upper() + "!"
"""


@dataclass
class LlmLog:
    """A logs.db written by the real llm (0.36) with the offline echo model.

    Sets `LLM_USER_PATH` while it is in use, so llm writes to `directory`.
    """

    directory: Path
    previous_user_path: str | None = field(default=None, init=False)

    @property
    def path(self) -> Path:
        return self.directory / "logs.db"

    def __enter__(self) -> LlmLog:
        self.previous_user_path = os.environ.get("LLM_USER_PATH")
        os.environ["LLM_USER_PATH"] = str(self.directory)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.previous_user_path is None:
            os.environ.pop("LLM_USER_PATH", None)
        else:
            os.environ["LLM_USER_PATH"] = self.previous_user_path

    def cli(self, *args: str, input: str | bytes | None = None) -> str:
        """Run llm's own command line (in-process, through click) and return
        its output; `input`: what it reads from stdin."""
        from llm.cli import cli

        from tests.helpers import run

        if not self.path.exists():
            self._create()
        return run(*args, cli=cli, input=input).output

    def _create(self) -> None:
        """Create logs.db as llm's first command would, with llm's own
        migrations, on a connection that skips the disk sync at each of their
        many commits (most of a second on a busy disk). The file is the same:
        llm finds every migration applied and goes on."""
        import sqlite_utils
        from llm.migrations import migrate

        db = sqlite_utils.Database(self.path)
        db.execute("pragma synchronous = off")
        migrate(db)
        db.close()

    def prompt(self, text: str, *, continue_conversation: str | None = None) -> str:
        """`llm -m echo TEXT` (with `--cid` to continue); returns the turn id."""
        args = ["-m", "echo", text]
        if continue_conversation is not None:
            args = ["-m", "echo", "--cid", continue_conversation, text]
        self.cli(*args)
        return self.latest_turn()

    def tool_chain(
        self, prompt: str, calls: list[dict], *options: str, functions: str = ""
    ) -> list[str]:
        """A tool chain, as `llm -m echo --functions FILE JSON` runs it: the
        echo model (llm-echo 0.5) calls the tools `calls` names (each a dict
        with `name` and `arguments`) and gets their results in a call of its
        own. `functions`: the tools' Python source (`SHOUT` when empty).
        Returns the ids of the turns logged, in log order."""
        import json

        source = self.directory / "functions.py"
        source.write_text(functions or SHOUT)
        before = set(self.turn_ids())
        self.cli(
            "-m",
            "echo",
            "--functions",
            str(source),
            *options,
            json.dumps({"prompt": prompt, "tool_calls": calls}),
        )
        return [turn for turn in self.turn_ids() if turn not in before]

    def turn_ids(self) -> list[str]:
        """Every turn's id, in log order."""
        if not self.path.exists():
            return []
        conn = sqlite3.connect(self.path)
        try:
            return [
                row[0]
                for row in conn.execute(
                    "select id from turns order by datetime_utc, id"
                )
            ]
        finally:
            conn.close()

    def latest_turn(self) -> str:
        conn = sqlite3.connect(self.path)
        try:
            return conn.execute(
                "select id from turns order by datetime_utc desc, id desc limit 1"
            ).fetchone()[0]
        finally:
            conn.close()

    def thread_of(self, turn_id: str) -> str:
        conn = sqlite3.connect(self.path)
        try:
            return conn.execute(
                "select thread_id from turns where id = ?", [turn_id]
            ).fetchone()[0]
        finally:
            conn.close()

    def fork(self, turn_id: str, text: str) -> tuple[str, str]:
        """Fork a new thread at `turn_id`'s answer and prompt it with `text`,
        as the llm 0.36 Python API does it. Returns (thread id, turn id)."""
        import llm
        import sqlite_utils
        from llm.logs import LogStore

        db = sqlite_utils.Database(self.path)
        try:
            store = LogStore(db)
            row = db["turns"].get(turn_id)
            thread = store.fork(row["tip_message_hash"], forked_from=row["thread_id"])
            model = llm.get_model("echo")
            history = store.load_chain(store.thread_tip(thread))
            response = model.prompt(messages=history + [llm.user(text)])
            response.text()
            return thread, store.log(response, thread_id=thread)
        finally:
            db.close()
