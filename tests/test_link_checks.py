"""The link check's two forms give one answer.

`check_links` checks one tree's records in plain Python (the one-tree path);
`check_links_table` checks a whole nodes table with vectorized operations (the
`Forest`). On random forests with hostile links (self-parents, missing
parents, parents in another tree, cycles, nodes hanging off cycles) both keep
the same parents and report the same problems, in the same order within a
tree.
"""

from __future__ import annotations

from collections import defaultdict

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from convgraph.links.integrity import Problem, check_links, check_links_table
from tests.helpers import examples


@st.composite
def hostile_rows(draw: st.DrawFn) -> list[dict]:
    """Rows of a random forest in log order: `id`, `tree_id`,
    `conversation_id` (one of two threads of the tree) and `parent_id`, which
    is none, an earlier node of the same tree, any node of the same tree
    (itself, a later one: cycles), any node at all (one of another tree), or
    a missing id."""
    count = draw(st.integers(1, 40))
    trees = draw(st.lists(st.integers(0, 3), min_size=count, max_size=count))
    members: dict[int, list[int]] = defaultdict(list)
    for index, tree in enumerate(trees):
        members[tree].append(index)
    kinds = ["root", "earlier", "earlier", "same-tree", "any", "missing"]
    rows: list[dict] = []
    for index, tree in enumerate(trees):
        kind = draw(st.sampled_from(kinds))
        earlier = [other for other in members[tree] if other < index]
        parent = None
        if kind == "earlier" and earlier:
            parent = f"n{draw(st.sampled_from(earlier))}"
        elif kind == "same-tree":
            parent = f"n{draw(st.sampled_from(members[tree]))}"
        elif kind == "any":
            parent = f"n{draw(st.integers(0, count - 1))}"
        elif kind == "missing":
            parent = "ghost"
        rows.append(
            {
                "id": f"n{index}",
                "tree_id": f"t{tree}",
                "conversation_id": f"t{tree}.{draw(st.integers(0, 1))}",
                "parent_id": parent,
            }
        )
    return rows


def by_tree(rows: list[dict]) -> dict[str, list[dict]]:
    trees: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        trees[row["tree_id"]].append(row)
    return trees


@settings(max_examples=examples(150), deadline=None)
@given(hostile_rows())
def test_one_tree_and_the_whole_table_give_the_same_links(rows: list[dict]) -> None:
    tree_of = {row["id"]: row["tree_id"] for row in rows}

    # One tree at a time, as `read_tree` checks it: a parent outside the
    # tree is looked up, and is in another conversation or missing.
    kept: dict[str, str | None] = {}
    problems_of_tree: dict[str, list[Problem]] = {}
    for tree, records in by_tree(rows).items():
        outsiders = {node: other for node, other in tree_of.items() if other != tree}
        parents, problems = check_links(records, outsiders)
        kept.update(parents)
        problems_of_tree[tree] = problems

    # The whole table at once, as `Forest` checks it.
    table = pd.DataFrame(rows)
    parent_rows, table_problems = check_links_table(table)
    ids = [row["id"] for row in rows]
    assert {
        node: ids[row] if row >= 0 else None
        for node, row in zip(ids, parent_rows.tolist(), strict=True)
    } == kept
    assert {
        tree: [
            problem for problem in table_problems if tree_of[problem.node_id] == tree
        ]
        for tree in problems_of_tree
    } == problems_of_tree


def test_every_kind_of_broken_link_in_both_forms() -> None:
    rows = [
        {"id": "r", "tree_id": "t", "conversation_id": "t", "parent_id": None},
        {"id": "s", "tree_id": "t", "conversation_id": "t", "parent_id": "s"},
        {"id": "m", "tree_id": "t", "conversation_id": "t", "parent_id": "ghost"},
        {"id": "x", "tree_id": "t", "conversation_id": "t2", "parent_id": "o"},
        {"id": "a", "tree_id": "t", "conversation_id": "t", "parent_id": "b"},
        {"id": "b", "tree_id": "t", "conversation_id": "t", "parent_id": "a"},
        {"id": "h", "tree_id": "t", "conversation_id": "t", "parent_id": "b"},
        {"id": "o", "tree_id": "u", "conversation_id": "u", "parent_id": None},
    ]
    expected = [
        ("self-parent", "s", "s", "t", "s is its own parent"),
        (
            "missing-parent",
            "m",
            "ghost",
            "t",
            "m has parent ghost, which does not exist",
        ),
        (
            "cross-conversation",
            "x",
            "o",
            "t2",
            "x has parent o in another conversation (u)",
        ),
        ("cycle", "a", "b", "t", "a is on a cycle of 2 parent links: a -> b -> a"),
    ]
    parents, problems = check_links(rows[:-1], {"o": "u"})
    rows_found, table_problems = check_links_table(pd.DataFrame(rows))
    for found in (problems, table_problems):
        assert [
            (p.kind, p.node_id, p.parent_id, p.conversation_id, p.message)
            for p in found
        ] == expected
    assert parents == {
        "r": None,
        "s": None,
        "m": None,
        "x": None,
        "a": None,
        "b": "a",
        "h": "b",
    }
    assert rows_found.tolist() == [-1, -1, -1, -1, -1, 4, 5, -1]
