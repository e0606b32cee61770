"""The columnar reader against the row readers: the same forest, exactly.

`convgraph.sources.llm.columnar.read_forest` must give the nodes table, names
and problems that the row readers give (`LogDatabase.read` with the
columnar path turned off) on every kind of file it takes: hand-made legacy
databases, message stores written by llm 0.36 itself, synthetic files of
every shape, hostile links. Files it does not take (both generations,
hostile values, a message store's parts other than texts) it hands back to
the row readers by answering None.
"""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("adbc_driver_sqlite")

from benchmarks import synthetic  # noqa: E402
from convgraph import Forest  # noqa: E402
from convgraph.sources import open_logs  # noqa: E402
from convgraph.sources.llm import (  # noqa: E402
    columnar,
    message_chains,
    snapshot,
)
from convgraph.sources.llm.columnar import numbering, reader  # noqa: E402
from tests.databases import (  # noqa: E402
    COMPLEX,
    LlmLog,
    add_response,
    add_tree,
    legacy_database,
    migrated_complex,
    timestamp,
)
from tests.helpers import plain, read_forest  # noqa: E402


def read_both(path: Path, text: bool, monkeypatch: pytest.MonkeyPatch):
    """The columnar read of `path` and the row readers' (`ForestRead`s)."""
    with open_logs(path) as logs:
        fast = columnar.read_forest(logs, text=text)
        with monkeypatch.context() as patch:
            patch.setattr(columnar, "available", lambda: False)
            rows = logs.read(texts=text)
    return fast, rows


def assert_same_forest(path: Path, monkeypatch: pytest.MonkeyPatch, text: bool):
    """The columnar read of `path` gives the row readers' forest exactly."""
    fast, rows = read_both(path, text, monkeypatch)
    assert fast is not None, "the columnar reader should take this file"
    assert fast.names == rows.names
    assert fast.calls == rows.calls
    ours = Forest(fast.nodes, fast.names, rows.problems, calls=fast.calls)
    theirs = Forest(rows.nodes, rows.names, rows.problems, calls=rows.calls)
    pd.testing.assert_frame_equal(ours.nodes, theirs.nodes, check_exact=True)
    for column in ours.nodes.select_dtypes("category"):
        mine, expected = ours.nodes[column].cat, theirs.nodes[column].cat
        assert list(mine.categories) == list(expected.categories), column
        assert mine.categories.dtype == expected.categories.dtype, column
    assert list(ours.parent_rows) == list(theirs.parent_rows)
    assert ours.problems == theirs.problems
    return ours


def execute(path: Path, *statements: str) -> None:
    """Run SQL statements on the file and commit them."""
    conn = sqlite3.connect(path)
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()


def fixed_chunks(monkeypatch: pytest.MonkeyPatch, rows: int) -> None:
    """Every statement reads `rows` rows, however long it takes."""
    for name in ("FIRST_CHUNK_ROWS", "MIN_CHUNK_ROWS", "MAX_CHUNK_ROWS"):
        monkeypatch.setattr(snapshot, name, rows)


def between_chunks(monkeypatch: pytest.MonkeyPatch, action: Callable[[Any], None]):
    """Call `action` with each chunk of a table's rows (an Arrow table with
    their `_rowid`) as soon as ADBC has fetched it: between two statements
    of the read, when it holds no lock."""
    import adbc_driver_manager.dbapi

    fetch = adbc_driver_manager.dbapi.Cursor.fetch_arrow_table

    def fetch_then_act(cursor):
        table = fetch(cursor)
        if "_rowid" in table.column_names:
            action(table)
        return table

    monkeypatch.setattr(
        adbc_driver_manager.dbapi.Cursor, "fetch_arrow_table", fetch_then_act
    )


# -- legacy files ------------------------------------------------------------------


