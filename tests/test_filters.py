"""Time, model and source filters (`convgraph.model.filters`,
`convgraph.cli.filters`): a tree is in when any of its nodes matches, on
both llm generations and on chat exports; the bounds a person types,
relative ones counted back from a "now" the test gives."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convgraph.cli.filters import make_filter
from convgraph.cli.options import UserError
from convgraph.contract import NODE_ATTRIBUTES
from convgraph.model.filters import (
    TreeFilter,
    node_matches,
    node_matches_table,
    select_trees,
    tree_is_in,
    tree_is_in_table,
)
from convgraph.model.forest import Forest
from convgraph.times import parse_bound
from tests.chat_exports import chatgpt_export, webui_export, write_json
from tests.databases import LlmLog
from tests.helpers import examples, file_digest, read_forest, run

NOW = datetime(2024, 3, 1, 13, 2, 10, tzinfo=UTC)


@pytest.fixture
def chatgpt(tmp_path: Path) -> Path:
    """conv-monad (12:00:10 to 12:01, gpt-4o and gpt-4o-mini), conv-tools
    (12:02 to 12:02:10, gpt-4o), conv-chain (12:16:41 to 13:23:19, gpt-4),
    all on 2024-03-01."""
    return write_json(tmp_path / "export.json", chatgpt_export())


def tree_ids(*args: object) -> list[str]:
    result = run("conversations", "--json", *args)
    return [row["tree_id"] for row in json.loads(result.stdout)]


# -- the bounds ------------------------------------------------------------------


def test_relative_bounds_count_back_from_now():
    assert parse_bound("12h", NOW) == datetime(2024, 3, 1, 1, 2, 10, tzinfo=UTC)
    assert parse_bound("7d", NOW) == datetime(2024, 2, 23, 13, 2, 10, tzinfo=UTC)
    assert parse_bound("2w", NOW) == datetime(2024, 2, 16, 13, 2, 10, tzinfo=UTC)


def test_dates_and_times_are_utc_and_a_date_until_takes_its_whole_day():
    assert parse_bound("2026-11-01", NOW) == datetime(2026, 11, 1, tzinfo=UTC)
    assert parse_bound("2026-11-01", NOW, end=True) == datetime(
        2026, 11, 1, 23, 59, 59, 999999, tzinfo=UTC
    )
    assert parse_bound("2026-11-01T14:00", NOW, end=True) == datetime(
        2026, 11, 1, 14, tzinfo=UTC
    )
    assert parse_bound("2026-11-01T14:00+02:00", NOW) == datetime(
        2026, 11, 1, 12, tzinfo=UTC
    )


@pytest.mark.parametrize("text", ["yesterday-ish", "7", "d7", "7y", "-3d", ""])
def test_what_is_no_bound_is_none(text: str):
    assert parse_bound(text, NOW) is None


def test_make_filter_reads_the_options_with_a_given_now():
    where = make_filter("1h", "2024-03-01", ["gpt-4*"], ["ChatGPT"], now=NOW)
    assert where == TreeFilter(
        datetime(2024, 3, 1, 12, 2, 10, tzinfo=UTC),
        datetime(2024, 3, 1, 23, 59, 59, 999999, tzinfo=UTC),
        ("gpt-4*",),
        ("chatgpt",),
    )
    assert not make_filter(None, None)
    with pytest.raises(UserError, match="after --until"):
        make_filter("2024-03-02", "2024-03-01")


@pytest.mark.parametrize(
    ("option", "value"), [("--since", "yesterday-ish"), ("--until", "1y")]
)
def test_a_bad_bound_is_one_line_and_exit_status_2(
    seed_db: Path, option: str, value: str
):
    result = run("conversations", "--db", seed_db, option, value, expect=2)
    assert result.stderr == (
        f"Error: {option} {value}: not a date (2026-11-01), a time"
        " (2026-11-01T14:00, UTC) or a span back from now (12h, 7d, 2w)\n"
    )


def test_the_sources_are_the_readers_own():
    from convgraph.cli.filters import SOURCES
    from convgraph.sources.agents import claude_code, codex, copilot, gemini_cli
    from convgraph.sources.chat import chatgpt, claude, openwebui
    from convgraph.sources.llm import legacy, message_store

    readers = [legacy, message_store, chatgpt, claude, openwebui]
    readers += [claude_code, codex, gemini_cli, copilot]
    assert tuple(reader.SOURCE for reader in readers) == SOURCES


def test_a_misspelt_source_is_one_line_and_exit_status_2(seed_db: Path):
    result = run("conversations", "--db", seed_db, "--source", "chatgtp", expect=2)
    assert result.stderr == (
        "Error: --source chatgtp: no such source; one of responses, turns,"
        " chatgpt, claude, openwebui, claude-code, codex, gemini-cli, copilot-cli\n"
    )
    # Named in any case, a source is the reader's own.
    assert make_filter(None, None, sources=["ChatGPT"]).sources == ("chatgpt",)


# -- legacy llm ------------------------------------------------------------------


def test_legacy_trees_kept_by_time(seed_db: Path):
    # The seed's nodes are logged a second apart from 10:00:00: linear 0-3,
    # branch 4-6, complex 7-13, multiple-roots 14-19.
    digest = file_digest(seed_db)
    db = ("--db", seed_db)
    assert tree_ids(*db, "--since", "2025-09-27T10:00:05") == [
        "branch",
        "complex",
        "multiple-roots",
    ]
    assert tree_ids(*db, "--until", "2025-09-27T10:00:04") == ["linear", "branch"]
    assert tree_ids(
        *db, "--since", "2025-09-27T10:00:05", "--until", "2025-09-27T10:00:06"
    ) == ["branch"]
    assert tree_ids(*db, "--since", "2025-09-28") == []
    assert tree_ids(*db, "--until", "2025-09-27") == [
        "linear",
        "branch",
        "complex",
        "multiple-roots",
    ]
    assert file_digest(seed_db) == digest


def test_legacy_trees_by_model_and_source(seed_db: Path):
    db = ("--db", seed_db)
    every = ["linear", "branch", "complex", "multiple-roots"]
    assert tree_ids(*db, "--model", "ech*") == every
    assert tree_ids(*db, "--model", "gpt-4*") == []
    assert tree_ids(*db, "--model", "gpt-4*", "--model", "echo") == every
    assert tree_ids(*db, "--source", "responses") == every
    assert tree_ids(*db, "--source", "turns") == []


def test_a_tree_is_drawn_whole_when_one_node_is_in(seed_db: Path):
    result = run("tree", "--db", seed_db, "--json", "--since", "2025-09-27T10:00:19")
    drawn = json.loads(result.stdout)
    # Only multiple-roots-y (10:00:19) is in range: its whole tree is drawn.
    assert [node["id"] for node in drawn] == [
        "multiple-roots-root1",
        "multiple-roots-a",
        "multiple-roots-b",
        "multiple-roots-root2",
        "multiple-roots-x",
        "multiple-roots-y",
    ]
    named = run(
        "tree",
        "linear",
        "complex",
        "--db",
        seed_db,
        "--json",
        "--since",
        "10:00:10",
        expect=2,
    )
    assert "--since 10:00:10" in named.stderr
    named = run(
        "tree",
        "linear",
        "complex",
        "--db",
        seed_db,
        "--json",
        "--since",
        "2025-09-27T10:00:10",
    )
    assert {node["tree_id"] for node in json.loads(named.stdout)} == {"complex"}


# -- llm's message store ---------------------------------------------------------


@pytest.fixture(scope="module")
def two_threads(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Two conversations logged by llm 0.36 with echo, one after the other."""
    with LlmLog(tmp_path_factory.mktemp("llm")) as log:
        first = log.prompt("What is a tree?")
        second = log.prompt("What is a forest?")
        first_thread, second_thread = log.thread_of(first), log.thread_of(second)
    forest = read_forest(log.path, text=False)
    times = dict(zip(forest.nodes["id"], forest.nodes["datetime_utc"], strict=True))
    return {
        "path": log.path,
        "threads": [first_thread, second_thread],
        "times": [times[first], times[second]],
    }


