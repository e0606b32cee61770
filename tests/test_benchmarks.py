"""The benchmarks measure what they claim: the synthetic databases have exactly
the shapes they promise, and the baselines give convgraph's answers.

Correctness only: no test here looks at a time.
"""

import re
import sqlite3
import sys
from collections import Counter
from pathlib import Path

import pytest
from databases import COMPLEX, LINEAR, MULTIPLE_ROOTS, seed_database

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import baselines, cache, synthetic  # noqa: E402
from benchmarks.measure import run_task  # noqa: E402
from benchmarks.suite import Options, Suite  # noqa: E402
from convgraph import Forest, load_tree, load_tree_of_node  # noqa: E402
from convgraph import tree as ops  # noqa: E402

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
    forest = Forest.read(path, text=False)
    assert len(forest.tree_ids) == 3
    for tree_id in forest.tree_ids:
        tree = forest.tree(tree_id)
        assert len(tree) == 1000
        assert len(ops.leaves(tree)) == 1
        assert max(ops.depths(tree).values()) == 999


def test_bushy_shape_gives_every_inner_node_the_full_fanout(tmp_path):
    # 85 = 1 + 4 + 16 + 64: a complete 4-ary tree of depth 3.
    path = synthetic.build_legacy(tmp_path / "logs.db", 170, 2, "bushy")
    forest = Forest.read(path, text=False)
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
    forest = Forest.read(path, text=False)
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
    forest = Forest.read(path, text=False)
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
        nodes = Forest.read(path, text=False).nodes
        position = {node: index for index, node in enumerate(nodes["id"])}
        return [
            None if parent is None else position[parent]
            for parent in nodes["parent_id"]
        ]

    assert structure(store) == structure(legacy)
    forest = Forest.read(store, text=False)
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


# -- the measuring machinery ------------------------------------------------------------


def test_a_task_runs_in_its_own_process_and_counts_its_result(tmp_path):
    path = synthetic.build_legacy(tmp_path / "logs.db", 200, 2, "linear")
    target = rows(path, "select id from responses where rowid = 100")[0][0]
    measured = run_task("convgraph.path", {"db": str(path), "node": target}, repeat=2)
    seed = run_task("seed.path", {"db": str(path), "node": target}, repeat=2)
    expected = len(ops.path(load_tree_of_node(target, path), target))
    assert (measured.status, measured.size, measured.runs) == ("ok", expected, 2)
    assert (seed.status, seed.size) == ("ok", expected)
    assert measured.peak_mb > measured.base_mb > 0
    broken = run_task("convgraph.path", {"db": str(path), "node": "nope"}, repeat=1)
    assert broken.status == "error" and "nope" in broken.note


def test_targets_pick_the_middle_conversation(tmp_path):
    path = cache.ensure("legacy", "bushy", 1000, tmp_path, log=lambda text: None)
    assert path.name == f"legacy-bushy-1000-v{cache.BUILD_VERSION}.db"
    target = cache.targets("legacy", "bushy", 1000, path)
    tree = load_tree(target.conversation, path)
    assert target.conversation_size == len(tree) == 10
    assert ops.roots(tree) == [target.root]
    assert list(tree.nodes)[-1] == target.node


def test_the_suite_compares_like_with_like(tmp_path):
    """A tiny run of the whole suite: every measurement succeeds, and each
    convgraph figure and its baseline counted the same result."""
    options = Options(
        sizes=[100],
        shapes=["linear"],
        cli=False,
        core=False,
        others=False,
        repeat=1,
        data_dir=tmp_path,
    )
    suite = Suite(options, log=lambda text: None)
    document = suite.run()
    operations = [(row["section"], row["operation"]) for row in document["rows"]]
    assert operations == [
        ("forest", "statistics"),
        ("forest", "read forest, no texts"),
        ("conversation", "load one conversation"),
        ("per-node", "path"),
        ("per-node", "descendants of the root"),
        ("per-node", "leaves"),
        ("store", "statistics"),
        ("store", "path"),
        ("store", "descendants of the root"),
        ("store", "leaves"),
    ]
    for row in document["rows"]:
        assert row["convgraph"]["status"] == "ok", row
        assert row["baseline"]["status"] == "ok", row
        if (
            row["section"] in ("per-node", "conversation")
            or row["operation"] != "statistics"
        ):
            assert row["convgraph"]["size"] == row["baseline"]["size"], row
