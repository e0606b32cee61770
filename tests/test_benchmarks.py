"""The benchmarks measure what they claim: the synthetic databases have exactly
the shapes they promise, the baselines give convgraph's answers, the suite
plans the operations it reports, and its tables are computed from pyperf's
figures.

Correctness only: no test here asserts anything about how long a task took.
"""

import json
import re
import shutil
import sqlite3
import sys
from collections import Counter

import pytest

from benchmarks import (
    baselines,
    outputs,
    report,
    sources,
    suite,
    synthetic,
    tasks,
    writes,
)
from benchmarks.report import Measurement, Row  # noqa: E402
from convgraph.model import tree as ops  # noqa: E402
from convgraph.model.loading import load_tree  # noqa: E402
from tests.databases import COMPLEX, LINEAR, MULTIPLE_ROOTS, seed_database  # noqa: E402
from tests.helpers import plain, read_forest  # noqa: E402

#: The benchmarks' own tests build synthetic files and run the harness.
pytestmark = pytest.mark.slow

ULID = re.compile(r"^[0-9a-hjkmnp-tv-z]{26}$")


def rows(path, sql, params=()):
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def legacy_links(path):
    """(id, parent, conversation) of every response, in log order."""
    return rows(
        path,
        "select id, parent_response_id, conversation_id from responses"
        " order by datetime_utc, id",
    )


def children_counts(links):
    return Counter(parent for _, parent, _ in links if parent is not None)


# -- the legacy builder -----------------------------------------------------------


@pytest.mark.parametrize("shape", synthetic.SHAPES)
def test_legacy_counts_are_exact(tmp_path, shape):
    path = synthetic.build_legacy(tmp_path / "logs.db", 1003, 10, shape)
    links = legacy_links(path)
    assert len(links) == 1003
    assert rows(path, "select count(*) from conversations") == [(10,)]
    sizes = Counter(conversation for _, _, conversation in links)
    # Sizes differ by one at most: three conversations of 101, seven of 100.
    assert sorted(sizes.values()) == [100] * 7 + [101] * 3
    # Every conversation of the responses is in the conversations table.
    assert set(sizes) == {row[0] for row in rows(path, "select id from conversations")}


@pytest.mark.parametrize("shape", synthetic.SHAPES)
def test_legacy_every_conversation_is_one_tree_in_log_order(tmp_path, shape):
    path = synthetic.build_legacy(tmp_path / "logs.db", 500, 5, shape)
    links = legacy_links(path)
    seen: dict[str, str] = {}
    roots = Counter()
    for node, parent, conversation in links:
        if parent is None:
            roots[conversation] += 1
        else:
            # The parent was logged before, in the same conversation.
            assert seen[parent] == conversation
        seen[node] = conversation
    assert roots == Counter({conversation: 1 for conversation in set(seen.values())})


def test_deep_shape_is_one_chain_per_conversation(tmp_path):
    path = synthetic.build_legacy(tmp_path / "logs.db", 3000, 3, "deep")
    forest = read_forest(path, text=False)
    assert len(forest.tree_ids) == 3
    for tree_id in forest.tree_ids:
        tree = forest.tree(tree_id)
        assert len(tree) == 1000
        assert len(ops.leaves(tree)) == 1
        assert max(ops.depths(tree).values()) == 999


def test_bushy_shape_gives_every_inner_node_the_full_fanout(tmp_path):
    # 85 = 1 + 4 + 16 + 64: a complete 4-ary tree of depth 3.
    path = synthetic.build_legacy(tmp_path / "logs.db", 170, 2, "bushy")
    forest = read_forest(path, text=False)
    for tree_id in forest.tree_ids:
        tree = forest.tree(tree_id)
        assert len(tree) == 85
        assert Counter(degree for _, degree in tree.out_degree()) == {4: 21, 0: 64}
        assert max(ops.depths(tree).values()) == 3
        assert ops.branching_factor(tree) == (4.0, 4)


def test_linear_shape_is_a_chain_with_occasional_retries(tmp_path):
    path = synthetic.build_legacy(tmp_path / "logs.db", 10_000, 100, "linear")
    links = legacy_links(path)
    counts = children_counts(links)
    retries = sum(count - 1 for count in counts.values())
    # About one response in eight is a retry: a second child of its parent.
    assert 0.08 < retries / len(links) < 0.17
    forest = read_forest(path, text=False)
    for tree_id in forest.tree_ids[:10]:
        tree = forest.tree(tree_id)
        leaves = ops.leaves(tree)
        # Each retry leaves one branch behind; the chain goes on from the
        # newest, so the last response is a leaf of the longest branch.
        branch_points = [n for n, d in tree.out_degree() if d > 1]
        assert len(leaves) == 1 + sum(tree.out_degree(n) - 1 for n in branch_points)
        last = list(tree.nodes)[-1]
        assert last in leaves
        assert ops.depth(tree, last) == max(ops.depths(tree).values())


