"""The four scenarios (docs/design.md#the-four-scenarios) and the test areas of
the original notes, on trees read from a legacy database with
parent_response_id."""

from pathlib import Path

import pytest

from convgraph import UnknownNode, render_tree
from convgraph.analysis.stats import summary
from convgraph.model import tree as ops
from convgraph.model.loading import load_tree, load_tree_of_node
from tests.databases import LlmLog


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


def test_the_roots_are_alternatives_at_the_start(two_roots):
    # docs/design.md#depth-roots-and-branching: the start is a branch point
    # whose children are the roots; depths stay as the seed defined them.
    root1, root2 = "multiple-roots-root1", "multiple-roots-root2"
    assert ops.siblings(two_roots, root1) == [root2]
    assert ops.siblings(two_roots, root2) == [root1]
    assert ops.siblings(two_roots, "multiple-roots-a") == []
    assert ops.alternatives(two_roots, None) == [root1, root2]
    assert ops.alternatives(two_roots, root1) == ["multiple-roots-a"]
    assert ops.branch_points(two_roots) == [None]
    assert ops.branching_factor(two_roots) == (6 / 5, 2)
    assert [ops.depth(two_roots, root) for root in (root1, root2)] == [0, 0]
    assert ops.depth(two_roots, "multiple-roots-y") == 2


def test_one_root_has_no_alternatives_at_the_start(linear, complex_tree):
    assert ops.siblings(linear, "linear-root") == []
    assert ops.branch_points(linear) == []
    assert ops.branching_factor(linear) == (1.0, 1)
    assert ops.alternatives(complex_tree, None) == ["complex-root"]


def test_roots_without_links_branch_at_the_start_only():
    tree = ops.ConversationTree.from_edges([], {"r": {}, "s": {}, "t": {}})
    assert ops.branch_points(tree) == [None]
    assert ops.branching_factor(tree) == (3.0, 3)
    assert ops.siblings(tree, "s") == ["r", "t"]


def test_siblings_of_an_unknown_node_is_an_error(two_roots):
    with pytest.raises(UnknownNode, match="no node with id 'nope'"):
        ops.siblings(two_roots, "nope")
    with pytest.raises(UnknownNode):
        ops.alternatives(two_roots, "nope")


# A ChatGPT export whose first answer was regenerated: u1 answered a1, then
# a1b; the conversation went on from a1b, where a prompt was edited (u2, u2e).


@pytest.fixture
def regenerated_first_turn(tmp_path):
    from tests.chat_exports import chatgpt_branches, write_json

    path = write_json(tmp_path / "conversations.json", [chatgpt_branches()])
    return load_tree("conv-monad", path)


def test_a_regenerated_first_answer_is_an_alternative(regenerated_first_turn):
    tree = regenerated_first_turn
    assert ops.roots(tree) == ["a1", "a1b"]
    assert ops.siblings(tree, "a1") == ["a1b"]
    assert ops.siblings(tree, "a1b") == ["a1"]
    assert ops.siblings(tree, "a2") == ["a2e"]
    assert ops.branch_points(tree) == [None, "a1b"]
    assert ops.branching_factor(tree) == (2.0, 2)
    assert ops.depths(tree) == {"a1": 0, "a1b": 0, "a2": 1, "a2e": 1}
    stats = summary(tree)
    assert [stats[key] for key in ("nodes", "roots", "leaves", "branch_points")] == [
        4,
        2,
        3,
        2,
    ]
    assert (stats["branching_factor_avg"], stats["branching_factor_max"]) == (2.0, 2)


# A logs.db where llm 0.36 itself logged a second start into one conversation.


def llm_two_starts(directory: Path) -> dict:
    """A logs.db written by llm 0.36 with the offline echo model: "What is a
    tree?", continued with "And a forest?" (`llm -m echo`, then `--cid`),
    then a first prompt asked afresh, without history, and logged into the
    same thread with llm's Python API (`LogStore.log(response,
    thread_id=...)`, as a program using llm does): two roots of one
    conversation."""
    import llm
    import sqlite_utils
    from llm.logs import LogStore

    with LlmLog(directory) as log:
        first = log.prompt("What is a tree?")
        thread = log.thread_of(first)
        second = log.prompt("And a forest?", continue_conversation=thread)
        db = sqlite_utils.Database(log.path)
        try:
            response = llm.get_model("echo").prompt("What is a tree, in one line?")
            response.text()
            again = LogStore(db).log(response, thread_id=thread)
        finally:
            db.close()
    return {"path": log.path, "thread": thread, "turns": [first, second, again]}


@pytest.fixture(scope="module")
def two_starts_db(tmp_path_factory) -> dict:
    """`llm_two_starts`, built once for the module: tests only read it."""
    return llm_two_starts(tmp_path_factory.mktemp("two-starts"))


def test_two_starts_logged_by_llm(two_starts_db):
    first, second, again = two_starts_db["turns"]
    tree = load_tree(two_starts_db["thread"], two_starts_db["path"])
    assert list(tree) == [first, second, again]
    assert list(tree.edges) == [(first, second)]
    assert tree.nodes[again]["prompt"] == "What is a tree, in one line?"
    assert ops.roots(tree) == [first, again]
    assert ops.siblings(tree, again) == [first]
    assert ops.siblings(tree, second) == []
    assert ops.branch_points(tree) == [None]
    assert ops.branching_factor(tree) == (1.5, 2)
    of_again = load_tree_of_node(again, two_starts_db["path"])
    assert of_again.graph["tree_id"] == two_starts_db["thread"]


def test_summary_statistics(two_roots):
    assert summary(two_roots) == {
        "tree_id": "multiple-roots",
        "name": "prompt multiple-roots-root1",
        "nodes": 6,
        "roots": 2,
        "leaves": 2,
        "max_depth": 2,
        # The start, whose two roots are alternatives; root1, a, root2 and x
        # have one child each.
        "branch_points": 1,
        "branching_factor_avg": 6 / 5,
        "branching_factor_max": 2,
        "first_datetime": "2025-09-27T10:00:14.000000+00:00",
        "last_datetime": "2025-09-27T10:00:19.000000+00:00",
        "models": ["echo"],
        "input_tokens": 75,
        "output_tokens": 135,
        "duration_ms": 2100,
        # No tool was called (issue 23: a tree's tool calls and tools).
        "tool_calls": 0,
        "tools": [],
        # The active path runs to multiple-roots-y, logged last; the branch
        # from root1 was left behind.
        "active_path_length": 3,
        "abandoned_branches": 1,
        # What that branch spent: root1, a and b, off the active path
        # (issue 38: what retries cost), of 75 + 135 tokens in all.
        "abandoned_input_tokens": 33,
        "abandoned_output_tokens": 63,
        "abandoned_share": (33 + 63) / (75 + 135),
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
        # A node that is only its prompt and answer (issue 23).
        "parts": None,
        "tool_calls": 0,
        "tools": None,
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


def test_render_draws_chains_in_one_column_and_roots_as_alternatives(two_roots):
    # The roots are alternatives at the start of one conversation: they hang
    # from the start's line, as the children of a node hang from it.
    assert render_tree(two_roots).splitlines() == [
        "start: 2 alternatives",
        "├── multiple-roots-root1  prompt multiple-roots-root1",
        "│   multiple-roots-a  prompt multiple-roots-a",
        "│   multiple-roots-b  prompt multiple-roots-b",
        "└── multiple-roots-root2  prompt multiple-roots-root2",
        "    multiple-roots-x  prompt multiple-roots-x",
        "    multiple-roots-y  prompt multiple-roots-y",
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
