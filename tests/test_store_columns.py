"""The message store's texts read as columns against the row reader's.

`columnar.read_forest(text=True)` on a message store gathers each turn's
prompt, response, system prompt and parts on arrays
(`columnar.message_store.turn_texts`); the row reader walks each turn's
messages in Python (`message_chains.add_texts`, `system_of`). Both must give
the same forest, exactly, on files llm wrote and on files edited into the
cases the rule has to get right: several text parts in one message and
their order, a message without parts, a part of no message, a tool's
message as a turn's input, system prompts. A file whose parts are not all
texts with their words (a tool call, a borrowed fragment) is the row
reader's: the columnar read answers None.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("adbc_driver_sqlite")

from benchmarks import synthetic  # noqa: E402
from convgraph import Forest  # noqa: E402
from convgraph.sources import open_logs
from convgraph.sources.llm import columnar  # noqa: E402
from tests.databases import LlmLog  # noqa: E402
from tests.helpers import plain  # noqa: E402
from tests.test_columnar import execute, read_both  # noqa: E402


def assert_same_texts(path: Path, monkeypatch: pytest.MonkeyPatch) -> Forest:
    """The columnar read of `path` with its texts is the row reader's."""
    fast, rows = read_both(path, True, monkeypatch)
    assert fast is not None, "the columnar reader should take this file"
    assert fast.calls == rows.calls
    assert fast.names == rows.names
    ours = Forest(fast.nodes, fast.names, rows.problems, calls=fast.calls)
    theirs = Forest(rows.nodes, rows.names, rows.problems, calls=rows.calls)
    pd.testing.assert_frame_equal(ours.nodes, theirs.nodes, check_exact=True)
    assert list(ours.parent_rows) == list(theirs.parent_rows)
    return ours


def copy_of(source: Path, directory: Path) -> Path:
    target = directory / "logs.db"
    target.write_bytes(Path(source).read_bytes())
    return target


def column(forest: Forest, name: str) -> dict[str, object]:
    """Each node's value of `name`, by id, missing as None."""
    return dict(zip(forest.nodes["id"], plain(forest.nodes[name]), strict=True))


def test_a_file_llm_wrote(llm_fork_db, monkeypatch):
    forest = assert_same_texts(llm_fork_db["path"], monkeypatch)
    first, second, third = llm_fork_db["turns"]
    fork_first, fork_second = llm_fork_db["fork_turns"]
    assert column(forest, "prompt") == {
        first: "What is a tree?",
        second: "And a forest?",
        third: "Give an example",
        fork_first: "What is a graph, then?",
        fork_second: "Is every tree a graph?",
    }
    assert set(column(forest, "system").values()) == {None}
    assert set(column(forest, "parts").values()) == {None}
    assert all(column(forest, "response").values())


def test_system_prompts(tmp_path, monkeypatch):
    with LlmLog(tmp_path) as log:
        log.cli("-m", "echo", "-s", "Be brief.", "hi")
        first = log.latest_turn()
        thread = log.thread_of(first)
        second = log.prompt("more", continue_conversation=thread)
        log.cli("-m", "echo", "--cid", thread, "-s", "Be kind.", "again")
        third = log.latest_turn()
        other = log.prompt("no system here")
    forest = assert_same_texts(log.path, monkeypatch)
    assert column(forest, "system") == {
        first: "Be brief.",
        second: "Be brief.",
        # llm 0.36 logs no system message for -s on a continued thread.
        third: "Be brief.",
        other: None,
    }


@pytest.mark.parametrize("shape", synthetic.SHAPES)
def test_synthetic_message_stores(tmp_path, monkeypatch, shape):
    path = synthetic.build_message_store(tmp_path / "logs.db", 2000, 7, shape)
    forest = assert_same_texts(path, monkeypatch)
    assert len(forest.nodes) == 2000


def first_user_message(path: Path) -> str:
    conn = sqlite3.connect(path)
    (found,) = conn.execute(
        "select parent_message_hash from turns order by rowid limit 1"
    ).fetchone()
    conn.close()
    return found


