"""The four scenarios (docs/design.md#the-four-scenarios) and the test areas of
the original notes, on trees read from a legacy database with
parent_response_id."""

import pytest

from convgraph import UnknownNode, load_tree, load_tree_of_node, render_tree
from convgraph.analysis.stats import summary
from convgraph.model import tree as ops


@pytest.fixture
def linear(seed_db):
    return load_tree("linear", seed_db)


@pytest.fixture
def branch(seed_db):
    return load_tree("branch", seed_db)


@pytest.fixture
def complex_tree(seed_db):
    return load_tree("complex", seed_db)


@pytest.fixture
def two_roots(seed_db):
    return load_tree("multiple-roots", seed_db)


# Test 1: simple linear chain, Root -> A -> B -> C


def test_linear_chain_links_each_response_to_the_one_before(linear):
    assert list(linear.edges) == [
        ("linear-root", "linear-a"),
        ("linear-a", "linear-b"),
        ("linear-b", "linear-c"),
    ]


def test_linear_chain_path_and_depth(linear):
    assert ops.path(linear, "linear-c") == [
        "linear-root",
        "linear-a",
        "linear-b",
        "linear-c",
    ]
    assert [ops.depth(linear, n) for n in linear] == [0, 1, 2, 3]


# Test 2: simple branch, Root -> B and Root -> C


def test_simple_branch_children_and_siblings(branch):
    assert ops.children(branch, "branch-root") == ["branch-b", "branch-c"]
    assert ops.siblings(branch, "branch-b") == ["branch-c"]
    assert ops.siblings(branch, "branch-c") == ["branch-b"]
    assert ops.parent(branch, "branch-c") == "branch-root"


def test_root_has_no_parent_and_no_siblings(branch):
    assert ops.parent(branch, "branch-root") is None
    assert ops.siblings(branch, "branch-root") == []


# Test 3: complex tree


def test_complex_tree_descendants_breadth_first(complex_tree):
    assert ops.descendants(complex_tree, "complex-root") == [
        "complex-b",
        "complex-e",
        "complex-c",
        "complex-d",
        "complex-f",
        "complex-g",
    ]
    assert ops.descendants(complex_tree, "complex-e") == ["complex-f", "complex-g"]
    assert ops.descendants(complex_tree, "complex-g") == []


def test_complex_tree_leaves_and_branch_points(complex_tree):
    assert ops.leaves(complex_tree) == [
        "complex-c",
        "complex-d",
        "complex-f",
        "complex-g",
    ]
    assert ops.branch_points(complex_tree) == ["complex-root", "complex-b", "complex-e"]


def test_complex_tree_branching_factor(complex_tree):
    assert ops.branching_factor(complex_tree) == (2.0, 2)


def test_complex_tree_path_to_root_and_ancestors(complex_tree):
    assert ops.path(complex_tree, "complex-g") == [
        "complex-root",
        "complex-e",
        "complex-g",
    ]
    assert ops.ancestors(complex_tree, "complex-g") == ["complex-e", "complex-root"]


def test_subtree_and_tree_size(complex_tree):
    below_b = ops.subtree(complex_tree, "complex-b")
    assert list(below_b.edges) == [
        ("complex-b", "complex-c"),
        ("complex-b", "complex-d"),
    ]
    assert list(ops.subtree(complex_tree, "complex-e")) == [
        "complex-e",
        "complex-f",
        "complex-g",
    ]
    assert below_b.graph == complex_tree.graph
    assert ops.tree_size(complex_tree) == 7
    assert ops.tree_size(complex_tree, "complex-e") == 3


def test_branches_are_every_root_to_leaf_path(complex_tree):
    assert ops.branches(complex_tree) == [
        ["complex-root", "complex-b", "complex-c"],
        ["complex-root", "complex-b", "complex-d"],
        ["complex-root", "complex-e", "complex-f"],
        ["complex-root", "complex-e", "complex-g"],
    ]


def test_depths_of_every_node(complex_tree):
    assert ops.depths(complex_tree) == {
        "complex-root": 0,
        "complex-b": 1,
        "complex-e": 1,
        "complex-c": 2,
        "complex-d": 2,
        "complex-f": 2,
        "complex-g": 2,
    }