def test_legacy_rows_look_like_llm_wrote_them(tmp_path):
    path = synthetic.build_legacy(tmp_path / "logs.db", 2000, 20, "linear")
    found = rows(
        path,
        "select id, conversation_id, prompt, response, datetime_utc, model,"
        " input_tokens, output_tokens, duration_ms from responses order by rowid",
    )
    ids = [row[0] for row in found]
    assert all(ULID.match(value) for value in ids)
    assert all(ULID.match(row[1]) for row in found)
    assert len(set(ids)) == 2000
    # Ids sort in log order, as llm's monotonic ULIDs do.
    assert sorted(ids) == ids
    assert [row[4] for row in found] == sorted(row[4] for row in found)
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$", found[0][4])
    assert all(80 <= len(row[2]) <= 300 for row in found)
    assert all(200 <= len(row[3]) <= 700 for row in found)
    assert {row[5] for row in found} == set(synthetic.MODELS)
    assert all(isinstance(row[6], int) and isinstance(row[8], int) for row in found)


def test_legacy_without_parent_column_reads_as_chains(tmp_path):
    path = synthetic.build_legacy(
        tmp_path / "logs.db", 100, 4, "bushy", with_parent=False
    )
    columns = {row[1] for row in rows(path, "pragma table_info(responses)")}
    assert "parent_response_id" not in columns
    forest = read_forest(path, text=False)
    for tree_id in forest.tree_ids:
        tree = forest.tree(tree_id)
        assert len(tree) == 25 and len(ops.leaves(tree)) == 1


def test_builds_are_reproducible(tmp_path):
    first = synthetic.build_legacy(tmp_path / "a.db", 300, 3, "linear")
    second = synthetic.build_legacy(tmp_path / "b.db", 300, 3, "linear")
    assert legacy_links(first) == legacy_links(second)


def test_bad_arguments_are_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown shape"):
        synthetic.build_legacy(tmp_path / "x.db", 10, 1, "round")
    with pytest.raises(ValueError, match="conversations"):
        synthetic.build_legacy(tmp_path / "x.db", 10, 11, "linear")
    assert not (tmp_path / "x.db").exists()


# -- the message-store builder --------------------------------------------------------


def test_message_hashes_are_llms_own():
    import llm
    from llm.logs import message_hash

    for text in ["hi", 'a "quoted" \\ line\n', "é…", synthetic.prompt_text(7)]:
        for parent in [None, "b2:0123456789abcdef0123456789abcdef"]:
            assert synthetic.message_hash("user", text, parent) == message_hash(
                llm.user(text), parent
            )
            assert synthetic.message_hash("assistant", text, parent) == message_hash(
                llm.assistant(text), parent
            )


@pytest.mark.parametrize("shape", synthetic.SHAPES)
def test_message_store_has_the_legacy_shape(tmp_path, shape):
    legacy = synthetic.build_legacy(tmp_path / "legacy.db", 400, 4, shape)
    store = synthetic.build_message_store(tmp_path / "store.db", 400, 4, shape)
    assert rows(store, "select count(*) from turns") == [(400,)]
    assert rows(store, "select count(*) from messages") == [(800,)]
    assert rows(store, "select count(*) from parts") == [(800,)]
    assert rows(store, "select count(*) from turn_search") == [(400,)]

    def structure(path):
        # Parents as positions in log order: the same tree whatever the ids.
        nodes = read_forest(path, text=False).nodes
        position = {node: index for index, node in enumerate(nodes["id"])}
        return [
            None if parent is None else position[parent]
            for parent in plain(nodes["parent_id"])
        ]

    assert structure(store) == structure(legacy)
    forest = read_forest(store, text=False)
    assert len(forest.tree_ids) == 4


def test_message_store_branches_are_forks(tmp_path):
    store = synthetic.build_message_store(tmp_path / "store.db", 170, 2, "bushy")
    threads = rows(store, "select id, forked_from, name from threads")
    originals = [t for t in threads if t[1] is None]
    forks = [t for t in threads if t[1] is not None]
    assert len(originals) == 2 and all(t[2].startswith("Question") for t in originals)
    # Each inner node's first child continues its thread; the other three
    # fork: 21 inner nodes x 3 forks x 2 trees.
    assert len(forks) == 126 and all(t[2] is None for t in forks)
    # Every thread's tip is the answer of its last turn.
    assert rows(
        store,
        "select count(*) from threads th where tip_message_hash != (select"
        " tip_message_hash from turns where thread_id = th.id"
        " order by datetime_utc desc limit 1)",
    ) == [(0,)]
    # Any thread id of a tree names the whole tree.
    assert len(load_tree(forks[0][0], store)) == 85


def test_llm_reads_the_message_store(tmp_path):
    import sqlite_utils
    from llm.logs import LogStore

    path = synthetic.build_message_store(tmp_path / "logs.db", 60, 3, "linear")
    db = sqlite_utils.Database(path)
    try:
        store = LogStore(db)
        assert store.verify() == []
        thread = rows(path, "select id from threads where forked_from is null limit 1")[
            0
        ][0]
        chain = store.thread_messages(thread)
        assert [message.role for message in chain[:2]] == ["user", "assistant"]
        first_turn = rows(
            path,
            "select id from turns where thread_id = ? order by datetime_utc",
            [thread],
        )[0][0]
        assert (
            chain[0].parts[0].text
            == load_tree(thread, path).nodes[first_turn]["prompt"]
        )
    finally:
        db.close()


