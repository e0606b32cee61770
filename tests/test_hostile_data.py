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

import contextlib
import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convgraph.model.loading import load_tree, load_tree_of_node
from tests.databases import COMPLEX, LlmLog, add_tree, legacy_database
from tests.helpers import SAFETY_SECONDS, examples, file_digest, run

# -- branch on a broken chain of messages ----------------------------------


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
        timeout=SAFETY_SECONDS,
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


# -- values llm's schema allows: read, reported, or refused in one line -------

#: Every read command, as the user types it (`{node}` is a node id).
READ_COMMANDS = [
    ["tree"],
    ["conversations"],
    ["stats"],
    ["check"],
    ["path", "{node}"],
    ["children", "{node}"],
    ["export", "--format", "json"],
    ["export", "--format", "graphml"],
    ["export", "--format", "dot"],
]


@pytest.fixture(scope="session")
def legacy_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The complex tree of the four scenarios ("t-root" ... "t-g") and a
    second conversation ("u-1", "u-2") in llm 0.31's schema with the parent
    column. Session-scoped: tests copy it."""
    path = tmp_path_factory.mktemp("legacy") / "logs.db"
    conn = legacy_database(path)
    add_tree(conn, "t", [(f"t-{n}", f"t-{p}" if p else None) for n, p in COMPLEX])
    add_tree(conn, "u", [("u-1", None), ("u-2", "u-1")], start=len(COMPLEX))
    conn.close()
    return path


def _copy(base: Path, directory: Path) -> Path:
    path = directory / "logs.db"
    shutil.copyfile(base, path)
    return path


def _write(path: Path, *statements: tuple[str, list]) -> None:
    conn = sqlite3.connect(path)
    for sql, params in statements:
        conn.execute(sql, params)
    conn.commit()
    conn.close()


def _run_all(path: Path, node: str) -> dict[str, object]:
    """Every read command on `path`: each must end with 0, 1 (check found
    problems) or 2 (one line on stderr), never a traceback."""
    results = {}
    for words in READ_COMMANDS:
        words = [word.format(node=node) for word in words]
        result = run(*words, "--db", path, expect=None)
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            words,
            result.exc_info,
        )
        assert result.exit_code in (0, 1, 2), (words, result.output)
        if result.exit_code == 2:
            assert result.stdout == ""
            assert len(result.stderr.splitlines()) == 1, result.stderr
        if words[0] != "check":
            assert result.exit_code != 1, (words, result.output)
        results[" ".join(words)] = result
    return results


def test_a_response_without_an_id_is_reported_and_left_out(
    legacy_base: Path, tmp_path: Path
) -> None:
    path = _copy(legacy_base, tmp_path)
    _write(path, ("update responses set id = null where id = 't-g'", []))
    results = _run_all(path, "t-f")
    check = results["check"]
    assert check.exit_code == 1
    assert check.stdout == "no-id: 1 row of responses has no id: left out\n"
    shown = json.loads(run("export", "--format", "json", "--db", path).stdout)
    ids = [node["id"] for node in shown["nodes"]]
    assert "t-f" in ids and len(ids) == len(COMPLEX) + 1


def test_duplicate_ids_are_reported_and_the_first_is_read(
    legacy_base: Path, tmp_path: Path
) -> None:
    # A table without a primary key (rebuilt by hand) holds one id twice.
    path = _copy(legacy_base, tmp_path)
    _write(
        path,
        ("create table copy as select * from responses", []),
        ("drop table responses", []),
        ("alter table copy rename to responses", []),
        (
            "insert into responses (id, conversation_id, prompt, response,"
            " datetime_utc, parent_response_id) values ('t-b', 't', 'again',"
            " 'twice', '2030-01-01', 't-root')",
            [],
        ),
    )
    results = _run_all(path, "t-c")
    assert results["check"].stdout == (
        "duplicate-id: t-b is the id of 2 rows: the first logged is read,"
        " the others left out\n"
    )
    assert results["path t-c"].stdout == "t-root\nt-b\nt-c\n"
    tree = load_tree("t", path)
    assert tree.number_of_nodes() == len(COMPLEX)
    assert tree.nodes["t-b"]["prompt"] == "prompt t-b"


def test_turns_without_id_or_thread_are_reported(llm_copy: dict) -> None:
    path = llm_copy["path"]
    first, second, third = llm_copy["turns"]
    _write(
        path,
        ("update turns set id = null where id = ?", [third]),
        ("update turns set thread_id = null where id = ?", [second]),
    )
    results = _run_all(path, first)
    assert results["check"].stdout == (
        "no-id: 1 row of turns has no id: left out\n"
        "no-thread: 1 row of turns has no thread_id: left out\n"
    )
    assert results["children " + first].stdout == f"{llm_copy['fork_turns'][0]}\n"


@pytest.mark.parametrize(
    ("column", "value", "expected"),
    [
        ("input_tokens", "12 tokens", None),
        ("input_tokens", 12.0, 12),
        ("output_tokens", 2.5, None),
        ("duration_ms", 1e300, None),
        ("duration_ms", b"\x00\x01", None),
        ("datetime_utc", "yesterday-ish", "yesterday-ish"),
        ("datetime_utc", "99999-13-45T99:99:99", "99999-13-45T99:99:99"),
        ("datetime_utc", 20250101, "20250101"),
        # A year that parses but lies outside pandas' nanosecond times.
        ("datetime_utc", "-1-01-01T00:00:00", "-1-01-01T00:00:00"),
        ("model", b"\xffmodel", "\ufffdmodel"),
        ("prompt", b"caf\xc3\xa9", "café"),
        ("response", 42, "42"),
        ("id", b"t-blob", "t-blob"),
    ],
)
def test_values_of_other_types_are_read_as_the_contract_says(
    legacy_base: Path, tmp_path: Path, column: str, value: object, expected: object
) -> None:
    path = _copy(legacy_base, tmp_path)
    _write(path, (f"update responses set {column} = ? where id = 'u-2'", [value]))
    _run_all(path, "t-c")
    nodes = json.loads(run("export", "--format", "json", "--db", path).stdout)
    (node,) = [
        n for n in nodes["nodes"] if n["conversation_id"] == "u" and n["id"] != "u-1"
    ]
    assert node[column] == expected


def test_one_undecodable_byte_sinks_only_its_own_text(
    legacy_base: Path, tmp_path: Path
) -> None:
    path = _copy(legacy_base, tmp_path)
    _write(
        path,
        (
            "update responses set prompt = cast(? as text) where id = 't-c'",
            [b"caf\xe9 \xff end"],
        ),
    )
    results = _run_all(path, "t-c")
    assert results["check"].exit_code == 0
    nodes = json.loads(results["export --format json"].stdout)["nodes"]
    prompts = {node["id"]: node["prompt"] for node in nodes}
    assert prompts["t-c"] == "caf\ufffd \ufffd end"
    assert prompts["t-d"] == "prompt t-d"
    assert load_tree("t", path).nodes["t-c"]["prompt"] == "caf\ufffd \ufffd end"


@pytest.mark.parametrize(
    "payload",
    [
        "not json",
        '{"text_ref": 5}',
        '{"text_ref": [3, "x", null, {"fragment": {"a": 1}}, {"literal": 7}]}',
        '{"text_ref": [{"fragment": 999999}, {"literal": "kept"}]}',
        "[1, 2]",
    ],
)
def test_malformed_payloads_are_read_as_no_text(llm_copy: dict, payload: str) -> None:
    path = llm_copy["path"]
    first = llm_copy["turns"][0]
    tip = _tip_of(path, first)
    _write(
        path,
        (
            "update parts set text = null, payload = ? where message_hash = ?",
            [payload, tip],
        ),
    )
    results = _run_all(path, first)
    assert results["check"].exit_code == 0
    expected = "kept" if "kept" in payload else ""
    assert load_tree_of_node(first, path).nodes[first]["response"] == expected


# -- the property: any value of any SQLite type in any column llm defines ----

#: The tables of llm's that convgraph reads, by base file. Their columns are
#: taken from the files themselves: llm 0.31's schema (tests/data) for the
#: legacy file, llm 0.36's own migrations for the message store.
LLM_TABLES = {
    "legacy": ["responses", "conversations"],
    "store": ["turns", "threads", "messages", "parts", "fragments", "responses"],
    # Files with tool chains, reasoning, attachments and fragments (issue 23).
    "legacy-parts": [
        "responses",
        "conversations",
        "tool_calls",
        "tool_results",
        "tool_results_attachments",
        "prompt_attachments",
        "attachments",
        "prompt_fragments",
        "system_fragments",
        "fragments",
    ],
    "store-parts": [
        "turns",
        "threads",
        "messages",
        "parts",
        "part_attachments",
        "attachments",
        "fragments",
    ],
}

#: Text that is not UTF-8, stored as TEXT (only a raw SQL writer can).
_BAD_TEXT = st.binary(min_size=1, max_size=8).map(lambda data: ("bad", data + b"\xff"))

SQLITE_VALUES = st.one_of(
    st.none(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(),
    st.text(
        st.characters(blacklist_categories=("Cs",)),  # surrogates: not UTF-8
        max_size=20,
    ),
    st.sampled_from(["", "12 tokens", "2025-13-45T25:61:61", "{", '{"text_ref": 1}']),
    st.binary(max_size=12),
    _BAD_TEXT,
)


@pytest.fixture(scope="session")
def legacy_parts_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """llm 0.31's schema with a tool chain of two responses ("r1" calls,
    "r2" is sent the result, with an attachment), a prompt with two
    attachments, a system fragment and a prompt fragment ("q")."""
    path = tmp_path_factory.mktemp("legacy-parts") / "logs.db"
    conn = legacy_database(path)
    add_tree(conn, "c", [("q", None), ("r1", "q"), ("r2", "r1")])
    conn.execute("update responses set prompt = '' where id = 'r2'")
    conn.executescript(
        """
        insert into tool_calls (response_id, name, arguments, tool_call_id)
            values ('r1', 'shout', '{"word": "tree"}', 't1');
        insert into tool_results (id, response_id, name, output, tool_call_id)
            values (1, 'r2', 'shout', 'TREE!', 't1');
        insert into attachments (id, type, path, url, content) values
            ('a1', 'image/png', '/p.png', null, null),
            ('a2', 'image/png', null, null, x'89504e47');
        insert into tool_results_attachments values (1, 'a2', 0);
        insert into prompt_attachments values ('q', 'a1', 0), ('q', 'a2', 1);
        insert into fragments (id, hash, content, source) values
            (1, 'h1', 'rules', 'rules.md'), (2, 'h2', 'data', 'data.txt');
        insert into system_fragments values ('q', 1, 0);
        insert into prompt_fragments values ('q', 2, 0);
        """
    )
    conn.commit()
    conn.close()
    return path


@pytest.fixture(scope="session")
def store_parts_base(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A logs.db written by llm 0.36: a tool chain, reasoning, an attached
    picture and a fragment; the node given is the chain's first call."""
    directory = tmp_path_factory.mktemp("store-parts")
    (directory / "note.txt").write_text("a note\n")
    (directory / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    with LlmLog(directory) as log:
        first, _ = log.tool_chain("shout", [{"name": "shout", "arguments": {}}])
        log.cli("-m", "echo", "-o", "thinking", "1", "-c", "why?")
        log.cli("-m", "echo", "-f", str(directory / "note.txt"), "-c", "sum up")
        log.cli(
            "-m", "echo", "--at", "-", "image/png", "look", input=b"\x89PNG\r\n\x1a\n"
        )
    return {"path": log.path, "node": first}


@pytest.fixture(scope="session")
def base_files(
    legacy_base: Path,
    llm_fork_db: dict,
    legacy_parts_base: Path,
    store_parts_base: dict,
) -> dict:
    """Each base file with its tables' columns, row counts and a node id."""
    bases = {}
    for kind, path, node in [
        ("legacy", legacy_base, "t-c"),
        ("store", llm_fork_db["path"], llm_fork_db["turns"][1]),
        ("legacy-parts", legacy_parts_base, "r1"),
        ("store-parts", store_parts_base["path"], store_parts_base["node"]),
    ]:
        conn = sqlite3.connect(path)
        tables = {
            table: (
                [row[1] for row in conn.execute(f"pragma table_info({table})")],
                conn.execute(f"select count(*) from {table}").fetchone()[0],
            )
            for table in LLM_TABLES[kind]
        }
        conn.close()
        bases[kind] = {"path": path, "node": node, "tables": tables}
    return bases


@st.composite
def hostile_writes(draw: st.DrawFn, bases: dict) -> tuple[str, list]:
    """A base file and one to three UPDATEs of one column of one row."""
    kind = draw(st.sampled_from(sorted(bases)))
    tables = {t: v for t, v in bases[kind]["tables"].items() if v[1] > 0}
    writes = []
    for _ in range(draw(st.integers(1, 3))):
        table = draw(st.sampled_from(sorted(tables)))
        columns, rows = tables[table]
        column = draw(st.sampled_from(columns))
        row = draw(st.integers(0, rows - 1))
        writes.append((table, column, row, draw(SQLITE_VALUES)))
    return kind, writes


def _apply(path: Path, writes: list) -> None:
    conn = sqlite3.connect(path)
    for table, column, row, value in writes:
        target = f"(select rowid from {table} order by rowid limit 1 offset {row})"
        if isinstance(value, tuple):
            sql = f'update {table} set "{column}" = cast(? as text) where rowid = {target}'
            value = value[1]
        else:
            sql = f'update {table} set "{column}" = ? where rowid = {target}'
        # A key or unique index may refuse it: that file cannot exist.
        with contextlib.suppress(sqlite3.IntegrityError):
            conn.execute(sql, [value])
    conn.commit()
    conn.close()


@pytest.mark.slow
@settings(
    max_examples=examples(120),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_any_value_in_any_column_gives_a_report_never_a_traceback(
    base_files: dict, data: st.DataObject
) -> None:
    kind, writes = data.draw(hostile_writes(base_files))
    base = base_files[kind]
    with tempfile.TemporaryDirectory() as directory:
        path = _copy(base["path"], Path(directory))
        _apply(path, writes)
        before = file_digest(path)
        _run_all(path, base["node"])
        assert file_digest(path) == before