@pytest.mark.parametrize("text", [False, True])
def test_seed_scenarios(seed_db, monkeypatch, text):
    forest = assert_same_forest(seed_db, monkeypatch, text)
    assert forest.tree_ids == ["linear", "branch", "complex", "multiple-roots"]
    assert plain(forest.nodes["parent_id"])[:4] == [
        None,
        "linear-root",
        "linear-a",
        "linear-b",
    ]


@pytest.mark.parametrize("text", [False, True])
def test_legacy_without_parent_column_out_of_log_order(tmp_path, monkeypatch, text):
    """Chains by log order, rows stored out of it, a response outside any
    conversation, missing times and usage."""
    path = tmp_path / "logs.db"
    conn = legacy_database(path, with_parent=False)
    add_response(conn, "r3", "c1", "third", datetime_utc=timestamp(3))
    add_response(conn, "r1", "c1", "first", datetime_utc=timestamp(1), system="s")
    add_response(conn, "x1", "c2", "other", datetime_utc=timestamp(2), model="m2")
    add_response(conn, "lone", None, "alone", datetime_utc=timestamp(4))
    add_response(conn, "r2", "c1", "second", datetime_utc=timestamp(2))
    add_response(conn, "early", "c2", "no time", input_tokens=5, duration_ms=9)
    conn.commit()
    conn.close()
    forest = assert_same_forest(path, monkeypatch, text)
    assert forest.nodes["id"].tolist() == ["early", "r1", "r2", "x1", "r3", "lone"]
    assert plain(forest.nodes["parent_id"]) == [None, None, "r1", "early", "r2", None]


@pytest.mark.parametrize("text", [False, True])
def test_broken_links_give_the_same_problems(tmp_path, monkeypatch, text):
    path = tmp_path / "logs.db"
    conn = legacy_database(path)
    add_tree(conn, "t", COMPLEX)
    add_tree(conn, "u", [("u1", None), ("u2", "u1")], start=10)
    links = [
        ("self", "self"),
        ("orphan", "nowhere"),
        ("crossing", "u1"),
        ("loop-a", "loop-c"),
        ("loop-b", "loop-a"),
        ("loop-c", "loop-b"),
    ]
    add_tree(conn, "hostile", links, start=20)
    conn.close()
    forest = assert_same_forest(path, monkeypatch, text)
    assert [p.kind for p in forest.problems] == [
        "self-parent",
        "missing-parent",
        "cross-conversation",
        "cycle",
    ]


def test_migrated_file(tmp_path, monkeypatch):
    path = migrated_complex(tmp_path / "logs.db")
    for text in (False, True):
        assert_same_forest(path, monkeypatch, text)


@pytest.mark.parametrize("shape", synthetic.SHAPES)
@pytest.mark.parametrize("with_parent", [True, False])
def test_synthetic_legacy_files(tmp_path, monkeypatch, shape, with_parent):
    path = synthetic.build_legacy(
        tmp_path / "logs.db", 3000, 7, shape, with_parent=with_parent
    )
    forest = assert_same_forest(path, monkeypatch, text=False)
    assert len(forest.nodes) == 3000
    assert_same_forest(path, monkeypatch, text=True)


def test_chunks_of_one_row_and_of_nulls_only(seed_db, monkeypatch):
    """Every row its own statement: a chunk whose parent column holds only
    NULLs (a root) is typed by the driver as integers, and still read."""
    fixed_chunks(monkeypatch, 1)
    assert_same_forest(seed_db, monkeypatch, text=True)


def side_by_side(monkeypatch: pytest.MonkeyPatch, threads: int, rows: int) -> None:
    """Every table of `threads` rows or more is read in `threads` ranges of
    rowids at once, each in statements of `rows` rows."""
    monkeypatch.setattr(reader, "READ_THREADS", threads)
    monkeypatch.setattr(reader, "ROWS_PER_RANGE", 1)
    fixed_chunks(monkeypatch, rows)


