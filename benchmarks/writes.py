"""The groups of convgraph beside a writer: `store` (the write side:
migration, the rules' cost, deletion), `fanout` (several answers at once,
and Ctrl-C) and `logging` (how long a writer waits while convgraph reads).

`store`: legacy databases of N responses in conversations of 20, with llm's
search index (`responses_fts` and its triggers) as llm 0.31 made them; each
call on a fresh copy of the file (copied untimed). `migrate` beside a bare
``ALTER TABLE``, `migrate --link-linear` beside the same linking UPDATE with
llm's FTS trigger left in place (what --link-linear avoids: re-indexing
every prompt and response for a change to neither), a second `migrate`
(which only reads); 2,000 raw inserts of children with convgraph's triggers
beside the column alone; one insert under a 100,000-deep chain, where the
cycle check walks every ancestor; `delete --cascade` of a 10,001-node
subtree and `delete --reparent` of a node with 5,000 children.

`fanout`: on a logs.db llm 0.36 writes itself, `fan_out` asks N answers of a
model that waits half a second (the suite's own plugin,
`tests/plugins/llm_slow_model.py`): async, in threads, and capped at one at
a time (the serial N x 0.5 s, the baseline). Then a real SIGINT to a real
`convgraph branch` asking a quick model and two slow ones, once the quick
answer is logged: the time until the process exits, checked to have kept
that answer (exit status 130).

`logging`: a second writer commits every 10 ms (`CommitProbe`) while
`convgraph stats`, `tree` and `export --format json` read a message store,
each in a process of its own as a user runs them; the figure is the longest
its COMMIT waited, which is the longest a reader held the file in one
stretch. llm's logging waits the same way, five seconds before it drops a
prompt. The baseline reads each table whole in one statement, as the old
readers did.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks import suite, synthetic, tasks
from benchmarks.report import Row

CONVERSATION_LENGTH = 20
INSERTS = 2_000
CHAIN = 100_000
STAR = 5_000
DELAY = 0.5


def _workdir() -> Path:
    directory = tempfile.mkdtemp(prefix="convgraph-bench-")
    atexit.register(shutil.rmtree, directory, True)
    return Path(directory)


def _sql(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path)
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()


# -- store -------------------------------------------------------------------------


def _alter(path: Path) -> None:
    _sql(path, "alter table responses add column parent_response_id text")


def _naive_link(path: Path) -> None:
    """The linking UPDATE as a naive migration would run it: llm's FTS
    trigger re-indexes every updated row."""
    _sql(
        path,
        "alter table responses add column parent_response_id text",
        """
        with linear as (
          select id, lag(id) over (partition by conversation_id
                                   order by datetime_utc, id) as previous
          from responses
        )
        update responses set parent_response_id = linear.previous
        from linear where linear.id = responses.id and linear.previous is not null
        """,
    )


def _inserts(path: Path) -> None:
    """`INSERTS` children of the last response of the first conversation."""
    conn = sqlite3.connect(path)
    parent, conversation = conn.execute(
        "select id, conversation_id from responses where conversation_id ="
        " (select conversation_id from responses where rowid = 1)"
        " order by datetime_utc desc, id desc limit 1"
    ).fetchone()
    conn.executemany(
        "insert into responses (id, conversation_id, parent_response_id, prompt)"
        " values (?, ?, ?, 'p')",
        ((f"new{i:06d}", conversation, parent) for i in range(INSERTS)),
    )
    conn.commit()
    conn.close()


def _insert_at_the_tip(path: Path) -> None:
    conn = sqlite3.connect(path)
    tip, conversation = conn.execute(
        "select id, conversation_id from responses order by rowid desc limit 1"
    ).fetchone()
    conn.execute(
        "insert into responses (id, conversation_id, parent_response_id)"
        " values ('tip', ?, ?)",
        [conversation, tip],
    )
    conn.commit()
    conn.close()


def _migrate(path: Path, link_linear: bool = False) -> None:
    from convgraph.store import migrate

    migrate(path, link_linear=link_linear)


def _delete(path: Path, mode: str) -> None:
    from convgraph.store import delete_node

    delete_node("root", path, mode=mode)  # type: ignore[arg-type]


def _on_copies(action: Callable[[Path], object], db: str) -> Callable[[int], float]:
    """Time `action` on a fresh copy of `db` each call (copied untimed)."""
    copy = _workdir() / "copy.db"

    def time_it(loops: int) -> float:
        total = 0.0
        for _ in range(loops):
            shutil.copyfile(db, copy)
            started = time.perf_counter()
            action(copy)
            total += time.perf_counter() - started
        return total

    return time_it


ACTIONS: dict[str, Callable[[Path], object]] = {
    "alter": _alter,
    "migrate": _migrate,
    "migrate_linear": functools.partial(_migrate, link_linear=True),
    "naive_link": _naive_link,
    "inserts": _inserts,
    "insert_under_chain": _insert_at_the_tip,
    "delete_cascade": functools.partial(_delete, mode="cascade"),
    "delete_reparent": functools.partial(_delete, mode="reparent"),
}
for _name, _action in ACTIONS.items():
    tasks.task(f"store.{_name}", timer=True)(functools.partial(_on_copies, _action))


def _star(path: Path) -> None:
    """A migrated file whose response "root" has `STAR` children, each with
    one child of its own."""
    conn = sqlite3.connect(path)
    conn.executescript(synthetic.SCHEMA_0_31.read_text())
    conn.close()
    _migrate(path)
    rows: list[tuple[str, str | None, str]] = [("root", None, "2025-01-01T0")]
    for i in range(STAR):
        rows += [(f"k{i:06d}", "root", f"2025-01-01T1{i:06d}")]
        rows += [(f"g{i:06d}", f"k{i:06d}", f"2025-01-01T2{i:06d}")]
    conn = sqlite3.connect(path)
    conn.execute("insert into conversations (id, name, model) values ('s', 's', 'e')")
    conn.executemany(
        "insert into responses (id, conversation_id, parent_response_id, prompt,"
        " datetime_utc, options_json) values (?, 's', ?, 'p', ?, '{}')",
        rows,
    )
    conn.commit()
    conn.close()


def _llm_0_31(path: Path, size: int) -> None:
    """`size` responses as llm 0.31 logs them, its search index filled."""
    conversations = max(1, size // CONVERSATION_LENGTH)
    synthetic.build_legacy(
        path, size, conversations, with_parent=False, search_index=True
    )


def _chain(path: Path) -> None:
    """One conversation that is a single chain `CHAIN` responses deep."""
    synthetic.build_legacy(path, CHAIN, 1, "deep", with_parent=False)
    _migrate(path, link_linear=True)


def store_rows(sizes: list[int], options: suite.Options) -> list[Row]:
    """The `store` group: migration and inserts at each size, then the
    deep chain and the deletions (the same whatever the sizes)."""

    def cached(name: str, build: Callable[[Path], object]) -> Path:
        path = options.data_dir / f"{name}-v{suite.BUILD_VERSION}.db"
        return suite.cached(path, build)

    def copy(source: Path, change: Callable[[Path], object]) -> Callable:
        return lambda path: (shutil.copyfile(source, path), change(path))

    def t(name: str, db: Path) -> suite.Task:
        return suite.task(f"store.{name}", db=db)

    found = []
    for size in sizes:
        source = cached(f"llm-0.31-{size}", functools.partial(_llm_0_31, size=size))
        linked = cached(f"migrated-{size}", copy(source, ACTIONS["migrate_linear"]))
        altered = cached(f"altered-{size}", copy(source, _alter))
        for section, operation, ours, theirs in (
            ("migrate", "migrate", t("migrate", source), t("alter", source)),
            ("migrate", "migrate --link-linear", t("migrate_linear", source),
             t("naive_link", source)),
            ("migrate", "migrate again (reads only)", t("migrate", linked), None),
            ("rules", f"{INSERTS:,} inserts of a child", t("inserts", linked),
             t("inserts", altered)),
        ):  # fmt: skip
            found.append(Row(section, "", size, operation, ours, theirs))
        megabytes = source.stat().st_size / 1e6
        found[-4].notes.append(
            f"llm 0.31's file, search index included: {megabytes:.0f} MB"
        )
    found[-1].notes.append("baseline: the same inserts, the column without the rules")
    chain, star = cached(f"chain-{CHAIN}", _chain), cached(f"star-{STAR}", _star)
    for section, operation, name, db in (
        ("rules", f"one insert under a {CHAIN:,}-deep chain", "insert_under_chain", chain),
        ("delete", f"delete --cascade of a {2 * STAR + 1:,}-node subtree",
         "delete_cascade", star),
        ("delete", f"delete --reparent of a node with {STAR:,} children",
         "delete_reparent", star),
    ):  # fmt: skip
        found.append(Row(section, "", 0, operation, t(name, db)))
    return found


# -- fanout ------------------------------------------------------------------------

INTERRUPTED = """
import signal, sys
# Ctrl-C raises here, as at a terminal, even where this process was started
# by a shell's background job, which ignores SIGINT (and Python keeps that).
signal.signal(signal.SIGINT, signal.default_int_handler)
from tests.plugins.llm_slow_model import SlowModel, registered
from convgraph.cli import cli
with registered(SlowModel("quick"), SlowModel("slow", delay=120),
                SlowModel("slow-thread", delay=120, chunks=240, asynchronous=False)):
    cli(sys.argv[1:])