@pytest.mark.parametrize(
    "edit",
    [
        # a second text part after the first, and one before it (position)
        "insert into parts (message_hash, position, type, text)"
        " select message_hash, position + 1, 'text', ' and more' from parts"
        " where message_hash = '{user}'",
        "insert into parts (message_hash, position, type, text)"
        " select message_hash, position - 1, 'text', 'Before: ' from parts"
        " where message_hash = '{user}'",
        # missing positions come first, among themselves by rowid (llm's
        # schema keeps a message's positions unique)
        "insert into parts (message_hash, position, type, text)"
        " values ('{user}', null, 'text', 'unplaced '),"
        " ('{user}', null, 'text', 'and again ')",
        # a message without parts, and empty words
        "delete from parts where message_hash = '{user}'",
        "update parts set text = '' where message_hash = '{user}'",
        # a part whose message is not in the file
        "insert into parts (message_hash, position, type, text)"
        " values ('b2:nothing', 0, 'text', 'lost')",
        # every answer in two parts: no turn is plain
        "insert into parts (message_hash, position, type, text)"
        " select p.message_hash, p.position + 1, 'text', '!' from parts p"
        " join messages m on m.hash = p.message_hash where m.role = 'assistant'",
        # a tool's message as a turn's input: a run, folded with its texts
        "update messages set role = 'tool' where hash in"
        " (select parent_message_hash from turns where rowid = 2)",
        # a system message as the input of a turn
        "update messages set role = 'system' where hash = '{user}'",
    ],
)
def test_edited_files(llm_fork_db, tmp_path, monkeypatch, edit):
    path = copy_of(llm_fork_db["path"], tmp_path)
    execute(path, edit.format(user=first_user_message(path)))
    assert_same_texts(path, monkeypatch)


def test_parts_of_a_turn_more_than_a_prompt_and_an_answer(
    llm_fork_db, tmp_path, monkeypatch
):
    path = copy_of(llm_fork_db["path"], tmp_path)
    user = first_user_message(path)
    execute(
        path,
        "insert into parts (message_hash, position, type, text)"
        f" values ('{user}', 5, 'text', ' Briefly.')",
    )
    forest = assert_same_texts(path, monkeypatch)
    first = llm_fork_db["turns"][0]
    parts = column(forest, "parts")[first]
    assert column(forest, "prompt")[first] == "What is a tree? Briefly."
    assert [(part["role"], part["text"]) for part in parts[:2]] == [
        ("user", "What is a tree?"),
        ("user", " Briefly."),
    ]
    assert [part["role"] for part in parts[2:]] == ["assistant"]


@pytest.mark.parametrize(
    "edit",
    [
        "update parts set type = 'tool_call' where rowid = 2",
        'update parts set text = null, payload = \'{{"text_ref": [{{"literal":'
        ' "x"}}]}}\' where rowid = 1',
        "update parts set type = 'reasoning' where rowid = 2",
    ],
)
def test_other_parts_go_to_the_row_reader(llm_fork_db, tmp_path, edit):
    path = copy_of(llm_fork_db["path"], tmp_path)
    execute(path, edit.format())
    with open_logs(path) as logs:
        assert columnar.read_forest(logs, text=True) is None
        assert columnar.read_forest(logs, text=False) is not None


@pytest.mark.parametrize("call_at", [None, "first", "last"])
def test_tool_calls_found_a_range_of_rowids_at_a_time(
    llm_fork_db, tmp_path, monkeypatch, call_at
):
    from convgraph.sources.llm.columnar import message_store

    path = copy_of(llm_fork_db["path"], tmp_path)
    if call_at is not None:
        pick = "min" if call_at == "first" else "max"
        execute(
            path,
            f"update parts set type = 'tool_call' where rowid ="
            f" (select {pick}(rowid) from parts)",
        )
    monkeypatch.setattr(message_store, "SCAN_ROWS", 1)
    fast, rows = read_both(path, False, monkeypatch)
    assert fast is not None
    assert fast.calls == rows.calls
    ours = Forest(fast.nodes, fast.names, calls=fast.calls)
    theirs = Forest(rows.nodes, rows.names, calls=rows.calls)
    pd.testing.assert_frame_equal(ours.nodes, theirs.nodes, check_exact=True)
    assert int(ours.nodes["tool_calls"].sum()) == (call_at is not None)
