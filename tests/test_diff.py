"""Branch diffs: `diff`, `compare`, `similarity`, and the diff and compare
commands, on the complex tree of the four scenarios, a logs.db written by llm
0.36 with a fork, and small hand-made databases for identical and very long
responses.

Every test asserts the exact answer. The complex tree (see tests/databases.py)
is, in log order:

    complex-root ─┬─ complex-b ─┬─ complex-c
                  │             └─ complex-d
                  └─ complex-e ─┬─ complex-f
                                └─ complex-g

where node number i (0 to 6 in log order) has the prompt "prompt <id>", the
response "answer to prompt <id>", 10 + i input tokens, 20 + i output tokens
and 100 * (i + 1) ms.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from convgraph.analysis.branch_diff import BranchTotals, diff
from convgraph.analysis.compare import compare
from convgraph.analysis.similarity import similarity, text_diff
from convgraph.errors import DifferentConversations, UnknownNode
from convgraph.model.loading import load_tree, load_tree_of_node, load_tree_of_pair
from tests.databases import add_response, legacy_database
from tests.helpers import file_digest, run

# "answer to prompt complex-b" is 6 words and marks (answer, to, prompt,
# complex, -, b); two such answers share 5 of them.
SEED_SIBLING_SIMILARITY = 2 * 5 / 12


@pytest.fixture
def complex_tree(seed_db: Path):
    return load_tree("complex", seed_db)


# -- diff on the complex tree of the four scenarios ------------------------


def test_cousins_fork_at_the_root(complex_tree) -> None:
    result = diff(complex_tree, "complex-c", "complex-g")
    assert result.fork_point == "complex-root"
    assert result.shared == ["complex-root"]
    assert result.a == ["complex-b", "complex-c"]
    assert result.b == ["complex-e", "complex-g"]
    assert result.conversation_id == "complex"
    assert [(s.step, s.a.id, s.b.id) for s in result.steps] == [
        (1, "complex-b", "complex-e"),
        (2, "complex-c", "complex-g"),
    ]


def test_steps_hold_unified_diffs_of_prompts_and_responses(complex_tree) -> None:
    first, second = diff(complex_tree, "complex-c", "complex-g").steps
    assert first.prompt_diff == [
        "--- a/complex-b",
        "+++ b/complex-e",
        "@@ -1 +1 @@",
        "-prompt complex-b",
        "+prompt complex-e",
    ]
    assert second.response_diff == [
        "--- a/complex-c",
        "+++ b/complex-g",
        "@@ -1 +1 @@",
        "-answer to prompt complex-c",
        "+answer to prompt complex-g",
    ]
    assert (first.same_prompt, first.same_response) == (False, False)
    assert first.response_similarity == SEED_SIBLING_SIMILARITY
    assert second.a.to_dict() == {
        "id": "complex-c",
        "model": "echo",
        "input_tokens": 12,
        "output_tokens": 22,
        "duration_ms": 300,
    }


def test_totals_per_branch(complex_tree) -> None:
    totals = diff(complex_tree, "complex-c", "complex-g").totals
    assert totals == {
        "shared": BranchTotals(1, 10, 20, 100, ["echo"]),
        "a": BranchTotals(2, 11 + 12, 21 + 22, 200 + 300, ["echo"]),
        "b": BranchTotals(2, 14 + 16, 24 + 26, 500 + 700, ["echo"]),
    }


def test_siblings_fork_at_their_parent(complex_tree) -> None:
    result = diff(complex_tree, "complex-c", "complex-d")
    assert (result.fork_point, result.shared) == (
        "complex-b",
        ["complex-root", "complex-b"],
    )
    assert (result.a, result.b) == (["complex-c"], ["complex-d"])


def test_ancestor_and_descendant_leave_one_side_empty(complex_tree) -> None:
    result = diff(complex_tree, "complex-root", "complex-g")
    assert result.fork_point == "complex-root"
    assert result.shared == ["complex-root"]
    assert result.a == []
    assert result.b == ["complex-e", "complex-g"]
    first = result.steps[0]
    assert first.a is None
    assert first.b.id == "complex-e"
    assert first.prompt_diff == [
        "--- (none)",
        "+++ b/complex-e",
        "@@ -0,0 +1 @@",
        "+prompt complex-e",
    ]
    assert first.response_similarity == 0.0
    assert result.totals["a"] == BranchTotals(0, 0, 0, 0, [])

    reverse = diff(complex_tree, "complex-g", "complex-root")
    assert (reverse.a, reverse.b) == (["complex-e", "complex-g"], [])
    assert reverse.steps[1].b is None
    assert reverse.steps[1].prompt_diff[:2] == ["--- a/complex-g", "+++ (none)"]


def test_a_node_against_itself(complex_tree) -> None:
    result = diff(complex_tree, "complex-f", "complex-f")
    assert result.fork_point == "complex-f"
    assert result.shared == ["complex-root", "complex-e", "complex-f"]
    assert (result.a, result.b, result.steps) == ([], [], [])
    assert result.totals["shared"] == BranchTotals(
        3, 10 + 14 + 15, 20 + 24 + 25, 100 + 500 + 600, ["echo"]
    )


def test_context_lines(tmp_path: Path) -> None:
    conn = legacy_database(tmp_path / "logs.db")
    lines = [f"line {n}" for n in range(1, 11)]
    changed = [*lines[:4], "line five", *lines[5:]]
    add_response(conn, "q", "c", "q", response="")
    add_response(conn, "x", "c", "x", parent="q", response="\n".join(lines))
    add_response(conn, "y", "c", "y", parent="q", response="\n".join(changed))
    conn.commit()
    tree = load_tree("c", tmp_path / "logs.db")
    assert diff(tree, "x", "y", context=1).steps[0].response_diff == [
        "--- a/x",
        "+++ b/y",
        "@@ -4,3 +4,3 @@",
        " line 4",
        "-line 5",
        "+line five",
        " line 6",
    ]
    assert diff(tree, "x", "y", context=0).steps[0].response_diff[2:] == [
        "@@ -5 +5 @@",
        "-line 5",
        "+line five",
    ]
    assert diff(tree, "x", "y").steps[0].response_diff[2] == "@@ -2,7 +2,7 @@"
    with pytest.raises(ValueError):
        diff(tree, "x", "y", context=-1)


def test_nodes_under_different_roots_part_at_the_start(seed_db: Path) -> None:
    # The roots are alternatives at the start: nothing is shared, the
    # branches differ from the first turn, and the fork point is the start,
    # None (docs/design.md#depth-roots-and-branching).
    tree = load_tree("multiple-roots", seed_db)
    result = diff(tree, "multiple-roots-b", "multiple-roots-y")
    assert (result.fork_point, result.shared) == (None, [])
    assert result.a == ["multiple-roots-root1", "multiple-roots-a", "multiple-roots-b"]
    assert result.b == ["multiple-roots-root2", "multiple-roots-x", "multiple-roots-y"]
    assert [(s.step, s.a.id, s.b.id) for s in result.steps] == [
        (1, "multiple-roots-root1", "multiple-roots-root2"),
        (2, "multiple-roots-a", "multiple-roots-x"),
        (3, "multiple-roots-b", "multiple-roots-y"),
    ]
    assert result.steps[0].prompt_diff == [
        "--- a/multiple-roots-root1",
        "+++ b/multiple-roots-root2",
        "@@ -1 +1 @@",
        "-prompt multiple-roots-root1",
        "+prompt multiple-roots-root2",
    ]
    assert result.totals == {
        "shared": BranchTotals(0, 0, 0, 0, []),
        "a": BranchTotals(3, 10 + 11 + 12, 20 + 21 + 22, 100 + 200 + 300, ["echo"]),
        "b": BranchTotals(3, 13 + 14 + 15, 23 + 24 + 25, 400 + 500 + 600, ["echo"]),
    }
    data = result.to_dict()
    assert (data["fork_point"], data["shared"]) == (None, [])
    assert data["totals"]["shared"] == {
        "nodes": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "duration_ms": 0,
        "models": [],
    }
    assert json.loads(json.dumps(data)) == data
    assert list(result.to_frame().index) == [1, 2, 3]


def test_two_roots_against_each_other(seed_db: Path) -> None:
    tree = load_tree("multiple-roots", seed_db)
    result = diff(tree, "multiple-roots-root1", "multiple-roots-root2")
    assert (result.fork_point, result.shared) == (None, [])
    assert (result.a, result.b) == (["multiple-roots-root1"], ["multiple-roots-root2"])
    assert len(result.steps) == 1


def test_unknown_node_in_the_tree(complex_tree) -> None:
    with pytest.raises(UnknownNode):
        diff(complex_tree, "complex-c", "linear-a")
    with pytest.raises(UnknownNode):
        compare(complex_tree, "nope")


def test_to_dict_is_json_ready(complex_tree) -> None:
    data = diff(complex_tree, "complex-d", "complex-f").to_dict()
    assert json.loads(json.dumps(data)) == data
    assert list(data) == [
        "node_a",
        "node_b",
        "tree_id",
        "fork_point",
        "shared",
        "a",
        "b",
        "context",
        "steps",
        "totals",
    ]
    assert (data["fork_point"], data["shared"]) == ("complex-root", ["complex-root"])
    assert (data["a"], data["b"]) == (
        ["complex-b", "complex-d"],
        ["complex-e", "complex-f"],
    )
    assert data["totals"]["b"] == {
        "nodes": 2,
        "input_tokens": 14 + 15,
        "output_tokens": 24 + 25,
        "duration_ms": 500 + 600,
        "models": ["echo"],
    }
    assert data["steps"][1]["b"]["id"] == "complex-f"
    assert data["steps"][1]["prompt_diff"][-1] == "+prompt complex-f"


def test_to_frame_has_one_row_per_step(complex_tree) -> None:
    frame = diff(complex_tree, "complex-c", "complex-root").to_frame()
    assert frame.index.name == "step"
    assert list(frame.index) == [1, 2]
    assert list(frame.columns) == [
        "a",
        "a_model",
        "a_input_tokens",
        "a_output_tokens",
        "a_duration_ms",
        "b",
        "b_model",
        "b_input_tokens",
        "b_output_tokens",
        "b_duration_ms",
        "same_prompt",
        "same_response",
        "response_similarity",
        "prompt_diff",
        "response_diff",
    ]
    assert list(frame["a"]) == ["complex-b", "complex-c"]
    assert list(frame["b"]) == [None, None]
    assert str(frame["a_input_tokens"].dtype) == "Int64"
    assert list(frame["a_input_tokens"]) == [11, 12]
    assert frame["b_input_tokens"].isna().all()
    assert frame.loc[2, "prompt_diff"] == (
        "--- a/complex-c\n+++ (none)\n@@ -1 +0,0 @@\n-prompt complex-c"
    )


def test_totals_frame(complex_tree) -> None:
    frame = diff(complex_tree, "complex-c", "complex-g").totals_frame()
    assert list(frame.index) == ["shared", "a", "b"]
    assert list(frame["output_tokens"]) == [20, 43, 50]
    assert list(frame["models"]) == [["echo"], ["echo"], ["echo"]]


def test_totals_of_unknown_usage_are_none(tmp_path: Path) -> None:
    conn = legacy_database(tmp_path / "logs.db")
    add_response(conn, "q", "c", "q")
    add_response(conn, "x", "c", "x", parent="q", model="m1", input_tokens=5)
    add_response(conn, "x2", "c", "x2", parent="x", model="m2")
    add_response(conn, "y", "c", "y", parent="q", model="m1")
    conn.commit()
    tree = load_tree("c", tmp_path / "logs.db")
    totals = diff(tree, "x2", "y").totals
    assert totals["a"] == BranchTotals(2, 5, None, None, ["m1", "m2"])
    assert totals["b"] == BranchTotals(1, None, None, None, ["m1"])


# -- loading the tree of two nodes -----------------------------------------


def test_load_tree_of_pair_reads_one_tree(seed_db: Path) -> None:
    tree = load_tree_of_pair("complex-c", "complex-g", seed_db)
    assert tree.graph["tree_id"] == "complex"
    assert sorted(tree) == sorted(load_tree("complex", seed_db))


def test_nodes_in_different_conversations(seed_db: Path) -> None:
    with pytest.raises(DifferentConversations) as caught:
        load_tree_of_pair("complex-c", "linear-a", seed_db)
    assert str(caught.value) == (
        "'complex-c' and 'linear-a' are in different conversations"
        " ('complex' and 'linear')"
    )


def test_load_tree_of_pair_unknown_ids(seed_db: Path) -> None:
    for pair in [("nope", "complex-c"), ("complex-c", "nope")]:
        with pytest.raises(UnknownNode) as caught:
            load_tree_of_pair(*pair, seed_db)
        assert str(caught.value) == "no node with id 'nope'"


# -- a fork written by llm 0.36 ----------------------------------------------


def turn_usage(path: Path, ids: list[str]) -> dict[str, int]:
    """The usage of some turns, summed in SQL straight from llm's table."""
    conn = sqlite3.connect(path)
    try:
        marks = ", ".join("?" * len(ids))
        row = conn.execute(
            "select sum(input_tokens), sum(output_tokens), sum(duration_ms)"
            f" from turns where id in ({marks})",
            ids,
        ).fetchone()
    finally:
        conn.close()
    return dict(zip(["input_tokens", "output_tokens", "duration_ms"], row, strict=True))


