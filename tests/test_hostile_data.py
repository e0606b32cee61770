"""Data that llm's schema allows but llm never writes: a report, never a
traceback, a hang or a file that cannot be read at all.

Each file starts as a logs.db written by llm 0.36 itself (the session's
`llm_fork_db`, copied per test) or by llm 0.31's schema (`legacy_database`),
then a raw SQL write makes it hostile, as only another program could. Every
read command must then exit 0 (the rest of the file read, the bad value shown
or reported) or 2 (one line on stderr), never with a traceback; `branch`
must say in one line why it cannot go on instead of looping in llm's
`load_chain`. The property test at the end stores random values of every
SQLite type in every column llm defines and runs every read command.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import file_digest

# -- branch on a broken chain of messages (issue 12, item 9) -----------------


@pytest.fixture
def llm_copy(llm_fork_db: dict, tmp_path: Path) -> dict:
    """A private copy of the llm-written fork database."""
    path = tmp_path / "logs.db"
    shutil.copyfile(llm_fork_db["path"], path)
    return {**llm_fork_db, "path": path}


def _tip_of(path: Path, turn_id: str) -> str:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "select tip_message_hash from turns where id = ?", [turn_id]
        ).fetchone()[0]
    finally:
        conn.close()


def _branch_in_a_subprocess(path: Path, node_id: str) -> subprocess.CompletedProcess:
    """`convgraph branch` as a user runs it; a subprocess with a time limit,
    so that a loop in llm fails the test instead of hanging the suite."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "convgraph",
            "branch",
            node_id,
            "go on",
            "-m",
            "echo",
            "--db",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_branch_on_a_cycle_of_messages_is_refused(llm_copy: dict) -> None:
    path = llm_copy["path"]
    second = llm_copy["turns"][1]
    tip = _tip_of(path, second)
    conn = sqlite3.connect(path)
    # The first message of the conversation gets the second turn's answer as
    # its parent: every chain through it goes round.
    (root,) = conn.execute(
        "select hash from messages where parent_hash is null"
    ).fetchone()
    conn.execute("update messages set parent_hash = ? where hash = ?", [tip, root])
    conn.commit()
    conn.close()
    before = file_digest(path)

    result = _branch_in_a_subprocess(path, second)

    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr == (
        f"Error: cannot branch from {second}: the parent links of its history go"
        f" round a cycle (message {tip} is its own ancestor)\n"
    )
    assert file_digest(path) == before


def test_branch_from_a_turn_whose_tip_is_missing_is_refused(llm_copy: dict) -> None:
    path = llm_copy["path"]
    first = llm_copy["turns"][0]
    tip = _tip_of(path, first)
    conn = sqlite3.connect(path)
    conn.execute("update messages set parent_hash = null where parent_hash = ?", [tip])
    conn.execute("delete from messages where hash = ?", [tip])
    conn.commit()
    conn.close()

    result = _branch_in_a_subprocess(path, first)

    assert result.returncode == 2, result.stderr
    assert result.stderr == (
        f"Error: cannot branch from {first}: it ends at message {tip},"
        " which is not in the file\n"
    )


def test_branch_from_a_turn_whose_history_is_missing_is_refused(
    llm_copy: dict,
) -> None:
    path = llm_copy["path"]
    third = llm_copy["turns"][2]
    conn = sqlite3.connect(path)
    (root,) = conn.execute(
        "select hash from messages where parent_hash is null"
    ).fetchone()
    conn.execute("update messages set parent_hash = 'gone' where hash = ?", [root])
    conn.commit()
    conn.close()

    result = _branch_in_a_subprocess(path, third)

    assert result.returncode == 2, result.stderr
    assert result.stderr == (
        f"Error: cannot branch from {third}: its history goes up to message"
        " gone, which is not in the file\n"
    )