"""


def _llm_store() -> tuple[str, Path]:
    """A logs.db holding one echo answer, written by llm in a fresh user
    directory (this process's `LLM_USER_PATH` from now on): the answer's turn
    id, and the file."""
    import llm
    import sqlite_utils
    from llm.migrations import migrate

    directory = _workdir()
    os.environ["LLM_USER_PATH"] = str(directory)
    db = sqlite_utils.Database(directory / "logs.db")
    migrate(db)
    response = llm.get_model("echo").prompt("What is a tree?")
    response.text()
    response.log_to_db(db)
    (turn,) = next(db.execute("select id from turns"))
    db.close()
    return turn, directory / "logs.db"


def _latest_turns(path: Path) -> list[tuple[int, str]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        return conn.execute("select rowid, model from turns order by rowid").fetchall()
    finally:
        conn.close()


@tasks.task("fanout.answers")
def _fanout(model: str, count: str, parallel: str) -> Callable[[], None]:
    """`fan_out` of `count` answers of ``slow-async`` or ``slow-thread``
    (each taking `DELAY` seconds), at most `parallel` at once."""
    from convgraph.store import fan_out
    from tests.plugins.llm_slow_model import SlowModel, registered

    node, path = _llm_store()
    models = [SlowModel("slow-async", delay=DELAY)]
    models.append(SlowModel("slow-thread", delay=DELAY, asynchronous=False))
    held = contextlib.ExitStack()  # registered for the life of this process
    held.enter_context(registered(*models))
    atexit.register(held.close)

    def run() -> None:
        result = fan_out(
            node,
            "And a forest?",
            path,
            models=[model],
            tries=int(count),
            parallel=int(parallel),
        )
        if not result.ok:
            raise RuntimeError(f"the fan-out failed: {result.failures}")

    return run


tasks.task("fanout.one_at_a_time")(functools.partial(_fanout, parallel="1"))


@tasks.task("fanout.interrupt", timer=True)
def _interrupt() -> Callable[[int], float]:
    """Seconds from SIGINT to the exit of a `convgraph branch` of a quick
    model and two slow ones, sent once the quick answer is logged; raises
    unless it exits with status 130 having kept that answer alone."""
    node, path = _llm_store()
    argv = [sys.executable, "-c", INTERRUPTED, "branch", node, "Hm", "-m", "quick"]
    argv += ["-m", "slow", "-m", "slow-thread", "--db", str(path)]

    def time_it(loops: int) -> float:
        total = 0.0
        for _ in range(loops):
            before = len(_latest_turns(path))
            process = subprocess.Popen(
                argv, cwd=suite.ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
            while len(_latest_turns(path)) == before:  # until the quick answer
                if process.poll() is not None:
                    raise RuntimeError(f"ended early: {process.communicate()[1]!r}")
                time.sleep(0.01)
            started = time.perf_counter()
            process.send_signal(signal.SIGINT)
            _, stderr = process.communicate(timeout=600)
            total += time.perf_counter() - started
            kept = [model for _, model in _latest_turns(path)[before:]]
            if process.returncode != 130 or kept != ["quick"]:
                raise RuntimeError(
                    f"kept {kept}, exit {process.returncode}: {stderr!r}"
                )
            tasks.figure("answers kept", len(kept))
        return total

    return time_it


def fanout_rows(sizes: list[int], options: suite.Options) -> list[Row]:
    """The `fanout` group: N answers at once, at each N, then Ctrl-C."""
    found = []
    for count in sizes:
        serial = suite.task("fanout.one_at_a_time", model="slow-async", count=count)
        for shape, model in (("async", "slow-async"), ("threads", "slow-thread")):
            ours = suite.task(
                "fanout.answers", model=model, count=count, parallel=count
            )
            operation = f"answers of {DELAY:g} s each, all at once"
            found.append(Row("fanout", shape, count, operation, ours, serial))
    ctrl_c = "Ctrl-C to exit: branch -m quick -m slow -m slow-thread"
    return [*found, Row("fanout", "", 0, ctrl_c, suite.task("fanout.interrupt"))]


# -- logging -----------------------------------------------------------------------

READS = {
    "stats": ["stats"],
    "tree": ["tree"],
    "export --format json": ["export", "--format", "json"],
}
#: The baseline: each table read whole in one statement.
FETCH = """
import sqlite3, sys
conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
for table in ("turns", "messages", "parts", "threads"):
    conn.execute(f"select * from {table}").fetchall()
"""


class CommitProbe(threading.Thread):
    """A writer beside the read: every 10 ms it writes a row to a table of
    its own and times its COMMIT, which (under SQLite's PENDING lock, which
    lets no new reader in) waits until every reader is out of the file.
    `longest` is the longest wait. Its commits skip the disk sync, so that
    the disk's speed does not count."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.longest = 0.0
        self.stopped = threading.Event()
        self.error: sqlite3.Error | None = None

    def run(self) -> None:
        conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        conn.execute("pragma synchronous = off")
        try:
            while not self.stopped.is_set():
                conn.execute("begin immediate")
                conn.execute("insert into probe values (1)")
                started = time.perf_counter()
                conn.execute("commit")
                self.longest = max(self.longest, time.perf_counter() - started)
                time.sleep(0.01)
        except sqlite3.Error as error:  # the writer lost: the figure is void
            self.error = error
        finally:
            conn.close()


@tasks.task("logging.writer_wait", timer=True)
def _writer_wait(db: str, read: str) -> Callable[[int], float]:
    """The longest commit wait of a `CommitProbe` during one read of a copy
    of `db`: one of `READS`, or the baseline's ``fetch``."""
    copy = _workdir() / "logs.db"
    shutil.copyfile(db, copy)
    _sql(copy, "create table probe (x)")
    argv = [sys.executable, "-c", FETCH, str(copy)]
    if read != "fetch":
        argv = [sys.executable, "-m", "convgraph", *READS[read], "--db", str(copy)]

    def time_it(loops: int) -> float:
        total = 0.0
        for _ in range(loops):
            probe = CommitProbe(copy)
            probe.start()
            try:
                subprocess.run(
                    argv, cwd=suite.ROOT, stdout=subprocess.DEVNULL, check=True
                )
            finally:
                probe.stopped.set()
                probe.join()
            if probe.error:
                raise probe.error
            total += probe.longest
        return total

    return time_it


tasks.task("logging.whole_table_reads", timer=True)(
    functools.partial(_writer_wait, read="fetch")
)


def logging_rows(sizes: list[int], options: suite.Options) -> list[Row]:
    """The `logging` group: each whole-forest read of a message store of each
    size, beside the one-statement reads."""
    found = []
    for size in sizes:
        db = suite.database("store", "linear", size, options.data_dir)
        fetch = suite.task("logging.whole_table_reads", db=db)
        for read in READS:
            ours = suite.task("logging.writer_wait", db=db, read=read)
            operation = f"longest commit wait, convgraph {read}"
            found.append(Row("logging", "", size, operation, ours, fetch))
    return found
