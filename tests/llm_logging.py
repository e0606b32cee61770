"""llm logging in a loop in a subprocess, while convgraph works on the file.

The concurrency tests ask one question: does convgraph ever cost llm a
prompt? A child process runs the real llm (0.36, the offline `echo` model)
through its own command line, `llm -m echo PROMPT`, a bounded number of
times with a pause between prompts, and reports each outcome as one JSON line.
The test meanwhile reads or migrates the same logs.db, then compares what llm
was asked with what it logged (rows added to `turns`).

Usage (a reader-side test does the same with a read in place of `migrate`)::

    from tests.llm_logging import LlmLogging

    with LlmLogging(directory, prompts=40, interval=0.1) as logging:
        logging.wait_until_logging()  # llm has logged once: it is running
        migrate(directory / "logs.db", link_linear=True)
    assert logging.lost == 0, logging.errors
    assert logging.logged_prompts() == [f"{PROMPT_PREFIX} {n}" for n in range(40)]

`directory` is llm's user directory (`LLM_USER_PATH`), holding `logs.db`.
The file must already be at llm's schema (run llm on it once first), so that
the child spends its time logging, not migrating. Leaving the `with` block
waits for the child to finish its prompts.

Run as a script, this module is the child:
`python llm_logging.py DIRECTORY PROMPTS INTERVAL`.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

PROMPT_PREFIX = "concurrent prompt"


def count_turns(path: Path) -> int:
    """How many turns llm has logged in `path` (0 before its first)."""
    rows = _turns(path, "select count(*) from turns")
    return rows[0][0] if rows else 0


def _turns(path: Path, query: str, *params: object) -> list[tuple]:
    """The rows of `query` on llm's turns; none before its first turn (the
    table is not there yet)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        exists = conn.execute(
            "select 1 from sqlite_master where type = 'table' and name = 'turns'"
        ).fetchone()
        return conn.execute(query, params).fetchall() if exists else []
    finally:
        conn.close()


class LlmLogging:
    """A child process logging `prompts` prompts with llm, `interval` seconds
    apart; see the module's docstring."""

    def __init__(
        self, directory: Path, prompts: int = 40, interval: float = 0.1
    ) -> None:
        self.directory = Path(directory)
        self.prompts = prompts
        self.interval = interval
        self.outcomes: list[dict] = []
        self.logged: int | None = None
        self._before = 0
        self._last_before = 0
        self._process: subprocess.Popen | None = None

    @property
    def path(self) -> Path:
        return self.directory / "logs.db"

    def __enter__(self) -> LlmLogging:
        self._before = count_turns(self.path)
        rows = _turns(self.path, "select coalesce(max(rowid), 0) from turns")
        self._last_before = rows[0][0] if rows else 0
        env = {**os.environ, "LLM_USER_PATH": str(self.directory)}
        self._process = subprocess.Popen(
            [
                sys.executable,
                __file__,
                str(self.directory),
                str(self.prompts),
                str(self.interval),
            ],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        return self

    def wait_until_logging(self) -> None:
        """Block until llm has answered its first prompt."""
        assert self._process is not None and self._process.stdout is not None
        line = self._process.stdout.readline()
        assert line, "the llm child process ended before its first prompt"
        self.outcomes.append(json.loads(line))

    def __exit__(self, *exc: object) -> None:
        assert self._process is not None and self._process.stdout is not None
        rest, _ = self._process.communicate(timeout=300)
        self.outcomes.extend(json.loads(line) for line in rest.splitlines() if line)
        self.logged = count_turns(self.path) - self._before

    @property
    def lost(self) -> int:
        """Prompts asked but not logged."""
        assert self.logged is not None, "only after the with block"
        return self.prompts - self.logged

    def logged_prompts(self) -> list[str]:
        """The prompts of the turns logged since the start, in log order (as
        llm's search table holds them); only after the with block."""
        assert self.logged is not None, "only after the with block"
        rows = _turns(
            self.path,
            "select s.prompt from turns as t join turn_search as s"
            " on s.turn_id = t.id where t.rowid > ? order by t.rowid",
            self._last_before,
        )
        return [prompt for (prompt,) in rows]

    @property
    def errors(self) -> list[str]:
        """The errors llm's command line raised, one per failed prompt."""
        return [outcome["error"] for outcome in self.outcomes if outcome["error"]]


def _child(directory: str, prompts: int, interval: float) -> None:
    os.environ["LLM_USER_PATH"] = directory
    from llm.cli import cli

    for index in range(prompts):
        error = None
        answer = io.StringIO()
        try:
            with contextlib.redirect_stdout(answer):
                cli.main(
                    ["prompt", "-m", "echo", f"{PROMPT_PREFIX} {index}"],
                    standalone_mode=False,
                )
        except BaseException as failure:  # noqa: BLE001 - reported, not raised
            error = f"{type(failure).__name__}: {failure}"
        print(json.dumps({"index": index, "error": error}), flush=True)
        time.sleep(interval)


if __name__ == "__main__":
    _child(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]))
