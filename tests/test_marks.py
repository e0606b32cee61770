"""The branch marks' two forms give one answer.

`mark_tree` marks one graph (the one-tree path), `mark_tree_table` a whole nodes
table (the `Forest`). On random forests, with the source's own `active` for
some trees and not others, and random notes, every node gets the same
`active`, `note` and `preferred` from both.
"""

from __future__ import annotations

from collections import defaultdict

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from convgraph.contract import NODE_ATTRIBUTES
from convgraph.links.pointer_jumping import parent_rows_of
from convgraph.model.marks import mark_tree_table
from convgraph.model.tree import ConversationTree
from convgraph.sources.notes import NodeNote
from tests.helpers import examples

ACTIVE = st.sampled_from([None, True, False])


@st.composite
def marked_forests(draw: st.DrawFn) -> tuple[list[dict], dict[str, NodeNote]]:
    """Rows of a random forest in log order (each parent an earlier node of
    its tree, or none), `active` given by the source for some trees, and
    notes on some nodes."""
    count = draw(st.integers(1, 30))
    trees = draw(st.lists(st.integers(0, 3), min_size=count, max_size=count))
    says_active = draw(st.sets(st.integers(0, 3)))
    earlier: dict[int, list[str]] = defaultdict(list)
    rows = []
    for index, tree in enumerate(trees):
        node = f"n{index}"
        parent = draw(st.sampled_from([None, *earlier[tree]]))
        row = dict.fromkeys(NODE_ATTRIBUTES)
        row.update(id=node, tree_id=f"t{tree}", parent_id=parent)
        row["active"] = draw(ACTIVE) if tree in says_active else None
        rows.append(row)
        earlier[tree].append(node)
    noted = draw(st.sets(st.sampled_from([row["id"] for row in rows])))
    notes = {
        node: NodeNote(
            draw(st.one_of(st.none(), st.text(max_size=5))), draw(st.booleans())
        )
        for node in sorted(noted)
    }
    return rows, notes


@settings(max_examples=examples(100), deadline=None)
@given(marked_forests())
def test_one_graph_and_the_whole_table_mark_alike(
    forest: tuple[list[dict], dict[str, NodeNote]],
) -> None:
    rows, notes = forest
    table = pd.DataFrame(rows, columns=["id", "tree_id", "parent_id", *NODE_ATTRIBUTES])
    parent_rows = parent_rows_of(table["id"], table["parent_id"])
    marked = mark_tree_table(table, parent_rows, notes)
    from_table = {
        node: (active, note, preferred)
        for node, active, note, preferred in zip(
            marked["id"],
            marked["active"].tolist(),
            marked["note"].tolist(),
            marked["preferred"].tolist(),
            strict=True,
        )
    }

    from_graphs = {}
    trees: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        trees[row["tree_id"]].append(dict(row))
    for tree_id, records in trees.items():
        parents = {record["id"]: record["parent_id"] for record in records}
        graph = ConversationTree.from_records(records, parents, tree_id, notes=notes)
        for node, data in graph.nodes(data=True):
            from_graphs[node] = (data["active"], data["note"], data["preferred"])
    assert from_graphs == from_table


def test_a_tree_without_its_own_marks_is_active_to_its_last_node() -> None:
    # t says which branch is current; u does not: its last node's path is.
    rows = [
        ("r", "t", None, True),
        ("a", "t", "r", None),
        ("b", "t", "r", True),
        ("s", "u", None, None),
        ("c", "u", "s", None),
        ("d", "u", "s", None),
    ]
    table = pd.DataFrame(
        [
            {**dict.fromkeys(NODE_ATTRIBUTES), "id": i, "tree_id": t, "parent_id": p}
            | {"active": active}
            for i, t, p, active in rows
        ]
    )
    marked = mark_tree_table(table, parent_rows_of(table["id"], table["parent_id"]))
    assert marked["active"].tolist() == [True, False, True, True, False, True]
