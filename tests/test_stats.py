"""The statistics tables: exact answers on the four scenarios, real dtypes,
deep and wide forests, and a property test that the vectorized table path
agrees with the graph operations of `convgraph.model.tree` on random forests."""

from __future__ import annotations

import json
import sqlite3
import tempfile
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from convgraph.analysis.stats import (
    branch_table,
    conversation_table,
    edge_table,
    node_table,
    summary,
    summary_table,
)
from convgraph.cli.tables import PRIORITY
from convgraph.contract import (
    BRANCH_COLUMNS,
    CACHE_ATTRIBUTES,
    CONVERSATION_COLUMNS,
    NODE_ATTRIBUTES,
)
from convgraph.links.pointer_jumping import (
    climb,
    nearest_marked,
    path_totals,
    reaches_root,
    root_pointers,
)
from convgraph.model import tree as operations
from convgraph.model.forest import Forest
from tests.databases import add_response, legacy_database
from tests.helpers import examples, read_forest, run, run_on_a_terminal

ATTRIBUTES = NODE_ATTRIBUTES


def nodes_frame(rows: list[dict]) -> pd.DataFrame:
    """A nodes table in the shape a source returns, from partial rows (in log
    order); `tree_id` defaults to `conversation_id`."""
    full = []
    for row in rows:
        record = dict.fromkeys(("id", "tree_id", "parent_id", *ATTRIBUTES))
        record["source"] = "responses"
        record.update(row)
        record["tree_id"] = record["tree_id"] or record["conversation_id"]
        full.append(record)
    return pd.DataFrame(full, columns=["id", "tree_id", "parent_id", *ATTRIBUTES])


def at(second: int) -> pd.Timestamp:
    return pd.Timestamp(f"2025-09-27T10:{second // 60:02d}:{second % 60:02d}Z")


# -- the four scenarios (docs/design.md#the-four-scenarios) ---------------


@pytest.fixture
def seed_forest(seed_db: Path) -> Forest:
    return read_forest(seed_db, text=False)


def test_conversation_table_of_the_seed(seed_forest: Forest) -> None:
    table = conversation_table(seed_forest)
    assert list(table.columns) == list(CONVERSATION_COLUMNS)
    expected = pd.DataFrame(
        {
            "tree_id": ["linear", "branch", "complex", "multiple-roots"],
            "name": [
                "prompt linear-root",
                "prompt branch-root",
                "prompt complex-root",
                "prompt multiple-roots-root1",
            ],
            "nodes": [4, 3, 7, 6],
            "roots": [1, 1, 1, 2],
            "leaves": [1, 2, 4, 2],
            "max_depth": [3, 1, 2, 2],
            # The start of multiple-roots is a branch point too: its two
            # roots are alternatives, with root1, a, root2 and x one child each.
            "branch_points": [0, 1, 3, 1],
            "branching_factor_avg": [1.0, 2.0, 2.0, 6 / 5],
            "branching_factor_max": [1, 2, 2, 2],
            "first_datetime": [at(0), at(4), at(7), at(14)],
            "last_datetime": [at(3), at(6), at(13), at(19)],
            "models": [["echo"]] * 4,
            "input_tokens": [46, 33, 91, 75],
            "output_tokens": [86, 63, 161, 135],
            "duration_ms": [1000, 600, 2800, 2100],
            # No tool was called (issue 23: the tree's calls and tools).
            "tool_calls": [0, 0, 0, 0],
            "tools": [[]] * 4,
            # The active path runs to each tree's last logged node.
            "active_path_length": [4, 2, 3, 3],
            "abandoned_branches": [0, 1, 3, 1],
            # Every node off the active path spent its tokens on a branch
            # left: branch-b; complex-b, c, d and f; root1, a and b.
            "abandoned_input_tokens": [0, 11, 51, 33],
            "abandoned_output_tokens": [0, 21, 91, 63],
            "abandoned_share": [0.0, 32 / 96, 142 / 252, 96 / 210],
        }
    )
    expected = expected.astype(
        {
            "abandoned_share": "Float64",
            "abandoned_input_tokens": "Int64",
            "abandoned_output_tokens": "Int64",
            "tree_id": "str",
            "name": object,
            "first_datetime": "datetime64[us, UTC]",
            "last_datetime": "datetime64[us, UTC]",
            "input_tokens": "Int64",
            "output_tokens": "Int64",
            "duration_ms": "Int64",
            "tool_calls": "Int64",
        }
    )
    pd.testing.assert_frame_equal(table, expected)


def test_node_table_of_the_complex_tree(seed_forest: Forest) -> None:
    table = node_table(seed_forest)
    complex_tree = table[table["tree_id"] == "complex"]
    assert complex_tree["id"].tolist() == [
        f"complex-{node}" for node in ["root", "b", "c", "d", "e", "f", "g"]
    ]
    assert complex_tree["depth"].tolist() == [0, 1, 2, 2, 1, 2, 2]
    assert complex_tree["children"].tolist() == [2, 2, 0, 0, 2, 0, 0]
    assert complex_tree["is_root"].tolist() == [True] + [False] * 6
    assert complex_tree["is_leaf"].tolist() == [False, False, True, True] + [
        False,
        True,
        True,
    ]
    assert complex_tree["parent_id"].tolist()[1:] == [
        f"complex-{node}" for node in ["root", "b", "b", "root", "e", "e"]
    ]
    assert pd.isna(complex_tree["parent_id"].iloc[0])
    assert complex_tree["datetime_utc"].tolist() == [at(s) for s in range(7, 14)]
    assert complex_tree["input_tokens"].tolist() == list(range(10, 17))


