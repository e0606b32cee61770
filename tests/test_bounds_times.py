"""Times at the edge (issue 39, family 4): every date a bound accepts is a
moment wherever it is compared, and a node's time compares the same in
every command.

The file is llm's own (`llm -m echo`, one conversation a prompt); its
turns' times are then set to the years each form of the rule could once
not hold: 0001-01-01 (what Go writes for a zero time), 1677, 2262 (past the
last nanosecond), 2300 and the last microsecond of 9999, beside one of
2024. `tree ID`, `conversations`, `search`, `stats --by day` and the
browser's list (`convgraph.browse.listing.trees_in`) must keep the same
trees for the same filter.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import convgraph
from convgraph.browse.listing import trees_in
from convgraph.cli.filters import make_filter
from tests.databases import LlmLog
from tests.helpers import run

#: Each prompt's time, in log order of the prompts.
TIMES = {
    "zero": "0001-01-01T00:00:00Z",
    "early": "1677-01-01T00:00:00+00:00",
    "past": "2262-04-12T00:00:00+00:00",
    "later": "2300-01-01T00:00:00",
    "last": "9999-12-31T23:59:59.999999+00:00",
    "now": "2024-05-01T12:00:00+00:00",
}


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's cache directory, one per test: where search's index goes."""
    directory = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(directory))
    return directory


@pytest.fixture
def edge_db(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The file, and the tree id of each name of `TIMES`."""
    trees = {}
    with LlmLog(tmp_path) as log:
        for name in TIMES:
            turn = log.prompt(f"edge {name}")
            trees[name] = log.thread_of(turn)
    conn = sqlite3.connect(log.path)
    with conn:
        for name, moment in TIMES.items():
            conn.execute(
                "update turns set datetime_utc = ? where thread_id = ?",
                [moment, trees[name]],
            )
    conn.close()
    return log.path, trees


#: A filter's options, and the trees (names of `TIMES`) every command keeps.
CASES = [
    (("--until", "1900-01-01"), {"zero", "early"}),
    (("--since", "2200-01-01"), {"past", "later", "last"}),
    (("--since", "0001-01-01"), set(TIMES)),
    (("--until", "9999-12-31"), set(TIMES)),
    (("--since", "0001-01-01", "--until", "0001-01-01"), {"zero"}),
    (("--since", "9999-12-31"), {"last"}),
    (("--since", "2262-04-11T23:47:17", "--until", "2300-01-01"), {"past", "later"}),
    (("--since", "2024-01-01", "--until", "2024-12-31"), {"now"}),
]


def names_of(tree_ids: set[str], trees: dict[str, str]) -> set[str]:
    return {name for name, tree in trees.items() if tree in tree_ids}


@pytest.mark.parametrize(("options", "expected"), CASES)
def test_every_command_keeps_the_same_trees(
    edge_db: tuple[Path, dict[str, str]], options: tuple[str, ...], expected: set[str]
) -> None:
    db, trees = edge_db
    listed = run("conversations", "--db", db, "--json", *options).stdout
    assert names_of({row["tree_id"] for row in json.loads(listed)}, trees) == expected
    drawn = set()
    for name, tree in trees.items():
        shown = json.loads(run("tree", tree, "--db", db, "--json", *options).stdout)
        if shown:
            drawn.add(name)
    assert drawn == expected
    hits = json.loads(run("search", "edge", "--db", db, "--json", *options).stdout)
    assert names_of({hit["tree_id"] for hit in hits}, trees) == expected
    where = make_filter(*_bounds(options))
    with convgraph.open(db) as logs:
        kept = trees_in(logs.forest(text=False), where)
    assert names_of(kept, trees) == expected


def _bounds(options: tuple[str, ...]) -> tuple[str | None, str | None]:
    given = dict(zip(options[::2], options[1::2], strict=True))
    return given.get("--since"), given.get("--until")


def test_stats_by_day_has_every_day(edge_db: tuple[Path, dict[str, str]]) -> None:
    db, _ = edge_db
    rows = json.loads(run("stats", "--db", db, "--by", "day", "--json").stdout)
    assert [(row["day"], row["nodes"]) for row in rows] == [
        ("0001-01-01", 1),
        ("1677-01-01", 1),
        ("2024-05-01", 1),
        ("2262-04-12", 1),
        ("2300-01-01", 1),
        ("9999-12-31", 1),
    ]
    weeks = json.loads(run("stats", "--db", db, "--by", "week", "--json").stdout)
    assert [row["week"] for row in weeks] == [
        "0001-W01",
        "1676-W53",
        "2024-W18",
        "2262-W15",
        "2300-W01",
        "9999-W52",
    ]


def test_the_table_and_the_small_path_read_the_same_times(
    edge_db: tuple[Path, dict[str, str]],
) -> None:
    db, trees = edge_db
    small = json.loads(run("stats", "--db", db, "--json").stdout)
    # A filter that keeps everything takes the table's path.
    table = json.loads(
        run("stats", "--db", db, "--json", "--since", "0001-01-01").stdout
    )
    assert sorted(small, key=lambda row: row["tree_id"]) == sorted(
        table, key=lambda row: row["tree_id"]
    )
    first = {row["tree_id"]: row["first_datetime"] for row in table}
    assert first[trees["zero"]] == "0001-01-01T00:00:00+00:00"
    assert first[trees["last"]] == "9999-12-31T23:59:59.999999+00:00"
    assert first[trees["past"]] == "2262-04-12T00:00:00+00:00"


@pytest.mark.parametrize(
    "bound", ["0000-01-01", "10000-01-01", "999999w", "9999-12-31T23:00-05:00"]
)
def test_a_bound_outside_the_years_is_one_line(
    edge_db: tuple[Path, dict[str, str]], bound: str
) -> None:
    db, _ = edge_db
    for command in (["conversations"], ["search", "edge"], ["stats", "--by", "day"]):
        result = run(*command, "--db", db, "--since", bound, expect=2)
        assert len(result.stderr.splitlines()) == 1
        assert result.stderr.startswith(f"Error: --since {bound}: not a date")