# -- the seed-style baselines give convgraph's answers ------------------------------------


def assert_seed_agrees(path, conversations):
    conn = sqlite3.connect(path)
    try:
        for conversation in conversations:
            tree = load_tree(conversation, path)
            assert baselines.get_root_nodes(conn, conversation) == ops.roots(tree)
            assert baselines.get_leaf_nodes(conn, conversation) == ops.leaves(tree)
            for node in tree:
                assert baselines.get_path_to_root(conn, node) == ops.path(tree, node)
                assert baselines.get_children(conn, node) == ops.children(tree, node)
                assert baselines.get_parent(conn, node) == ops.parent(tree, node)
                # Depth first against breadth first: the same nodes.
                assert sorted(baselines.get_all_descendants(conn, node)) == sorted(
                    ops.descendants(tree, node)
                )
    finally:
        conn.close()


def test_seed_helpers_agree_on_the_seed_scenarios(tmp_path):
    path = seed_database(tmp_path / "seed.db")
    assert_seed_agrees(path, ["linear", "branch", "complex", "multiple-roots"])
    conn = sqlite3.connect(path)
    assert baselines.get_all_descendants(conn, "complex-root") == [
        f"complex-{node}" for node, _ in COMPLEX[1:]
    ]
    assert baselines.get_path_to_root(conn, "linear-c") == [
        f"linear-{node}" for node, _ in LINEAR
    ]
    assert baselines.get_root_nodes(conn, "multiple-roots") == [
        f"multiple-roots-{node}" for node, parent in MULTIPLE_ROOTS if parent is None
    ]
    conn.close()


@pytest.mark.parametrize("shape", synthetic.SHAPES)
def test_seed_helpers_agree_on_synthetic_databases(tmp_path, shape):
    path = synthetic.build_legacy(tmp_path / "logs.db", 300, 3, shape)
    conversations = [row[0] for row in rows(path, "select id from conversations")]
    assert_seed_agrees(path, conversations)


def test_seed_recursion_needs_the_raised_limit_on_a_deep_chain(tmp_path):
    path = synthetic.build_legacy(tmp_path / "logs.db", 3000, 1, "deep")
    root = rows(path, "select id from responses where parent_response_id is null")[0][0]
    conn = sqlite3.connect(path)
    limit = sys.getrecursionlimit()
    try:
        with pytest.raises(RecursionError):
            baselines.get_all_descendants(conn, root)
        with baselines.deep_recursion(3100):
            assert len(baselines.get_all_descendants(conn, root)) == 2999
        assert sys.getrecursionlimit() == limit
    finally:
        conn.close()


def assert_view_agrees(path, thread_ids):
    conn = sqlite3.connect(path)
    try:
        for thread in thread_ids:
            tree = load_tree(thread, path)
            assert sorted(baselines.view_leaves(conn, thread)) == sorted(
                ops.leaves(tree)
            )
            for node in tree:
                assert baselines.view_path(conn, node) == ops.path(tree, node)
                assert sorted(baselines.view_descendants(conn, node)) == sorted(
                    ops.descendants(tree, node)
                )
    finally:
        conn.close()


@pytest.mark.parametrize("shape", synthetic.SHAPES)
def test_message_tree_view_agrees_on_synthetic_databases(tmp_path, shape):
    path = synthetic.build_message_store(tmp_path / "logs.db", 120, 3, shape)
    threads = [
        row[0] for row in rows(path, "select id from threads where forked_from is null")
    ]
    assert_view_agrees(path, threads)


def test_message_tree_view_agrees_on_a_database_llm_wrote(llm_fork_db):
    path = llm_fork_db["path"]
    assert_view_agrees(path, [llm_fork_db["thread"], llm_fork_db["fork"]])
    conn = sqlite3.connect(path)
    first, second, third = llm_fork_db["turns"]
    fork_first, fork_second = llm_fork_db["fork_turns"]
    assert baselines.view_path(conn, fork_second) == [first, fork_first, fork_second]
    assert sorted(baselines.view_leaves(conn, llm_fork_db["fork"])) == sorted(
        [third, fork_second]
    )
    conn.close()


# -- the suite's machinery ----------------------------------------------------------------


def test_cached_databases_and_what_is_picked_in_them(tmp_path):
    path = suite.database("legacy", "bushy", 1000, tmp_path)
    assert path.name == f"legacy-bushy-1000-v{suite.BUILD_VERSION}.db"
    assert suite.database("legacy", "bushy", 1000, tmp_path) == path
    at = suite.pick("legacy", "bushy", 1000, path)
    tree = load_tree(at.conversation, path)
    # The middle one of 100 conversations of 10 responses.
    assert at.conversation_size == len(tree) == 10
    assert ops.roots(tree) == [at.root]
    assert list(tree.nodes)[-1] == at.node
    indexed = suite.database("legacy-indexed", "bushy", 1000, tmp_path)
    assert {row[1] for row in rows(indexed, "pragma index_list(responses)")} >= {
        "by_conversation",
        "by_parent",
    }


