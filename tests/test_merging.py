"""Repeated exports merged, and nothing twice (issues 47 and 48).

Three successive ChatGPT exports of one account: the second adds branches
and edits an answer, the third deletes a branch and a conversation. The
merged forest is checked against the union the test computes from each
export read alone; llm's file is written by `convgraph import` and the real
llm (`llm -m echo`).
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from convgraph.sources import open_logs
from convgraph.sources.merging import merge_reads
from convgraph.sources.source import ForestRead
from convgraph.store.importer import import_export
from tests.chat_exports import gpt_conversation, gpt_message, gpt_preamble, write_json
from tests.databases import LlmLog
from tests.helpers import run

#: Every node of the account: (conversation, node, parent node, answer), a
#: node's time its place here (the same in every export holding it).
NODES = [
    ("conv-a", "a1", None, "A monoid."),
    ("conv-a", "a2", "a1", "A box."),
    ("conv-a", "a2b", "a1", "A burrito."),
    ("conv-a", "a3", "a2b", "Maybe."),
    ("conv-b", "b1", None, "Hello."),
    ("conv-b", "b2", "b1", "Goodbye."),
    ("conv-c", "c1", None, "New."),
]

#: The nodes each export holds, and the answers it words otherwise.
VERSIONS = [
    ({"a1", "a2", "b1", "b2"}, {}),
    ({"a1", "a2", "a2b", "a3", "b1", "b2"}, {"a1": "A monoid, edited."}),
    ({"a1", "a2b", "a3", "c1"}, {"a1": "A monoid, edited."}),
]


def export(version: int) -> list[dict[str, Any]]:
    """The account's export `version` (0, 1, 2) as ChatGPT writes it."""
    held, edited = VERSIONS[version]
    conversations = []
    for conversation in dict.fromkeys(node[0] for node in NODES):
        mapping = gpt_preamble(f"root-{conversation}", f"sys-{conversation}")
        current = None
        for at, (mine, node, parent, answer) in enumerate(NODES):
            if mine != conversation or node not in held:
                continue
            question = gpt_message(f"u-{node}", "user", f"Q {node}", at=10 * at)
            words = gpt_message(
                node, "assistant", edited.get(node, answer), at=10 * at + 1
            )
            mapping.append((f"u-{node}", parent or f"sys-{conversation}", question))
            mapping.append((node, f"u-{node}", words))
            current = node
        if current is not None:
            title = conversation.upper()
            conversations.append(
                gpt_conversation(conversation, title, mapping, current)
            )
    return conversations


@pytest.fixture
def exports(tmp_path: Path) -> list[Path]:
    return [write_json(tmp_path / f"export-{n}.json", export(n)) for n in range(3)]


def read(path: Path) -> ForestRead:
    with open_logs(path) as source:
        return source.read()


def rows(merged: ForestRead) -> dict[tuple[str, str], dict[str, Any]]:
    nodes = merged.nodes.astype(object)
    records = nodes.where(nodes.notna(), None).to_dict("records")
    found = {(str(r["tree_id"]), r["id"]): r for r in records}
    assert len(found) == len(records), "a node twice"
    return found


def serialized(merged: ForestRead) -> bytes:
    nodes = merged.nodes.astype(object)
    records = nodes.where(nodes.notna(), None).to_dict("records")
    problems = [problem.to_dict() for problem in merged.problems]
    whole = {"nodes": records, "names": merged.names, "problems": problems}
    return json.dumps(whole, default=str).encode()


def test_successive_exports_merge_into_their_union(exports):
    reads = [read(path) for path in exports]
    # The union, from each export alone: the newest export holding a tree
    # decides its nodes' words and which are gone.
    union: dict[tuple[str, str], dict[str, Any]] = {}
    newest: dict[str, set[str]] = {}
    for alone in reads:
        for key, record in rows(alone).items():
            union[key] = record
        for tree, group in alone.nodes.groupby("tree_id", observed=True):
            newest[str(tree)] = set(group["id"])
    merged = rows(merge_reads(reads))
    assert set(merged) == set(union)
    assert {key: r["response"] for key, r in merged.items()} == {
        key: r["response"] for key, r in union.items()
    }
    gone = {key for key in union if key[1] not in newest[key[0]]}
    assert gone == {("conv-a", "a2")}
    assert {key for key, r in merged.items() if r["gone"]} == gone
    assert merged[("conv-a", "a2")]["active"] is False
    assert merged[("conv-a", "a1")]["response"] == "A monoid, edited."
    kinds = [(p.kind, p.node_id) for p in merge_reads(reads).problems]
    assert kinds == [("changed-node", "a1")]


def test_the_order_of_the_exports_changes_nothing(exports):
    reads = [read(path) for path in exports]
    answers = {
        serialized(merge_reads([reads[n] for n in order]))
        for order in itertools.permutations(range(3))
    }
    assert len(answers) == 1


