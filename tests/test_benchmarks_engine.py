"""The engine benchmark group measures what it claims: the random-branching
migrated legacy file has the shape it promises and reads as a migrated file,
the bare fetches fetch the rows they name, the group plans each command beside
its fetch, and a small run measures every row and judges its growth.

Correctness only: no test here asserts anything about how long a command took.
"""

import sqlite3
import sys
from collections import Counter

import pytest

from benchmarks import engine, report, suite, synthetic
from convgraph.store.rules import CONVERSATION_INDEX_NAME, INDEX_NAME
from tests.helpers import read_forest, run


def test_random_sizes_add_up_and_stay_in_range():
    sizes = synthetic.random_sizes(10_007, seed=3)
    assert sum(sizes) == 10_007
    assert set(sizes[:-1]) == set(range(1, synthetic.RANDOM_MOST + 1))
    assert synthetic.random_sizes(10_007, seed=3) == sizes  # reproducible
    with pytest.raises(ValueError):
        synthetic.random_sizes(0)


def test_random_parent_is_an_earlier_node_of_the_conversation():
    assert synthetic.random_parent(0, 5) is None
    assert synthetic.random_parent(1, 77) == 0
    parents = [synthetic.random_parent(k, 1000 + k) for k in range(1, 400)]
    assert all(0 <= parent < k for k, parent in enumerate(parents, start=1))
    # Not a chain: most parents are not the node just before.
    assert sum(parent == k - 1 for k, parent in enumerate(parents, 1)) < 100


def test_the_random_legacy_file_is_migrated_with_random_branches(tmp_path):
    path = synthetic.build_random_legacy(tmp_path / "logs.db", 2_000, seed=0)
    sizes = synthetic.random_sizes(2_000, seed=0)
    conn = sqlite3.connect(path)
    links = conn.execute(
        "select rowid, id, parent_response_id, conversation_id from responses"
        " order by rowid"
    ).fetchall()
    conversations = conn.execute(
        "select id, name from conversations order by rowid"
    ).fetchall()
    schema = {row[0] for row in conn.execute("select name from sqlite_master")}
    recorded = conn.execute("select name from _convgraph_migrations").fetchall()
    conn.close()
    assert len(links) == 2_000
    assert [conversation for conversation, _ in conversations] == list(
        dict.fromkeys(row[3] for row in links)
    )
    assert sorted(Counter(row[3] for row in links).values()) == sorted(sizes)
    row_of = {node: (rowid, conversation) for rowid, node, _, conversation in links}
    roots = 0
    for rowid, _, parent, conversation in links:
        if parent is None:
            roots += 1
            continue
        # The parent is an earlier response of the same conversation.
        assert row_of[parent][1] == conversation and row_of[parent][0] < rowid
    assert roots == len(sizes)
    # Each conversation is named by its first prompt, as llm names it.
    first = conversations[1][1]
    assert first.startswith(f"Question {sizes[0]}:")
    # What `migrate` leaves: the indexes, the rules and the record.
    assert {INDEX_NAME, CONVERSATION_INDEX_NAME} <= schema
    assert any(name.startswith("convgraph_") for name in schema)
    assert recorded == [("parent_response_id",)]
    assert run("check", "--db", path).output.strip() == "no problems found"
    forest = read_forest(path, text=False)
    assert len(forest.tree_ids) == len(sizes)


def test_the_imported_file_keeps_each_conversation_but_shuffles_their_times(
    tmp_path,
):
    random = synthetic.build_random_legacy(tmp_path / "random.db", 600, seed=0)
    imported = synthetic.build_imported_legacy(tmp_path / "imported.db", 600, seed=0)
    query = (
        "select id, conversation_id, parent_response_id, datetime_utc"
        " from responses order by rowid"
    )
    before = sqlite3.connect(random).execute(query).fetchall()
    after = sqlite3.connect(imported).execute(query).fetchall()
    # The same rows, links and conversations; only the times moved.
    assert [row[:3] for row in after] == [row[:3] for row in before]
    times = [row[3] for row in after]
    assert sorted(times) == sorted(row[3] for row in before)
    assert times != sorted(times)  # not in id order any more
    # Within a conversation, responses keep their order and spacing.
    by_conversation: dict[str, list[str]] = {}
    for _, conversation, _, time in after:
        by_conversation.setdefault(conversation, []).append(time)
    assert all(t == sorted(t) for t in by_conversation.values())
    forest = read_forest(imported, text=False)
    assert len(forest.nodes) == 600 and forest.problems == []
    # Log order: the table's rows are in time order.
    assert list(forest.nodes["datetime_utc"]) == sorted(times)