def test_node_table_dtypes(seed_forest: Forest) -> None:
    table = node_table(seed_forest)
    dtypes = table.dtypes
    assert str(dtypes["datetime_utc"]) == "datetime64[us, UTC]"
    for column in ("input_tokens", "output_tokens", "duration_ms"):
        assert dtypes[column] == pd.Int64Dtype()
    for column in ("tree_id", "conversation_id", "model", "source"):
        assert isinstance(dtypes[column], pd.CategoricalDtype), column
    assert list(table["model"].cat.categories) == ["echo"]
    assert dtypes["depth"] == np.int64
    assert dtypes["children"] == np.int64
    assert dtypes["is_root"] == np.dtype(bool) and dtypes["is_leaf"] == np.dtype(bool)
    # The forest's own table is left as it was.
    assert (
        seed_forest.nodes["datetime_utc"].iloc[0] == "2025-09-27T10:00:00.000000+00:00"
    )


def test_edge_table_of_the_seed(seed_forest: Forest) -> None:
    table = edge_table(seed_forest)
    assert list(table.columns) == ["parent", "child", "tree_id"]
    assert list(table.columns) == list(seed_forest.edges.columns)
    assert isinstance(table["tree_id"].dtype, pd.CategoricalDtype)
    assert len(table) == 15
    branch = table[table["tree_id"] == "branch"]
    assert branch[["parent", "child"]].values.tolist() == [
        ["branch-root", "branch-b"],
        ["branch-root", "branch-c"],
    ]
    roots2 = table[table["tree_id"] == "multiple-roots"]
    assert roots2["child"].tolist() == [
        "multiple-roots-a",
        "multiple-roots-b",
        "multiple-roots-x",
        "multiple-roots-y",
    ]


def test_branch_table_of_the_complex_tree(seed_forest: Forest) -> None:
    table = branch_table(seed_forest)
    assert list(table.columns) == list(BRANCH_COLUMNS)
    complex_branches = table[table["tree_id"] == "complex"].reset_index(drop=True)
    expected = pd.DataFrame(
        {
            "tree_id": pd.Categorical(["complex"] * 4),
            "leaf_id": ["complex-c", "complex-d", "complex-f", "complex-g"],
            "root_id": ["complex-root"] * 4,
            "length": [3, 3, 3, 3],
            # Tokens and durations of the nodes on each path (index i of the
            # tree logged 10 + i input tokens, 20 + i output, 100 (i + 1) ms).
            "input_tokens": pd.array([33, 34, 39, 40], dtype="Int64"),
            "output_tokens": pd.array([63, 64, 69, 70], dtype="Int64"),
            "duration_ms": pd.array([600, 700, 1200, 1300], dtype="Int64"),
            "models": [["echo"]] * 4,
        }
    ).astype({"leaf_id": "str", "root_id": "str"})
    complex_branches["tree_id"] = complex_branches[
        "tree_id"
    ].cat.remove_unused_categories()
    pd.testing.assert_frame_equal(complex_branches, expected)
    # One branch per leaf in the whole forest: 1 + 2 + 4 + 2.
    assert len(table) == 9
    linear = table[table["tree_id"] == "linear"].iloc[0]
    assert (linear["leaf_id"], linear["root_id"], linear["length"]) == (
        "linear-c",
        "linear-root",
        4,
    )


# -- models, missing figures, depth and width ------------------------------


def test_branch_models_in_the_order_the_branch_used_them() -> None:
    # The forest used m1 before m2 (tree "early"), but tree "late" uses m2
    # first; a model that comes back later is not listed twice.
    forest = Forest(
        nodes_frame(
            [
                {"id": "e0", "conversation_id": "early", "model": "m1"},
                {
                    "id": "e1",
                    "conversation_id": "early",
                    "model": "m2",
                    "parent_id": "e0",
                },
                {"id": "l0", "conversation_id": "late", "model": "m2"},
                {
                    "id": "l1",
                    "conversation_id": "late",
                    "model": None,
                    "parent_id": "l0",
                },
                {
                    "id": "l2",
                    "conversation_id": "late",
                    "model": "m1",
                    "parent_id": "l1",
                },
                {
                    "id": "l3",
                    "conversation_id": "late",
                    "model": "m2",
                    "parent_id": "l2",
                },
                {
                    "id": "l4",
                    "conversation_id": "late",
                    "model": "m3",
                    "parent_id": "l3",
                },
                {
                    "id": "l5",
                    "conversation_id": "late",
                    "model": "m3",
                    "parent_id": "l0",
                },
            ]
        ),
        {},
    )
    branches = branch_table(forest)
    assert branches["leaf_id"].tolist() == ["e1", "l4", "l5"]
    assert branches["models"].tolist() == [
        ["m1", "m2"],
        ["m2", "m1", "m3"],
        ["m2", "m3"],
    ]
    conversations = conversation_table(forest)
    assert conversations["models"].tolist() == [["m1", "m2"], ["m2", "m1", "m3"]]