@pytest.mark.parametrize("with_parent", [True, False])
def test_ranges_read_side_by_side(tmp_path, monkeypatch, with_parent):
    path = synthetic.build_legacy(
        tmp_path / "logs.db", 500, 7, "bushy", with_parent=with_parent
    )
    side_by_side(monkeypatch, 3, 37)
    forest = assert_same_forest(path, monkeypatch, text=True)
    assert len(forest.nodes) == 500


def test_deleted_responses_leave_gaps_in_the_rowids(tmp_path, monkeypatch):
    """Rowids with gaps, and children whose parent is gone: each found
    parent is the row it names, each lost one is reported by its id."""
    path = synthetic.build_legacy(tmp_path / "logs.db", 300, 7, "bushy")
    execute(
        path,
        # The synthetic file has no full-text index for llm's trigger to update.
        "drop trigger if exists responses_ad",
        "delete from responses where rowid % 17 = 3",
    )
    forest = assert_same_forest(path, monkeypatch, text=False)
    assert len(forest.nodes) == 300 - 18
    assert {problem.kind for problem in forest.problems} == {"missing-parent"}


def test_ranges_out_of_log_order_only_across_their_boundary(tmp_path, monkeypatch):
    """Each range in log order by itself, the second one dated before the
    first: only the boundary between them tells, and the table is sorted."""
    path = tmp_path / "logs.db"
    conn = legacy_database(path)
    for number in range(4):
        add_response(
            conn, f"late{number}", "c", "p", datetime_utc=timestamp(10 + number)
        )
    for number in range(4):
        add_response(conn, f"early{number}", "c", "p", datetime_utc=timestamp(number))
    conn.commit()
    conn.close()
    side_by_side(monkeypatch, 2, 4)
    forest = assert_same_forest(path, monkeypatch, text=False)
    assert forest.nodes["id"].tolist()[:2] == ["early0", "early1"]
    assert forest.nodes["id"].tolist()[-1] == "late3"


# -- message stores -------------------------------------------------------------------


def test_llm_fork_db(llm_fork_db, monkeypatch):
    forest = assert_same_forest(llm_fork_db["path"], monkeypatch, text=False)
    first, second, third = llm_fork_db["turns"]
    fork_first, fork_second = llm_fork_db["fork_turns"]
    parents = dict(
        zip(forest.nodes["id"], plain(forest.nodes["parent_id"]), strict=True)
    )
    assert parents == {
        first: None,
        second: first,
        third: second,
        fork_first: first,
        fork_second: fork_first,
    }
    assert set(forest.nodes["tree_id"]) == {llm_fork_db["thread"]}


def test_texts_of_a_message_store_with_other_parts_are_left_to_the_row_reader(
    llm_fork_db, tmp_path
):
    # Its texts made only of text parts are read as columns
    # (tests/test_store_columns.py); a tool call needs the row reader's parts.
    path = copy_of(llm_fork_db["path"], tmp_path)
    execute(path, "update parts set type = 'tool_call' where rowid = 2")
    with open_logs(path) as logs:
        assert columnar.read_forest(logs, text=True) is None


@pytest.fixture(scope="module")
def shared_content_db(tmp_path_factory) -> dict:
    """llm 0.36 and echo: the same prompts in two conversations (shared
    messages: one message is the tip of turns in two trees), a fork that
    asks what its origin asked next (two turns of one tree end at one
    message), both continued, and a fork of the fork."""
    directory = tmp_path_factory.mktemp("shared")
    with LlmLog(directory) as log:
        first = log.prompt("hi")
        thread = log.thread_of(first)
        second = log.prompt("more", continue_conversation=thread)
        other = log.prompt("hi")
        other_thread = log.thread_of(other)
        other_second = log.prompt("more", continue_conversation=other_thread)
        fork, fork_first = log.fork(first, "more")
        fork_next = log.prompt("and then?", continue_conversation=fork)
        third = log.prompt("and then?", continue_conversation=thread)
        fork2, fork2_first = log.fork(fork_first, "elsewhere")
    return {
        "path": log.path,
        "parents": {
            first: None,
            second: first,
            other: None,
            other_second: other,
            fork_first: first,
            fork_next: fork_first,
            third: second,
            fork2_first: fork_first,
        },
        "trees": {first: thread, other: other_thread, fork2_first: thread},
    }