def test_diff_of_a_real_llm_fork(llm_fork_db: dict) -> None:
    first, second, third = llm_fork_db["turns"]
    fork_first, fork_second = llm_fork_db["fork_turns"]
    tree = load_tree_of_pair(third, fork_second, llm_fork_db["path"])
    result = diff(tree, third, fork_second)
    assert result.fork_point == first
    assert result.shared == [first]
    assert (result.a, result.b) == ([second, third], [fork_first, fork_second])
    assert result.conversation_id == llm_fork_db["thread"]
    assert result.steps[0].prompt_diff == [
        f"--- a/{second}",
        f"+++ b/{fork_first}",
        "@@ -1 +1 @@",
        "-And a forest?",
        "+What is a graph, then?",
    ]
    assert result.steps[1].prompt_diff[3:] == [
        "-Give an example",
        "+Is every tree a graph?",
    ]
    for name, ids in [
        ("shared", [first]),
        ("a", [second, third]),
        ("b", [fork_first, fork_second]),
    ]:
        totals = result.totals[name].to_dict()
        assert totals.pop("nodes") == len(ids)
        assert totals.pop("models") == ["echo"]
        assert totals == turn_usage(llm_fork_db["path"], ids)
    # The echo model answers with its prompt as JSON, so the responses differ
    # in the lines that carry the prompts, and nowhere else.
    response_a = tree.nodes[third]["response"].splitlines()
    response_b = tree.nodes[fork_second]["response"].splitlines()
    changed = result.steps[1].response_diff[3:]
    assert [line[1:] for line in changed if line.startswith("-")] == [
        line for line in response_a if line not in response_b
    ]
    assert [line[1:] for line in changed if line.startswith("+")] == [
        line for line in response_b if line not in response_a
    ]
    assert any("Is every tree a graph?" in line for line in changed)


