"""Every part of a node that llm's files hold (issue 23): reasoning, tool calls
and results, attachments, fragments, in the order they came.

A file written by the real llm 0.36 with llm-echo 0.5 (`-o thinking 1`,
`-a`, `--at - TYPE` from stdin, `-f`, `--sf`, a tool that raises), read
exactly; then the same file made hostile by raw SQL (a part type llm does
not know, a payload that is not JSON, NULLs, missing attachment and
fragment rows), read as far as it goes; and legacy files on llm 0.31's
schema with their attachments, fragments and tool tables. The echo model
answers a JSON prompt's `raw` as it is, so every answer here is known.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import struct
import zlib
from pathlib import Path

import pytest

from convgraph import parts as kinds
from convgraph.model.loading import load_tree, load_tree_of_node
from tests.databases import LlmLog, add_response, legacy_database, timestamp
from tests.helpers import read_forest, run

THINKING = "First I consider the prompt, then I decide what to say."


def png(red: int = 255) -> bytes:
    """A 1x1 PNG picture (llm keeps one row per content: two attachments of
    the same bytes share it)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(bytes([0, red, 0, 0])))
        + chunk(b"IEND", b"")
    )


def raw(prompt: str, answer: str) -> str:
    """A prompt the echo model answers with `answer`."""
    return json.dumps({"prompt": prompt, "raw": answer})


def tool_call_id(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        (payload,) = conn.execute(
            "select payload from parts where type = 'tool_call'"
        ).fetchone()
    finally:
        conn.close()
    return json.loads(payload)["tool_call_id"]


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> dict:
    """One conversation per kind of content, each a thread of its own."""
    directory = tmp_path_factory.mktemp("parts")
    picture = directory / "pic.png"
    picture.write_bytes(png())
    note = directory / "note.txt"
    note.write_text("a note\n")
    system = directory / "rules.txt"
    system.write_text("be kind\n")
    failing = 'def fail(word: str) -> str:\n    "Fails."\n    raise ValueError("no " + word)\n'
    with LlmLog(directory) as log:
        log.cli("-m", "echo", "-o", "thinking", "1", raw("think", "Done."))
        thinking = log.latest_turn()
        log.cli("-m", "echo", "-a", str(picture), raw("what is this", "A picture."))
        pictured = log.latest_turn()
        log.cli(
            "-m",
            "echo",
            "--at",
            "-",
            "image/png",
            raw("and this", "Another."),
            input=png(red=0),
        )
        piped = log.latest_turn()
        log.cli("-m", "echo", "-f", str(note), "summarise")
        noted = log.latest_turn()
        log.cli(
            "-m", "echo", "--sf", str(system), "-s", "be brief", raw("hi", "Hello.")
        )
        ruled = log.latest_turn()
        failed = log.tool_chain(
            "try", [{"name": "fail", "arguments": {"word": "luck"}}], functions=failing
        )
    return {
        "path": log.path,
        "picture": str(picture),
        "note": str(note),
        "thinking": thinking,
        "pictured": pictured,
        "piped": piped,
        "noted": noted,
        "ruled": ruled,
        "failed": failed,
    }


def node(written: dict, key: str) -> dict:
    return dict(load_tree_of_node(written[key], written["path"]).nodes[written[key]])


def test_reasoning_comes_before_the_answer(written) -> None:
    data = node(written, "thinking")
    assert data["parts"] == [
        kinds.text("user", raw("think", "Done.")),
        kinds.reasoning(THINKING),
        kinds.text("assistant", "Done."),
    ]
    assert (data["prompt"], data["response"]) == (raw("think", "Done."), "Done.")
    assert (data["tool_calls"], data["tools"]) == (0, None)


def test_an_attachment_is_named_never_its_bytes(written) -> None:
    # A file given by its path: llm keeps the path, not the bytes.
    assert node(written, "pictured")["parts"] == [
        kinds.text("user", raw("what is this", "A picture.")),
        kinds.attachment("user", written["picture"], None, "image/png", None),
        kinds.text("assistant", "A picture."),
    ]
    # Bytes from stdin: llm keeps them, convgraph says how many.
    assert node(written, "piped")["parts"] == [
        kinds.text("user", raw("and this", "Another.")),
        kinds.attachment("user", None, None, "image/png", len(png(red=0))),
        kinds.text("assistant", "Another."),
    ]


def test_a_fragment_says_where_it_came_from(written) -> None:
    data = node(written, "noted")
    # llm puts the fragment before the prompt; the prompt stays the text sent.
    sent = "a note\n\nsummarise"
    assert data["prompt"] == sent
    assert data["parts"] == [
        kinds.fragment(written["note"], len("a note\n")),
        kinds.text("user", sent),
        kinds.text(
            "assistant",
            json.dumps(
                {
                    "prompt": sent,
                    "system": "",
                    "attachments": [],
                    "stream": True,
                    "previous": [],
                },
                indent=2,
            ),
        ),
    ]


def test_a_system_prompt_and_its_fragments_stay_the_system(written) -> None:
    data = node(written, "ruled")
    assert data["system"] == "be kind\n\nbe brief"
    assert data["parts"] is None  # only the prompt and the answer


def test_a_tool_that_failed_says_why(written) -> None:
    first, last = written["failed"]
    call_id = tool_call_id(written["path"])
    data = dict(load_tree_of_node(last, written["path"]).nodes[last])
    assert [part["type"] for part in data["parts"]] == [
        "text",
        "text",
        "tool_call",
        "tool_result",
        "text",
    ]
    assert data["parts"][2:4] == [
        kinds.tool_call("fail", {"word": "luck"}, call_id),
        kinds.tool_result("fail", "Error: no luck", call_id, "ValueError: no luck"),
    ]
    assert (data["tool_calls"], data["tools"]) == (1, "fail")


def test_the_whole_file_gives_the_same_parts(written) -> None:
    forest = read_forest(written["path"])
    by_id = {row["id"]: row for row in forest.nodes.to_dict("records")}
    for key in ("thinking", "pictured", "piped", "noted", "ruled"):
        assert by_id[written[key]]["parts"] == node(written, key)["parts"], key
    without = read_forest(written["path"], text=False).nodes
    assert without["parts"].isna().all()
    assert list(without["tool_calls"]) == list(forest.nodes["tool_calls"])
    assert list(without["tools"]) == list(forest.nodes["tools"])


# -- the same file made hostile -----------------------------------------------


def hostile_copy(written: dict, tmp_path: Path, *statements: tuple[str, list]) -> Path:
    path = tmp_path / "logs.db"
    shutil.copyfile(written["path"], path)
    conn = sqlite3.connect(path)
    for sql, params in statements:
        conn.execute(sql, params)
    conn.commit()
    conn.close()
    return path


def tip(path: Path, turn: str) -> str:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "select tip_message_hash from turns where id = ?", [turn]
        ).fetchone()[0]
    finally:
        conn.close()