def test_the_plan_lists_every_operation_beside_its_baseline(tmp_path):
    options = suite.Options(sizes=[100, 1000], shapes=["deep"], data_dir=tmp_path)
    planned = suite.plan(options)
    sides = [
        (
            row.section,
            row.size,
            row.operation,
            row.convgraph.name,
            row.baseline.name if row.baseline else None,
        )
        for row in planned
    ]
    per_size = [
        ("forest", "statistics", "convgraph.stats", "sqlite.structure"),
        (
            "forest",
            "read forest, no texts",
            "convgraph.forest_structure",
            "sqlite.structure",
        ),
        (
            "conversation",
            "load one conversation",
            "convgraph.load_tree",
            "sqlite.conversation",
        ),
        ("per-node", "path", "convgraph.path", "seed.path"),
        (
            "per-node",
            "descendants of the root",
            "convgraph.descendants",
            "seed.descendants",
        ),
        ("per-node", "leaves", "convgraph.leaves", "seed.leaves"),
        ("cli", "convgraph path NODE", "convgraph path", "python -c pass"),
        ("store", "statistics", "convgraph.stats", "sqlite.store_structure"),
        ("store", "path", "convgraph.path", "view.path"),
        (
            "store",
            "descendants of the root",
            "convgraph.descendants",
            "view.descendants",
        ),
        ("store", "leaves", "convgraph.leaves", "view.leaves"),
    ]
    assert sides == [
        ("cli", 0, "convgraph --help", "convgraph --help", "python -c pass"),
        *[(section, 100, *rest) for section, *rest in per_size],
        *[(section, 1000, *rest) for section, *rest in per_size],
        ("core", 1000, "load forest (with texts)", "convgraph.forest", "sqlite.all"),
        (
            "core",
            1000,
            "every stats table",
            "convgraph.stats_tables",
            "sqlite.structure",
        ),
        (
            "core",
            1000,
            "convgraph stats, whole command",
            "convgraph stats",
            "sqlite.structure",
        ),
        (
            "diagnosis",
            1000,
            "load one conversation, indexed copy",
            "convgraph.load_tree",
            "sqlite.conversation",
        ),
        (
            "diagnosis",
            1000,
            "path of one node vs one recursive query",
            "convgraph.path",
            "sqlite.path_cte",
        ),
    ]
    assert all(row.shape == "deep" for row in planned[1:])
    # Every task is one that benchmarks.tasks knows; the seed's recursion is
    # given room for the deep chain (one chain of 1,000 at 1,000 responses).
    assert all(
        row.convgraph.command or row.convgraph.name in tasks.TASKS for row in planned
    )
    seed = [row.baseline for row in planned if row.baseline.name == "seed.descendants"]
    assert [dict(p.split("=", 1) for p in s.params)["recursion"] for s in seed] == [
        "200",
        "1100",
    ]
    # Switched off, the sections are not planned.
    lean = suite.Options(
        sizes=[100],
        shapes=["linear"],
        store=False,
        cli=False,
        core=False,
        data_dir=tmp_path,
    )
    assert {row.section for row in suite.plan(lean)} == {
        "forest",
        "conversation",
        "per-node",
    }


def test_pyperf_times_a_task_in_fresh_processes(tmp_path):
    path = synthetic.build_legacy(tmp_path / "logs.db", 200, 2, "linear")
    node = rows(path, "select id from responses where rowid = 100")[0][0]
    options = suite.Options(processes=2, values=2)
    measured = suite.measure(
        suite.task("convgraph.path", db=path, node=node), options, 60
    )
    assert (measured.task, measured.status, len(measured.values)) == (
        "convgraph.path",
        "ok",
        4,
    )
    assert measured.mean == pytest.approx(sum(measured.values) / 4)
    assert measured.stdev is not None and measured.peak_mb > 10
    bare = suite.measure(suite.BARE_PYTHON, suite.Options(processes=1, values=1), 60)
    assert (bare.status, len(bare.values), bare.stdev) == ("ok", 1, None)
    assert bare.peak_mb > 1
    broken = suite.measure(
        suite.task("convgraph.path", db=path, node="nope"), options, 60
    )
    assert broken.status == "error"
    assert broken.note == "convgraph.errors.UnknownNode: no node with id 'nope'"


def test_a_run_measures_a_shared_task_once_and_writes_its_figures(tmp_path):
    options = suite.Options(
        sizes=[100],
        shapes=["bushy"],
        store=False,
        cli=False,
        core=False,
        processes=1,
        values=1,
        data_dir=tmp_path,
        json_path=tmp_path / "out" / "results.json",
    )
    forest_rows = [row for row in suite.plan(options) if row.section == "forest"]
    measured = suite.run(forest_rows, options, log=lambda text: None)
    statistics, structure = measured
    assert statistics.measured_baseline is structure.measured_baseline
    assert statistics.ratio == (
        statistics.measured.mean / statistics.measured_baseline.mean
    )
    document = suite.main(options)
    written = json.loads(options.json_path.read_text())
    assert written["rows"] == document["rows"]
    assert [row["operation"] for row in written["rows"]] == [
        "statistics",
        "read forest, no texts",
        "load one conversation",
        "path",
        "descendants of the root",
        "leaves",
    ]
    for row in written["rows"]:
        ours, theirs = row["convgraph"], row["baseline"]
        assert (ours["status"], theirs["status"]) == ("ok", "ok"), row
        assert ours["mean"] == ours["values"][0]
        assert row["ratio"] == ours["mean"] / theirs["mean"]
    assert written["growth"] == []


