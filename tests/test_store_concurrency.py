"""The write side never costs llm a prompt: llm logs while convgraph migrates.

llm's logs.db uses a rollback journal. llm logs a prompt in a deferred
transaction that reads before it writes, so if another connection holds the
write lock at that moment llm's write fails at once ("database is locked"),
whatever its busy timeout. `migrate` of a large file must therefore never
hold the lock when llm could be mid-transaction, and never long enough to
outlast llm's 5 s wait.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from convgraph.store import log_response, migrate
from tests.databases import LlmLog, legacy_database, migrated_complex
from tests.llm_logging import LlmLogging

#: Big enough that the migration takes seconds (the old single transaction
#: held the lock for all of them), small enough to build in about a second.
RESPONSES = 300_000


def large_legacy_file(directory: Path, responses: int = RESPONSES) -> Path:
    """A logs.db that llm 0.31 made, holding `responses` legacy responses in
    conversations of 20 (written by raw SQL: llm would take hours), then
    opened once by llm 0.36, which brings it to its own schema.

    llm's search index is left out of the bulk insert (its trigger is set
    aside and put back): the rows are not in `responses_fts`.
    """
    path = directory / "logs.db"
    conn = legacy_database(path, with_parent=False)
    fts_trigger = conn.execute(
        "select sql from sqlite_master where name = 'responses_ai'"
    ).fetchone()[0]
    conn.execute("drop trigger responses_ai")
    conn.execute(
        """
        with recursive n(i) as (select 0 union all select i + 1 from n where i + 1 < ?)
        insert into conversations (id, name, model)
        select printf('c%07d', i), 'conversation ' || i, 'echo' from n
        """,
        [responses // 20],
    )
    conn.execute(
        """
        with recursive n(i) as (select 0 union all select i + 1 from n where i + 1 < ?)
        insert into responses
          (id, conversation_id, prompt, response, model, datetime_utc, options_json)
        select printf('r%07d', i), printf('c%07d', i / 20), 'question ' || i,
               'answer ' || i, 'echo',
               printf('2025-09-27T10:%02d:%02d', (i % 3600) / 60, i % 60), '{}'
        from n
        """,
        [responses],
    )
    conn.execute(fts_trigger)
    conn.commit()
    conn.close()
    with LlmLog(directory) as log:
        log.cli("logs", "status")  # llm 0.36 applies its migrations
    return path


@pytest.fixture
def large_file(tmp_path: Path) -> Path:
    return large_legacy_file(tmp_path)


@pytest.mark.slow
def test_llm_loses_no_prompt_while_a_large_file_migrates(large_file):
    with LlmLogging(large_file.parent, prompts=40, interval=0.1) as logging:
        logging.wait_until_logging()
        result = migrate(large_file, link_linear=True)
    assert result.applied
    assert (logging.lost, logging.errors) == (0, [])
    # And the migration is complete: every response but a conversation's
    # first has the one before it as parent.
    conn = sqlite3.connect(large_file)
    linked = conn.execute(
        "select count(*) from responses where parent_response_id is not null"
    ).fetchone()[0]
    conn.close()
    assert linked == RESPONSES - RESPONSES // 20
    assert migrate(large_file).applied is False


def test_a_write_never_takes_the_lock_from_a_writer_between_read_and_write(
    tmp_path,
):
    """llm's way to log: BEGIN, read, then write. convgraph writing in between
    must wait for llm's transaction, not take the write lock first (which
    fails llm's write at once, busy timeout or not)."""
    db = migrated_complex(tmp_path / "logs.db")
    llm_like = sqlite3.connect(db, isolation_level=None, timeout=5)
    llm_like.execute("begin")
    llm_like.execute("select count(*) from responses").fetchone()
    logged: list = []
    writer = threading.Thread(
        target=lambda: logged.append(
            log_response(db, prompt="p", response="r", model="echo", timeout=10)
        )
    )
    writer.start()
    # Leave convgraph time to take the lock, were it to take it.
    time.sleep(0.5)
    llm_like.execute(
        "insert into responses (id, conversation_id, prompt) values ('llm', 't', 'x')"
    )
    llm_like.execute("commit")
    llm_like.close()
    writer.join()
    conn = sqlite3.connect(db)
    ids = {row[0] for row in conn.execute("select id from responses")}
    conn.close()
    assert {"llm", logged[0].node_id} <= ids
