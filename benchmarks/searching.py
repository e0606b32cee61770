"""The `search` group: `convgraph search` on the suite's linear forests of N
responses (legacy) and N turns (message store), beside `llm logs -q`.

Rows, for each kind of file and size: the index built (the first search:
the whole file read with its texts and written to a fresh index), beside
`convgraph stats` of the same file (the structure read without texts); a
query for a rare word (one node's "Question N") and for a common one (a
word of the synthetic texts, in most nodes: every match is ranked), each on an index
that is current, beside `llm logs -q` with the same word on a copy of the
same file (llm upgrades an older file when it opens it, so never the
cached one); and a search after llm logged ten more calls into one
conversation (appended untimed before each call, as llm appends them), the
index brought up to date first. Each query's memory above its setup is a
figure (`tasks.above_setup`); the common word again with `--model`, the
filter applied on the index.

The index lies beside a link to the cached file in a temporary directory
(`search_index.index_path` names it by the path given, not the target), so
`benchmarks/data/` holds no index.
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


def _workdir() -> Path:
    directory = tempfile.mkdtemp(prefix="convgraph-search-")
    atexit.register(shutil.rmtree, directory, True)
    return Path(directory)


def _linked(db: str) -> Path:
    """A link to `db` in a fresh directory, where its index will lie."""
    link = _workdir() / "logs.db"
    link.symlink_to(Path(db).resolve())
    return link


@tasks.task("search.build", timer=True)
def _build(db: str) -> Callable[[int], float]:
    """The whole index, written afresh each call (the first search)."""
    from convgraph.analysis.search_index import index_path, open_index
    from convgraph.sources import open_logs

    link = _linked(db)
    index = index_path(link)

    def time_it(loops: int) -> float:
        total = 0.0
        for _ in range(loops):
            index.unlink(missing_ok=True)
            started = time.perf_counter()
            with open_logs(link) as logs, open_index(logs):
                pass
            total += time.perf_counter() - started
        return total

    return time_it


@tasks.task("search.query")
def _query(db: str, query: str, model: str = "") -> Callable[[], Any]:
    """One search on a current index: the check that it is current, the
    ranked hits, their snippets and their branch marks; with `model`, only
    in the trees with a node of a model it matches (`--model`: the filter
    applied in SQL on the index)."""
    from convgraph.analysis.search import search
    from convgraph.model.filters import TreeFilter

    link = _linked(db)
    where = TreeFilter(models=(model,)) if model else None
    search(link, query)  # the index built, untimed

    def run() -> Any:
        hits = search(link, query, where=where)
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
    from convgraph.analysis.search import search

    copy = _workdir() / "logs.db"
    shutil.copyfile(db, copy)
    search(copy, query)  # the index built, untimed

    def time_it(loops: int) -> float:
        total = 0.0
        for _ in range(loops):
            _append(copy, APPENDED)
            started = time.perf_counter()
            search(copy, query)
            total += time.perf_counter() - started
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


def search_rows(sizes: list[int], options: suite.Options) -> list[Row]:
    """The `search` group at each size (see the module's docstring)."""
    llm = str(Path(sys.executable).parent / "llm")
    found = []
    for size in sizes:
        for kind in ("legacy", "store"):
            db = suite.database(kind, "linear", size, options.data_dir)
            rare = f"Question {size // 2}"
            copy = _llm_copy(db, llm)
            build = suite.task("search.build", db=db)
            found.append(
                Row(
                    "search",
                    kind,
                    size,
                    "index built",
                    build,
                    suite.task("convgraph.stats", db=db),
                )
            )
            for operation, query in (("rare word", rare), ("common word", COMMON_WORD)):
                found.append(
                    Row(
                        "search",
                        kind,
                        size,
                        f"query, {operation}",
                        suite.task("search.query", db=db, query=query),
                        suite.command(
                            "llm logs -q",
                            "/usr/bin/env",
                            *(
                                f"{key}={value}"
                                for key, value in LLM_ENVIRONMENT.items()
                            ),
                            llm,
                            "logs",
                            "-q",
                            query,
                            "-d",
                            str(copy),
                        ),
                    )
                )
            found.append(
                Row(
                    "search",
                    kind,
                    size,
                    f"query, common word, --model '{FILTER_MODEL}'",
                    suite.task(
                        "search.query", db=db, query=COMMON_WORD, model=FILTER_MODEL
                    ),
                )
            )
            found.append(
                Row(
                    "search",
                    kind,
                    size,
                    f"search after {APPENDED} more calls",
                    suite.task("search.update", db=db, query=rare),
                )
            )
    return found