def test_compare_of_a_real_llm_fork(llm_fork_db: dict) -> None:
    first, second, _ = llm_fork_db["turns"]
    fork_first, _ = llm_fork_db["fork_turns"]
    result = compare(load_tree_of_node(first, llm_fork_db["path"]), first)
    assert result.ids == [second, fork_first]
    rows = result.to_dicts()
    assert [row["subtree_size"] for row in rows] == [2, 2]
    assert [row["model"] for row in rows] == ["echo", "echo"]
    for row in rows:
        usage = turn_usage(llm_fork_db["path"], [row["id"]])
        assert {key: row[key] for key in usage} == usage
    assert rows[0]["similarity"] == {fork_first: rows[1]["similarity"][second]}
    assert 0 < rows[0]["similarity"][fork_first] < 1


def test_cli_diff_json_of_a_real_llm_fork(llm_fork_db: dict) -> None:
    _, _, third = llm_fork_db["turns"]
    _, fork_second = llm_fork_db["fork_turns"]
    db = str(llm_fork_db["path"])
    before = file_digest(llm_fork_db["path"])
    result = run("diff", third, fork_second, "--json", "--db", db)
    assert result.exit_code == 0, result.output
    tree = load_tree_of_node(third, db)
    assert json.loads(result.stdout) == diff(tree, third, fork_second).to_dict()
    assert file_digest(llm_fork_db["path"]) == before