def test_more_models_than_one_word_of_bits() -> None:
    # 150 models need three 64-bit words per node in the bit sets.
    count = 150
    rows = [
        {
            "id": f"n{i}",
            "conversation_id": "wide",
            "model": f"model-{(i * 7) % count}",
            "parent_id": f"n{i - 1}" if i else None,
        }
        for i in range(count)
    ]
    rows.append(
        {
            "id": "side",
            "conversation_id": "wide",
            "model": "model-149",
            "parent_id": "n0",
        }
    )
    branches = branch_table(Forest(nodes_frame(rows), {}))
    assert branches["leaf_id"].tolist() == [f"n{count - 1}", "side"]
    assert branches["models"].iloc[0] == [
        f"model-{(i * 7) % count}" for i in range(count)
    ]
    assert branches["models"].iloc[1] == ["model-0", "model-149"]


def test_missing_figures_are_na_not_zero() -> None:
    forest = Forest(
        nodes_frame(
            [
                {"id": "r", "conversation_id": "c", "input_tokens": None},
                {
                    "id": "a",
                    "conversation_id": "c",
                    "parent_id": "r",
                    "input_tokens": 5,
                },
                {
                    "id": "b",
                    "conversation_id": "c",
                    "parent_id": "r",
                    "input_tokens": 0,
                },
                {"id": "lone", "conversation_id": "d"},
            ]
        ),
        {"c": "named"},
    )
    branches = branch_table(forest)
    assert branches["input_tokens"].tolist() == [5, 0, pd.NA]
    assert branches["duration_ms"].isna().all()
    assert branches["models"].tolist() == [[], [], []]
    conversations = conversation_table(forest)
    assert conversations["input_tokens"].tolist() == [5, pd.NA]
    assert conversations["name"].tolist() == ["named", None]
    assert conversations["first_datetime"].isna().all()
    assert str(conversations["first_datetime"].dtype) == "datetime64[us, UTC]"
    assert conversations.loc[1, ["nodes", "roots", "leaves", "max_depth"]].tolist() == [
        1,
        1,
        1,
        0,
    ]
    assert conversations.loc[1, "branching_factor_avg"] == 0.0
    assert conversations.loc[1, "branching_factor_max"] == 0


def test_times_with_and_without_offsets_and_unreadable_ones() -> None:
    forest = Forest(
        nodes_frame(
            [
                {
                    "id": "a",
                    "conversation_id": "c",
                    "datetime_utc": "2025-09-27T12:00:00+02:00",
                },
                {
                    "id": "b",
                    "conversation_id": "c",
                    "datetime_utc": "2025-09-27T09:30:00",
                },
                {"id": "d", "conversation_id": "c", "datetime_utc": "not a time"},
            ]
        ),
        {},
    )
    nodes = node_table(forest)
    assert nodes["datetime_utc"].tolist()[:2] == [
        pd.Timestamp("2025-09-27T10:00:00Z"),
        pd.Timestamp("2025-09-27T09:30:00Z"),
    ]
    assert pd.isna(nodes["datetime_utc"].iloc[2])
    row = conversation_table(forest).iloc[0]
    assert row["first_datetime"] == pd.Timestamp("2025-09-27T09:30:00Z")
    assert row["last_datetime"] == pd.Timestamp("2025-09-27T10:00:00Z")


def test_a_100000_deep_chain() -> None:
    count = 100_000
    ids = [f"n{i}" for i in range(count)]
    nodes = pd.DataFrame(
        {
            "id": ids,
            "tree_id": "deep",
            "parent_id": [None, *ids[:-1]],
            "conversation_id": "deep",
            "prompt": None,
            "system": None,
            "response": None,
            "model": "m",
            "datetime_utc": None,
            "input_tokens": range(count),
            "output_tokens": 1,
            "duration_ms": None,
            "source": "responses",
        }
    )
    forest = Forest(nodes, {})
    row = conversation_table(forest).iloc[0]
    assert (row["nodes"], row["max_depth"], row["leaves"]) == (count, count - 1, 1)
    branch = branch_table(forest).iloc[0]
    assert (branch["leaf_id"], branch["root_id"], branch["length"]) == (
        "n99999",
        "n0",
        count,
    )
    assert branch["input_tokens"] == count * (count - 1) // 2
    assert branch["output_tokens"] == count
    assert branch["models"] == ["m"]
    assert node_table(forest)["depth"].iloc[-1] == count - 1


def test_path_totals_and_nearest_marked() -> None:
    parents = np.array([-1, 0, 1, 1, -1, 4])
    assert path_totals(parents, np.array([1, 2, 4, 8, 16, 32])).tolist() == [
        1,
        3,
        7,
        11,
        16,
        48,
    ]
    flags = np.array([[1], [2], [1], [4], [8], [8]], dtype=np.uint64)
    assert path_totals(parents, flags, np.bitwise_or)[:, 0].tolist() == [
        1,
        3,
        3,
        7,
        8,
        8,
    ]
    marked = np.array([False, True, False, False, False, False])
    assert nearest_marked(parents, marked).tolist() == [-1, 1, 1, 1, -1, -1]
    assert (
        path_totals(np.array([], dtype=np.int64), np.array([], dtype=np.int64)).size
        == 0
    )