def test_a_task_that_times_out_is_given_up_at_larger_sizes():
    options = suite.Options(processes=1, values=1, timeout=1)
    sleeps = [
        Row("cli", "deep", size, "sleep", suite.command("sleep", "sleep", wait), None)
        for size, wait in ((100, "3"), (1000, "4"))
    ]
    suite.run(sleeps, options, log=lambda text: None)
    assert [(row.measured.status, row.measured.note) for row in sleeps] == [
        ("timeout", "over 1 s"),
        ("skipped", "timed out at 100; not run at larger sizes"),
    ]


def measurement(task, mean, peak=50.0):
    return Measurement(task, mean=mean, values=[mean], peak_mb=peak)


def test_the_tables_are_computed_from_the_figures():
    rows_ = []
    for size, ours, theirs in ((1_000, 0.1, 0.05), (10_000, 1.0, 0.4)):
        row = Row("forest", "linear", size, "statistics", None, None)
        row.measured = measurement("convgraph.stats", ours, 80.0)
        row.measured_baseline = measurement("sqlite.structure", theirs, 20.0)
        rows_.append(row)
    skipped = Row("store", "deep", 10_000, "path", None, None, ["a note"])
    skipped.measured = Measurement("convgraph.path", "timeout", note="over 300 s")
    rows_.append(skipped)
    assert [row.ratio for row in rows_] == [2.0, 2.5, None]
    assert report.format_table(rows_).splitlines() == [
        "section  shape     size  operation   convgraph  MB  baseline"
        "              time  MB  ratio",
        "-------  ------  ------  ----------  ---------  --  ----------------"
        "  --------  --  -----",
        "forest   linear   1,000  statistics   100.0 ms  80  sqlite.structure"
        "   50.0 ms  20  2.00x",
        "forest   linear  10,000  statistics     1.00 s  80  sqlite.structure"
        "  400.0 ms  20  2.50x",
        "",
        "store    deep    10,000  path          timeout   -"
        "                           -   -      -",
        "",
        "notes:",
        "  [store deep 10,000 path] a note",
        "  [store deep 10,000 path] convgraph.path: over 300 s",
    ]
    found = report.growth(rows_)
    assert found == [
        {
            "section": "forest",
            "shape": "linear",
            "operation": "statistics",
            "seconds": {1_000: 0.1, 10_000: 1.0},
            "peak_mb": {1_000: 80.0, 10_000: 80.0},
        },
        {
            "section": "forest",
            "shape": "linear",
            "operation": "sqlite.structure",
            "seconds": {1_000: 0.05, 10_000: 0.4},
            "peak_mb": {1_000: 20.0, 10_000: 20.0},
        },
    ]
    assert report.per_tenfold(found[0]["seconds"]) == [pytest.approx(10.0)]
    assert report.format_growth(found).splitlines()[2:] == [
        "forest   linear  statistics        100.0 ms    1.00 s       10.0",
        "forest   linear  sqlite.structure   50.0 ms  400.0 ms        8.0",
    ]
    # The growth of convgraph's side is judged; the baseline's is not.
    assert report.targets(rows_) == [
        {
            "target": "growth of forest statistics, linear: at most 10x per 10x",
            "value": pytest.approx(10.0),
            "met": True,
        },
        {
            "target": "memory growth of forest statistics, linear: at most 10x per 10x",
            "value": pytest.approx(1.0),
            "met": True,
        },
    ]
    # Memory that grows faster than the rows misses.
    rows_[1].measured = measurement("convgraph.stats", 1.0, 1_200.0)
    assert report.targets(rows_)[1]["value"] == pytest.approx(15.0)
    assert report.targets(rows_)[1]["met"] is False
    at_a_million = Row("forest", "bushy", 1_000_000, "statistics", None, None)
    at_a_million.measured = measurement("convgraph.stats", 9.0, 650.0)
    at_a_million.measured_baseline = measurement("sqlite.structure", 3.0)
    assert [(e["value"], e["met"]) for e in report.targets([at_a_million])] == [
        (3.0, False),
        (650.0, False),
    ]
    start = Row("cli", "", 0, "convgraph --help", None, None)
    start.measured = measurement("convgraph --help", 0.2)
    start.measured_baseline = measurement("python -c pass", 0.05)
    assert report.format_targets(report.targets([start])) == (
        "  MISS cli convgraph --help: over_baseline at most 0.1: 0.15"
    )


# -- the other groups ----------------------------------------------------------------


def sides(planned):
    """(section, shape, size, operation, convgraph's task, the baseline's)."""
    return [
        (
            row.section,
            row.shape,
            row.size,
            row.operation,
            row.convgraph.name,
            row.baseline.name if row.baseline else None,
        )
        for row in planned
    ]