# Test 4: multiple roots in one conversation


def test_multiple_roots(two_roots):
    assert ops.roots(two_roots) == ["multiple-roots-root1", "multiple-roots-root2"]
    assert ops.leaves(two_roots) == ["multiple-roots-b", "multiple-roots-y"]
    assert ops.path(two_roots, "multiple-roots-y") == [
        "multiple-roots-root2",
        "multiple-roots-x",
        "multiple-roots-y",
    ]


def test_summary_statistics(two_roots):
    assert summary(two_roots) == {
        "tree_id": "multiple-roots",
        "name": "prompt multiple-roots-root1",
        "nodes": 6,
        "roots": 2,
        "leaves": 2,
        "max_depth": 2,
        "branch_points": 0,
        "branching_factor_avg": 1.0,
        "branching_factor_max": 1,
        "first_datetime": "2025-09-27T10:00:14.000000+00:00",
        "last_datetime": "2025-09-27T10:00:19.000000+00:00",
        "models": ["echo"],
        "input_tokens": 75,
        "output_tokens": 135,
        "duration_ms": 2100,
        # The active path runs to multiple-roots-y, logged last; the branch
        # from root1 was left behind.
        "active_path_length": 3,
        "abandoned_branches": 1,
    }


def test_a_single_node_has_no_branching(seed_db):
    tree = load_tree("linear", seed_db).subgraph(["linear-c"])
    assert ops.branching_factor(tree) == (0.0, 0)


def test_tree_of_node_finds_its_conversation(seed_db):
    tree = load_tree_of_node("complex-f", seed_db)
    assert tree.graph == {"tree_id": "complex", "name": "prompt complex-root"}
    assert tree.number_of_nodes() == 7


def test_node_attributes_follow_the_contract(complex_tree):
    assert complex_tree.nodes["complex-b"] == {
        "conversation_id": "complex",
        "prompt": "prompt complex-b",
        "system": None,
        "response": "answer to prompt complex-b",
        "model": "echo",
        "datetime_utc": "2025-09-27T10:00:08.000000+00:00",
        "input_tokens": 11,
        "output_tokens": 21,
        "duration_ms": 200,
        "source": "responses",
        # complex-b is off the active path (to complex-g, logged last).
        "active": False,
        "note": None,
        "preferred": False,
    }


def test_unknown_node_is_an_error(complex_tree):
    with pytest.raises(UnknownNode, match="no node with id 'nope'"):
        ops.children(complex_tree, "nope")


# Tree visualization


def test_render_tree_draws_the_complex_tree(complex_tree):
    assert render_tree(complex_tree) == "\n".join(
        [
            "complex-root  prompt complex-root",
            "├── complex-b  prompt complex-b",
            "│   ├── complex-c  prompt complex-c",
            "│   └── complex-d  prompt complex-d",
            "└── complex-e  prompt complex-e",
            "    ├── complex-f  prompt complex-f",
            "    └── complex-g  prompt complex-g",
        ]
    )


def test_render_draws_chains_in_one_column_and_separates_roots(two_roots):
    assert render_tree(two_roots).splitlines() == [
        "multiple-roots-root1  prompt multiple-roots-root1",
        "multiple-roots-a  prompt multiple-roots-a",
        "multiple-roots-b  prompt multiple-roots-b",
        "",
        "multiple-roots-root2  prompt multiple-roots-root2",
        "multiple-roots-x  prompt multiple-roots-x",
        "multiple-roots-y  prompt multiple-roots-y",
    ]


def test_render_can_indent_every_child_as_the_seed_did(linear):
    assert render_tree(linear, indent_chains=True, width=0).splitlines() == [
        "linear-root",
        "└── linear-a",
        "    └── linear-b",
        "        └── linear-c",
    ]


def test_render_subtree_and_excerpt(complex_tree):
    complex_tree.nodes["complex-f"]["prompt"] = "a long\nprompt " + "x" * 80
    assert render_tree(complex_tree, "complex-e", width=20).splitlines() == [
        "complex-e  prompt complex-e",
        "├── complex-f  a long prompt xxxxx…",
        "└── complex-g  prompt complex-g",
    ]
