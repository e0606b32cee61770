"""`convgraph import` writes many conversations a transaction while the file
is idle (`convgraph.store.transaction.batched_writes`): what that must not
change. A second import adds nothing; an llm logging prompts in a loop beside
the import loses none of them and costs the import none of its
conversations; an import that stops in the middle of a batch (the export
breaks off, or the file refuses one conversation's rows) leaves whole
conversations only, and the next import completes them. And the batching
itself: one transaction while nobody else uses the file, one a unit once
another connection is seen.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from convgraph.errors import DatabaseError
from convgraph.sources import open_logs
from convgraph.sources.chat.exports import conversation_records
from convgraph.store.importer import import_export, plan_conversation
from tests.chat_exports import gpt_conversation, gpt_message, gpt_preamble, write_json
from tests.databases import LlmLog
from tests.helpers import file_digest


def small_conversation(index: int, steps: int, model: str = "gpt-4o") -> dict:
    """Conversation `conv-INDEX`: a chain of `steps` questions and answers."""
    name = f"c{index:04d}"
    nodes = gpt_preamble(f"{name}-root", f"{name}-sys")
    parent = f"{name}-sys"
    for step in range(steps):
        at = 10 * index + 2 * step
        question, answer = f"{name}-q{step}", f"{name}-a{step}"
        nodes.append(
            (question, parent, gpt_message(question, "user", f"Q{index}.{step}", at=at))
        )
        nodes.append(
            (
                answer,
                question,
                gpt_message(
                    answer, "assistant", f"A{index}.{step}", at=at + 1, model=model
                ),
            )
        )
        parent = answer
    return gpt_conversation(f"conv-{index}", f"Small {index}", nodes, parent)


def plans(source: Path) -> dict[str, Any]:
    """Each conversation's import plan, by conversation id (the test's own
    read of the export: the ids it must become)."""
    with open_logs(source) as export:
        return {
            conversation.id: plan_conversation(
                conversation.id,
                conversation.name,
                conversation_records(conversation, export.format),
                export.format,
            )
            for conversation in export.conversations()
        }


def rows(path: Path) -> tuple[set[str], set[str]]:
    """The turn ids and the thread ids in the file."""
    conn = sqlite3.connect(path)
    try:
        turns = {row[0] for row in conn.execute("select id from turns")}
        threads = {row[0] for row in conn.execute("select id from threads")}
    finally:
        conn.close()
    return turns, threads


def expected(planned: dict[str, Any], ids: list[str]) -> tuple[set[str], set[str]]:
    """The turn and thread ids the conversations `ids` become."""
    turns = {turn for key in ids for turn in planned[key].turn_ids}
    threads = {t.thread_id for key in ids for t in planned[key].threads}
    return turns, threads


def test_a_second_import_after_a_batched_one_adds_nothing(tmp_path):
    """120 small conversations: an idle file takes them in few transactions;
    the second import finds every one and leaves the file byte for byte."""
    source = write_json(
        tmp_path / "export.json", [small_conversation(i, 3) for i in range(120)]
    )
    target = tmp_path / "logs.db"
    first = import_export(source, target)
    assert (first.imported, first.nodes, first.threads) == (120, 360, 120)
    planned = plans(source)
    assert rows(target) == expected(planned, list(planned))
    digest = file_digest(target)
    second = import_export(source, target)
    assert (second.imported, second.skipped, second.grown) == (0, 120, [])
    assert file_digest(target) == digest


def test_an_export_that_breaks_off_leaves_whole_conversations(tmp_path):
    """The export's JSON ends in the middle of its 31st conversation: the 30
    before it are written whole (in the batch they were planned for), the
    broken one not at all; the whole export imported next completes it."""
    conversations = [small_conversation(i, 2) for i in range(40)]
    whole = write_json(tmp_path / "whole.json", conversations)
    text = whole.read_text()
    cut = text.index('"conv-30"')
    broken = tmp_path / "broken.json"
    broken.write_text(text[:cut])
    target = tmp_path / "logs.db"
    with pytest.raises(DatabaseError):
        import_export(broken, target)
    planned = plans(whole)
    assert rows(target) == expected(planned, [f"conv-{i}" for i in range(30)])
    summary = import_export(whole, target)
    assert (summary.imported, summary.skipped) == (10, 30)
    assert rows(target) == expected(planned, list(planned))


def test_a_conversation_refused_mid_batch_leaves_the_others_whole(tmp_path):
    """The file refuses one conversation's turns (a trigger of its own, as a
    hostile file may hold): the conversations before it in the same batch
    are committed whole, the refused one leaves no thread, turn or message,
    and the import stops with the file's error."""
    with LlmLog(tmp_path) as log:
        log.prompt("warm up")
    target = tmp_path / "logs.db"
    conn = sqlite3.connect(target)
    conn.execute(
        "create trigger refuse_poison before insert on turns"
        " when new.model = 'poison' begin select raise(abort, 'poisoned'); end"
    )
    conn.commit()
    messages_before = conn.execute("select count(*) from messages").fetchone()[0]
    conn.close()
    conversations = [small_conversation(i, 2) for i in range(20)]
    conversations[12] = small_conversation(12, 2, model="poison")
    source = write_json(tmp_path / "export.json", conversations)
    with pytest.raises(sqlite3.IntegrityError, match="poisoned"):
        import_export(source, target)
    planned = plans(source)
    turns, threads = rows(target)
    every = expected(planned, list(planned))
    written = expected(planned, [f"conv-{i}" for i in range(12)])
    assert (turns & every[0], threads & every[1]) == written
    # Beside them, llm's own warm-up only.
    assert (len(turns - every[0]), len(threads - every[1])) == (1, 1)
    conn = sqlite3.connect(target)
    try:
        # Two messages a step (question, answer) and the warm-up's two.
        messages = conn.execute("select count(*) from messages").fetchone()[0]
    finally:
        conn.close()
    assert messages == messages_before + 12 * 4


