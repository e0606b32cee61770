"""`convgraph import` killed before each SQL statement it runs, one copy of
the target file per kill (`python -m tests.kill_points SOURCE FILE DIRECTORY
[STRIDE [LEFT]]`).

The process imports everything once, runs one import to its end with each
statement recorded, then forks one child per kill point: the child copies
FILE, imports SOURCE into the copy, and sends itself SIGKILL as SQLite
begins its Nth statement (the trace callback of every connection the import
opens), as a kill from outside would land between two statements. The kill points
are every STRIDE-th statement (STRIDE 1: every one), and always the first
statement of llm's migrations, the commit that ends them and the statement
after it. With LEFT (`left`), the recorded import also copies, as SQLite
begins each of its statements, the files a kill there would leave (the
database and its journal: everything the process has written, nothing it
holds in memory) to `DIRECTORY/left-N.db`, one run for every statement where
a kill per statement runs the import again each time. It prints one JSON
object: `statements` (the whole import's count), `first` and `upgrade` (the
statement numbers of the upgrade's first statement and of its commit),
`points` (the kill points), `killed` (those the import reached, each copy at
`DIRECTORY/killed-N.db`), `left` (the statements copied) and `whole` (the
copy imported without a kill).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Everything the import loads, loaded before the forks, so each child only
# runs the import.
import ijson  # noqa: F401
import llm.logs  # noqa: F401
import llm.migrations  # noqa: F401
import llm.parts  # noqa: F401
import sqlite_utils  # noqa: F401
import ulid  # noqa: F401

import convgraph.sources.chat.exports  # noqa: F401
from convgraph.store import importer

CONNECT = sqlite3.connect
#: The files SQLite keeps beside a database while it writes.
SUFFIXES = ("", "-journal", "-wal", "-shm")


def traced_import(
    source: str, target: Path, on_statement: Callable[[str], None]
) -> None:
    """Import `source` into `target`, calling `on_statement` as SQLite
    begins each statement of every connection the import opens."""

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = CONNECT(*args, **kwargs)
        conn.set_trace_callback(on_statement)
        return conn

    sqlite3.connect = connect  # type: ignore[assignment]
    try:
        importer.import_export(source, target)
    finally:
        sqlite3.connect = CONNECT


def killed_at(source: str, pristine: Path, target: Path, point: int) -> bool:
    """Import into a copy of `pristine` in a child killed before statement
    `point`; True when the kill came (False: the import ended first)."""
    shutil.copyfile(pristine, target)
    child = os.fork()
    if child == 0:
        seen = 0

        def count(_: str) -> None:
            nonlocal seen
            seen += 1
            if seen == point:
                os.kill(os.getpid(), signal.SIGKILL)

        try:
            traced_import(source, target, count)
        except BaseException:
            traceback.print_exc()
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(child, 0)
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL:
        return True
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
        return False
    raise SystemExit(f"the import at kill point {point} failed (status {status})")


def main(argv: list[str]) -> None:
    source, pristine, directory = argv[0], Path(argv[1]), Path(argv[2])
    stride = int(argv[3]) if len(argv) > 3 else 1
    whole = directory / "whole.db"
    shutil.copyfile(pristine, whole)
    statements: list[str] = []

    def record(statement: str) -> None:
        statements.append(statement)
        if argv[4:] == ["left"]:
            for suffix in SUFFIXES:
                if os.path.exists(f"{whole}{suffix}"):
                    copy = directory / f"left-{len(statements)}.db{suffix}"
                    shutil.copyfile(f"{whole}{suffix}", copy)

    traced_import(source, whole, record)
    # The upgrade's one commit: the first after its `begin exclusive`.
    begin = statements.index("begin exclusive")
    upgrade = begin + statements[begin:].index("commit") + 1
    first = begin + 2  # the first statement inside the transaction
    points = sorted(
        {*range(1, len(statements) + 1, stride), first, upgrade, upgrade + 1}
    )
    killed = []
    for point in points:
        if killed_at(source, pristine, directory / f"killed-{point}.db", point):
            killed.append(point)
    print(
        json.dumps(
            {
                "statements": len(statements),
                "first": first,
                "upgrade": upgrade,
                "points": points,
                "killed": killed,
                "left": list(range(1, len(statements) + 1)) if argv[4:] else [],
                "whole": str(whole),
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1:])