def test_shared_content_and_equal_answers(shared_content_db, monkeypatch):
    forest = assert_same_forest(shared_content_db["path"], monkeypatch, text=False)
    parents = dict(
        zip(forest.nodes["id"], plain(forest.nodes["parent_id"]), strict=True)
    )
    assert parents == shared_content_db["parents"]
    trees = dict(zip(forest.nodes["id"], forest.nodes["tree_id"], strict=True))
    for turn, tree in shared_content_db["trees"].items():
        assert trees[turn] == tree


@pytest.mark.parametrize("shape", synthetic.SHAPES)
def test_synthetic_message_stores(tmp_path, monkeypatch, shape):
    path = synthetic.build_message_store(tmp_path / "logs.db", 3000, 7, shape)
    forest = assert_same_forest(path, monkeypatch, text=False)
    assert len(forest.nodes) == 3000


def test_message_store_ranges_read_side_by_side(tmp_path, monkeypatch):
    path = synthetic.build_message_store(tmp_path / "logs.db", 400, 7, "bushy")
    side_by_side(monkeypatch, 3, 29)
    forest = assert_same_forest(path, monkeypatch, text=False)
    assert len(forest.nodes) == 400


def copy_of(source: Path, directory: Path) -> Path:
    target = directory / "logs.db"
    target.write_bytes(Path(source).read_bytes())
    return target


def test_turns_stored_out_of_log_order(shared_content_db, tmp_path, monkeypatch):
    """A turn logged first but dated last, and one without a date: both
    readers put the turns in log order, which here is not rowid order."""
    path = copy_of(shared_content_db["path"], tmp_path)
    execute(
        path,
        "update turns set datetime_utc = '2099-01-01' where rowid = 1",
        "update turns set datetime_utc = null where rowid = 3",
    )
    forest = assert_same_forest(path, monkeypatch, text=False)
    assert plain(forest.nodes["datetime_utc"])[0] is None
    assert plain(forest.nodes["datetime_utc"])[-1] == "2099-01-01"


def test_hashes_and_threads_that_name_nothing(shared_content_db, tmp_path, monkeypatch):
    """A turn whose input, or whose tip, is no message, a message whose
    parent is none, a turn of a thread not in `threads`, a fork of a thread
    not in `threads`: the row reader's walks meet them, and so must this."""
    path = copy_of(shared_content_db["path"], tmp_path)
    conn = sqlite3.connect(path)
    turns = [row[0] for row in conn.execute("select id from turns order by rowid")]
    conn.execute(
        "update turns set parent_message_hash = 'gone' where id = ?", [turns[1]]
    )
    conn.execute("update turns set tip_message_hash = 'gone' where id = ?", [turns[2]])
    conn.execute("update turns set thread_id = 'nothread' where id = ?", [turns[3]])
    conn.execute(
        "update messages set parent_hash = 'lost' where rowid = (select max(rowid)"
        " from messages)"
    )
    conn.execute(
        "update threads set forked_from = 'nothread' where rowid = (select"
        " max(rowid) from threads)"
    )
    conn.commit()
    conn.close()
    assert_same_forest(path, monkeypatch, text=False)


def test_turns_that_name_no_message_at_all(shared_content_db, tmp_path, monkeypatch):
    """No message in the file, and no hash in the turns: every turn a
    root, in both readers (the arrays had no message to start from)."""
    path = copy_of(shared_content_db["path"], tmp_path)
    execute(
        path,
        "delete from messages",
        "update turns set parent_message_hash = null, tip_message_hash = null",
    )
    forest = assert_same_forest(path, monkeypatch, text=False)
    assert plain(forest.nodes["parent_id"]) == [None] * 8