def test_a_part_type_convgraph_does_not_know_is_left_out(written, tmp_path) -> None:
    answer = tip(written["path"], written["thinking"])
    path = hostile_copy(
        written,
        tmp_path,
        (
            "update parts set type = 'hologram' where message_hash = ? and position = 0",
            [answer],
        ),
    )
    data = dict(load_tree_of_node(written["thinking"], path).nodes[written["thinking"]])
    # Without its reasoning, the node is only its prompt and its answer.
    assert (data["parts"], data["response"]) == (None, "Done.")


def test_a_call_whose_payload_is_not_json_keeps_its_name(written, tmp_path) -> None:
    first, last = written["failed"]
    path = hostile_copy(
        written,
        tmp_path,
        ("update parts set payload = 'not json' where type = 'tool_call'", []),
        (
            "update parts set payload = json_object('output', json_object('a', 1))"
            " where type = 'tool_result'",
            [],
        ),
    )
    data = dict(load_tree_of_node(first, path).nodes[last])
    assert data["parts"][2:4] == [
        kinds.tool_call("fail", None, None),
        kinds.tool_result("fail", '{"a": 1}', None, None),
    ]
    assert (data["tool_calls"], data["tools"]) == (1, "fail")
    forest = read_forest(path, text=False)
    assert forest.nodes.set_index("id").loc[last, "tools"] == "fail"


def test_missing_rows_give_what_can_be_read(written, tmp_path) -> None:
    path = hostile_copy(
        written,
        tmp_path,
        ("delete from attachments", []),
        (
            "delete from part_attachments where rowid = (select min(rowid) from part_attachments)",
            [],
        ),
        ("delete from fragments", []),
    )
    pictured = dict(
        load_tree_of_node(written["pictured"], path).nodes[written["pictured"]]
    )
    piped = dict(load_tree_of_node(written["piped"], path).nodes[written["piped"]])
    noted = dict(load_tree_of_node(written["noted"], path).nodes[written["noted"]])
    # No part_attachments row: an attachment without a name.
    assert pictured["parts"][1] == kinds.attachment("user")
    # A part_attachments row whose attachment is gone: the same.
    assert piped["parts"][1] == kinds.attachment("user")
    # A fragment that is gone: its words and its name with it.
    # (Then the node is only its prompt and its answer.)
    assert (noted["prompt"], noted["parts"]) == ("\nsummarise", None)