def test_roots_depths_and_cycles_by_the_same_climb() -> None:
    # 0 <- 1 <- 2, 3 alone, 4 <- 5 <- 4 a cycle with 6 hanging off it.
    parents = np.array([-1, 0, 1, -1, 5, 4, 5])
    roots, depths = root_pointers(parents[:4])
    assert (roots.tolist(), depths.tolist()) == ([0, 0, 0, 3], [0, 1, 2, 0])
    assert reaches_root(parents).tolist() == [True] * 4 + [False] * 3
    # Marked nodes stop the climb: the totals leave them out.
    both = climb(parents[:4], np.array([1, 2, 3, 4]), marked=parents[:4] < 0)
    assert both.totals.tolist() == [0, 2, 5, 0]
    assert both.nearest.tolist() == [0, 0, 0, 3]
    marked_middle = climb(parents[:3], np.array([1, 2, 4]), marked=parents[:3] == 0)
    assert marked_middle.totals.tolist() == [1, 0, 4]
    assert marked_middle.nearest.tolist() == [-1, 1, 1]
    assert climb(parents).totals is None and climb(parents).nearest is None
    empty = root_pointers(np.array([], dtype=np.int64))
    assert [part.size for part in empty] == [0, 0]


def test_a_deep_chain_climbs_in_few_rounds() -> None:
    count = 100_000
    parents = np.arange(-1, count - 1)
    roots, depths = root_pointers(parents)
    assert (roots == 0).all()
    assert depths.tolist() == list(range(count))
    assert reaches_root(parents).all()


def test_the_message_store_written_by_llm(llm_fork_db: dict) -> None:
    forest = read_forest(llm_fork_db["path"], text=False)
    table = conversation_table(forest)
    assert table["tree_id"].tolist() == [llm_fork_db["thread"]]
    row = table.iloc[0]
    assert [
        row[key] for key in ("nodes", "roots", "leaves", "max_depth", "branch_points")
    ] == [
        5,
        1,
        2,
        2,
        1,
    ]
    assert row["models"] == ["echo"]
    assert row["first_datetime"] < row["last_datetime"]
    first, second, third = llm_fork_db["turns"]
    fork_first, fork_second = llm_fork_db["fork_turns"]
    branches = branch_table(forest)
    assert branches["leaf_id"].tolist() == [third, fork_second]
    assert branches["root_id"].tolist() == [first, first]
    assert branches["length"].tolist() == [3, 3]
    nodes = node_table(forest).set_index("id")
    assert nodes.loc[fork_first, "conversation_id"] == llm_fork_db["fork"]
    assert nodes.loc[first, "children"] == 2


# -- the table path agrees with the graph operations --------------------


def parse_time(text: str | None) -> datetime | None:
    if text is None:
        return None
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def total(values: list) -> int | None:
    present = [value for value in values if value is not None]
    return sum(present) if present else None


def plain(value):
    return None if value is pd.NA or value is pd.NaT or value is None else value


def assert_summary_agrees_with_table(forest: Forest) -> None:
    """A conversation's statistics in their two forms agree: `summary` of each
    tree's graph, and its row of `summary_table` the whole table (with
    the links the forest checked, or found again from the ids), each figure
    also checked against the nodes themselves."""
    conversations = conversation_table(forest)
    pd.testing.assert_frame_equal(
        summary_table(forest.nodes, forest.names), conversations
    )
    conversations = conversations.set_index("tree_id")
    assert list(conversations.index) == forest.tree_ids
    for graph in forest.trees():
        row = conversations.loc[graph.graph["tree_id"]]
        figures = summary(graph)
        assert list(figures) == ["tree_id", *conversations.columns]
        for key, value in figures.items():
            if key in ("first_datetime", "last_datetime"):
                # The summary keeps llm's text, the table reads it as a time.
                assert plain(row[key]) == parse_time(value), key
            elif key != "tree_id":
                assert plain(row[key]) == value, key
        # The start counts where the tree has several roots: its roots are
        # its children (docs/design.md#depth-roots-and-branching).
        counts = [degree for _, degree in graph.out_degree() if degree > 0]
        starts = sum(1 for _, degree in graph.in_degree() if degree == 0)
        counts += [starts] if starts > 1 else []
        assert row["branch_points"] == sum(count > 1 for count in counts)
        assert row["branching_factor_max"] == max(counts, default=0)
        assert row["branching_factor_avg"] == pytest.approx(
            sum(counts) / len(counts) if counts else 0.0
        )
        attributes = [graph.nodes[node] for node in graph]
        for column in ("input_tokens", "output_tokens", "duration_ms", "tool_calls"):
            assert plain(row[column]) == total([a[column] for a in attributes])
        # The tools, each once, in the order the tree first called them.
        called = [name for a in attributes for name in (a["tools"] or "").split(", ")]
        assert row["tools"] == list(dict.fromkeys(name for name in called if name))
        times = [parse_time(a["datetime_utc"]) for a in attributes]
        times = [time for time in times if time is not None]
        assert plain(row["first_datetime"]) == (min(times) if times else None)
        assert plain(row["last_datetime"]) == (max(times) if times else None)