@pytest.mark.parametrize(
    "sql",
    [
        # a cycle of messages
        "update messages set parent_hash = (select hash from messages order by"
        " rowid desc limit 1) where rowid = (select min(rowid) from messages)",
        # a cycle of forks
        "update threads set forked_from = (select id from threads order by rowid"
        " desc limit 1) where rowid = (select min(rowid) from threads)",
        # a turn with no id
        "update turns set id = null where rowid = 2",
        # bytes where a thread id belongs
        "update turns set thread_id = x'07' where rowid = 2",
    ],
)
def test_hostile_message_stores_go_to_the_row_reader(shared_content_db, tmp_path, sql):
    path = copy_of(shared_content_db["path"], tmp_path)
    execute(path, sql)
    with open_logs(path) as logs:
        assert columnar.read_forest(logs, text=False) is None


# -- what the columnar reader leaves to the row readers -----------------------------


@pytest.mark.parametrize(
    "column, value",
    [
        ("model", b"\x00blob"),
        ("prompt", b"\xffblob"),
        ("id", None),
        ("id", b"12"),
        ("input_tokens", "12 tokens"),
        ("duration_ms", 1.5),
        ("output_tokens", b"7"),
        ("datetime_utc", b"2025"),
        ("conversation_id", b"complex"),
    ],
)
def test_hostile_values_go_to_the_row_reader(seed_db, column, value):
    conn = sqlite3.connect(seed_db)
    conn.execute(f"update responses set {column} = ? where id = 'complex-c'", [value])
    conn.commit()
    conn.close()
    with open_logs(seed_db) as logs:
        assert columnar.read_forest(logs, text=True) is None


def test_undecodable_text_goes_to_the_row_reader(seed_db):
    conn = sqlite3.connect(seed_db)
    conn.execute(
        "update responses set model = cast(x'c328' as text) where id = 'complex-c'"
    )
    conn.commit()
    conn.close()
    with open_logs(seed_db) as logs:
        assert columnar.read_forest(logs, text=False) is None


def test_an_undecodable_parent_that_names_nothing_goes_to_the_row_reader(seed_db):
    """A lost parent's id is read again by itself (`ArrowReader.texts_at`):
    bytes that are not UTF-8 there are the row readers' to show too."""
    execute(
        seed_db,
        "update responses set parent_response_id = cast(x'00ff' as text)"
        " where id = 'complex-c'",
    )
    with open_logs(seed_db) as logs:
        assert columnar.read_forest(logs, text=False) is None
    problems = read_forest(seed_db, text=False).problems
    assert [(p.kind, p.node_id, p.parent_id) for p in problems] == [
        ("missing-parent", "complex-c", "\x00\ufffd")
    ]


def test_upgraded_files_go_to_the_row_reader(tmp_path):
    path = tmp_path / "logs.db"
    conn = legacy_database(path, with_parent=False)
    add_response(conn, "01aaaaaaaaaaaaaaaaaaaaaaa1", "conv", "hello")
    conn.commit()
    conn.close()
    with LlmLog(tmp_path) as log:
        log.prompt("and now?", continue_conversation="conv")
    with open_logs(path) as logs:
        assert columnar.read_forest(logs, text=False) is None


@pytest.mark.parametrize(
    "table",
    [
        "tool_calls",
        "tool_results",
        "prompt_attachments",
        "prompt_fragments",
        "system_fragments",
    ],
)
def test_legacy_files_with_tools_attachments_or_fragments_go_to_the_row_reader(
    seed_db, tmp_path, table
):
    # Their parts are built, and their tool chains folded, response by
    # response: the row reader's work.
    path = copy_of(seed_db, tmp_path)
    execute(path, f"insert into {table} (response_id) values ('complex-b')")
    with open_logs(path) as logs:
        assert columnar.read_forest(logs, text=False) is None
        assert columnar.read_forest(logs, text=True) is None