def test_the_groups_plan_their_rows_on_known_tasks(tmp_path):
    def planned(group, sizes):
        options = suite.Options(groups=[group], sizes=sizes, data_dir=tmp_path)
        return suite.plan(options)

    export = planned("export", [200])
    assert sides(export) == [
        ("export", "dot", 200, "write dot", "export.convgraph", "networkx.to_pydot"),
        *[
            ("export", "graphml", 200, "write graphml", "export.convgraph", name)
            for name in ("networkx.write_graphml", "networkx.write_graphml_xml")
        ],
        ("export", "json", 200, "write json", "export.convgraph", "networkx.node_link_data"),
        ("export", "tree-json", 200, "write tree-json", "export.convgraph", "networkx.tree_data"),
        ("export", "mermaid", 200, "write mermaid", "export.convgraph", None),
        ("export", "json", 200, "read and write json --redact (without: the baseline)",
         "export.redact", "export.redact"),
    ]  # fmt: skip
    # pydot's baseline takes minutes at the default size: one call.
    assert [row.baseline.once for row in export[:2]] == [True, False]
    diff = planned("diff", [300])
    assert [(row.shape, row.operation) for row in diff] == [
        *(("diff", case) for case in outputs.DIFF_CASES),
        *(("compare", case) for case in outputs.COMPARE_CASES),
    ]
    assert {(row.convgraph.name, row.baseline.name) for row in diff} == {
        ("convgraph.diff", "difflib.unified_diff"),
        ("convgraph.compare", "difflib.line_ratios"),
    }
    answers = "answers of 0.5 s each, all at once"
    assert sides(planned("fanout", [2])) == [
        ("fanout", "async", 2, answers, "fanout.answers", "fanout.one_at_a_time"),
        ("fanout", "threads", 2, answers, "fanout.answers", "fanout.one_at_a_time"),
        ("fanout", "", 0, "Ctrl-C to exit: branch -m quick -m slow -m slow-thread",
         "fanout.interrupt", None),
    ]  # fmt: skip
    assert sides(planned("logging", [100])) == [
        ("logging", "", 100, f"longest commit wait, convgraph {read}",
         "logging.writer_wait", "logging.whole_table_reads")
        for read in ("stats", "tree", "export --format json")
    ]  # fmt: skip
    dask = planned("dask", [500])
    assert sides(dask) == [
        ("dask", "", 500, "write the dataset", "dask.write", None),
        ("dask", "", 500, "conversation table", "dask.table", "pandas.conversations"),
        ("dask", "", 500, "node table (its length)", "dask.table", None),
        ("dask", "", 500, "branch table (its length)", "dask.table", None),
    ]
    assert dask[0].notes == ["10 trees in 1 files"]
    chat = planned("chat-exports", [1])
    # Each row runs the checkout's convgraph: `python -m convgraph COMMAND`.
    assert [(row.shape, row.convgraph.params[3]) for row in chat] == [
        (shape, command)
        for shape in ("json", "zip")
        for command in ("stats", "tree", "path")
    ]
    assert all(row.convgraph.command for row in chat)
    known = tasks.load()
    for row in export + diff + dask:
        assert {row.convgraph.name, row.baseline and row.baseline.name} <= {
            *known,
            None,
        }
    assert {"logging.writer_wait", "fanout.interrupt", "dask.table"} <= tasks.TIMERS


@pytest.mark.slow
def test_the_store_and_html_groups_plan_their_fixed_files_too(tmp_path):
    options = suite.Options(groups=["store", "html"], sizes=[400], data_dir=tmp_path)
    planned = suite.plan(options)
    assert sides(planned)[:4] == [
        ("migrate", "", 400, "migrate", "store.migrate", "store.alter"),
        ("migrate", "", 400, "migrate --link-linear", "store.migrate_linear",
         "store.naive_link"),
        ("migrate", "", 400, "migrate again (reads only)", "store.migrate", None),
        ("rules", "", 400, "2,000 inserts of a child", "store.inserts", "store.inserts"),
    ]  # fmt: skip
    assert [row.operation for row in planned[4:7]] == [
        "one insert under a 100,000-deep chain",
        "delete --cascade of a 10,001-node subtree",
        "delete --reparent of a node with 5,000 children",
    ]
    html = planned[7:]
    assert sides(html[:1]) == [
        (
            "html",
            "bushy",
            400,
            "write every tree",
            "convgraph.write_html",
            "convgraph.write_json",
        )
    ]
    assert [(row.shape, row.size, row.operation) for row in html[1:]] == [
        (f"{conversations} {shape}", size, action)
        for shape, size, conversations in outputs.PAGES
        for action in ("open", "expand all", "select", "search", "left-right")
    ]
    assert all(row.convgraph.name in tasks.load() for row in planned)