def test_nulls_in_parts_are_read_as_missing(written, tmp_path) -> None:
    first, last = written["failed"]
    path = hostile_copy(
        written,
        tmp_path,
        (
            "update parts set position = null, tool_name = null, payload = null"
            " where type in ('tool_call', 'tool_result')",
            [],
        ),
    )
    data = dict(load_tree_of_node(first, path).nodes[last])
    # A part without a position comes first in its message (SQLite's order
    # of NULL), the call before the words it came with.
    assert [part["type"] for part in data["parts"]] == [
        "text",
        "tool_call",
        "text",
        "tool_result",
        "text",
    ]
    assert data["parts"][1] == kinds.tool_call(None, None, None)
    assert data["parts"][3] == kinds.tool_result(None, "", None, None)
    assert (data["tool_calls"], data["tools"]) == (1, None)
    for command in (["tree"], ["check"], ["export", "--format", "json"]):
        assert run(*command, "--db", path, expect=None).exit_code in (0, 1)


# -- legacy files: attachments, fragments and tool tables -------------------------


def test_legacy_attachments_and_fragments_in_their_order(tmp_path) -> None:
    conn = legacy_database(tmp_path / "logs.db")
    add_response(
        conn,
        "r",
        "c",
        "compare them",
        response="They differ.",
        datetime_utc=timestamp(0),
    )
    conn.executemany(
        "insert into attachments (id, type, path, url, content) values (?, ?, ?, ?, ?)",
        [
            ("a1", "image/png", "/pics/one.png", None, None),
            ("a2", "image/jpeg", None, "https://example.com/two.jpg", None),
            ("a3", "image/png", None, None, png()),
        ],
    )
    conn.executemany(
        'insert into prompt_attachments (response_id, attachment_id, "order")'
        " values (?, ?, ?)",
        [("r", "a3", 2), ("r", "a1", 0), ("r", "a2", 1), ("r", "gone", 3)],
    )
    conn.executemany(
        "insert into fragments (id, hash, content, source) values (?, ?, ?, ?)",
        [(1, "h1", "rules\n", "rules.md"), (2, "h2", "data", "https://example.com/d")],
    )
    conn.execute("insert into system_fragments values (?, ?, ?)", ["r", 1, 0])
    conn.executemany(
        "insert into prompt_fragments values (?, ?, ?)", [("r", 2, 0), ("r", 9, 1)]
    )
    conn.commit()
    conn.close()
    data = dict(load_tree("c", tmp_path / "logs.db").nodes["r"])
    assert data["parts"] == [
        kinds.fragment("rules.md", 6),
        kinds.fragment("https://example.com/d", 4),
        kinds.fragment(None, None),  # a fragment row that is gone
        kinds.text("user", "compare them"),
        kinds.attachment("user", "/pics/one.png", None, "image/png", None),
        kinds.attachment("user", None, "https://example.com/two.jpg", "image/jpeg"),
        kinds.attachment("user", None, None, "image/png", len(png())),
        kinds.attachment("user"),  # an attachment row that is gone
        kinds.text("assistant", "They differ."),
    ]
    assert (data["tool_calls"], data["tools"]) == (0, None)
    forest = read_forest(tmp_path / "logs.db")
    assert forest.nodes["parts"].tolist() == [data["parts"]]
    assert read_forest(tmp_path / "logs.db", text=False).nodes["parts"].tolist() == [
        None
    ]


def test_legacy_tool_result_attachments_and_errors(tmp_path) -> None:
    conn = legacy_database(tmp_path / "logs.db")
    add_response(conn, "r1", "c", "draw", response="", datetime_utc=timestamp(0))
    add_response(
        conn, "r2", "c", "", parent="r1", response="Drawn.", datetime_utc=timestamp(1)
    )
    conn.execute(
        "insert into tool_calls (response_id, name, arguments, tool_call_id)"
        " values ('r1', 'draw', '{\"what\": \"cat\"}', 'c1')"
    )
    conn.execute(
        "insert into tool_results (id, response_id, name, output, tool_call_id,"
        " exception) values (7, 'r2', 'draw', 'a cat', 'c1', null),"
        " (8, 'r2', 'draw', 'Error: ink', 'c2', 'RuntimeError: ink')"
    )
    conn.execute(
        "insert into attachments (id, type, content) values ('p', 'image/png', ?)",
        [png()],
    )
    conn.execute("insert into tool_results_attachments values (7, 'p', 0)")
    conn.commit()
    conn.close()
    tree = load_tree("c", tmp_path / "logs.db")
    assert list(tree) == ["r2"]
    assert tree.nodes["r2"]["parts"] == [
        kinds.text("user", "draw"),
        kinds.tool_call("draw", {"what": "cat"}, "c1"),
        kinds.tool_result("draw", "a cat", "c1"),
        kinds.attachment("tool", None, None, "image/png", len(png())),
        kinds.tool_result("draw", "Error: ink", "c2", "RuntimeError: ink"),
        kinds.text("assistant", "Drawn."),
    ]
    assert tree.nodes["r2"]["response"] == "Drawn."