def test_a_conversation_listed_twice_is_one_tree_and_check_names_it(tmp_path):
    older, longer = export(0)[0], export(1)[0]
    for order in ([older, longer], [longer, older]):
        path = write_json(tmp_path / "twice.json", order)
        merged = read(path)
        assert sorted(merged.nodes["id"]) == ["a1", "a2", "a2b", "a3"]
        kinds = [p.kind for p in merged.problems]
        assert kinds == ["changed-node", "duplicate-conversation"]
        with open_logs(path) as source:
            assert len(source.read_tree("conv-a").records) == 4
        result = run("check", "--db", path, expect=1)
        # check reads no texts: the edited answer is told by a read with them.
        assert result.stdout == (
            "duplicate-conversation: conv-a (CONV-A) is listed 2 times in the"
            " export: its copies read as one, every node once\n"
        )
        db = tmp_path / f"{order[0]['mapping'].__len__()}.db"
        result = run("import", path, "--db", db)
        assert result.stdout.splitlines()[1] == (
            f"Imported 1 conversation (4 nodes as turns, 2 threads) into {db}"
        )
        assert len(turns(db)) == 4


def turns(db: Path) -> set[str]:
    conn = sqlite3.connect(db)
    try:
        return {row[0] for row in conn.execute("select id from turns")}
    finally:
        conn.close()


def origins(db: Path) -> dict[str, tuple[str, str, str]]:
    conn = sqlite3.connect(db)
    try:
        found = conn.execute(
            "select turn_id, app, conversation_id, node_id from _convgraph_imports"
        )
        return {row[0]: tuple(row[1:]) for row in found}
    finally:
        conn.close()


def test_a_grown_export_adds_exactly_its_new_nodes(exports, tmp_path):
    db = tmp_path / "logs.db"
    import_export(exports[0], db)
    first = turns(db)
    assert sorted(node for _, _, node in origins(db).values()) == [
        "a1",
        "a2",
        "b1",
        "b2",
    ]
    summary = import_export(exports[1], db)
    assert [(c.conversation_id, c.nodes) for c in summary.grown] == [("conv-a", 2)]
    added = turns(db) - first
    assert sorted(origins(db)[turn][2] for turn in added) == ["a2b", "a3"]
    # The file's tree is the second export's, node for node.
    node_of = {turn: node for turn, (_, _, node) in origins(db).items()}
    in_file = rows(read(db))
    parents = {node_of[r["id"]]: node_of.get(r["parent_id"]) for r in in_file.values()}
    exported = rows(read(exports[1]))
    assert parents == {r["id"]: r["parent_id"] for r in exported.values()}
    assert len({str(r["tree_id"]) for r in in_file.values()}) == 2
    # Again, and the next export (a deletion removes nothing): only conv-c.
    again = import_export(exports[1], db)
    assert (again.imported, again.skipped, again.grown) == (0, 2, [])
    last = import_export(exports[2], db)
    assert (last.imported, last.nodes, last.grown) == (1, 1, [])
    assert len(turns(db)) == 7


def test_an_imported_conversation_read_with_its_export_is_one_tree(exports, tmp_path):
    db = tmp_path / "logs.db"
    summary = import_export(exports[0], db)
    thread = next(
        c.thread_id for c in summary.conversations if c.conversation_id == "conv-a"
    )
    with LlmLog(tmp_path) as log:
        log.cli("-m", "echo", "-c", "--cid", thread, "And then?")
        echoed = log.latest_turn()
    merged = rows(merge_reads([read(db), read(exports[1])]))
    assert {tree for tree, _ in merged} == {"conv-a", "conv-b"}
    export_nodes = set(rows(read(exports[1])))
    assert set(merged) == export_nodes | {("conv-a", echoed)}
    # llm's turn goes on from the node it continued, under the export's id.
    assert merged[("conv-a", echoed)]["parent_id"] == "a2"
    assert [k for k, r in merged.items() if r.get("gone")] == []


def test_an_id_two_apps_use_is_kept_twice_and_reported(tmp_path):
    with LlmLog(tmp_path) as log:
        turn = log.prompt("Hello")
    db = tmp_path / "logs.db"
    llm_read = read(db)
    tree = str(llm_read.nodes["tree_id"].iloc[0])
    mapping = [
        *gpt_preamble("root", "sys"),
        ("u", "sys", gpt_message("u", "user", "Hi", at=0)),
        (turn, "u", gpt_message(turn, "assistant", "Hi!", at=1)),
    ]
    chat = write_json(
        tmp_path / "chat.json", [gpt_conversation(tree, "Same id", mapping, turn)]
    )
    merged = merge_reads([llm_read, read(chat)])
    assert sorted(rows(merged)) == [(tree, turn), (f"llm:{tree}", f"llm:{tree}/{turn}")]
    assert [p.kind for p in merged.problems] == ["id-clash", "id-clash"]


def test_the_import_ids_are_python_ulid_s():
    """`stable_ulid` encodes as python-ulid does, by the standard library."""
    import hashlib

    from ulid import ULID

    from convgraph.sources.merging import stable_ulid

    moments = {
        None: 0,
        "2024-03-01T12:00:00+00:00": 1_709_294_400_000,
        "9999-12-31T23:59:59": 253_402_300_799_000,
    }
    for moment, milliseconds in moments.items():
        for key in (("a",), ("chatgpt", "conv", "node", "turn")):
            digest = hashlib.blake2b("\0".join(key).encode(), digest_size=10).digest()
            made = ULID(milliseconds.to_bytes(6, "big") + digest)
            assert stable_ulid(moment, *key) == str(made).lower()