def assert_tables_agree_with_graphs(forest: Forest) -> None:
    """The node, edge and branch tables agree with the tree operations on
    each tree's graph."""
    nodes = node_table(forest).set_index("id")
    edges = edge_table(forest)
    branches = branch_table(forest)
    assert len(nodes) == len(forest.nodes)
    for graph in forest.trees():
        tree_id = graph.graph["tree_id"]
        own = nodes[nodes["tree_id"] == tree_id]
        assert list(own.index) == list(graph.nodes)
        assert own["depth"].to_dict() == operations.depths(graph)
        assert own.index[own["is_root"]].tolist() == operations.roots(graph)
        assert own.index[own["is_leaf"]].tolist() == operations.leaves(graph)
        assert own["children"].to_dict() == dict(graph.out_degree())

        own_edges = edges[edges["tree_id"] == tree_id]
        expected_edges = [
            (operations.parent(graph, node), node)
            for node in graph
            if operations.parent(graph, node) is not None
        ]
        assert (
            list(zip(own_edges["parent"], own_edges["child"], strict=True))
            == expected_edges
        )

        own_branches = branches[branches["tree_id"] == tree_id]
        paths = operations.branches(graph)
        assert own_branches["leaf_id"].tolist() == [path[-1] for path in paths]
        assert own_branches["root_id"].tolist() == [path[0] for path in paths]
        assert own_branches["length"].tolist() == [len(path) for path in paths]
        for (_, branch), path in zip(own_branches.iterrows(), paths, strict=True):
            on_path = [graph.nodes[node] for node in path]
            for column in ("input_tokens", "output_tokens", "duration_ms"):
                assert plain(branch[column]) == total([a[column] for a in on_path])
            assert branch["models"] == list(
                dict.fromkeys(a["model"] for a in on_path if a["model"])
            )


MODELS = st.sampled_from([None, "", "m1", "m2", "m3"])
FIGURES = st.one_of(st.none(), st.integers(0, 1000))
#: A node's tools: the names joined by ", " (None where it called none).
TOOLS = st.sampled_from([None, "shout", "python", "shout, python", "search, shout"])
TIME_FORMATS = ["{}+00:00", "{}", "{}+02:00", None]


@st.composite
def random_nodes(draw: st.DrawFn) -> list[dict]:
    """Rows of a random forest in log order, links mostly good: to an earlier
    node of the same tree, else none; sometimes broken (a missing parent,
    any node at all: itself, a later one, one in another tree, a cycle)."""
    trees = draw(st.integers(1, 4))
    count = draw(st.integers(1, 30))
    rows = []
    for index in range(count):
        tree = f"t{draw(st.integers(0, trees - 1))}"
        same_tree = [row["id"] for row in rows if row["conversation_id"] == tree]
        kind = draw(
            st.sampled_from(["root", "earlier", "earlier", "earlier", "any", "missing"])
        )
        parent = None
        if kind == "earlier" and same_tree:
            parent = draw(st.sampled_from(same_tree))
        elif kind == "any":
            parent = f"n{draw(st.integers(0, count - 1))}"
        elif kind == "missing":
            parent = "ghost"
        time_format = draw(st.sampled_from(TIME_FORMATS))
        stamp = f"2025-09-27T10:{index // 60:02d}:{index % 60:02d}"
        rows.append(
            {
                "id": f"n{index}",
                "conversation_id": tree,
                "parent_id": parent,
                "model": draw(MODELS),
                "datetime_utc": time_format.format(stamp) if time_format else None,
                "input_tokens": draw(FIGURES),
                "output_tokens": draw(FIGURES),
                "duration_ms": draw(FIGURES),
                "tool_calls": draw(st.one_of(st.none(), st.integers(0, 5))),
                "tools": draw(TOOLS),
            }
        )
    return rows


#: A forest whose trees start more than once: t0 twice (two chains), t1
#: three times (roots without links), t2 once; tried on every run.
SEVERAL_STARTS = [
    {"id": "n0", "conversation_id": "t0"},
    {"id": "n1", "conversation_id": "t0", "parent_id": "n0"},
    {"id": "n2", "conversation_id": "t1"},
    {"id": "n3", "conversation_id": "t0"},
    {"id": "n4", "conversation_id": "t0", "parent_id": "n3"},
    {"id": "n5", "conversation_id": "t1"},
    {"id": "n6", "conversation_id": "t1"},
    {"id": "n7", "conversation_id": "t2"},
    {"id": "n8", "conversation_id": "t2", "parent_id": "n7"},
    {"id": "n9", "conversation_id": "t2", "parent_id": "n7"},
]


@settings(max_examples=examples(75), deadline=None)
@given(random_nodes())
@example(SEVERAL_STARTS)
def test_summary_and_conversation_table_of_agree(rows: list[dict]) -> None:
    # The one property test of the pair: one tree's graph, the whole table.
    names = {"t0": "first tree", "t2": None}
    assert_summary_agrees_with_table(Forest(nodes_frame(rows), names))


@settings(max_examples=examples(75), deadline=None)
@given(random_nodes())
def test_tables_agree_with_graph_operations_on_random_forests(rows: list[dict]) -> None:
    names = {"t0": "first tree", "t2": None}
    assert_tables_agree_with_graphs(Forest(nodes_frame(rows), names))


