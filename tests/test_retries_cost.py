"""What retries cost (issue 38, item 7): the tokens and the cost spent on
branches the user left, beside the totals, per tree and per group of
`stats --by`, and their share of the whole.

The rule (`convgraph.analysis.abandoned.abandoned_work_nodes_table` and
`abandoned_work_nodes`) is held to one answer in its two forms by a
property test; the figures are checked on a file llm itself wrote, a
prompt continued and then forked at its first answer (the continuation is
the branch left), priced by genai-prices asked independently here.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime

import numpy as np
import pandas as pd
import pytest
from genai_prices import Usage, calc_price
from hypothesis import given, settings
from hypothesis import strategies as st

from convgraph.analysis.abandoned import (
    abandoned_work_nodes,
    abandoned_work_nodes_table,
)
from convgraph.analysis.prices import graph_costs, tree_costs
from convgraph.contract import SIDECHAIN
from convgraph.model.loading import load_tree
from convgraph.model.tree import ConversationTree
from tests.databases import LlmLog
from tests.helpers import examples, read_forest, run

# -- the rule's two forms agree ------------------------------------------------


@st.composite
def marked_trees(draw: st.DrawFn) -> tuple[list[int], list[bool], list[str | None]]:
    """A forest as parent rows (each row's parent an earlier row, or none),
    each row's active mark and its subagent (None: the main branches')."""
    count = draw(st.integers(1, 25))
    parents = [-1] + [draw(st.integers(-1, row - 1)) for row in range(1, count)]
    active = draw(st.lists(st.booleans(), min_size=count, max_size=count))
    agents = draw(
        st.lists(
            st.sampled_from([None, None, "ag1", "ag2"]), min_size=count, max_size=count
        )
    )
    return parents, active, agents


def marked(agent: str | None) -> list[dict] | None:
    """A node's parts, marked as a subagent's where `agent` names one."""
    return None if agent is None else [{"type": "text", SIDECHAIN: agent}]


@settings(max_examples=examples(200), deadline=None)
@given(marked_trees())
def test_the_table_and_the_tree_name_the_same_nodes(
    forest: tuple[list[int], list[bool], list[str | None]],
) -> None:
    parents, active, agents = forest
    ids = [f"n{row}" for row in range(len(parents))]
    table = pd.DataFrame({SIDECHAIN: pd.Series(agents, dtype=object)})
    rows = abandoned_work_nodes_table(table, np.array(parents), np.array(active))
    tree = ConversationTree.from_records(
        [
            # A tree's node tells a subagent's by its parts' mark, as an
            # agent's reader leaves it; the table by its `sidechain` column.
            {"id": ids[row], "active": active[row], "parts": marked(agents[row])}
            for row in range(len(ids))
        ],
        {
            ids[row]: None if parent < 0 else ids[parent]
            for row, parent in enumerate(parents)
        },
        tree_id="t",
    )
    assert sorted(abandoned_work_nodes(tree)) == sorted(
        ids[row] for row in np.flatnonzero(rows)
    )


def test_a_subagent_counts_with_the_node_that_started_it() -> None:
    table = pd.DataFrame({"sidechain": [None, None, "ag", "ag", None, "ag"]})
    # r -> a (left) -> subagent s1 -> s2; r -> b (active) -> subagent s3.
    parents = np.array([-1, 0, 1, 2, 0, 4])
    active = np.array([True, False, False, False, True, False])
    assert abandoned_work_nodes_table(table, parents, active).tolist() == [
        False,
        True,
        True,
        True,
        False,
        False,
    ]


# -- on llm's own file ------------------------------------------------------------

DAY = "2025-06-02"


@pytest.fixture(scope="module")
def forked(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A prompt (1), continued (2), then forked at its answer (3): 2 is the
    branch left. Its figures then set to known ones on a priced model."""
    directory = tmp_path_factory.mktemp("forked")
    with LlmLog(directory) as log:
        first = log.prompt("first")
        thread = log.thread_of(first)
        second = log.prompt("second", continue_conversation=thread)
        _, third = log.fork(first, "third")
    figures = {first: (100, 10), second: (300, 40), third: (250, 30)}
    conn = sqlite3.connect(log.path)
    with conn:
        for turn, (tokens_in, tokens_out) in figures.items():
            conn.execute(
                "update turns set model = 'gpt-4o', input_tokens = ?,"
                " output_tokens = ? where id = ?",
                [tokens_in, tokens_out, turn],
            )
        conn.execute(
            f"update turns set datetime_utc = '{DAY}' || substr(datetime_utc, 11)"
        )
    conn.close()
    return {"path": log.path, "thread": thread, "turns": [first, second, third]}


def price(tokens_in: int, tokens_out: int) -> float:
    usage = Usage(input_tokens=tokens_in, output_tokens=tokens_out)
    moment = datetime(2025, 6, 2, tzinfo=UTC)
    return float(
        calc_price(usage, "gpt-4o", genai_request_timestamp=moment).total_price
    )


def test_a_tree_says_what_its_branch_left_spent(forked: dict) -> None:
    db = forked["path"]
    (row,) = json.loads(run("stats", "--db", db, "--json").stdout)
    assert row["abandoned_branches"] == 1
    assert (row["input_tokens"], row["output_tokens"]) == (650, 80)
    assert (row["abandoned_input_tokens"], row["abandoned_output_tokens"]) == (300, 40)
    assert row["abandoned_share"] == 340 / 730
    # The table's path (a filter) gives the same row as the small file's.
    (table_row,) = json.loads(
        run("stats", "--db", db, "--json", "--model", "gpt*").stdout
    )
    assert table_row == row
    (priced,) = json.loads(run("stats", "--db", db, "--json", "--cost").stdout)
    assert priced["cost_usd"] == pytest.approx(
        price(100, 10) + price(300, 40) + price(250, 30), rel=1e-12
    )
    assert priced["abandoned_cost_usd"] == pytest.approx(price(300, 40), rel=1e-12)
    shown = run("stats", "--db", db).stdout
    assert shown.splitlines()[1].endswith("  47%")


def test_stats_by_gives_the_abandoned_figures_beside_the_totals(forked: dict) -> None:
    (row,) = json.loads(
        run("stats", "--db", forked["path"], "--by", "model", "--json").stdout
    )
    assert row["abandoned_input_tokens"] == 300
    assert row["abandoned_output_tokens"] == 40
    assert row["abandoned_share"] == 340 / 730
    assert row["abandoned_cost_usd"] == pytest.approx(price(300, 40), rel=1e-12)
    assert row["cost_usd"] == pytest.approx(
        price(100, 10) + price(300, 40) + price(250, 30), rel=1e-12
    )


def test_one_trees_costs_are_the_tables(forked: dict) -> None:
    forest = read_forest(forked["path"])
    (row,) = tree_costs(forest).to_dict("records")
    figures = graph_costs(load_tree(forked["thread"], forked["path"]))
    assert figures["cost_usd"] == pytest.approx(row["cost_usd"], rel=1e-12)
    assert figures["abandoned_cost_usd"] == pytest.approx(
        row["abandoned_cost_usd"], rel=1e-12
    )
