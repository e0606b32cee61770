"""The way in (`convgraph.sources`): `opened` uses an open `Source` as it is
and opens a path itself, closing only what it opened."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from convgraph.sources import LogDatabase, open_logs, opened
from tests.databases import add_response, legacy_database


@pytest.fixture
def small_db(tmp_path: Path) -> Path:
    path = tmp_path / "logs.db"
    conn = legacy_database(path)
    add_response(conn, "r1", "c1", "hello")
    conn.commit()
    conn.close()
    return path


def test_a_path_is_opened_for_the_block_and_closed_after(small_db: Path) -> None:
    with opened(small_db) as logs:
        assert isinstance(logs, LogDatabase)
        assert logs.tree_ids() == ["c1"]
    with pytest.raises(sqlite3.ProgrammingError, match="closed database"):
        logs.conn.execute("select 1")


def test_an_open_source_is_used_as_it_is_and_left_open(small_db: Path) -> None:
    with open_logs(small_db) as mine:
        with opened(mine) as logs:
            assert logs is mine
        assert mine.conn.execute("select count(*) from responses").fetchone()[0] == 1


def test_the_block_closes_the_file_it_opened_when_it_fails(small_db: Path) -> None:
    with pytest.raises(KeyError), opened(small_db) as logs:
        raise KeyError("inside")
    with pytest.raises(sqlite3.ProgrammingError, match="closed database"):
        logs.conn.execute("select 1")
