"""The `search` group: `convgraph search` on the suite's linear forests of N
responses (legacy; N turns of the message store too, unless --no-store),
beside `llm logs -q` and a bare FTS5 build of the same texts (issue 37).

Rows, for each kind of file and size:

- the first search: the whole file read and a fresh index built
  (`convgraph search` on an empty cache, in a process of its own), once,
  with that process's peak memory, beside a bare SQLite FTS5 build of the
  same texts (prompt, response and system of every row, one `insert ...
  select` into an FTS5 table of a fresh file: SQLite alone); each
  with the CPU seconds its process spent (``CPU s``, every thread): FTS5
  builds on one core, tantivy on two, so where the cores are shared the
  times compare less than the CPU seconds do;
- a query for a rare word (one node's "Question N") and for a common one (a
  word of the synthetic texts, in most nodes), each on an index that is
  current, beside `llm logs -q` with the same words on a copy of the file
  (llm upgrades an older file when it opens it, so never the cached one);
  each query's memory above its setup is a figure (`tasks.above_setup`);
  the common word again with `--model`, the filter applied on the index;
- a search after llm logged ten more calls into one conversation (appended
  untimed before each search, as llm appends them), the index brought up to
  date first; and on a legacy file `convgraph migrate` indexed, a search
  after one response logged with a parent (issue 45: its tree alone read);
  on a message store, a search after one `llm -c` and after a fork, each
  logged untimed by llm's own `LogStore` with the echo model.

The library's calls are timed in process, so each time is what the
command adds beyond its start-up (`python -m benchmarks startup` times
that). The indexes lie in a cache directory of the benchmark's own
(`XDG_CACHE_HOME` set in the workers), never in the user's cache: under
`benchmarks/data/search-cache/` for the queries, which share one index a
file across workers and runs, in temporary directories for the builds.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import suite, tasks
from benchmarks.report import Row

#: The word of the synthetic texts the common query asks for, and how many
#: calls the update row appends before each search.
COMMON_WORD = "branch"
APPENDED = 10
#: The model glob of the filtered query: a model of every synthetic
#: conversation, so every tree is in (the filter's most work).
FILTER_MODEL = "gpt-4*"
#: llm without its plugins (convgraph's among them): `llm logs -q` alone.
LLM_ENVIRONMENT = {"LLM_LOAD_PLUGINS": ""}
#: The cache directory the query rows share, under the data directory.
SHARED_CACHE = "search-cache"
#: Set to "build" (the first search beside FTS5), "update" (the searches after
#: appends), "query", and "store" or "legacy", to run only those rows and kinds:
#: at 1M the queries' copy for `llm logs -q` alone is minutes.
ROWS_VARIABLE = "CONVGRAPH_SEARCH_ROWS"


def _workdir() -> Path:
    directory = tempfile.mkdtemp(prefix="convgraph-search-")
    atexit.register(shutil.rmtree, directory, True)
    return Path(directory)


def _cache(directory: Path | str) -> None:
    """The worker's indexes go to `directory`."""
    os.environ["XDG_CACHE_HOME"] = str(directory)


@tasks.task("search.build", timer=True)
def _build(db: str) -> Callable[[int], float]:
    """The first search as the user runs it: `convgraph search` on an empty cache, a
    process of its own (the command's memory setup); ``CPU s`` and ``MB peak`` are
    that process's (every thread), from the kernel's account of it."""

    def time_it(loops: int) -> float:
        total = 0.0
        for _ in range(loops):
            command = [sys.executable, "-m", "convgraph", "search", COMMON_WORD]
            command += ["--db", db, "--limit", "1"]
            environment = {**os.environ, "XDG_CACHE_HOME": str(_workdir())}
            started = time.perf_counter()
            child = subprocess.Popen(
                command, env=environment, stdout=subprocess.DEVNULL
            )
            _, status, usage = os.wait4(child.pid, 0)
            total += time.perf_counter() - started
            child.returncode = os.waitstatus_to_exitcode(status)
            if child.returncode:
                raise RuntimeError(f"convgraph search exited {child.returncode}")
            tasks.figure("CPU s", usage.ru_utime + usage.ru_stime)
            tasks.figure("MB peak", usage.ru_maxrss / 1024)
        return total

    return time_it


@tasks.task("fts5.build", timer=True)
def _fts5_build(db: str) -> Callable[[int], float]:
    """A bare FTS5 index of the same texts: the file attached read-only and
    every row's prompt, response and system inserted by one statement into
    an FTS5 table (unicode61, diacritics folded) of a fresh file."""
    source = Path(db).resolve().as_uri() + "?mode=ro"

    def time_it(loops: int) -> float:
        total = 0.0
        for _ in range(loops):
            conn = sqlite3.connect(_workdir() / "fts5.db", isolation_level=None)
            conn.execute("pragma journal_mode = off")
            conn.execute("pragma synchronous = off")
            started, cpu = time.perf_counter(), time.process_time()
            conn.execute("attach database ? as source", [source])
            tables = {
                name
                for (name,) in conn.execute(
                    "select name from source.sqlite_master where type = 'table'"
                )
            }
            conn.execute(
                "create virtual table texts using fts5 (prompt, response, system,"
                " tokenize = 'unicode61 remove_diacritics 2')"
            )
            conn.execute("begin")
            if "responses" in tables:
                conn.execute(
                    "insert into texts select prompt, response, system"
                    " from source.responses"
                )
            if "turn_search" in tables:
                conn.execute(
                    "insert into texts (prompt, response)"
                    " select prompt, response from source.turn_search"
                )
            conn.execute("commit")
            total += time.perf_counter() - started
            tasks.figure("CPU s", time.process_time() - cpu)
            conn.close()
        return total

    return time_it


