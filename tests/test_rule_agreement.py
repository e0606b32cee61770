"""The read rules declared in pairs (`convgraph.links.rules`) held to one
answer, and a file read by either form listing its trees in one order.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import convgraph.cli.stats as stats_command
from tests.databases import LINEAR, LlmLog, add_response, add_tree, legacy_database
from tests.helpers import run

# -- one order of trees under and over the size threshold -------------------------


def upgraded_file(directory: Path) -> Path:
    """Legacy history of llm 0.31's schema, upgraded and continued by llm
    0.36, then legacy rows an older llm logs after the threads (one later,
    one earlier than every turn), and a table llm never reads."""
    db = directory / "logs.db"
    conn = legacy_database(db, with_parent=False)
    add_tree(conn, "c1", [(node, None) for node, _ in LINEAR])
    conn.close()
    with LlmLog(directory) as log:
        log.prompt("hello store")
        log.prompt("more", continue_conversation="c1")
    conn = sqlite3.connect(db)
    add_response(conn, "late", "c9", "late", datetime_utc="2099-01-01T00:00:00")
    add_response(conn, "early", "c0", "early", datetime_utc="2000-01-01T00:00:00")
    conn.execute("create table padding (b blob)")
    conn.commit()
    conn.close()
    return db


def outputs(db: Path) -> list[bytes]:
    commands = [
        ["stats", "--json"],
        ["conversations", "--json"],
        ["export", "--format", "json"],
    ]
    return [run(*words, "--db", db).stdout_bytes for words in commands]


def test_a_file_lists_its_trees_in_one_order_under_and_over_the_threshold(
    tmp_path: Path,
) -> None:
    db = upgraded_file(tmp_path)
    assert db.stat().st_size < stats_command.SMALL_INPUT_BYTES
    small = outputs(db)
    conn = sqlite3.connect(db)
    padding = os.urandom(stats_command.SMALL_INPUT_BYTES + 1)
    conn.execute("insert into padding values (?)", [padding])
    conn.commit()
    conn.close()
    assert db.stat().st_size > stats_command.SMALL_INPUT_BYTES
    assert outputs(db) == small
    trees = [row["tree_id"] for row in json.loads(small[0])]
    # Each tree where its first node is: the thread llm 0.36 began sits
    # between the legacy conversations logged before and after it.
    assert trees[:2] == ["c0", "c1"] and trees[-1] == "c9" and len(trees) == 4
