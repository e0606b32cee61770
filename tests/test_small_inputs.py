"""`convgraph stats` of a small file: measured tree by tree without pandas,
printed exactly as the table path prints it.

Under `SMALL_INPUT_BYTES` an llm database or an agent's session file is
measured by `summary` of each tree (`convgraph.analysis.summaries`);
above it, by `conversation_table` of the whole forest. Each test runs the
command both ways on the same file, the table path forced by a threshold of
0, and asserts the same output in every format: on the examples, the test
databases, the agents' sessions, and files written with any value in any
column (the hostile fixtures of tests/test_hostile_data.py).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import convgraph
import convgraph.analysis.summaries as stats_command
from convgraph.analysis.summaries import summary_records
from tests import test_hostile_data
from tests.databases import add_tree, legacy_database
from tests.helpers import examples, run
from tests.test_hostile_data import _apply, _copy, hostile_writes

# The hostile fixtures, shared with the module that defines them: pytest
# finds a fixture by its name in the test's module.
base_files = test_hostile_data.base_files
legacy_base = test_hostile_data.legacy_base
legacy_parts_base = test_hostile_data.legacy_parts_base
store_parts_base = test_hostile_data.store_parts_base

ROOT = Path(__file__).resolve().parent.parent
AGENTS = ROOT / "tests" / "data" / "agents"
#: Each output format, and a choice of columns.
FORMATS = [
    [],
    ["--json"],
    ["--nl"],
    ["--csv"],
    ["--tsv"],
    ["--columns", "tree_id,tools,last_datetime"],
]
#: Small files of every source the small path reads.
FILES = [
    ROOT / "examples" / "logs.db",
    AGENTS / "claude-code" / "sample_session.jsonl",
    AGENTS / "claude-code" / "projects" / "-home-ada-tree" / "s1.jsonl",
    AGENTS / "claude-code" / "projects" / "-home-ada-tree" / "agent-ag1.jsonl",
    *sorted((AGENTS / "codex").rglob("*.jsonl")),
    *sorted((AGENTS / "gemini-cli").rglob("*.json*")),
]


def small_records(path: str, ids: object = ()) -> list[dict] | None:
    """`summary_records` of the file at `path`."""
    with convgraph.open(path) as logs:
        return summary_records(logs.source, ids)  # type: ignore[arg-type]


def is_small(path: Path) -> bool:
    """Whether the file at `path` opens and is measured tree by tree."""
    try:
        with convgraph.open(path) as logs:
            return stats_command.is_small(logs.source)
    except convgraph.DatabaseError:
        return False


def both_ways(*args: object, command: str = "stats") -> tuple[object, object]:
    """`convgraph COMMAND ARGS` by the small path and by the table path: each
    run's exit status, stdout and stderr."""
    small = run(command, *args, expect=None)
    threshold = stats_command.SMALL_INPUT_BYTES
    stats_command.SMALL_INPUT_BYTES = 0
    try:
        table = run(command, *args, expect=None)
    finally:
        stats_command.SMALL_INPUT_BYTES = threshold
    return (
        (small.exit_code, small.stdout, small.stderr),
        (table.exit_code, table.stdout, table.stderr),
    )


def assert_same_in_every_format(path: Path, *ids: str) -> None:
    """Both paths print the same in every format, and the small path does
    answer for this file."""
    assert small_records(str(path), ids) is not None
    for words in FORMATS:
        small, table = both_ways(*ids, *words, "--db", path)
        assert small == table, words
        assert small[0] == 0, small
    if not ids:
        # `convgraph conversations`: the first columns of the same rows.
        for words in FORMATS[:-1]:
            small, table = both_ways(*words, "--db", path, command="conversations")
            assert small == table, words


@pytest.fixture
def hostile_dir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as directory:
        yield Path(directory)


@pytest.mark.parametrize("path", FILES, ids=lambda path: path.name)
def test_every_small_source_prints_the_tables_answer(path: Path) -> None:
    assert path.is_file() and path.stat().st_size < stats_command.SMALL_INPUT_BYTES
    assert_same_in_every_format(path)


