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
user runs it. Two things are proven, neither by a clock:

- llm, asked its prompts while the reads run, logs every one of them, once
  and in order, and its command line raises nothing;
- a second writer beside each read (`WriterBeside`) commits between two of
  the read's statements: it waits until the reading process holds SQLite's
  read lock (the kernel's table of file locks says so), commits, which
  SQLite lets it do only once that reader is out of the file (and the
  read's next statement waits for the commit), then sees the read take the
  lock again. Every commit succeeds, and every read ends well.

How long such a commit waits (tens of milliseconds, as the reads go in
short steps; about a second every time with the old one-statement-per-table
reads) is measured by the benchmarks, never asserted here: on a busy machine
any bound in seconds fails now and then. That each statement reads a few
rows, not a table, is `test_sources`'s
`test_a_snapshot_reads_the_rows_up_to_its_start_in_short_steps`.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.helpers import SAFETY_SECONDS
from tests.llm_logging import PROMPT_PREFIX, LlmLogging

pytestmark = pytest.mark.slow

#: Turns in the file: enough that reading each table whole in one statement
#: holds the lock for seconds.
TURNS = 100_000

COMMANDS = [["stats"], ["tree"], ["export", "--format", "json"]]

#: Where SQLite's unix VFS takes a reader's lock (SHARED): a read lock on the
#: 510 bytes from the second past its PENDING byte (offset 2**30).
SHARED_FIRST = 2**30 + 2


@pytest.fixture(scope="module")
def large_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """llm's user directory holding a `TURNS`-turn logs.db."""
    from benchmarks.synthetic import build_message_store

    directory = tmp_path_factory.mktemp("large")
    build_message_store(directory / "logs.db", TURNS)
    return directory


def holds_read_lock(pid: int, path: Path) -> bool:
    """Whether process `pid` holds SQLite's read lock on `path` now, as the
    kernel's table of POSIX locks (`/proc/locks`) lists it: a READ lock on
    the file's inode that starts at `SHARED_FIRST`. Looking takes no lock."""
    inode = f":{path.stat().st_ino} "
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if fields[1] == "->":  # a process waiting for a lock, not holding one
            continue
        kind, access, owner = fields[1], fields[3], fields[4]
        if (kind, access, owner) == ("POSIX", "READ", str(pid)) and (
            inode in f"{fields[5]} " and fields[6] == str(SHARED_FIRST)
        ):
            return True
    return False


class WriterBeside:
    """A second writer beside one read, in step with it (see the module's
    docstring): `rounds` counts the commits after which the read took its
    lock again, so fell between two of its statements; `errors` holds any
    commit that failed. Its commits skip the disk sync (the disk's speed is
    not the question), and its busy timeout is a safety limit only: a read
    that never lets go fails the test instead of hanging it."""

    def __init__(self, path: Path, reader: subprocess.Popen) -> None:
        self.path = path
        self.reader = reader
        self.commits = 0
        self.rounds = 0
        self.errors: list[str] = []
        self._thread = threading.Thread(target=self._follow)

    def __enter__(self) -> WriterBeside:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._thread.join()

    def _reading(self) -> bool:
        """Wait until the reader holds its lock (True) or has ended (False)."""
        while self.reader.poll() is None:
            if holds_read_lock(self.reader.pid, self.path):
                return True
            time.sleep(0.001)
        return False

    def _follow(self) -> None:
        conn = sqlite3.connect(self.path, timeout=SAFETY_SECONDS, isolation_level=None)
        conn.execute("pragma synchronous = off")
        try:
            while self._reading():
                if self.commits:
                    self.rounds += 1  # the read went on after the last commit
                try:
                    conn.execute("begin immediate")
                    conn.execute("insert into probe values (?)", [self.commits])
                    conn.execute("commit")  # waits for the reader to let go
                except sqlite3.Error as error:
                    self.errors.append(f"{type(error).__name__}: {error}")
                    return
                self.commits += 1
        finally:
            conn.close()


def _read(path: Path, words: list[str]) -> subprocess.Popen:
    """One whole-forest command, as a user runs it, started."""
    return subprocess.Popen(
        [sys.executable, "-m", "convgraph", *words, "--db", str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(process: subprocess.Popen, words: list[str]) -> None:
    """Wait for a read to end (a hang fails after `SAFETY_SECONDS`); it must
    end well."""
    _, stderr = process.communicate(timeout=SAFETY_SECONDS)
    assert process.returncode == 0, (words, stderr)


def test_llm_logs_every_prompt_while_convgraph_reads_the_whole_forest(
    large_store: Path,
) -> None:
    path = large_store / "logs.db"
    with LlmLogging(large_store, prompts=50, interval=0.2) as logging:
        logging.wait_until_logging()
        for words in COMMANDS:
            _finish(_read(path, words), words)
    assert logging.errors == []
    assert logging.lost == 0
    assert logging.logged_prompts() == [f"{PROMPT_PREFIX} {n}" for n in range(50)]


@pytest.mark.skipif(
    not Path("/proc/locks").exists(), reason="no kernel lock table (/proc/locks)"
)
def test_a_writer_commits_between_the_statements_of_every_read(
    large_store: Path,
) -> None:
    # Apart from llm: a second writer would make llm's own writes fail.
    path = large_store / "logs.db"
    conn = sqlite3.connect(path)
    conn.execute("create table if not exists probe (x)")
    conn.commit()
    conn.close()
    for words in COMMANDS:
        reader = _read(path, words)
        with WriterBeside(path, reader) as writer:
            _finish(reader, words)
        assert writer.errors == [], words
        assert writer.rounds >= 1, (words, writer.commits)