def test_message_store_trees_kept_by_time_model_and_source(two_threads: dict):
    db = ("--db", two_threads["path"])
    first, second = two_threads["threads"]
    first_time, second_time = two_threads["times"]
    assert first_time < second_time
    assert tree_ids(*db) == [first, second]
    assert tree_ids(*db, "--since", second_time) == [second]
    assert tree_ids(*db, "--until", first_time) == [first]
    assert tree_ids(*db, "--model", "echo") == [first, second]
    assert tree_ids(*db, "--model", "gpt*") == []
    assert tree_ids(*db, "--source", "turns") == [first, second]
    assert tree_ids(*db, "--source", "responses") == []
    # Relative forms, against the clock of the machine: llm logged these
    # trees after 2024 and before a hundred thousand weeks from now.
    assert tree_ids(*db, "--since", "100000w") == [first, second]


# -- chat exports ----------------------------------------------------------------


def test_chat_export_trees_kept_by_time_and_model(chatgpt: Path):
    db = ("--db", chatgpt)
    assert tree_ids(*db, "--model", "gpt-4o-mini") == ["conv-monad"]
    assert tree_ids(*db, "--model", "gpt-4o*") == ["conv-monad", "conv-tools"]
    assert tree_ids(*db, "--since", "2024-03-01T12:02") == ["conv-tools", "conv-chain"]
    assert tree_ids(*db, "--until", "2024-03-01T12:01") == ["conv-monad"]
    assert tree_ids(*db, "--until", "2024-03-01T21:01+09:00") == ["conv-monad"]
    assert tree_ids(*db, "--source", "chatgpt") == [
        "conv-monad",
        "conv-tools",
        "conv-chain",
    ]
    assert tree_ids(*db, "--source", "claude") == []


