"""Hostile databases: broken parent links are reported, never a hang or crash."""

import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convgraph import render_tree
from convgraph.analysis.stats import summary
from convgraph.links.integrity import FORK_CYCLE, ParentWalk, break_cycles, check_links
from convgraph.model import tree as ops
from convgraph.model.loading import load_path, load_tree, read_tree
from convgraph.sources import open_logs
from tests.databases import add_response, add_tree, legacy_database, timestamp
from tests.helpers import examples, read_forest


@pytest.fixture
def hostile_db(tmp_path):
    """One conversation per kind of broken link, plus a healthy one."""
    path = tmp_path / "hostile.db"
    conn = legacy_database(path)
    # A cycle of three below a healthy root: root -> x; x -> z -> y -> x.
    add_tree(
        conn, "cyc", [("c-root", None), ("c-x", "c-z"), ("c-y", "c-x"), ("c-z", "c-y")]
    )
    add_tree(conn, "self", [("s-root", None), ("s-loop", "s-loop")], start=10)
    add_tree(
        conn, "dangling", [("d-orphan", "d-gone"), ("d-child", "d-orphan")], start=20
    )
    add_tree(conn, "other", [("o-root", None)], start=30)
    add_tree(conn, "cross", [("x-root", None), ("x-stray", "o-root")], start=40)
    conn.close()
    return path


def problem_summary(problems):
    return sorted((p.kind, p.node_id, p.parent_id) for p in problems)


EXPECTED = [
    ("cross-conversation", "x-stray", "o-root"),
    ("cycle", "c-x", "c-z"),
    ("missing-parent", "d-orphan", "d-gone"),
    ("self-parent", "s-loop", "s-loop"),
]


def test_forest_reports_every_broken_link(hostile_db):
    forest = read_forest(hostile_db)
    assert problem_summary(forest.problems) == EXPECTED
    (cycle,) = [p for p in forest.problems if p.kind == "cycle"]
    assert cycle.cycle == ("c-x", "c-z", "c-y")
    assert (
        cycle.message == "c-x is on a cycle of 3 parent links: c-x -> c-z -> c-y -> c-x"
    )


def test_per_tree_reads_report_the_same_problems(hostile_db):
    found = []
    with open_logs(hostile_db) as logs:
        for tree_id in logs.tree_ids():
            found.extend(read_tree(logs, tree_id)[1])
    assert problem_summary(found) == EXPECTED


def test_broken_links_are_dropped_and_the_nodes_become_roots(hostile_db):
    forest = read_forest(hostile_db)
    for tree_id in forest.tree_ids:
        assert list(forest.tree(tree_id).edges) == list(
            load_tree(tree_id, hostile_db).edges
        )
    cyc = load_tree("cyc", hostile_db)
    assert ops.roots(cyc) == ["c-root", "c-x"]
    assert ops.path(cyc, "c-z") == ["c-x", "c-y", "c-z"]
    assert ops.roots(load_tree("self", hostile_db)) == ["s-root", "s-loop"]
    dangling = load_tree("dangling", hostile_db)
    assert ops.roots(dangling) == ["d-orphan"]
    assert ops.children(dangling, "d-orphan") == ["d-child"]
    assert ops.roots(load_tree("cross", hostile_db)) == ["x-root", "x-stray"]


def test_cross_conversation_problem_names_the_other_conversation(hostile_db):
    (cross,) = [
        p for p in read_forest(hostile_db).problems if p.kind == "cross-conversation"
    ]
    assert cross.message == "x-stray has parent o-root in another conversation (other)"
    assert cross.conversation_id == "cross"


def test_two_node_cycle_without_any_root(tmp_path):
    path = tmp_path / "loop.db"
    conn = legacy_database(path)
    add_tree(conn, "loop", [("p", "q"), ("q", "p"), ("below", "q")])
    conn.close()
    tree = load_tree("loop", path)
    assert list(tree.edges) == [("p", "q"), ("q", "below")]
    assert [p.kind for p in read_forest(path).problems] == ["cycle"]


DEEP = 100_000


@pytest.fixture(scope="module")
def deep_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("deep") / "deep.db"
    conn = legacy_database(path)
    rows = [
        (
            f"n{i:06d}",
            "deep",
            f"prompt {i}",
            f"n{i - 1:06d}" if i else None,
            timestamp(0),
        )
        for i in range(DEEP)
    ]
    conn.executemany(
        "insert into responses (id, conversation_id, prompt, parent_response_id,"
        " datetime_utc) values (?, ?, ?, ?, ?)",
        rows,
    )
    conn.commit()
    conn.close()
    return path


@pytest.mark.slow
def test_a_100000_deep_chain(deep_db):
    tree = load_tree("deep", deep_db)
    last = f"n{DEEP - 1:06d}"
    assert ops.depth(tree, last) == DEEP - 1
    assert len(ops.path(tree, last)) == DEEP
    assert len(ops.descendants(tree, "n000000")) == DEEP - 1
    assert ops.leaves(tree) == [last]
    assert summary(tree)["max_depth"] == DEEP - 1
    lines = render_tree(tree).splitlines()
    assert len(lines) == DEEP
    assert lines[-1] == f"{last}  prompt {DEEP - 1}"