@settings(
    max_examples=examples(20),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(random_nodes())
def test_tables_agree_with_graph_operations_on_random_databases(
    rows: list[dict],
) -> None:
    # The same forests written as legacy logs.db files and read back.
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "logs.db"
        conn: sqlite3.Connection = legacy_database(path)
        for row in rows:
            add_response(
                conn,
                row["id"],
                row["conversation_id"],
                f"prompt {row['id']}",
                parent=row["parent_id"],
                model=row["model"],
                datetime_utc=row["datetime_utc"],
                input_tokens=row["input_tokens"],
                output_tokens=row["output_tokens"],
                duration_ms=row["duration_ms"],
                name=f"name of {row['conversation_id']}",
            )
        conn.commit()
        conn.close()
        forest = read_forest(path, text=False)
    assert len(forest) == len(rows)
    assert_summary_agrees_with_table(forest)
    assert_tables_agree_with_graphs(forest)


# -- the start of a tree with several roots ---------------------------------


def test_several_starts_count_as_one_branch_point_each() -> None:
    table = conversation_table(Forest(nodes_frame(SEVERAL_STARTS), {}))
    figures = table.set_index("tree_id")[
        ["roots", "branch_points", "branching_factor_avg", "branching_factor_max"]
    ]
    assert figures.to_dict("index") == {
        # Two chains: n0 and n3 one child each, the start two roots.
        "t0": {
            "roots": 2,
            "branch_points": 1,
            "branching_factor_avg": 4 / 3,
            "branching_factor_max": 2,
        },
        # Three roots without links: the start alone has children.
        "t1": {
            "roots": 3,
            "branch_points": 1,
            "branching_factor_avg": 3.0,
            "branching_factor_max": 3,
        },
        # One root: the start is no branch point, n7 (two children) is.
        "t2": {
            "roots": 1,
            "branch_points": 1,
            "branching_factor_avg": 2.0,
            "branching_factor_max": 2,
        },
    }
    # Branches start at every root.
    branches = branch_table(Forest(nodes_frame(SEVERAL_STARTS), {}))
    assert branches[branches["tree_id"] == "t0"]["root_id"].tolist() == ["n0", "n3"]


def test_stats_of_a_regenerated_first_answer(tmp_path: Path) -> None:
    import json

    from tests.chat_exports import chatgpt_branches, write_json

    export = write_json(tmp_path / "conversations.json", [chatgpt_branches()])
    (row,) = json.loads(run_stats("--db", str(export), "--json").stdout)
    figures = ["nodes", "roots", "leaves", "max_depth", "branch_points"]
    # The start (a1 and a1b) and a1b (a2 and a2e), two alternatives each.
    assert [row[key] for key in figures] == [4, 2, 3, 1, 2]
    assert (row["branching_factor_avg"], row["branching_factor_max"]) == (2.0, 2)


def test_stats_of_a_second_start_logged_by_llm(tmp_path: Path) -> None:
    import json

    from tests.test_tree import llm_two_starts

    built = llm_two_starts(tmp_path)
    (row,) = json.loads(run_stats("--db", str(built["path"]), "--json").stdout)
    assert row["tree_id"] == built["thread"]
    figures = ["nodes", "roots", "leaves", "max_depth", "branch_points"]
    assert [row[key] for key in figures] == [3, 2, 2, 1, 1]
    # The first turn one child, the start two roots.
    assert (row["branching_factor_avg"], row["branching_factor_max"]) == (1.5, 2)


# -- convgraph stats --------------------------------------------------------


run_stats = partial(run, "stats")


SEED_TABLE = """\
tree_id         name                         nodes  roots  leaves  max_depth  branch_points  branching_factor_avg  branching_factor_max  first_datetime    last_datetime     models  input_tokens  output_tokens  duration_ms  tool_calls  tools  active_path_length  abandoned_branches  abandoned_input_tokens  abandoned_output_tokens  abandoned_share
linear          prompt linear-root               4      1       1          3              0                  1.00                     1  2025-09-27 10:00  2025-09-27 10:00  echo              46             86         1000           0                          4                   0                       0                        0               0%
branch          prompt branch-root               3      1       2          1              1                  2.00                     2  2025-09-27 10:00  2025-09-27 10:00  echo              33             63          600           0                          2                   1                      11                       21              33%
complex         prompt complex-root              7      1       4          2              3                  2.00                     2  2025-09-27 10:00  2025-09-27 10:00  echo              91            161         2800           0                          3                   3                      51                       91              56%
multiple-roots  prompt multiple-roots-root1      6      2       2          2              1                  1.20                     2  2025-09-27 10:00  2025-09-27 10:00  echo              75            135         2100           0                          3                   1                      33                       63              46%
"""


def test_stats_table_is_aligned_for_a_person(seed_db: Path) -> None:
    from tests.helpers import file_digest

    before = file_digest(seed_db)
    result = run_stats("--db", str(seed_db))
    assert result.exit_code == 0, result.output
    assert result.stdout == SEED_TABLE
    assert result.stderr == ""  # no progress bar when stderr is not a terminal
    assert file_digest(seed_db) == before


def test_stats_json_has_the_column_names(seed_db: Path) -> None:
    import json

    result = run_stats("--db", str(seed_db), "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [list(row) for row in rows] == [list(CONVERSATION_COLUMNS)] * 4
    assert rows[2] == {
        "tree_id": "complex",
        "name": "prompt complex-root",
        "nodes": 7,
        "roots": 1,
        "leaves": 4,
        "max_depth": 2,
        "branch_points": 3,
        "branching_factor_avg": 2.0,
        "branching_factor_max": 2,
        "first_datetime": "2025-09-27T10:00:07+00:00",
        "last_datetime": "2025-09-27T10:00:13+00:00",
        "models": ["echo"],
        "input_tokens": 91,
        "output_tokens": 161,
        "duration_ms": 2800,
        "tool_calls": 0,
        "tools": [],
        "active_path_length": 3,
        "abandoned_branches": 3,
        "abandoned_input_tokens": 51,
        "abandoned_output_tokens": 91,
        "abandoned_share": 142 / 252,
    }


def test_stats_jsonl_is_one_object_a_line(seed_db: Path) -> None:
    import json

    result = run_stats("--db", str(seed_db), "--nl")
    lines = result.stdout.splitlines()
    assert [json.loads(line)["tree_id"] for line in lines] == [
        "linear",
        "branch",
        "complex",
        "multiple-roots",
    ]
    assert json.loads(lines[3])["roots"] == 2


def test_stats_csv_reads_back(seed_db: Path) -> None:
    import csv
    import io

    result = run_stats("--db", str(seed_db), "--csv")
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert list(rows[0]) == list(CONVERSATION_COLUMNS)
    assert rows[1] == {
        "tree_id": "branch",
        "name": "prompt branch-root",
        "nodes": "3",
        "roots": "1",
        "leaves": "2",
        "max_depth": "1",
        "branch_points": "1",
        "branching_factor_avg": "2.0",
        "branching_factor_max": "2",
        "first_datetime": "2025-09-27T10:00:04+00:00",
        "last_datetime": "2025-09-27T10:00:06+00:00",
        "models": "echo",
        "input_tokens": "33",
        "output_tokens": "63",
        "duration_ms": "600",
        "tool_calls": "0",
        "tools": "",
        "active_path_length": "2",
        "abandoned_branches": "1",
        "abandoned_input_tokens": "11",
        "abandoned_output_tokens": "21",
        "abandoned_share": str(32 / 96),
    }
    frame = pd.read_csv(io.StringIO(result.stdout))
    assert frame["nodes"].tolist() == [4, 3, 7, 6]


def test_stats_of_named_conversations_in_the_order_named(seed_db: Path) -> None:
    import json

    result = run_stats("--db", str(seed_db), "--json", "complex", "linear", "complex")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [(row["tree_id"], row["nodes"]) for row in rows] == [
        ("complex", 7),
        ("linear", 4),
    ]


def test_stats_of_a_fork_thread_is_its_whole_tree(llm_fork_db: dict) -> None:
    import json

    result = run_stats("--db", str(llm_fork_db["path"]), "--json", llm_fork_db["fork"])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)
    assert row["tree_id"] == llm_fork_db["thread"]
    assert (row["nodes"], row["leaves"], row["branch_points"]) == (5, 2, 1)
    assert row["models"] == ["echo"]


def test_stats_errors_are_one_line_and_status_2(seed_db: Path, tmp_path: Path) -> None:
    unknown = run_stats("--db", str(seed_db), "linear", "nope", expect=2)
    assert unknown.exit_code == 2
    assert unknown.stderr == "Error: no conversation with id 'nope'\n"
    assert unknown.stdout == ""
    missing = run_stats("--db", str(tmp_path / "none.db"), expect=2)
    assert missing.exit_code == 2
    assert missing.stderr.startswith("Error: no database file at ")
    garbage = tmp_path / "garbage.db"
    garbage.write_text("not sqlite at all " * 100)
    broken = run_stats("--db", str(garbage), expect=2)
    assert broken.exit_code == 2
    assert len(broken.stderr.splitlines()) == 1
    bad_format = run_stats("--db", str(seed_db), "--json", "--csv", expect=2)
    assert bad_format.exit_code == 2


def test_stats_of_an_empty_database(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    legacy_database(path).close()
    assert run_stats("--db", str(path)).stdout == ""
    assert run_stats("--db", str(path), "--json").stdout == "[]\n"
    csv_text = run_stats("--db", str(path), "--csv").stdout
    assert csv_text == ",".join(CONVERSATION_COLUMNS) + "\n"


def test_the_command_module_imports_neither_pandas_nor_networkx() -> None:
    import subprocess
    import sys

    code = (
        "import sys, convgraph.cli.stats;"
        " print(sorted({'pandas', 'networkx', 'numpy'} & set(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


EXAMPLE_AT_80 = """\
tree_id                      name                       nodes  leaves  max_depth
01jb0sourdough0000000000000  Starting a sourdough sta…      7       2          4
01jb1haiku000000000000000    Autumn haiku                   3       2          1
01jb2hashmap0000000000000    How hash maps work             7       4          2
01jb3translate00000000000    Good morning, translated       6       2          2
"""

EXAMPLE_AT_200 = """\
tree_id                      name                          nodes  roots  leaves  max_depth  branch_points  first_datetime    last_datetime     models                                    tool_calls
01jb0sourdough0000000000000  Starting a sourdough starter      7      1       2          4              1  2025-09-27 09:01  2025-11-04 08:21  gpt-4o-mini, llama3.2                              0
01jb1haiku000000000000000    Autumn haiku                      3      1       2          1              1  2025-09-27 09:05  2025-09-27 09:07  claude-3.5-sonnet, gpt-4o-mini                     0
01jb2hashmap0000000000000    How hash maps work                7      1       4          2              3  2025-09-27 09:08  2025-09-27 09:14  gpt-4o-mini, llama3.2, claude-3.5-sonnet           0
01jb3translate00000000000    Good morning, translated          6      2       2          2              1  2025-09-27 09:15  2025-09-27 09:20  gpt-4o-mini, llama3.2                              0
"""


def stats_in_a_terminal(width: int, *args: object) -> str:
    """What `convgraph stats ARGS` prints with stdout on a pseudo-terminal
    `width` cells wide (its window size set as a terminal sets it), lines
    ending in "\\n"; stderr must stay empty."""
    import os

    environment = {key: value for key, value in os.environ.items()}
    environment.pop("COLUMNS", None)
    done = run_on_a_terminal("stats", *args, size=(24, width), env=environment)
    assert done.piped == b""
    assert done.status == 0
    return done.shown.decode().replace("\r\n", "\n")


@pytest.mark.parametrize(
    ("width", "table"), [(80, EXAMPLE_AT_80), (200, EXAMPLE_AT_200)]
)
def test_the_table_fits_the_terminal(width: int, table: str) -> None:
    from tests.helpers import ROOT

    example = ROOT / "examples" / "logs.db"
    shown = stats_in_a_terminal(width, "--db", example)
    assert shown == table
    assert max(map(len, shown.splitlines())) <= width
    # Piped, and in the formats for programs, every column.
    assert run_stats("--db", example).stdout.splitlines()[0].split() == list(
        CONVERSATION_COLUMNS
    )
    rows = json.loads(run_stats("--db", example, "--json").stdout)
    assert [list(row) for row in rows] == [list(CONVERSATION_COLUMNS)] * 4


def test_columns_chooses_in_every_format(seed_db: Path) -> None:
    chosen = ("--columns", "nodes,tree_id,tools")
    assert stats_in_a_terminal(20, "--db", seed_db, *chosen) == (
        "nodes  tree_id         tools\n"
        "    4  linear\n"
        "    3  branch\n"
        "    7  complex\n"
        "    6  multiple-roots\n"
    )
    rows = json.loads(run_stats("--db", seed_db, *chosen, "--json").stdout)
    assert rows[0] == {"nodes": 4, "tree_id": "linear", "tools": []}
    assert run_stats("--db", seed_db, *chosen, "--csv").stdout.splitlines()[:2] == [
        "nodes,tree_id,tools",
        "4,linear,",
    ]
    unknown = run_stats("--db", seed_db, "--columns", "nodes,colour", expect=2)
    assert unknown.stderr == (
        "Error: --columns: unknown column 'colour'; choose from "
        + ", ".join(c for c in PRIORITY if "cost" not in c and "spread" not in c)
        + "\n"
    )
    # A column an option adds is known with that option only: never a traceback.
    for column in ("cost_usd", "alternatives_spread"):
        alone = run_stats("--db", seed_db, "--columns", column, expect=2)
        assert alone.stderr.startswith(f"Error: --columns: unknown column '{column}';")
    # Every column, the two `--cost` adds and the one `--meaning` adds.
    assert set(PRIORITY) == {
        *CONVERSATION_COLUMNS,
        *CACHE_ATTRIBUTES,
        "cost_usd",
        "abandoned_cost_usd",
        "alternatives_spread",
    }


def test_missing_usage_is_json_null(tmp_path: Path) -> None:
    path = tmp_path / "no-usage.db"
    conn = legacy_database(path)
    add_response(conn, "r", "c", "hi", datetime_utc="2025-09-27T10:00:00+00:00")
    add_response(conn, "a", "c", "on", parent="r", datetime_utc="2025-09-27T10:00:01")
    conn.commit()
    conn.close()
    usage = "--columns", "tree_id,input_tokens,output_tokens,duration_ms"
    assert json.loads(run_stats("--db", path, "--json", *usage).stdout) == [
        {
            "tree_id": "c",
            "input_tokens": None,
            "output_tokens": None,
            "duration_ms": None,
        }
    ]
    assert run_stats("--db", path, "--nl", *usage).stdout == (
        '{"tree_id": "c", "input_tokens": null, "output_tokens": null,'
        ' "duration_ms": null}\n'
    )


def test_the_summary_of_a_hand_made_graph_with_a_cycle_ends() -> None:
    import networkx as nx

    from convgraph.analysis.conversation_stats import summary

    graph = nx.DiGraph([("r", "s"), ("a", "b"), ("b", "c"), ("c", "a")])
    found = summary(graph)
    # Depths count from the roots, as networkx's walk does: the loop has none.
    assert (found["nodes"], found["roots"], found["leaves"]) == (5, 1, 1)
    assert (found["max_depth"], found["branch_points"]) == (1, 0)