def test_relative_bounds_on_a_chat_export_with_a_fixed_now(chatgpt: Path):
    forest = read_forest(chatgpt, text=False)
    # NOW is 13:02:10: an hour back is 12:02:10, conv-tools' last node.
    kept = select_trees(forest, make_filter("1h", None, now=NOW))
    assert kept.tree_ids == ["conv-tools", "conv-chain"]
    kept = select_trees(forest, make_filter(None, "1h", now=NOW))
    assert kept.tree_ids == ["conv-monad", "conv-tools"]
    # Whole trees: conv-monad's four nodes, though one lies in range.
    kept = select_trees(forest, make_filter(None, "2024-03-01T12:00:10", now=NOW))
    assert kept.nodes["id"].tolist() == ["a1", "a1b", "a2", "a2e"]


def test_open_webui_by_model(tmp_path: Path):
    db = ("--db", write_json(tmp_path / "webui.json", webui_export()))
    assert tree_ids(*db, "--model", "llama2") == ["chat-old"]
    assert tree_ids(*db, "--model", "llama*") == ["chat-greet", "chat-old"]
    assert tree_ids(*db, "--model", "mistral", "--since", "2024-03-01T12:01") == []


# -- the two forms of the rule agree ---------------------------------------------

MODELS = st.sampled_from([None, "gpt-4o", "gpt-4o-mini", "claude-3", "echo"])
SOURCES = st.sampled_from(["responses", "turns", "chatgpt"])
#: Times at the ends of what each form could hold: Go's zero time (year 1),
#: around the nanoseconds' years (1677, 2262), 2300 and the last of 9999.
EDGE_TIMES = (
    "0001-01-01T00:00:00Z",
    "1677-01-01T00:00:00",
    "2262-04-12T00:00:00+00:00",
    "2300-01-01T00:00:00",
    "9999-12-31T23:59:59.999999",
)
TIMES = st.one_of(
    st.none(),
    st.just("not a time"),
    st.sampled_from(EDGE_TIMES),
    st.integers(0, 48 * 60).map(
        lambda minutes: (
            datetime(2026, 11, 1, tzinfo=UTC) + pd.Timedelta(minutes=minutes)
        ).isoformat()
    ),
    st.integers(0, 48 * 60).map(
        lambda minutes: (
            datetime(2026, 11, 1) + pd.Timedelta(minutes=minutes)
        ).isoformat()
    ),
)
BOUNDS = st.one_of(
    st.none(),
    st.sampled_from(
        [
            datetime(1, 1, 1, tzinfo=UTC),
            datetime(1900, 1, 1, tzinfo=UTC),
            datetime(2300, 1, 1, tzinfo=UTC),
            datetime.max.replace(tzinfo=UTC),
        ]
    ),
    st.integers(0, 48 * 60).map(
        lambda minutes: (
            datetime(2026, 11, 1, tzinfo=UTC) + pd.Timedelta(minutes=minutes)
        )
    ),
)
FILTERS = st.builds(
    TreeFilter,
    BOUNDS,
    BOUNDS,
    st.lists(st.sampled_from(["gpt-4o*", "claude-?", "echo", "[eg]*"]), max_size=2).map(
        tuple
    ),
    st.lists(SOURCES, max_size=2).map(tuple),
)
NODES = st.lists(
    st.tuples(st.integers(0, 3), TIMES, MODELS, SOURCES), min_size=1, max_size=30
)