def test_the_test_databases_print_the_tables_answer(
    seed_db: Path, llm_fork_db: dict, base_files: dict
) -> None:
    assert_same_in_every_format(seed_db)
    assert_same_in_every_format(llm_fork_db["path"])
    for base in base_files.values():
        assert_same_in_every_format(base["path"])


def test_named_conversations_in_the_order_named(
    seed_db: Path, llm_fork_db: dict
) -> None:
    tree_ids = [record["tree_id"] for record in small_records(str(seed_db)) or []]
    assert len(tree_ids) > 1
    named = small_records(str(seed_db), [tree_ids[-1], tree_ids[0], tree_ids[-1]])
    assert [record["tree_id"] for record in named or []] == [tree_ids[-1], tree_ids[0]]
    assert_same_in_every_format(seed_db, tree_ids[-1], tree_ids[0], tree_ids[-1])
    # A fork thread names its whole tree.
    path = llm_fork_db["path"]
    assert_same_in_every_format(path, llm_fork_db["fork"], llm_fork_db["thread"])


def test_errors_are_the_tables_too(seed_db: Path, tmp_path: Path) -> None:
    small, table = both_ways("no-such-conversation", "--db", seed_db)
    assert small == table
    assert small[0] == 2 and len(small[2].splitlines()) == 1
    empty = tmp_path / "empty.db"
    legacy_database(empty).close()
    for words in FORMATS:
        small, table = both_ways(*words, "--db", empty)
        assert small == table and small[0] == 0
    for words in FORMATS[:-1]:
        small, table = both_ways(*words, "--db", empty, command="conversations")
        assert small == table and small[0] == 0


@pytest.mark.parametrize(
    "time",
    ["1500-01-01T00:00:00", "2024-05-01T10:00:00.123456789", "9999-12-31T23:00:00"],
)
def test_times_the_table_reads_otherwise_take_the_table_path(
    tmp_path: Path, time: str
) -> None:
    path = tmp_path / "logs.db"
    conn = legacy_database(path)
    add_tree(conn, "c", [("a", None), ("b", "a"), ("c", "a")])
    conn.execute("update responses set datetime_utc = ? where id = 'b'", [time])
    conn.commit()
    conn.close()
    # Both forms read every year to the microsecond: the small path answers.
    assert small_records(str(path)) is not None
    for words in FORMATS:
        small, table = both_ways(*words, "--db", path)
        assert small == table


def chat_exports(directory: Path) -> list[Path]:
    """Small exports of every app: branches, tools, a long chain, links
    that go round or nowhere, a conversation without an id, the person's
    ratings, ids two conversations share, empty conversations (before,
    between and after the others), split files."""
    from tests import chat_exports as build
    from tests.test_sources_chat import EMPTY

    gpt = build.chatgpt_export()
    claude = build.claude_export()
    webui = build.webui_export()
    files = {
        "chatgpt.zip": {
            **build.split([EMPTY["chatgpt"](), *gpt, *build.chatgpt_hostile()], 2),
            "message_feedback.json": build.chatgpt_feedback(),
        },
        "chatgpt-agent.json": [build.chatgpt_agent(), gpt[0], gpt[0]],
        "claude.json": [*claude, EMPTY["claude"](), build.claude_agent()],
        "webui.json": [webui[0], EMPTY["openwebui"](), *webui[1:], build.webui_files()],
    }
    paths = [ROOT / "examples" / "chatgpt-export.zip"]
    for name, value in files.items():
        path = directory / name
        if name.endswith(".zip"):
            build.write_zip(path, value)
        else:
            build.write_json(path, value)
        paths.append(path)
    return paths