# -- compare ----------------------------------------------------------------


def test_compare_the_roots_children(complex_tree) -> None:
    result = compare(complex_tree, "complex-root")
    assert result.to_dicts() == [
        {
            "id": "complex-b",
            "model": "echo",
            "input_tokens": 11,
            "output_tokens": 21,
            "duration_ms": 200,
            "response_length": len("answer to prompt complex-b"),
            "subtree_size": 3,
            "similarity": {"complex-e": SEED_SIBLING_SIMILARITY},
            "active": False,
            "preferred": False,
            "note": None,
        },
        {
            "id": "complex-e",
            "model": "echo",
            "input_tokens": 14,
            "output_tokens": 24,
            "duration_ms": 500,
            "response_length": 26,
            "subtree_size": 3,
            "similarity": {"complex-b": SEED_SIBLING_SIMILARITY},
            # On the active path, to complex-g (logged last).
            "active": True,
            "preferred": False,
            "note": None,
        },
    ]


def test_compare_frames(complex_tree) -> None:
    result = compare(complex_tree, "complex-e")
    frame = result.to_frame()
    assert frame.index.name == "id"
    assert list(frame.index) == ["complex-f", "complex-g"]
    assert list(frame.columns) == [
        "model",
        "input_tokens",
        "output_tokens",
        "duration_ms",
        "response_length",
        "subtree_size",
        "active",
        "preferred",
        "note",
    ]
    assert list(frame["duration_ms"]) == [600, 700]
    assert list(frame["active"]) == [False, True]
    assert str(frame["input_tokens"].dtype) == "Int64"
    matrix = result.similarity_frame()
    expected = pd.DataFrame(
        [[1.0, SEED_SIBLING_SIMILARITY], [SEED_SIBLING_SIMILARITY, 1.0]],
        index=pd.Index(["complex-f", "complex-g"], name="id"),
        columns=["complex-f", "complex-g"],
    )
    pd.testing.assert_frame_equal(matrix, expected)


def test_compare_a_leaf(complex_tree) -> None:
    result = compare(complex_tree, "complex-c")
    assert result.to_dicts() == []
    assert result.to_frame().empty


# -- the start: the roots of a tree are alternatives ------------------------


def test_compare_the_roots_at_the_start(seed_db: Path) -> None:
    tree = load_tree("multiple-roots", seed_db)
    # "answer to prompt multiple-roots-root1" is 8 words and marks; the two
    # roots' answers share 7 of them.
    similar = 2 * 7 / 16
    result = compare(tree, None)
    assert result.node is None
    assert result.to_dicts() == [
        {
            "id": "multiple-roots-root1",
            "model": "echo",
            "input_tokens": 10,
            "output_tokens": 20,
            "duration_ms": 100,
            "response_length": len("answer to prompt multiple-roots-root1"),
            "subtree_size": 3,
            "similarity": {"multiple-roots-root2": similar},
            "active": False,
            "preferred": False,
            "note": None,
        },
        {
            "id": "multiple-roots-root2",
            "model": "echo",
            "input_tokens": 13,
            "output_tokens": 23,
            "duration_ms": 400,
            "response_length": 37,
            "subtree_size": 3,
            "similarity": {"multiple-roots-root1": similar},
            # On the active path, to multiple-roots-y (logged last).
            "active": True,
            "preferred": False,
            "note": None,
        },
    ]


def test_the_start_of_a_tree_with_one_root(complex_tree) -> None:
    result = compare(complex_tree, None)
    assert result.ids == ["complex-root"]
    assert result.alternatives[0].subtree_size == 7
    assert result.alternatives[0].similarity == {}


@pytest.fixture
def regenerated_first_turn(tmp_path: Path) -> Path:
    """A ChatGPT export whose first answer was regenerated: "What is a
    monad?" answered "A monoid." (a1), then "A burrito." (a1b), from which
    the conversation went on with two versions of the next prompt (a2, a2e).
    """
    from tests.chat_exports import chatgpt_branches, write_json

    return write_json(tmp_path / "conversations.json", [chatgpt_branches()])