@pytest.mark.slow
def test_llm_logging_in_a_loop_beside_a_batched_import_loses_nothing(tmp_path):
    """The real llm (`llm -m echo`, in a child process) logs 25 prompts in a
    loop while 400 small conversations are imported into the same file:
    every prompt is logged, in order, and every conversation whole."""
    from tests.llm_logging import PROMPT_PREFIX, LlmLogging

    with LlmLog(tmp_path) as log:
        log.prompt("warm up")
    source = write_json(
        tmp_path / "export.json", [small_conversation(i, 4) for i in range(400)]
    )
    target = tmp_path / "logs.db"
    with LlmLogging(tmp_path, prompts=25, interval=0.05) as logging:
        logging.wait_until_logging()
        summary = import_export(source, target)
    assert logging.errors == []
    assert (summary.imported, summary.nodes) == (400, 1600)
    assert logging.logged == logging.prompts + summary.nodes
    assert [p for p in logging.logged_prompts() if p.startswith(PROMPT_PREFIX)] == [
        f"{PROMPT_PREFIX} {n}" for n in range(25)
    ]
    planned = plans(source)
    turns, threads = rows(target)
    wanted = expected(planned, list(planned))
    assert (turns & wanted[0], threads & wanted[1]) == wanted
    # llm's own turns are the warm-up and the 25 prompts.
    assert len(turns - wanted[0]) == 1 + 25


def commits_of(path: Path, reader_holds: bool) -> tuple[int, list[int]]:
    """`batched_writes` of ten one-row units into a fresh file: how many
    transactions it committed (SQLite's own trace of the statements run),
    and the rows written. With `reader_holds`, another connection is
    reading the file when the writes begin and lets go a moment later."""
    import threading

    from convgraph.store.transaction import batched_writes

    setup = sqlite3.connect(path)
    setup.execute("create table t (n integer)")
    setup.commit()
    reader = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    letting_go = threading.Timer(0.1, lambda: reader.execute("commit"))
    if reader_holds:
        reader.execute("begin")
        reader.execute("select count(*) from t").fetchone()
        letting_go.start()
    conn = sqlite3.connect(path, isolation_level=None)
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        for unit, result in batched_writes(
            conn, range(10), lambda n: conn.execute("insert into t values (?)", [n])
        ):
            assert result.rowcount == 1, unit
    finally:
        conn.set_trace_callback(None)
        conn.close()
    if reader_holds:
        letting_go.join()
    written = [n for (n,) in setup.execute("select n from t order by rowid")]
    setup.close()
    reader.close()
    return sum(s.strip().lower() == "commit" for s in statements), written


def test_one_transaction_while_idle_one_a_unit_once_another_is_seen(tmp_path):
    """Nobody else on the file: the ten units are one transaction. Another
    connection reading it when the writes begin: one transaction a unit."""
    assert commits_of(tmp_path / "idle.db", False) == (1, list(range(10)))
    assert commits_of(tmp_path / "busy.db", True) == (10, list(range(10)))