@tasks.task("search.query")
def _query(db: str, query: str, model: str = "", cache: str = "") -> Callable[[], Any]:
    """One search on a current index: the check that it is current, the
    ranked hits, their snippets and their branch marks; with `model`, only
    in the trees with a node of a model it matches (`--model`: the filter
    applied on the index)."""
    from convgraph.model.filters import TreeFilter
    from convgraph.search import search

    _cache(cache or _workdir())
    where = TreeFilter(models=(model,)) if model else None
    search(db, query)  # the index built where it is not yet, untimed

    def run() -> Any:
        hits = search(db, query, where=where)
        tasks.figure("hits", len(hits))
        return hits

    return tasks.above_setup(run)


def _append(path: Path, count: int) -> None:
    """`count` calls appended as llm appends them, each a retry of the last
    call logged: a new row with the same parent (in the message store, the
    same messages, which a retry with the same answer shares)."""
    conn = sqlite3.connect(path)
    tables = {row[0] for row in conn.execute("select name from sqlite_master")}
    table = "turns" if "turns" in tables else "responses"
    columns = [row[1] for row in conn.execute(f'pragma table_info("{table}")')]
    others = ", ".join(f'"{column}"' for column in columns if column != "id")
    stamp = time.time_ns()
    for index in range(count):
        conn.execute(
            f'insert into "{table}" (id, {others}) select ?, {others}'
            f' from "{table}" where rowid = (select max(rowid) from "{table}")',
            [f"appended-{stamp}-{index}"],
        )
    conn.commit()
    conn.close()


@tasks.task("search.update", timer=True)
def _update(db: str, query: str) -> Callable[[int], float]:
    """A search after llm logged `APPENDED` more calls (appended untimed)."""
    from convgraph.search import search

    work = _workdir()
    _cache(work / "cache")
    copy = work / "logs.db"
    shutil.copyfile(db, copy)
    search(copy, query)  # the index built, untimed

    def time_it(loops: int) -> float:
        total = 0.0
        for _ in range(loops):
            _append(copy, APPENDED)
            started = time.perf_counter()
            hits = search(copy, query)
            total += time.perf_counter() - started
            tasks.figure("hits", len(hits))
        return total

    return time_it


def _append_child(path: Path) -> None:
    """One response logged with a parent, as convgraph's `branch` or an
    older llm under `migrate`'s trigger logs it: a child of the newest
    response, in its conversation."""
    conn = sqlite3.connect(path)
    columns = [row[1] for row in conn.execute('pragma table_info("responses")')]
    others = ", ".join(
        f'"{column}"'
        for column in columns
        if column not in ("id", "parent_response_id")
    )
    conn.execute(
        f"insert into responses (id, parent_response_id, {others})"
        f" select ?, id, {others} from responses"
        " where rowid = (select max(rowid) from responses)",
        [f"child-{time.time_ns()}"],
    )
    conn.commit()
    conn.close()


@tasks.task("search.update_migrated", timer=True)
def _update_migrated(db: str, query: str) -> Callable[[int], float]:
    """A search after one response logged with a parent (appended untimed)
    into a copy of the legacy file that `convgraph migrate` indexed."""
    from convgraph.search import search
    from convgraph.store import migrate

    work = _workdir()
    _cache(work / "cache")
    copy = work / "logs.db"
    shutil.copyfile(db, copy)
    migrate(copy)
    search(copy, query)  # the index built, untimed

    def time_it(loops: int) -> float:
        total = 0.0
        for _ in range(loops):
            _append_child(copy)
            started = time.perf_counter()
            hits = search(copy, query)
            total += time.perf_counter() - started
            tasks.figure("hits", len(hits))
        return total

    return time_it


def _log_turn(path: Path, fork: bool) -> None:
    """One turn logged by llm's `LogStore` with the echo model, as `llm -c`
    logs it in the newest thread, or (`fork`) in a thread forked at the
    answer of the turn before the newest."""
    import llm
    import sqlite_utils
    from llm.logs import LogStore

    db = sqlite_utils.Database(path)
    try:
        store = LogStore(db)
        thread, tip = db.execute(
            "select thread_id, tip_message_hash from turns"
            " order by rowid desc limit 1 offset ?",
            [1 if fork else 0],
        ).fetchone()
        if fork:
            thread = store.fork(tip, forked_from=thread)
        history = store.load_chain(store.thread_tip(thread))
        said = "a fork" if fork else "one more"
        response = llm.get_model("echo").prompt(messages=[*history, llm.user(said)])
        response.text()
        store.log(response, thread_id=thread)
    finally:
        db.close()


