"""The search index's documents made two ways (issue 37, Scale): from a
forest read with its texts, and from the forest read without them with the
texts taken from the file a batch at a time (`Source.text_batches`), as the
first build of an llm legacy file makes them. Both give the same documents,
on files llm wrote and on hand-made ones that are hardest on the batches:
several batches, a file not logged in rowid order, a hidden branch, text
that is not UTF-8, a BLOB, missing and empty texts, ids that are no key.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from convgraph.model.forest import Forest
from convgraph.search import search
from convgraph.search.documents import (
    ABANDONED,
    ACTIVE,
    NodeColumns,
    RepeatedIds,
    batched_documents,
    forest_documents,
)
from convgraph.search.text import spaced
from convgraph.sources import open_logs
from convgraph.sources.source import NodeTexts, TextsWithForest
from tests.chat_exports import claude_export, write_json
from tests.databases import LlmLog, add_response, legacy_database, timestamp
from tests.helpers import run
from tests.old_llm import OldLlmUnavailable, old_llm

#: More responses than the first chunk of the chunked-read rule (2,000
#: rows): the texts come in several batches.
MANY = 4_500


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(directory))
    return directory


def both_ways(path: Path) -> tuple[list[dict], list[dict]]:
    """Every node's document from the forest read with its texts, and from
    the forest read without them and the texts in batches; each sorted by
    id."""
    with open_logs(path) as logs:
        whole = list(forest_documents(Forest.read(logs, text=True)))
        batches = logs.text_batches()
        assert batches is not None
        columns = NodeColumns(Forest.read(logs, text=False))
        batched = list(batched_documents(columns, batches))
    return _by_id(whole), _by_id(batched)


def _by_id(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(documents, key=lambda document: document["id"])


def execute(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path)
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()


def many_responses(path: Path) -> Path:
    """`MANY` responses in conversations of three (a root and two answers
    to it: the first abandoned), logged in rowid order but for the last
    conversation, whose rows came first."""
    conn = legacy_database(path)
    rows = []
    for index in range(MANY):
        tree, place = divmod(index, 3)
        parent = None if place == 0 else f"r{tree * 3}"
        rows.append((f"r{index}", f"c{tree}", parent, index))
    # The last conversation's rows written first: rowid order is not the
    # order logged.
    for node, tree, parent, index in rows[-3:] + rows[:-3]:
        add_response(
            conn,
            node,
            tree,
            f"question {index} about trees",
            parent=parent,
            response=f"answer {index}",
            datetime_utc=timestamp(index),
            system="be brief" if index % 2 else None,
        )
    conn.commit()
    conn.close()
    return path


def test_several_batches_in_another_order_give_the_same_documents(tmp_path):
    path = many_responses(tmp_path / "logs.db")
    with open_logs(path) as logs:
        batches = list(logs.text_batches() or [])
    assert len(batches) > 1
    assert sum(len(batch.ids) for batch in batches) == MANY
    assert batches[0].ids[0] == f"r{MANY - 3}"
    assert batches[0].texts["prompt"][0] == f"question {MANY - 3} about trees"
    whole, batched = both_ways(path)
    assert batched == whole
    by_id = {document["id"]: document for document in batched}
    assert by_id["r6"] == {
        "id": "r6",
        "tree": "c2",
        "depth": 0,
        "branch": ACTIVE,
        "model": "echo",
        "source": "responses",
        "time": timestamp(6),
        # 2025-09-27T10:00:06 UTC, in microseconds since 1970.
        "moment": 1_758_967_206_000_000,
        "prompt": "question 6 about trees",
        "response": "answer 6",
    }
    assert (by_id["r7"]["branch"], by_id["r7"]["system"]) == (ABANDONED, "be brief")
    assert (by_id["r8"]["branch"], by_id["r8"]["depth"]) == (ACTIVE, 1)


def test_a_hidden_branch_is_left_out_of_both(tmp_path):
    path = many_responses(tmp_path / "logs.db")
    run("hide", "r4", "--db", path)
    whole, batched = both_ways(path)
    assert batched == whole
    assert len(batched) == MANY - 1
    assert "r4" not in {document["id"] for document in batched}


def test_odd_texts_read_as_the_row_readers_read_them(tmp_path):
    path = tmp_path / "logs.db"
    conn = legacy_database(path)
    for index, node in enumerate(["a", "b", "c", "d", "e"]):
        add_response(
            conn,
            node,
            "t",
            f"prompt {node}",
            parent=None if node == "a" else "a",
            datetime_utc=timestamp(index),
        )
    conn.commit()
    conn.close()
    execute(
        path,
        # Not UTF-8: U+FFFD in its place, as every reader shows it.
        "update responses set prompt = cast(x'6361666ce9' as text) where id = 'b'",
        "update responses set response = x'6869' where id = 'c'",  # a BLOB
        "update responses set prompt = null, response = '' where id = 'd'",
        "update responses set prompt = 'ﾀﾜｰ 東京' where id = 'e'",
    )
    with open_logs(path) as logs:
        (batch,) = list(logs.text_batches() or [])
    texts = dict(zip(batch.ids, batch.texts["prompt"], strict=True))
    assert texts["b"] == "cafl\ufffd"
    assert dict(zip(batch.ids, batch.texts["response"], strict=True))["c"] == "hi"
    whole, batched = both_ways(path)
    assert batched == whole
    by_id = {document["id"]: document for document in batched}
    assert "prompt" not in by_id["d"] and "response" not in by_id["d"]
    # NFKC, each character of a script without spaces a token of its own.
    assert by_id["e"]["prompt"] == spaced("タワー 東京")
    assert [hit.id for hit in search(path, "東京")] == ["e"]


def test_a_node_no_batch_names_keeps_its_document_without_texts(tmp_path):
    path = many_responses(tmp_path / "logs.db")
    with open_logs(path) as logs:
        columns = NodeColumns(Forest.read(logs, text=False))
    batches = [
        # r1's row deleted after the forest was read; "new" logged since.
        NodeTexts(["r0", "new", "r2"], {"prompt": ["p0", "p-new", "p2"]}),
    ]
    found = {
        document["id"]: document for document in batched_documents(columns, batches)
    }
    assert len(found) == MANY
    assert (found["r0"]["prompt"], found["r2"]["prompt"]) == ("p0", "p2")
    assert "prompt" not in found["r1"] and "new" not in found
    assert found["r1"]["tree"] == "c0"


def test_ids_that_are_no_key_are_read_with_the_forest(tmp_path):
    path = tmp_path / "logs.db"
    conn = legacy_database(path)
    add_response(conn, "a", "t", "first", datetime_utc=timestamp(0))
    add_response(conn, "b", "t", "second", parent="a", datetime_utc=timestamp(1))
    conn.commit()
    conn.close()
    # A table without a primary key (rebuilt by hand) holds one id twice.
    execute(
        path,
        "create table copy as select * from responses",
        "drop table responses",
        "alter table copy rename to responses",
        "insert into responses (id, conversation_id, prompt, response,"
        " datetime_utc, parent_response_id) values ('b', 't', 'again',"
        " 'twice', '2030-01-01', 'a')",
    )
    with open_logs(path) as logs:
        columns = NodeColumns(Forest.read(logs, text=False))
        with pytest.raises(RepeatedIds):
            list(batched_documents(columns, logs.text_batches() or []))
    # The build reads the forest with its texts: the first logged is read.
    assert [hit.id for hit in search(path, "second")] == ["b"]
    assert search(path, "again") == []


def test_other_files_give_their_texts_with_the_forest(tmp_path):
    export = write_json(tmp_path / "claude.json", claude_export())
    with open_logs(export) as logs:
        assert logs.text_batches() is None
    (tmp_path / "store").mkdir()
    with LlmLog(tmp_path / "store") as log:
        log.tool_chain("shout badger", [{"name": "shout", "arguments": {"word": "b"}}])
        with open_logs(log.path) as logs:
            assert logs.text_batches() is None
    # A legacy file with a tool call: its parts come with the forest.
    path = tmp_path / "tools.db"
    conn = legacy_database(path)
    add_response(conn, "a", "t", "weather?", datetime_utc=timestamp(0))
    conn.execute(
        "insert into tool_calls (response_id, name, arguments) values"
        " ('a', 'lookup', '{}')"
    )
    conn.commit()
    conn.close()
    with open_logs(path) as logs:
        assert logs.text_batches() is None


def test_a_message_store_llm_wrote_gives_its_texts_in_batches(tmp_path):
    # Issue 45: a store of plain texts is indexed from its structure and its
    # texts in batches; the turns continued, retried and forked by llm itself.
    with LlmLog(tmp_path) as log:
        first = log.prompt("Tell me about narwhals, café")
        log.prompt("And their tusks?", continue_conversation=log.thread_of(first))
        log.prompt("Tell me about badgers")
        log.fork(first, "Narwhal songs")
    # A part whose text is not UTF-8 (a hand's edit): read as the row readers do.
    execute(
        log.path,
        "insert into parts (message_hash, position, type, text)"
        " select hash, 1, 'text', cast(x'20ff21' as text) from messages"
        " where rowid = 2",
    )
    with open_logs(log.path) as logs:
        assert logs.text_batches() is not None
    whole, batched = both_ways(log.path)
    assert batched == whole
    assert sorted(document["prompt"] for document in batched) == [
        "And their tusks?",
        "Narwhal songs",
        "Tell me about badgers",
        "Tell me about narwhals, café",
    ]
    assert all(document["response"] for document in batched)
    assert sum("\ufffd!" in document["response"] for document in batched) == 1


@pytest.mark.parametrize(
    ("statement", "numbered"),
    [
        # A system prompt, a turn of two user messages, a part without words;
        # the turn's shape is known once the turns are numbered (first batch).
        ("update messages set role = 'system' where rowid = 1", False),
        (
            "update turns set parent_message_hash = (select hash from messages"
            " where rowid = 3) where rowid = 1",
            True,
        ),
        ("update parts set text = null where rowid = 2", False),
    ],
)
def test_a_store_of_other_shapes_gives_its_texts_with_the_forest(
    tmp_path, statement, numbered
):
    with LlmLog(tmp_path) as log:
        first = log.prompt("Tell me about narwhals")
        log.prompt("And their tusks?", continue_conversation=log.thread_of(first))
    execute(log.path, statement)
    with open_logs(log.path) as logs:
        batches = logs.text_batches()
        assert (batches is not None) == numbered
        if batches is not None:
            with pytest.raises(TextsWithForest):
                next(batches)
        nodes = Forest.read(logs, text=True).nodes
    said = nodes[["prompt", "system", "response"]].fillna("").sum(axis=1)
    tusks = set(nodes["id"][said.str.contains("tusks")])
    assert tusks and {hit.id for hit in search(log.path, "tusks")} == tusks


@pytest.fixture(scope="session")
def old31():
    """llm 0.31 with llm-echo 0.4, the last release before the message store."""
    try:
        return old_llm("0.31", "0.4")
    except OldLlmUnavailable as error:
        pytest.skip(str(error))


@pytest.mark.slow
def test_a_file_llm_031_wrote(old31, tmp_path):
    old31.run(tmp_path, "-m", "echo", "first question")
    old31.run(tmp_path, "-m", "echo", "-c", "second question, café")
    old31.run(tmp_path, "-m", "echo", "-s", "answer in haiku", "another one")
    db = tmp_path / "logs.db"
    whole, batched = both_ways(db)
    assert batched == whole
    assert len(batched) == 3
    assert [document["prompt"] for document in batched if "system" in document] == [
        "another one"
    ]
    (hit,) = search(db, "cafe")
    assert (hit.depth, hit.active) == (1, True)