def test_a_chat_export_is_read_once_and_prints_the_tables_answer(
    tmp_path: Path,
) -> None:
    from convgraph.sources.chat.exports import ChatExport

    for path in chat_exports(tmp_path):
        assert path.stat().st_size < stats_command.SMALL_INPUT_BYTES
        assert_same_in_every_format(path)
    # One pass of the file, not one a conversation.
    read = []
    items = ChatExport._raw_items
    ChatExport._raw_items = lambda self: read.append(1) or items(self)
    try:
        records = small_records(str(tmp_path / "claude.json"))
    finally:
        ChatExport._raw_items = items
    assert records is not None and len(records) == 4 and len(read) == 2
    assert [record["nodes"] for record in records][-1] == 0


def test_named_conversations_of_an_export_and_a_large_file_take_the_table_path(
    tmp_path: Path,
) -> None:
    export = ROOT / "examples" / "chatgpt-export.zip"
    tree_id = (small_records(str(export)) or [])[0]["tree_id"]
    assert small_records(str(export), [tree_id]) is None
    small, table = both_ways(tree_id, "--json", "--db", export)
    assert small == table
    assert is_small(ROOT / "examples" / "logs.db")
    assert not is_small(AGENTS / "claude-code" / "projects")
    assert not is_small(tmp_path / "missing.db")


@pytest.mark.parametrize("command", ["stats", "conversations"])
def test_stats_of_a_small_file_imports_neither_pandas_nor_numpy(command: str) -> None:
    code = (
        "import sys\n"
        "from convgraph.cli import cli\n"
        "try:\n"
        f"    cli([{command!r}, '--json', '--db', {str(ROOT / 'examples' / 'logs.db')!r}])\n"
        "except SystemExit as stop:\n"
        "    assert stop.code in (0, None)\n"
        "print(sorted({'pandas', 'numpy', 'pyarrow'} & set(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert done.stderr.strip().splitlines()[-1] == "[]"
    assert done.stdout.startswith("[\n")


@pytest.mark.slow
@settings(
    max_examples=examples(80),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_any_value_in_any_column_prints_the_tables_answer(
    base_files: dict, hostile_dir: Path, data: st.DataObject
) -> None:
    kind, writes = data.draw(hostile_writes(base_files))
    path = _copy(base_files[kind]["path"], hostile_dir)
    _apply(path, writes)
    for words in (["--json"], []):
        small, table = both_ways(*words, "--db", path)
        assert small == table, (kind, writes, words)
    small, table = both_ways("--json", "--db", path, command="conversations")
    assert small == table, (kind, writes)


@pytest.mark.slow
def test_the_startup_group_plans_every_read_command_on_every_small_file(
    tmp_path: Path,
) -> None:
    from benchmarks import startup, suite

    options = suite.Options(groups=["startup"], data_dir=tmp_path)
    rows = suite.plan(options)
    assert [row.operation for row in rows[:2]] == ["python -c pass", startup.OPERATION]
    assert len(rows) == 1 + len(startup.FILES) * 12
    logs = [row for row in rows if row.shape.startswith("llm logs.db: ")]
    assert [row.shape.partition(": ")[2] for row in logs] == [
        "conversations",
        "tree",
        "stats",
        "path",
        "transcript",
        *(f"export --format {name}" for name in ("json", "dot", "mermaid", "markdown")),
        "pairs",
        "search",
        "diff",
    ]
    stats = logs[2]
    assert stats.convgraph.params[1:] == (
        "-m",
        "convgraph",
        "stats",
        "--json",
        "--db",
        str(tmp_path / "startup" / "logs.db"),
    )
    assert stats.baseline is not None
    assert stats.baseline.params[1:] == ("-c", "import click, networkx")
    # Every command runs on the copies, and answers: each is `python -m
    # convgraph WORDS`, the first run as a process, the others in this one
    # (their start-up is test_startup.py's).
    assert {row.convgraph.params[:3] for row in rows[1:]} == {
        (sys.executable, "-m", "convgraph")
    }
    done = subprocess.run(rows[1].convgraph.params, capture_output=True, text=True)
    assert done.returncode == 0, (rows[1].shape, done.stderr[-300:])
    for row in rows[2:]:
        run(*row.convgraph.params[3:])
