"""Whole-forest reads while llm logs: llm never loses a prompt to convgraph.

llm's logs.db uses a rollback journal: to commit, llm needs every reader out
of the file, and it waits five seconds (its busy timeout) before it gives up
and drops the response. A read that keeps one SELECT open for seconds (the
old whole-table reads: a million turns held the lock for 5 s, and 10 of 52
concurrent prompts were lost) is a lost prompt.

Here the real llm (0.36, the offline echo model) logs in a subprocess
(`tests/llm_logging.py`) while `convgraph stats`, `tree` and `export
--format json` read a synthetic message store of `TURNS` turns (llm's own
schema, `benchmarks/synthetic.py`), each in a subprocess of its own as a
user runs it. Two things are counted:

- what llm logged against what it was asked: nothing lost;
- the longest a second writer's commit waited for the read (`CommitProbe`):
  under `MAX_HOLD_SECONDS`, a tenth of llm's patience. A million-turn file,
  on which the old reads made llm itself lose prompts, takes minutes to
  build and read, so this file is smaller: the old reads (one statement per
  table) made a commit wait about a second on it, more than
  `MAX_HOLD_SECONDS` every time, while llm, with its five seconds, was
  lucky; the reads in short steps make it wait tens of milliseconds.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.llm_logging import LlmLogging

#: Turns in the file: enough that reading each table whole in one statement
#: holds the lock for seconds.
TURNS = 100_000
#: The longest a writer's commit may wait for a read: a tenth of llm's
#: five-second busy timeout.
MAX_HOLD_SECONDS = 0.5

COMMANDS = [["stats"], ["tree"], ["export", "--format", "json"]]


@pytest.fixture(scope="module")
def large_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """llm's user directory holding a `TURNS`-turn logs.db."""
    from benchmarks.synthetic import build_message_store

    directory = tmp_path_factory.mktemp("large")
    build_message_store(directory / "logs.db", TURNS)
    return directory


class CommitProbe:
    """A second writer beside llm: every few milliseconds it writes a row
    to a table of its own and times its COMMIT, which, as llm's does, waits
    (under SQLite's PENDING lock, which lets no new reader in) until every
    reader is out of the file. The longest wait is the longest a reader
    held the lock in one stretch. Its commits skip the disk sync, so that
    the disk's speed does not count."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.longest = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._probe)

    def __enter__(self) -> CommitProbe:
        conn = sqlite3.connect(self.path)
        conn.execute("create table if not exists probe (x)")
        conn.commit()
        conn.close()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _probe(self) -> None:
        conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        conn.execute("pragma synchronous = off")
        try:
            while not self._stop.is_set():
                # llm may hold the write lock: wait for it, do not count it.
                conn.execute("begin immediate")
                conn.execute("insert into probe values (1)")
                started = time.perf_counter()
                conn.execute("commit")
                self.longest = max(self.longest, time.perf_counter() - started)
                time.sleep(0.01)
        finally:
            conn.close()


def _read(path: Path, words: list[str]) -> None:
    """One whole-forest command, as a user runs it."""
    result = subprocess.run(
        [sys.executable, "-m", "convgraph", *words, "--db", str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, (words, result.stderr)


def test_llm_logs_every_prompt_while_convgraph_reads_the_whole_forest(
    large_store: Path,
) -> None:
    path = large_store / "logs.db"
    with LlmLogging(large_store, prompts=50, interval=0.2) as logging:
        logging.wait_until_logging()
        for words in COMMANDS:
            _read(path, words)
    assert logging.errors == []
    assert logging.lost == 0


def test_no_read_makes_a_writer_wait_long(large_store: Path) -> None:
    # Apart from llm: a second writer would make llm's own writes fail.
    path = large_store / "logs.db"
    waits = {}
    for words in COMMANDS:
        with CommitProbe(path) as probe:
            _read(path, words)
        waits[" ".join(words)] = round(probe.longest, 3)
    assert all(wait < MAX_HOLD_SECONDS for wait in waits.values()), waits