def test_the_files_the_store_group_times_are_what_it_says(tmp_path):
    source = synthetic.build_legacy(
        tmp_path / "llm.db", 200, 10, with_parent=False, search_index=True
    )
    naive, linked = tmp_path / "naive.db", tmp_path / "linked.db"
    for path, action in ((naive, "naive_link"), (linked, "migrate_linear")):
        shutil.copyfile(source, path)
        writes.ACTIONS[action](path)
    parents = "select id, parent_response_id from responses order by id"
    # The naive UPDATE links what `migrate --link-linear` links.
    assert rows(naive, parents) == rows(linked, parents)
    assert sum(parent is None for _, parent in rows(linked, parents)) == 10
    writes.ACTIONS["inserts"](linked)
    assert rows(linked, "select count(*) from responses") == [(200 + writes.INSERTS,)]
    star = tmp_path / "star.db"
    writes._star(star)
    assert rows(
        star, "select count(*) from responses where parent_response_id = 'root'"
    ) == [(writes.STAR,)]
    writes.ACTIONS["delete_cascade"](star)
    assert rows(star, "select count(*) from responses") == [(0,)]


def test_the_diff_texts_are_what_they_say():
    text = outputs.prose(1, 1000)
    assert len(text) == 1000 and outputs.prose(1, 1000) == text
    assert max(map(len, text.splitlines())) < 100
    assert outputs.retry(text, 2, 0.0) == text
    changed = outputs.retry(text, 2, 0.3)
    assert changed != text and changed.count("\n") == text.count("\n")
    identical = outputs.answers("diff", 2, 500)
    assert len(identical) == 2 and identical[0] == identical[1]
    assert all("\n" not in answer for answer in outputs.answers("diff", 3, 500))
    for case in range(len(outputs.COMPARE_CASES)):
        assert len(outputs.answers("compare", case, 300)) == 10


def test_a_synthetic_chat_export_reads_as_what_it_holds(tmp_path):
    from convgraph.model.loading import load_path

    path = tmp_path / "conversations.json"
    held = sources.write_export(path, 0.3)
    forest = read_forest(path)
    assert len(forest.tree_ids) == held["conversations"] > 1
    # The last node, the tip of the last conversation's current branch.
    last = load_path(held["last_node"], path)
    assert last[-1] == held["last_node"]
    assert path.stat().st_size >= 300_000


def test_a_synthetic_dataset_holds_every_node_once(tmp_path):
    from convgraph.analysis.datasets import dataset_conversation_table

    assert sources.write_dataset(tmp_path / "forest", 1000) == 20
    table = dataset_conversation_table(tmp_path / "forest")
    assert len(table) == 20 and table["nodes"].sum() == 1000


def test_a_task_reports_its_figures_and_a_timer_times_itself(tmp_path):
    from convgraph import diff

    options = suite.Options(processes=1, values=1)
    measured = suite.measure(
        suite.task("convgraph.diff", case=0, size=2000), options, 120
    )
    expected = diff(outputs._alternatives(outputs.answers("diff", 0, 2000)),
                    "answer-1", "answer-2").steps[0].response_similarity  # fmt: skip
    assert measured.status == "ok", measured.note
    assert measured.figures == {"similarity": pytest.approx(expected)}
    source = synthetic.build_legacy(tmp_path / "llm.db", 100, 5, with_parent=False)
    alter = suite.measure(suite.task("store.alter", db=source), options, 120)
    assert (alter.status, len(alter.values), alter.figures) == ("ok", 1, {})
    # Timed on copies: the file itself is untouched.
    assert "parent_response_id" not in {
        row[1] for row in rows(source, "pragma table_info(responses)")
    }
    once = suite.measure(suite.once(suite.BARE_PYTHON), suite.Options(), 60)
    assert (once.status, len(once.values), once.stdev) == ("ok", 1, None)


@pytest.mark.slow
def test_ctrl_c_keeps_the_quick_answer_and_a_writer_commits_beside_each_read(
    tmp_path,
):
    options = suite.Options(processes=1, values=1)
    interrupt = suite.measure(suite.once(suite.task("fanout.interrupt")), options, 300)
    assert interrupt.status == "ok", interrupt.note
    assert interrupt.figures == {"answers kept": 1}
    store = synthetic.build_message_store(tmp_path / "logs.db", 300)
    for name, params in (
        ("logging.writer_wait", {"read": "export --format json"}),
        ("logging.whole_table_reads", {}),
    ):
        spec = suite.once(suite.task(name, db=store, **params))
        waited = suite.measure(spec, options, 300)
        assert (waited.status, len(waited.values)) == ("ok", 1), waited.note
    # Each read was on a copy, the probe's table too.
    assert "probe" not in {
        row[0] for row in rows(store, "select name from sqlite_master")
    }


def test_figures_follow_the_table_once_per_measurement():
    shared = Measurement("difflib.unified_diff", mean=0.01, values=[0.01])
    found = []
    for case, similarity in ((0, 0.95537), (1, 0.0276)):
        row = Row("diff", "diff", 100, f"case {case}", None, None)
        row.measured = Measurement(
            "convgraph.diff",
            mean=0.02,
            values=[0.02],
            figures={"similarity": similarity},
        )
        shared.figures = {"file MB": 1234.5}
        row.measured_baseline = shared
        found.append(row)
    notes = report.format_table(found).split("notes:\n")[1].splitlines()
    assert notes == [
        "  [diff diff 100 case 0] convgraph.diff: similarity 0.955",
        "  [diff diff 100 case 0] difflib.unified_diff: file MB 1,234",
        "  [diff diff 100 case 1] convgraph.diff: similarity 0.0276",
    ]