@settings(max_examples=examples(60), deadline=None)
@given(NODES, FILTERS)
def test_table_and_tree_forms_agree(rows: list, where: TreeFilter):
    nodes = pd.DataFrame(
        {
            **dict.fromkeys(NODE_ATTRIBUTES),
            "id": [f"n{index}" for index in range(len(rows))],
            "tree_id": [f"t{tree}" for tree, *_ in rows],
            "parent_id": None,
            "datetime_utc": [moment for _, moment, _, _ in rows],
            "model": [model for _, _, model, _ in rows],
            "source": [source for *_, source in rows],
        }
    )
    forest = Forest(nodes, {})
    table = forest.nodes
    matched = node_matches_table(table, where).tolist()
    columns = table[["datetime_utc", "model", "source"]].astype(object)
    records = columns.where(columns.notna(), None).to_dict("records")
    assert matched == [node_matches(dict(record), where) for record in records]
    kept = tree_is_in_table(table, where)
    trees_in = {
        graph.graph["tree_id"] for graph in forest.trees() if tree_is_in(graph, where)
    }
    assert set(table["tree_id"][kept].astype(str)) == trees_in
    assert select_trees(forest, where).tree_ids == [
        tree for tree in forest.tree_ids if tree in trees_in
    ]


# -- the other reading commands --------------------------------------------------


def test_export_writes_the_trees_that_are_in(seed_db: Path, tmp_path: Path):
    result = run(
        "export", "--db", seed_db, "--format", "json", "--since", "2025-09-27T10:00:19"
    )
    exported = json.loads(result.stdout)
    assert {node["conversation_id"] for node in exported["nodes"]} == {"multiple-roots"}
    assert len(exported["nodes"]) == 6
    # Named trees are checked one by one: linear is out.
    result = run(
        "export",
        "linear",
        "branch",
        "--db",
        seed_db,
        "--format",
        "json",
        "--since",
        "2025-09-27T10:00:04",
        "--until",
        "2025-09-27T10:00:06",
    )
    exported = json.loads(result.stdout)
    assert {node["conversation_id"] for node in exported["nodes"]} == {"branch"}


def test_pairs_of_the_trees_that_are_in(chatgpt: Path):
    def pairs(*args: str) -> list[tuple[str, str, str]]:
        records = json.loads(run("pairs", "--db", chatgpt, "--json", *args).stdout)
        return [
            (r["conversation_id"], r["chosen_id"], r["rejected_id"]) for r in records
        ]

    assert pairs() == [("conv-monad", "a1b", "a1")]
    assert pairs("--model", "gpt-4o-mini") == [("conv-monad", "a1b", "a1")]
    assert pairs("--since", "2024-03-01T12:02") == []
    assert pairs("conv-monad", "--source", "claude") == []


def test_search_finds_hits_only_in_the_trees_that_are_in(seed_db: Path):
    def hits(*args: str) -> list[str]:
        result = run("search", "--db", seed_db, "prompt", "-n", "100", "--json", *args)
        return sorted(record["id"] for record in json.loads(result.stdout))

    assert len(hits()) == 20
    # Only multiple-roots-y is in range, and every node of its tree is searched.
    assert hits("--since", "2025-09-27T10:00:19") == [
        "multiple-roots-a",
        "multiple-roots-b",
        "multiple-roots-root1",
        "multiple-roots-root2",
        "multiple-roots-x",
        "multiple-roots-y",
    ]
    assert hits("--model", "gpt*") == []
    assert hits("--source", "responses", "--until", "2025-09-27T10:00:03") == [
        "linear-a",
        "linear-b",
        "linear-c",
        "linear-root",
    ]