def test_each_bare_fetch_fetches_the_rows_it_names(tmp_path):
    legacy = synthetic.build_legacy(tmp_path / "legacy.db", 300, 30)
    store = synthetic.build_message_store(tmp_path / "store.db", 300, 30)
    counts = {}
    for name, queries in engine.FETCHES.items():
        db = store if "store" in name else legacy
        scope: dict = {}
        argv = sys.argv
        sys.argv = ["-c", str(db), *queries]
        try:
            exec(engine.FETCH, scope)
        finally:
            sys.argv = argv
        counts[name] = [(len(rows), len(rows[0])) for rows in scope["fetched"]]
    conn = sqlite3.connect(store)
    threads = conn.execute("select count(*) from threads").fetchone()[0]
    conn.close()
    assert counts == {
        "fetch 3 columns": [(300, 3)],
        "fetch with texts": [(300, 11)],
        "fetch store structure": [(300, 4), (600, 3), (threads, 2)],
        "fetch contract columns": [(300, 8)],
        "fetch store contract columns": [(300, 9), (600, 3), (threads, 2)],
        "fetch store with texts": [(300, 9), (600, 3), (threads, 2), (600, 4)],
    }


def sides(rows):
    return [
        (
            row.section,
            row.shape,
            row.size,
            row.operation,
            row.convgraph.params[1:],
            row.convgraph.once,
            row.baseline.name,
        )
        for row in rows
    ]


def test_the_engine_group_plans_each_command_beside_its_fetch(tmp_path):
    options = suite.Options(groups=["engine"], sizes=[300], data_dir=tmp_path)
    planned = suite.plan(options)
    expected = []
    for kind, shape, db in [
        ("legacy", "linear", "legacy-linear-300-v1.db"),
        ("legacy", "bushy", "legacy-bushy-300-v1.db"),
        ("legacy", "deep", "legacy-deep-300-v1.db"),
        ("legacy", "random", "legacy-random-300-v1.db"),
        ("legacy", "imported", "legacy-imported-300-v1.db"),
        ("store", "forks", "store-linear-300-v1.db"),
    ]:
        where = ("--db", str(tmp_path / db))
        texts = "fetch with texts" if kind == "legacy" else "fetch store with texts"
        expected += [
            (kind, shape, 300, "convgraph stats --json", ("stats", "--json", *where),
             False, "fetch 3 columns" if kind == "legacy" else "fetch store structure"),
            (kind, shape, 300, "convgraph tree", ("tree", *where), False, texts),
            (kind, shape, 300, "convgraph export --format json",
             ("export", "--format", "json", *where), False, texts),
            ("diagnosis", f"{kind} {shape}", 300, engine.FLOOR,
             ("-c", engine.FETCH, str(tmp_path / db), *engine.FETCHES[engine.FLOORS[kind]]),
             False, "fetch 3 columns" if kind == "legacy" else "fetch store structure"),
        ]  # fmt: skip
    assert sides(planned) == expected
    assert all(row.convgraph.command and row.baseline.command for row in planned)
    # At a million, tree and export take one call in one process.
    assert [row.convgraph.once for row in engine.command_rows(
        "legacy", "linear", 1_000_000, tmp_path / "x.db")] == [False, True, True, False]  # fmt: skip
    assert suite.sizes_of("engine", suite.Options(quick=True)) == [100_000]
    assert suite.sizes_of("engine", suite.Options()) == [100_000, 1_000_000]


@pytest.mark.slow
def test_a_small_engine_run_measures_every_row_and_judges_growth(tmp_path):
    options = suite.Options(
        groups=["engine"],
        sizes=[200, 2_000],
        shapes=["linear"],
        processes=1,
        values=1,
        data_dir=tmp_path,
    )
    rows = suite.run(suite.plan(options), options, log=lambda text: None)
    # Two sizes, four files (the linear shape asked for, the random and the
    # imported legacy files, the store), four rows a file.
    assert len(rows) == 2 * 4 * 4
    for row in rows:
        assert row.measured.status == "ok", row.measured.note
        assert row.measured_baseline.status == "ok", row.measured_baseline.note
        assert row.measured.peak_mb > 0 and row.ratio > 0
    judged = [entry["target"] for entry in report.targets(rows)]
    for kind, shape in (
        ("legacy", "linear"),
        ("legacy", "random"),
        ("legacy", "imported"),
        ("store", "forks"),
    ):
        for operation in engine.ARGUMENTS:
            assert (
                f"growth of {kind} {operation}, {shape}: at most 10x per 10x" in judged
            )
            assert (
                f"memory growth of {kind} {operation}, {shape}: at most 10x per 10x"
                in judged
            )