def test_the_command_line_picks_groups():
    from benchmarks.__main__ import parse

    assert parse([]).groups == ["reads"]
    assert parse(["all"]).groups == list(suite.GROUPS)
    chosen = parse(["store", "export", "store", "--quick"])
    assert (chosen.groups, chosen.quick, chosen.sizes) == (
        ["store", "export"],
        True,
        None,
    )
    assert suite.sizes_of("store", chosen) == [10_000]
    assert suite.sizes_of("reads", parse(["--sizes", "1_000,100"])) == [100, 1000]
    with pytest.raises(SystemExit) as refused:
        parse(["stores"])
    assert refused.value.code == 2


# -- conversations the user went back in: the active branch is no guess -------


def active_leaf(tree) -> str:
    """Where convgraph's active branch ends: the active node with no active
    child."""
    active = [node for node in tree if tree.nodes[node]["active"]]
    return next(
        node
        for node in active
        if not any(tree.nodes[child]["active"] for child in tree.successors(node))
    )


def longest_leaf(tree) -> str:
    """A reader's guess: the active branch is the longest (the first of the
    deepest leaves, in log order)."""
    depths = ops.depths(tree)
    return max(ops.leaves(tree), key=lambda node: depths[node])


@pytest.mark.parametrize("kind", ["legacy", "store"])
def test_revisited_conversations_end_off_the_longest_and_the_newest_branch(
    tmp_path, kind
):
    """In each conversation of 30 the user went back to the alternative the
    first retry left behind: convgraph's active branch ends at the node
    logged last, which is on neither the longest branch nor, in the message
    store, the newest thread (the branch a reader would take for the
    current one, as llm's own `-c` without `--cid` takes the thread of the
    greatest id). In a legacy file the last logged is the active node by
    llm's own rule, so only the longest guess is wrong there."""
    build = synthetic.build_message_store if kind == "store" else synthetic.build_legacy
    path = build(tmp_path / "logs.db", 300, 10, "revisited")
    forest = read_forest(path, text=False)
    assert len(forest.tree_ids) == 10
    for tree_id in forest.tree_ids:
        tree = forest.tree(tree_id)
        last = list(tree.nodes)[-1]
        assert active_leaf(tree) == last
        assert len(tree[ops.parent(tree, last)]) == 1  # a branch of its own
        assert longest_leaf(tree) != last
        assert ops.depth(tree, last) < max(ops.depths(tree).values()) - 1
        if kind == "store":
            newest = max(tree.nodes[node]["conversation_id"] for node in tree)
            (newest_tip,) = rows(
                path,
                "select id from turns where thread_id = ?"
                " order by datetime_utc desc, id desc limit 1",
                [newest],
            )[0]
            assert newest_tip not in (last, *ops.ancestors(tree, last))
            # The last turn went on in an older thread, where its
            # alternative is: the conversation's first.
            assert tree.nodes[last]["conversation_id"] < newest


def test_the_linear_shape_is_the_revisited_one_but_for_the_last_node(tmp_path):
    linear = synthetic.build_legacy(tmp_path / "linear.db", 300, 10, "linear")
    revisited = synthetic.build_legacy(tmp_path / "revisited.db", 300, 10, "revisited")
    before, after = legacy_links(linear), legacy_links(revisited)
    ends = {index for index in range(29, 300, 30)}
    assert [row for i, row in enumerate(before) if i not in ends] == [
        row for i, row in enumerate(after) if i not in ends
    ]
    assert sum(before[i][1] != after[i][1] for i in ends) == 10


def test_a_chatgpt_export_whose_user_went_back_is_read_at_current_node(tmp_path):
    """The export builder's conversations in which the person went back to
    an older answer: convgraph's active branch is the one `current_node`
    names, and a reader that guesses the branch logged last, or the longest,
    takes another."""
    path = tmp_path / "conversations.json"
    sources.write_export(path, 0.5)
    conversations = {item["id"]: item for item in json.loads(path.read_text())}
    forest = read_forest(path, text=False)
    assert sorted(forest.tree_ids) == sorted(conversations)
    went_back = []
    for tree_id in forest.tree_ids:
        tree, conversation = forest.tree(tree_id), conversations[tree_id]
        mapping = conversation["mapping"]
        # The path the app shows: up from current_node, its answers.
        shown, at = [], conversation["current_node"]
        while at is not None:
            message = mapping[at]["message"]
            if message and message["author"]["role"] == "assistant":
                shown.append(at)
            at = mapping[at]["parent"]
        active = [node for node in tree if tree.nodes[node]["active"]]
        assert sorted(active) == sorted(shown)
        assert active_leaf(tree) == conversation["current_node"]
        times = {
            key: node["message"]["create_time"]
            for key, node in mapping.items()
            if node["message"] and node["message"].get("create_time")
        }
        logged_last = max(times, key=times.__getitem__)
        if active_leaf(tree) not in (logged_last, longest_leaf(tree)):
            went_back.append(tree_id)
    assert (len(forest.tree_ids), len(went_back)) == (9, 4)