@pytest.mark.slow
def test_a_100000_deep_chain_in_the_forest(deep_db):
    forest = read_forest(deep_db, text=False)
    assert forest.depths.max() == DEEP - 1
    assert forest.problems == []


@pytest.mark.slow
def test_a_100000_long_cycle_is_found(tmp_path):
    path = tmp_path / "ring.db"
    conn = legacy_database(path)
    conn.executemany(
        "insert into responses (id, conversation_id, parent_response_id, datetime_utc)"
        " values (?, 'ring', ?, ?)",
        [(f"n{i:06d}", f"n{(i - 1) % DEEP:06d}", timestamp(0)) for i in range(DEEP)],
    )
    conn.commit()
    conn.close()
    (problem,) = read_forest(path, text=False).problems
    assert (problem.kind, problem.node_id, len(problem.cycle)) == (
        "cycle",
        "n000000",
        DEEP,
    )
    assert ops.depth(load_tree("ring", path), f"n{DEEP - 1:06d}") == DEEP - 1


# -- the table path and the Python path agree on any parent links ---------------

links = st.lists(st.integers(min_value=-2, max_value=11), min_size=1, max_size=12)


@settings(max_examples=examples(60), deadline=None)
@given(
    parents=links,
    conversations=st.lists(st.sampled_from("ab"), min_size=12, max_size=12),
)
def test_vectorized_and_per_tree_checks_agree(tmp_path_factory, parents, conversations):
    """Random parent pointers (-1: none, -2: a missing id, else a row, maybe in
    another conversation, maybe itself, maybe closing cycles)."""
    path = tmp_path_factory.mktemp("random") / "random.db"
    conn = legacy_database(path)
    for index, parent in enumerate(parents):
        target = None if parent == -1 else "missing" if parent == -2 else f"n{parent}"
        if target is not None and target != "missing" and parent >= len(parents):
            target = "missing"
        add_response(
            conn,
            f"n{index}",
            conversations[index],
            f"p{index}",
            parent=target,
            datetime_utc=timestamp(index),
        )
    conn.commit()
    conn.close()
    forest = read_forest(path)
    per_tree = []
    with open_logs(path) as logs:
        for tree_id in logs.tree_ids():
            graph, problems = read_tree(logs, tree_id)
            per_tree.extend(problems)
            assert sorted(graph.edges) == sorted(forest.tree(tree_id).edges)
            assert all(degree <= 1 for _, degree in graph.in_degree())
            # The walk up the stored links gives the tree's answer, whatever
            # is broken on the way.
            for node in graph:
                assert load_path(node, logs) == ops.path(graph, node)
    assert problem_summary(per_tree) == problem_summary(forest.problems)


def test_check_links_on_plain_records():
    records = [
        {"id": "a", "parent_id": None, "conversation_id": "c"},
        {"id": "b", "parent_id": "a", "conversation_id": "c"},
        {"id": "c", "parent_id": "zz", "conversation_id": "c"},
    ]
    parents, problems = check_links(records, {"zz": "elsewhere"})
    assert parents == {"a": None, "b": "a", "c": None}
    assert [(p.kind, p.message) for p in problems] == [
        ("cross-conversation", "c has parent zz in another conversation (elsewhere)")
    ]


def test_hostile_database_is_not_changed(hostile_db):
    before = hostile_db.read_bytes()
    read_forest(hostile_db)
    assert hostile_db.read_bytes() == before
    sqlite3.connect(hostile_db).close()


# -- the one parent walk --------------------------------------------------------


def test_parent_walk_ends_at_a_root_or_before_a_repeat():
    links = {"c": "b", "b": "a", "a": None, "x": "y", "y": "z", "z": "y"}
    walk = ParentWalk("c", links)
    assert (list(walk), walk.repeat) == (["c", "b", "a"], None)
    walk = ParentWalk("x", links.get)  # a callable serves as well
    walked = list(walk)
    assert (walked, walk.repeat, walk.cycle(walked)) == (
        ["x", "y", "z"],
        "y",
        ["y", "z"],
    )
    assert list(ParentWalk(None, links)) == []
    # A parent outside the mapping ends the walk there.
    assert list(ParentWalk("q", {"q": "gone"})) == ["q", "gone"]


def test_parent_walk_asks_for_parents_only_as_far_as_it_goes():
    asked = []

    def parent_of(node):
        asked.append(node)
        return {"c": "b", "b": "a"}.get(node)

    for node in ParentWalk("c", parent_of):
        if node == "b":
            break
    assert asked == ["c"]


def test_a_100000_deep_walk_is_iterative():
    walk = ParentWalk(DEEP, lambda n: n - 1 if n else None)
    assert sum(1 for _ in walk) == DEEP + 1


def test_break_cycles_names_fork_cycles_as_such():
    links = {"t2": "t1", "t1": "t3", "t3": "t2", "t4": "t3"}
    (problem,) = break_cycles(links, sorted(links), {}, FORK_CYCLE)
    assert (problem.kind, problem.node_id, problem.cycle) == (
        FORK_CYCLE,
        "t1",
        ("t1", "t3", "t2"),
    )
    assert problem.message == "t1 is on a cycle of 3 forks: t1 -> t3 -> t2 -> t1"
    assert links == {"t2": "t1", "t1": None, "t3": "t2", "t4": "t3"}