@pytest.mark.parametrize(
    "sql",
    [
        # a tool call without its arguments, and without a result
        "update parts set type = 'tool_call' where rowid = 2",
        # a tool message as the input of a turn: a run to fold
        "update messages set role = 'tool' where hash in"
        " (select parent_message_hash from turns where rowid = 2)",
        # ... but as the first message of the conversation
        "update messages set role = 'tool' where rowid = 1",
    ],
)
def test_tool_calls_and_runs_of_a_message_store(
    llm_fork_db, tmp_path, monkeypatch, sql
):
    path = copy_of(llm_fork_db["path"], tmp_path)
    execute(path, sql)
    assert_same_forest(path, monkeypatch, text=False)


def test_tool_chains_are_counted_and_folded_on_arrays(tmp_path, monkeypatch):
    with LlmLog(tmp_path) as log:
        first, last = log.tool_chain(
            "shout",
            [
                {"name": "shout", "arguments": {"word": "a"}},
                {"name": "shout", "arguments": {"word": "b"}},
            ],
        )
        log.cli("-m", "echo", "-c", "thanks")
        log.tool_chain("again", [{"name": "shout", "arguments": {"word": "c"}}], "-c")
    forest = assert_same_forest(log.path, monkeypatch, text=False)
    assert forest.nodes["tool_calls"].tolist() == [2, 0, 1]
    assert forest.nodes["tools"].tolist() == ["shout", None, "shout"]
    fast, rows = read_both(log.path, False, monkeypatch)
    assert fast is not None and fast.calls == rows.calls
    assert list(fast.calls.items())[0] == (first, last)


def test_a_turn_of_very_many_messages_goes_to_the_row_reader(tmp_path):
    with LlmLog(tmp_path) as log:
        log.prompt("hello")
    conn = sqlite3.connect(log.path)
    # The turn's input names no message: its answer's walk up reaches the
    # top, through more messages than the arrays walk.
    (tip,) = conn.execute("select tip_message_hash from turns").fetchone()
    above = tip
    for index in range(message_chains.MAX_ROUNDS + 1):
        conn.execute(
            "insert into messages (hash, parent_hash, role) values (?, null, 'user')",
            [f"m{index}"],
        )
        conn.execute(
            "update messages set parent_hash = ? where hash = ?", [f"m{index}", above]
        )
        above = f"m{index}"
    conn.execute("update turns set parent_message_hash = null")
    conn.commit()
    conn.close()
    with open_logs(log.path) as logs:
        assert columnar.read_forest(logs, text=False) is None


def test_without_pyarrow_and_adbc_the_row_reader_reads(seed_db, monkeypatch):
    monkeypatch.setattr(columnar, "available", lambda: False)
    with open_logs(seed_db) as logs:
        assert columnar.read_forest(logs) is None


# -- the read lock --------------------------------------------------------------------