@tasks.task("search.update_store", timer=True)
def _update_store(db: str, query: str, how: str) -> Callable[[int], float]:
    """A search after one turn logged by llm (`_log_turn`, untimed; `how`
    "continue" or "fork") into a copy of the message store, its index built."""
    from convgraph.search import search

    work = _workdir()
    _cache(work / "cache")
    copy = work / "logs.db"
    shutil.copyfile(db, copy)
    search(copy, query)  # the index built, untimed

    def time_it(loops: int) -> float:
        total = 0.0
        for _ in range(loops):
            _log_turn(copy, how == "fork")
            started = time.perf_counter()
            hits = search(copy, query)
            total += time.perf_counter() - started
            tasks.figure("hits", len(hits))
        return total

    return time_it


def _llm_copy(db: Path, llm: str) -> Path:
    """A copy of `db` as `llm logs -q` searches it: opened by llm once (its
    migrations run), and llm's full-text tables filled, which the suite's
    builders write their rows around."""
    copy = _workdir() / "llm-logs.db"
    shutil.copyfile(db, copy)
    subprocess.run(
        [llm, "logs", "-n", "1", "-d", str(copy)],
        env={**os.environ, **LLM_ENVIRONMENT},
        capture_output=True,
        check=True,
    )
    conn = sqlite3.connect(copy)
    tables = {row[0] for row in conn.execute("select name from sqlite_master")}
    for table in ("responses_fts", "turn_search_fts"):
        if table in tables:
            conn.execute(f"insert into {table} ({table}) values ('rebuild')")
    conn.commit()
    conn.close()
    return copy


def _llm_query(llm: str, query: str, copy: Path) -> suite.Task:
    return suite.command(
        "llm logs -q",
        "/usr/bin/env",
        *(f"{key}={value}" for key, value in LLM_ENVIRONMENT.items()),
        llm,
        "logs",
        "-q",
        query,
        "-d",
        str(copy),
    )


def search_rows(sizes: list[int], options: suite.Options) -> list[Row]:
    """The `search` group at each size (see the module's docstring)."""
    kinds: tuple[str, ...] = ("legacy", "store") if options.store else ("legacy",)
    chosen = os.environ.get(ROWS_VARIABLE, "build,query,update").split(",")
    kinds = tuple(kind for kind in kinds if kind in chosen) or kinds
    found = []
    for size in sizes:
        for kind in kinds:
            db = suite.database(kind, "linear", size, options.data_dir)
            rare = f"Question {size // 2}"
            if "build" in chosen:
                found.append(
                    Row(
                        "search",
                        kind,
                        size,
                        "first search (read + index built)",
                        suite.once(suite.task("search.build", db=db)),
                        suite.once(suite.task("fts5.build", db=db)),
                    )
                )
            if "query" in chosen:
                found += _query_rows(kind, size, db, rare, options)
            if "update" in chosen:
                found += _update_rows(kind, size, db, rare)
    return found


def _query_rows(
    kind: str, size: int, db: Path, rare: str, options: suite.Options
) -> list[Row]:
    """The queries on a current index, beside `llm logs -q` on a copy."""
    llm = str(Path(sys.executable).parent / "llm")
    cache = str(options.data_dir / SHARED_CACHE)
    found = []
    copy = _llm_copy(db, llm)
    for operation, query in (("rare word", rare), ("common word", COMMON_WORD)):
        found.append(
            Row(
                "search",
                kind,
                size,
                f"query, {operation}",
                suite.task("search.query", db=db, query=query, cache=cache),
                _llm_query(llm, query, copy),
            )
        )
    found.append(
        Row(
            "search",
            kind,
            size,
            f"query, common word, --model '{FILTER_MODEL}'",
            suite.task(
                "search.query",
                db=db,
                query=COMMON_WORD,
                model=FILTER_MODEL,
                cache=cache,
            ),
        )
    )
    return found


def _update_rows(kind: str, size: int, db: Path, rare: str) -> list[Row]:
    """The searches after appends: calls logged, and a turn by `llm -c` and a fork
    (a message store) or one response with a parent (a migrated legacy file)."""
    found = []
    found.append(
        Row(
            "search",
            kind,
            size,
            f"search after {APPENDED} more calls",
            suite.once(suite.task("search.update", db=db, query=rare)),
        )
    )
    for operation, how in (("one `llm -c`", "continue"), ("a fork", "fork")):
        if kind == "store":
            found.append(
                Row(
                    "search",
                    kind,
                    size,
                    f"search after {operation}",
                    suite.once(
                        suite.task("search.update_store", db=db, query=rare, how=how)
                    ),
                )
            )
    if kind == "legacy":
        found.append(
            Row(
                "search",
                kind,
                size,
                "search after one response with a parent, migrated",
                suite.once(suite.task("search.update_migrated", db=db, query=rare)),
            )
        )
    return found