def test_a_regenerated_first_answer_of_a_chatgpt_export(
    regenerated_first_turn: Path,
) -> None:
    tree = load_tree("conv-monad", regenerated_first_turn)
    result = diff(tree, "a1", "a2e")
    assert (result.fork_point, result.shared) == (None, [])
    assert (result.a, result.b) == (["a1"], ["a1b", "a2e"])
    first = result.steps[0]
    assert (first.same_prompt, first.same_response) == (True, False)
    assert first.response_diff[3:] == ["-A monoid.", "+A burrito."]
    # "A monoid ." and "A burrito .": 2 of 3 words and marks each.
    assert first.response_similarity == 2 * 2 / 6
    assert result.totals["b"].models == ["gpt-4o"]

    compared = compare(tree, None)
    assert compared.ids == ["a1", "a1b"]
    assert [alt.subtree_size for alt in compared.alternatives] == [1, 3]
    assert [alt.active for alt in compared.alternatives] == [False, True]
    assert compared.alternatives[0].similarity == {"a1b": 2 * 2 / 6}


def test_cli_on_a_regenerated_first_answer(regenerated_first_turn: Path) -> None:
    db = str(regenerated_first_turn)
    before = file_digest(regenerated_first_turn)
    assert run("compare", "conv-monad", "--db", db).stdout == (
        "2 alternatives at the start of conv-monad\n"
        "#  id   model   input  output  duration  chars  subtree\n"
        "1  a1   gpt-4o      -       -         -      9        1\n"
        "2  a1b  gpt-4o      -       -         -     10        3\n"
        "\n"
        "similarity of responses (0 to 1, over words)\n"
        "#     1     2\n"
        "1  1.00  0.67\n"
        "2  0.67  1.00\n"
    )
    lines = run("diff", "a1", "a2e", "--db", db).stdout.splitlines()
    assert lines[:4] == [
        "diff a1 a2e  (conversation conv-monad)",
        "fork point: the start  (nothing shared: different roots, a1 and a1b)",
        "a: 1 node from the start, down to a1",
        "b: 2 nodes from the start, down to a2e",
    ]
    assert file_digest(regenerated_first_turn) == before