WRITER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], timeout=0)
conn.execute(
    "insert into responses (id, conversation_id, prompt, datetime_utc)"
    " values (?, 'late', 'logged meanwhile', '2030-01-01')", [sys.argv[2]]
)
conn.commit()
"""


def test_a_writer_commits_between_two_chunks(seed_db, monkeypatch):
    """With no busy timeout at all, another process logs a response after
    every chunk: no lock is held between chunks, and rows logged after the
    read began are left for the next read."""
    fixed_chunks(monkeypatch, 5)
    written = []

    def write(chunk) -> None:
        if chunk.num_rows:
            written.append(f"late-{len(written)}")
            subprocess.run(
                [sys.executable, "-c", WRITER, str(seed_db), written[-1]], check=True
            )

    between_chunks(monkeypatch, write)
    with open_logs(seed_db) as logs:
        nodes = columnar.read_forest(logs, text=False).nodes
    # 20 responses in four chunks (then an empty one), 4 conversations in one
    assert len(written) == 5
    assert len(nodes) == 20
    assert not set(written) & set(nodes["id"])


def untyped_legacy(path: Path) -> Path:
    """A hand-made responses table whose columns declare no type (no
    affinity): SQLite keeps whatever is stored, numbers included."""
    conn = sqlite3.connect(path)
    conn.execute(
        "create table responses (id, conversation_id, parent_response_id, model,"
        " prompt, system, response, datetime_utc, input_tokens, output_tokens,"
        " duration_ms)"
    )
    conn.executemany(
        "insert into responses (id, conversation_id, parent_response_id, model,"
        " datetime_utc, input_tokens) values (?, 'c', ?, 'echo', ?, ?)",
        [("a", None, "1", 3), ("b", "a", "2", None), ("c", "a", "3", 4)],
    )
    conn.commit()
    conn.close()
    return path


def test_untyped_columns(tmp_path, monkeypatch):
    path = untyped_legacy(tmp_path / "logs.db")
    for text in (False, True):
        assert_same_forest(path, monkeypatch, text)


@pytest.mark.parametrize("column", ["model", "datetime_utc", "parent_response_id"])
def test_a_number_in_an_untyped_text_column_goes_to_the_row_reader(tmp_path, column):
    path = untyped_legacy(tmp_path / "logs.db")
    execute(path, f"update responses set {column} = 5 where id = 'c'")
    with open_logs(path) as logs:
        assert columnar.read_forest(logs, text=False) is None


def test_repeated_ids_are_read_as_the_row_reader_reads_them(tmp_path, monkeypatch):
    """A hand-made table without a primary key: both reads run the
    pipeline's `first_of_each_id`, keep the first of each id and report the
    rest."""
    path = tmp_path / "logs.db"
    conn = sqlite3.connect(path)
    conn.execute(
        "create table responses (id, conversation_id, parent_response_id, model,"
        " prompt, system, response, datetime_utc, input_tokens, output_tokens,"
        " duration_ms)"
    )
    conn.executemany(
        "insert into responses (id, conversation_id, datetime_utc) values (?, 'c', ?)",
        [("a", "1"), ("b", "2"), ("a", "3")],
    )
    conn.commit()
    conn.close()
    forest = assert_same_forest(path, monkeypatch, text=False)
    assert forest.nodes["id"].tolist() == ["a", "b"]
    fast, rows = read_both(path, False, monkeypatch)
    assert fast is not None and fast.problems == rows.problems
    assert [problem.node_id for problem in fast.problems] == ["a"]


DELETER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], timeout=0)
conn.execute("delete from responses where id = 'linear-a'")
conn.commit()
"""


def test_a_deletion_during_the_read_makes_it_read_again(seed_db, monkeypatch):
    """A writer that deletes a row already read (not an append): the read
    starts again and gives the file as it is after the deletion."""
    fixed_chunks(monkeypatch, 5)
    deleted = []

    def delete(chunk) -> None:
        if not deleted:
            deleted.append(True)
            subprocess.run([sys.executable, "-c", DELETER, str(seed_db)], check=True)

    between_chunks(monkeypatch, delete)
    with open_logs(seed_db) as logs:
        nodes = columnar.read_forest(logs, text=False).nodes
    assert len(nodes) == 19
    assert "linear-a" not in set(nodes["id"])


# -- numbering message hashes ---------------------------------------------------------


def digest(text: str, size: int = 16) -> str:
    """A message hash as llm 0.32+ writes one: "b2:" and hex digits."""
    return "b2:" + hashlib.blake2b(text.encode(), digest_size=size).hexdigest()


A, B, C = digest("a"), digest("b"), digest("c")


def test_hashes_are_numbered_by_row_and_others_past_them():
    keys = pa.chunked_array([[A, B], [C]])
    parents = pa.chunked_array([[None, A], [B]])
    tips = pa.chunked_array([[C, None, digest("d")]])
    count, (parent_codes, tip_codes) = numbering.numbered(keys, parents, tips)
    # A hash naming no message gets a number past the messages.
    assert count == 4
    assert parent_codes.tolist() == [-1, 0, 1]
    assert tip_codes.tolist() == [2, -1, 3]