@pytest.fixture(scope="module")
def two_starts_db(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A logs.db where llm 0.36 logged a second start into one thread
    (`tests.test_tree.llm_two_starts`); tests only read it."""
    from tests.test_tree import llm_two_starts

    return llm_two_starts(tmp_path_factory.mktemp("two-starts"))


def test_two_starts_logged_by_llm(two_starts_db: dict) -> None:
    first, second, again = two_starts_db["turns"]
    db = str(two_starts_db["path"])
    tree = load_tree_of_pair(second, again, db)
    result = diff(tree, second, again)
    assert (result.fork_point, result.a, result.b) == (None, [first, second], [again])
    assert result.steps[0].prompt_diff[3:] == [
        "-What is a tree?",
        "+What is a tree, in one line?",
    ]
    assert json.loads(run("diff", second, again, "--json", "--db", db).stdout) == (
        result.to_dict()
    )
    # The thread id names the tree, and compares its roots.
    records = json.loads(
        run("compare", two_starts_db["thread"], "--json", "-d", db).stdout
    )
    assert records == compare(tree, None).to_dicts()
    assert [record["id"] for record in records] == [first, again]
    assert [record["subtree_size"] for record in records] == [2, 1]
    # A node id still compares the node's children.
    records = json.loads(run("compare", first, "--json", "-d", db).stdout)
    assert [record["id"] for record in records] == [second]


# -- identical and very long responses --------------------------------------


@pytest.fixture
def retries_db(tmp_path: Path) -> Path:
    """One question answered three times: twice identically (by two models),
    once differently, then each answer followed up with the same prompt."""
    path = tmp_path / "retries.db"
    conn = legacy_database(path)
    add_response(conn, "q", "c", "Name a colour", response="Which kind?")
    add_response(
        conn, "r1", "c", "Any", parent="q", model="m1", response="Blue.\nLike the sea."
    )
    add_response(
        conn, "r2", "c", "Any", parent="q", model="m2", response="Blue.\nLike the sea."
    )
    add_response(
        conn, "r3", "c", "Any", parent="q", model="m1", response="Red.\nLike fire."
    )
    add_response(conn, "f1", "c", "Why?", parent="r1", response="It is calm.")
    add_response(conn, "f2", "c", "Why?", parent="r2", response="It is calm.")
    conn.commit()
    conn.close()
    return path


def test_identical_responses(retries_db: Path) -> None:
    tree = load_tree("c", retries_db)
    result = diff(tree, "f1", "f2")
    assert (result.fork_point, result.a, result.b) == ("q", ["r1", "f1"], ["r2", "f2"])
    for step in result.steps:
        assert (step.same_prompt, step.same_response) == (True, True)
        assert (step.prompt_diff, step.response_diff) == ([], [])
        assert step.response_similarity == 1.0
    assert result.totals["a"].models == ["m1", "echo"]
    assert result.totals["b"].models == ["m2", "echo"]

    rows = {row["id"]: row["similarity"] for row in compare(tree, "q").to_dicts()}
    # r1, r3: "Blue . Like the sea ." and "Red . Like fire ." (6 and 5 words
    # and marks) share ". Like" and the last ".".
    assert rows == {
        "r1": {"r2": 1.0, "r3": 2 * 3 / 11},
        "r2": {"r1": 1.0, "r3": 2 * 3 / 11},
        "r3": {"r1": 2 * 3 / 11, "r2": 2 * 3 / 11},
    }


def long_text(lines: int, changed_line: int | None = None) -> str:
    """About 80 bytes a line, 12 words and no two lines alike; one word of
    `changed_line` replaced."""
    rows = []
    for n in range(lines):
        words = [f"w{n}_{k}" for k in range(10)]
        if n == changed_line:
            words[3] = "changed"
        rows.append(f"line {n} " + " ".join(words))
    return "\n".join(rows)


def test_very_long_responses(tmp_path: Path) -> None:
    lines = 1300
    first, second = long_text(lines), long_text(lines, changed_line=500)
    assert len(first) > 100_000
    conn = legacy_database(tmp_path / "long.db")
    add_response(conn, "q", "c", "Write a lot", response="")
    add_response(conn, "x", "c", "Write a lot", parent="q", response=first)
    add_response(conn, "y", "c", "Write a lot", parent="q", response=second)
    conn.commit()
    tree = load_tree("c", tmp_path / "long.db")

    step = diff(tree, "x", "y").steps[0]
    assert step.same_prompt and not step.same_response
    assert step.response_diff == [
        "--- a/x",
        "+++ b/y",
        "@@ -498,7 +498,7 @@",
        *(f" {line}" for line in first.splitlines()[497:500]),
        f"-{first.splitlines()[500]}",
        f"+{second.splitlines()[500]}",
        *(f" {line}" for line in first.splitlines()[501:504]),
    ]
    # 12 words a line; one word of one line differs.
    assert step.response_similarity == 2 * (12 * lines - 1) / (24 * lines)
    assert compare(tree, "q").to_dicts()[0]["similarity"] == {
        "y": 2 * (12 * lines - 1) / (24 * lines)
    }


# -- similarity and text_diff on their own -----------------------------------


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        ("same text", "same text", 1.0),
        ("", None, 1.0),
        ("  \n ", "", 1.0),
        ("one two three four", "one two three five", 0.75),
        ("Yes", "Yes.", 2 / 3),
        ("a b\nc d", "a  b\nc d", 1.0),  # whitespace does not count
        ("alpha", "beta", 0.0),
        ("alpha", None, 0.0),
        ("keep\nthis line\nand this", "keep\nand this", 2 * 3 / 8),
    ],
)
def test_similarity(first: str | None, second: str | None, expected: float) -> None:
    assert similarity(first, second) == expected
    assert similarity(second, first) == expected


def test_similarity_aligns_sentences_of_one_line() -> None:
    # Three sentences of 6 words and marks; one word of the middle one differs.
    first = "The cat sat on mats. A dog ran to us. Birds sang in the trees."
    second = "The cat sat on mats. A dog ran to them. Birds sang in the trees."
    assert similarity(first, second) == 2 * 17 / 36


def test_short_segments_do_not_anchor_the_alignment() -> None:
    # A "Yes." in both does not pin the texts together; the words of the long
    # sentence match instead: "one two three four five" and a "." (6 of 9).
    first = "Yes. one two three four five six."
    second = "one two three four five seven. Yes."
    assert similarity(first, second) == 2 * 6 / 18


def test_long_changed_stretches_are_matched_in_bands() -> None:
    # 5,000 distinct words in one segment, every tenth replaced: two bands of
    # 2,500 words, each matching its 2,250 unchanged words.
    first = " ".join(f"w{n}" for n in range(5000))
    second = " ".join("x" if n % 10 == 0 else f"w{n}" for n in range(5000))
    assert similarity(first, second) == 2 * 4500 / 10000


def test_text_diff_of_equal_texts_is_empty() -> None:
    assert text_diff("same\ntext", "same\ntext") == []
    assert text_diff(None, "") == []


# -- the command line ---------------------------------------------------------


def test_cli_diff_json(seed_db: Path, complex_tree) -> None:
    result = run(
        "diff",
        "complex-c",
        "complex-g",
        "--json",
        "--context",
        "0",
        "--db",
        str(seed_db),
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data == diff(complex_tree, "complex-c", "complex-g", context=0).to_dict()
    assert (data["fork_point"], data["shared"]) == ("complex-root", ["complex-root"])
    assert data["context"] == 0


EXPECTED_DIFF = """\
diff complex-b complex-d  (conversation complex)
fork point: complex-b  (shared path: 2 nodes, complex-root ... complex-b)
a: nothing after the fork point (complex-b is an ancestor of complex-d)
b: 1 node after the fork point, down to complex-d

step 1  a: -   b: complex-d (echo)
prompt:
--- (none)
+++ b/complex-d
@@ -0,0 +1 @@
+prompt complex-d
response:
--- (none)
+++ b/complex-d
@@ -0,0 +1 @@
+answer to prompt complex-d

        nodes  input tokens  output tokens  duration  models
shared      2            21             41    300 ms  echo
a           0             0              0      0 ms  -
b           1            13             23    400 ms  echo
"""


def test_cli_diff_text_is_plain_when_piped(seed_db: Path) -> None:
    result = run("diff", "complex-b", "complex-d", "--db", str(seed_db))
    assert result.exit_code == 0, result.output
    assert result.stdout == EXPECTED_DIFF


def test_cli_diff_text_of_siblings(seed_db: Path) -> None:
    result = run("diff", "complex-f", "complex-g", "--db", str(seed_db))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[:4] == [
        "diff complex-f complex-g  (conversation complex)",
        "fork point: complex-e  (shared path: 2 nodes, complex-root ... complex-e)",
        "a: 1 node after the fork point, down to complex-f",
        "b: 1 node after the fork point, down to complex-g",
    ]
    assert lines[5] == "step 1  a: complex-f (echo)   b: complex-g (echo)"
    assert "response (similarity 0.83):" in lines


EXPECTED_DIFF_ACROSS_ROOTS = """\
diff multiple-roots-a multiple-roots-y  (conversation multiple-roots)
fork point: the start  (nothing shared: different roots, multiple-roots-root1 and multiple-roots-root2)
a: 2 nodes from the start, down to multiple-roots-a
b: 3 nodes from the start, down to multiple-roots-y

step 1  a: multiple-roots-root1 (echo)   b: multiple-roots-root2 (echo)
prompt:
--- a/multiple-roots-root1
+++ b/multiple-roots-root2
@@ -1 +1 @@
-prompt multiple-roots-root1
+prompt multiple-roots-root2
response (similarity 0.88):
--- a/multiple-roots-root1
+++ b/multiple-roots-root2
@@ -1 +1 @@
-answer to prompt multiple-roots-root1
+answer to prompt multiple-roots-root2

step 2  a: multiple-roots-a (echo)   b: multiple-roots-x (echo)
prompt:
--- a/multiple-roots-a
+++ b/multiple-roots-x
@@ -1 +1 @@
-prompt multiple-roots-a
+prompt multiple-roots-x
response (similarity 0.88):
--- a/multiple-roots-a
+++ b/multiple-roots-x
@@ -1 +1 @@
-answer to prompt multiple-roots-a
+answer to prompt multiple-roots-x

step 3  a: -   b: multiple-roots-y (echo)
prompt:
--- (none)
+++ b/multiple-roots-y
@@ -0,0 +1 @@
+prompt multiple-roots-y
response:
--- (none)
+++ b/multiple-roots-y
@@ -0,0 +1 @@
+answer to prompt multiple-roots-y

        nodes  input tokens  output tokens  duration  models
shared      0             0              0      0 ms  -
a           2            21             41    300 ms  echo
b           3            42             72   1500 ms  echo
"""


def test_cli_diff_across_roots(seed_db: Path) -> None:
    args = ["multiple-roots-a", "multiple-roots-y", "--db", str(seed_db)]
    result = run("diff", *args)
    assert result.exit_code == 0, result.output
    assert result.stdout == EXPECTED_DIFF_ACROSS_ROOTS
    data = json.loads(run("diff", *args, "--json").stdout)
    tree = load_tree("multiple-roots", seed_db)
    assert data == diff(tree, "multiple-roots-a", "multiple-roots-y").to_dict()
    assert (data["fork_point"], data["shared"]) == (None, [])


def test_cli_diff_is_coloured_on_a_terminal(seed_db: Path) -> None:
    result = run("diff", "complex-b", "complex-d", "--db", str(seed_db), color=True)
    assert result.exit_code == 0, result.output
    assert "\x1b[32m+prompt complex-d\x1b[0m" in result.stdout
    assert "\x1b[36m@@ -0,0 +1 @@\x1b[0m" in result.stdout
    assert click_unstyle(result.stdout) == EXPECTED_DIFF


def click_unstyle(text: str) -> str:
    import click

    return click.unstyle(text)


def test_cli_diff_of_identical_steps(retries_db: Path) -> None:
    result = run("diff", "f1", "f2", "--db", str(retries_db))
    assert result.exit_code == 0, result.output
    assert (
        "step 2  a: f1 (echo)   b: f2 (echo)\nprompt: same\nresponse: same\n"
        in result.stdout
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["diff", "nope", "complex-c"], "Error: no node with id 'nope'\n"),
        (["diff", "complex-c", "nope"], "Error: no node with id 'nope'\n"),
        (
            ["diff", "complex-c", "linear-a"],
            "Error: 'complex-c' and 'linear-a' are in different conversations"
            " ('complex' and 'linear')\n",
        ),
        (["compare", "nope"], "Error: no node with id 'nope'\n"),
    ],
)
def test_cli_errors_are_one_line(seed_db: Path, args: list[str], message: str) -> None:
    before = file_digest(seed_db)
    result = run(*args, "--db", str(seed_db), expect=2)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == message
    assert file_digest(seed_db) == before


def test_cli_diff_refuses_negative_context(seed_db: Path) -> None:
    args = ["diff", "complex-c", "complex-g", "--context", "-1", "--db", seed_db]
    result = run(*args, expect=2)
    assert result.exit_code == 2
    assert "'-1' is not a whole number from 0 to 1000000" in result.stderr


def test_cli_compare_json(seed_db: Path, complex_tree) -> None:
    result = run("compare", "complex-root", "--json", "--db", str(seed_db))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == compare(complex_tree, "complex-root").to_dicts()


def test_cli_compare_a_conversation_compares_its_roots(seed_db: Path) -> None:
    result = run("compare", "multiple-roots", "--db", str(seed_db))
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "2 alternatives at the start of multiple-roots\n"
        "#  id                    model  input  output  duration  chars  subtree\n"
        "1  multiple-roots-root1  echo      10      20    100 ms     37        3\n"
        "2  multiple-roots-root2  echo      13      23    400 ms     37        3\n"
        "\n"
        "similarity of responses (0 to 1, over words)\n"
        "#     1     2\n"
        "1  1.00  0.88\n"
        "2  0.88  1.00\n"
    )
    tree = load_tree("multiple-roots", seed_db)
    records = json.loads(
        run("compare", "multiple-roots", "--json", "-d", seed_db).stdout
    )
    assert records == compare(tree, None).to_dicts()
    # A tree with one root: its one start.
    records = json.loads(run("compare", "complex", "--json", "-d", seed_db).stdout)
    assert [record["id"] for record in records] == ["complex-root"]


def test_cli_compare_table(retries_db: Path) -> None:
    result = run("compare", "q", "--db", str(retries_db))
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "3 alternatives after q\n"
        "#  id  model  input  output  duration  chars  subtree\n"
        "1  r1  m1         -       -         -     19        2\n"
        "2  r2  m2         -       -         -     19        2\n"
        "3  r3  m1         -       -         -     15        1\n"
        "\n"
        "similarity of responses (0 to 1, over words)\n"
        "#     1     2     3\n"
        "1  1.00  1.00  0.55\n"
        "2  1.00  1.00  0.55\n"
        "3  0.55  0.55  1.00\n"
    )


def test_cli_compare_a_leaf(seed_db: Path) -> None:
    result = run("compare", "complex-c", "--db", str(seed_db))
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == "complex-c has no children\n"
    result = run("compare", "complex-c", "--json", "--db", str(seed_db))
    assert (result.exit_code, json.loads(result.stdout)) == (0, [])


def test_cli_diff_does_not_import_pandas(seed_db: Path) -> None:
    script = (
        "import sys\n"
        "from convgraph.cli import cli\n"
        "try:\n"
        f"    cli(['diff', 'complex-c', 'complex-g', '--db', {str(seed_db)!r}])\n"
        "except SystemExit as exit:\n"
        "    assert exit.code in (0, None), exit.code\n"
        "print('pandas' in sys.modules, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stderr.strip() == "False"
    assert done.stdout.startswith("diff complex-c complex-g")


# -- compare over many children: bounded, not quadratic ----------------------


def many_children_db(path: Path, count: int) -> Path:
    """A conversation whose root has `count` children, logged in order, the
    i-th answering "answer i of many"."""
    conn = legacy_database(path)
    add_response(conn, "q", "c", "question", datetime_utc="2025-01-01T00:00:00")
    for index in range(count):
        add_response(
            conn,
            f"r{index:03d}",
            "c",
            f"retry {index}",
            parent="q",
            response=f"answer {index} of many",
            datetime_utc=f"2025-01-01T00:01:{index // 60:02d}.{index % 60:02d}",
        )
    conn.commit()
    conn.close()
    return path


def test_compare_up_to_the_limit_compares_every_pair(tmp_path: Path) -> None:
    from convgraph.analysis.compare import ALL_PAIRS_UP_TO

    db = many_children_db(tmp_path / "fifty.db", ALL_PAIRS_UP_TO)
    result = compare(load_tree("c", db), "q")
    assert result.neighbours is None
    first = result.alternatives[0]
    assert list(first.similarity) == [f"r{i:03d}" for i in range(1, ALL_PAIRS_UP_TO)]
    # "answer 0 of many" and "answer 1 of many": 3 of 4 words the same.
    assert first.similarity["r001"] == 0.75


def test_compare_many_children_compares_neighbours_only(tmp_path: Path) -> None:
    from convgraph.analysis.compare import ALL_PAIRS_UP_TO, NEIGHBOURS

    count = ALL_PAIRS_UP_TO + 10
    db = many_children_db(tmp_path / "many.db", count)
    result = compare(load_tree("c", db), "q")
    assert result.neighbours == NEIGHBOURS == 1
    similarity = {alt.id: alt.similarity for alt in result.alternatives}
    assert similarity["r000"] == {"r001": 0.75}
    assert similarity["r007"] == {"r006": 0.75, "r008": 0.75}
    assert similarity[f"r{count - 1:03d}"] == {f"r{count - 2:03d}": 0.75}
    frame = result.similarity_frame()
    assert frame.loc["r007", "r008"] == 0.75
    assert pd.isna(frame.loc["r007", "r009"])

    shown = run("compare", "q", "--db", db).stdout.splitlines()
    assert shown[count + 3 :][:5] == [
        "similarity of responses (0 to 1, over words)",
        f"{count} children, too many to compare every pair: each compared"
        " with 1 sibling on each side, in log order",
        " #    -1    +1",
        " 1     -  0.75",
        " 2  0.75  0.75",
    ]
    assert shown[-1] == f"{count}  0.75     -"
    records = json.loads(run("compare", "q", "--json", "--db", db).stdout)
    assert records[1]["similarity"] == {"r000": 0.75, "r002": 0.75}
