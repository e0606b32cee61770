"""Agents' sessions in the node contract and the statistics (issue 27.2 and
27.3): the project and git branch as node columns of a tree read by id too,
a subagent's leaves never abandoned branches, and the cost of cached input
as the price table prices it. The files are tests/data/agents/ (its README
says where each comes from).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from convgraph import Forest
from convgraph.contract import PLACE_ATTRIBUTES
from tests.helpers import read_forest, run

DATA = Path(__file__).parent / "data" / "agents"
PROJECTS = DATA / "claude-code" / "projects"


def places(forest: Forest) -> list[tuple]:
    """Each node's id, project and git branch, in table order, sorted."""
    table = forest.nodes[["id", *PLACE_ATTRIBUTES]].astype(object)
    return sorted(tuple(row) for row in table.itertuples(False))


def test_a_tree_read_by_id_has_its_project_and_branch() -> None:
    """The session switched branch on its resumed turn (a8)."""
    expected = [
        ("a4", "/home/ada/tree", "main"),
        ("a5", "/home/ada/tree", "main"),
        ("a6", "/home/ada/tree", "main"),
        ("a8", "/home/ada/tree", "fix-parser"),
        ("a9", "/home/ada/tree", "fix-parser"),
        ("x4", "/home/ada/tree", "main"),
    ]
    by_id = read_forest(PROJECTS, conversation_ids=["s1"], text=False)
    assert places(by_id) == expected
    assert places(read_forest(PROJECTS, text=False)) == expected


def test_other_sources_have_no_place_columns() -> None:
    logs = Path(__file__).parent.parent / "examples" / "logs.db"
    forest = read_forest(logs, text=False)
    named = read_forest(logs, conversation_ids=[forest.tree_ids[0]], text=False)
    for table in (forest.nodes, named.nodes):
        assert not set(PLACE_ATTRIBUTES) & set(table.columns)


def test_usage_of_one_session_by_project() -> None:
    found = json.loads(
        run("stats", "--db", PROJECTS, "--by", "project", "--json", "s1").output
    )
    assert [(row["project"], row["nodes"]) for row in found] == [("/home/ada/tree", 6)]


def test_agents_columns_begin_with_the_place() -> None:
    from convgraph.sources.agents.files import AGENT_ATTRIBUTES

    assert AGENT_ATTRIBUTES[: len(PLACE_ATTRIBUTES)] == PLACE_ATTRIBUTES


def test_a_subagents_leaf_is_no_abandoned_branch() -> None:
    """s1: the subagent ag1 (x4) runs under a4's Task call; a5, the prompt
    rewound, is the one branch left. Every form of the rule says so."""
    from convgraph.analysis.abandoned import abandoned_nodes
    from convgraph.analysis.agent_stats import agent_table
    from convgraph.analysis.stats import conversation_table, summary
    from convgraph.analysis.usage import usage_table

    whole = read_forest(PROJECTS)
    # The tree tells a subagent's node by its parts' mark: a tree with its
    # content; the tables by the sidechain column, with content or not.
    tree = whole.tree("s1")
    assert abandoned_nodes(tree) == ["a5"]
    assert summary(tree)["abandoned_branches"] == 1
    for forest in (
        whole,
        read_forest(PROJECTS, text=False),
        read_forest(PROJECTS, conversation_ids=["s1"], text=False),
        read_forest(PROJECTS, conversation_ids=["s1"]),
    ):
        assert conversation_table(forest)["abandoned_branches"].tolist() == [1]
        assert usage_table(forest, ["project"])["abandoned_branches"].tolist() == [1]
        assert agent_table(forest)["rewinds"].tolist() == [1]


def test_a_branch_left_that_started_a_subagent_is_counted() -> None:
    """A node off the active path whose only child is a subagent's is a
    branch left all the same; the table and the tree agree."""
    import pandas as pd

    from convgraph.analysis.stats import conversation_table, summary
    from convgraph.contract import NODE_ATTRIBUTES

    rows = [("r", None, None), ("a", "r", None), ("s", "a", "ag1"), ("b", "r", None)]
    nodes = pd.DataFrame(
        [
            {
                **dict.fromkeys(NODE_ATTRIBUTES),
                "id": node,
                "tree_id": "t",
                "parent_id": parent,
                "source": "claude-code",
                "parts": [
                    {
                        "role": "assistant",
                        "type": "text",
                        "text": "x",
                        "sidechain": agent,
                    }
                ]
                if agent
                else None,
            }
            for node, parent, agent in rows
        ]
    )
    forest = Forest(nodes, {})
    assert forest.nodes["active"].tolist() == [True, False, False, True]
    assert conversation_table(forest)["abandoned_branches"].tolist() == [1]
    assert summary(forest.tree("t"))["abandoned_branches"] == 1


def test_search_says_a_hit_is_in_a_subagent(tmp_path: Path) -> None:
    """x4, the subagent's node, is neither on the active path nor an
    abandoned branch: search says sidechain, and --abandoned leaves it out."""
    from convgraph.search import search

    projects = tmp_path / "projects"
    shutil.copytree(PROJECTS, projects)
    lines = run("search", "--db", projects, "parser").stdout.splitlines()
    # Ranked by tantivy's BM25 (a compaction's summary is a part of a8).
    assert lines[0::2] == [
        "1.  s1  a4  depth 0  active  claude-sonnet-4-20250514  2025-06-01 10:07",
        "2.  s1  x4  depth 1  sidechain  claude-sonnet-4-20250514  2025-06-01 10:05",
        "3.  s1  a8  depth 2  active  claude-sonnet-4-20250514  2025-06-01 10:23",
    ]
    assert [
        (hit.id, hit.active, hit.sidechain) for hit in search(projects, "parser")
    ] == [
        ("a4", True, False),
        ("x4", False, True),
        ("a8", True, False),
    ]
    assert [hit.id for hit in search(projects, "test", abandoned=True)] == ["a5"]
    assert search(projects, "Grep", abandoned=True) == []
    records = json.loads(run("search", "--db", projects, "parser", "--json").stdout)
    assert [(record["id"], record["sidechain"]) for record in records] == [
        ("a4", False),
        ("x4", True),
        ("a8", False),
    ]


def test_cached_input_is_priced_at_the_cache_rates() -> None:
    """a4 read 100 of its 165 input tokens from the cache and wrote 5 to
    it: its cost is the package's own for those figures."""
    from datetime import UTC, datetime

    import pytest
    from genai_prices import Usage, calc_price

    from convgraph.analysis.prices import node_costs

    model = "claude-sonnet-4-20250514"
    day = datetime(2025, 6, 1, tzinfo=UTC)

    def price(**tokens: int) -> float:
        usage = Usage(**tokens)
        return float(calc_price(usage, model, genai_request_timestamp=day).total_price)

    a4 = price(
        input_tokens=165,
        output_tokens=15,
        cache_read_tokens=100,
        cache_write_tokens=5,
    )
    x4 = price(input_tokens=17, output_tokens=10)
    assert a4 < price(input_tokens=165, output_tokens=15)
    for forest in (
        read_forest(PROJECTS, text=False),
        read_forest(PROJECTS, conversation_ids=["s1"], text=False),
    ):
        costs = dict(
            zip(forest.nodes["id"], node_costs(forest.nodes).per_node, strict=True)
        )
        assert costs["a4"] == pytest.approx(a4, rel=1e-12)
        assert costs["x4"] == pytest.approx(x4, rel=1e-12)


def test_more_cached_tokens_than_input_is_no_traceback() -> None:
    """A damaged count (more read from the cache than came in) is priced
    as all of the input read from it, never refused."""
    import pandas as pd

    from convgraph.analysis.prices import node_costs

    nodes = pd.DataFrame(
        {
            "model": ["claude-sonnet-4-20250514"] * 2,
            "datetime_utc": ["2025-06-01T10:00:00"] * 2,
            "input_tokens": [10, 10],
            "output_tokens": [0, 0],
            "cache_read_tokens": [500, 10],
            "cache_write_tokens": [5, None],
        }
    )
    costs = node_costs(nodes).per_node
    assert costs[0] == costs[1]


def test_trees_and_json_exports_carry_the_place() -> None:
    """After the contract's attributes, where the source has them; an llm
    file's nodes have no such keys."""
    from convgraph.contract import NODE_ATTRIBUTES

    for forest in (
        read_forest(PROJECTS, text=False),
        read_forest(PROJECTS, conversation_ids=["s1"], text=False),
    ):
        tree = forest.tree("s1")
        assert list(tree.nodes["a8"]) == [*NODE_ATTRIBUTES, *PLACE_ATTRIBUTES]
        assert (tree.nodes["a8"]["project"], tree.nodes["a8"]["git_branch"]) == (
            "/home/ada/tree",
            "fix-parser",
        )
    document = json.loads(
        run("export", "--db", PROJECTS, "--format", "json", "s1").output
    )
    # The place follows the contract's attributes; the calls a node folds
    # (none in an agent's session) come last.
    assert [
        (node["id"], node["git_branch"], list(node)[-3:]) for node in document["nodes"]
    ][:4] == [
        ("a4", "main", ["project", "git_branch", "calls"]),
        ("a5", "main", ["project", "git_branch", "calls"]),
        ("a6", "main", ["project", "git_branch", "calls"]),
        ("x4", "main", ["project", "git_branch", "calls"]),
    ]
    logs = Path(__file__).parent.parent / "examples" / "logs.db"
    llm = json.loads(run("export", "--db", logs, "--format", "json").output)
    assert not any(set(PLACE_ATTRIBUTES) & set(node) for node in llm["nodes"])


def test_an_agents_json_exports_hold_to_the_documented_schemas() -> None:
    import jsonschema

    from tests.helpers import documented_schemas

    schemas = documented_schemas("json-schema.md")
    for form, key in (
        ("json", "convgraph.node-link/1"),
        ("tree-json", "convgraph.tree-json/1"),
    ):
        exported = run("export", "--db", PROJECTS, "--format", form).output
        schema = schemas[key]
        jsonschema.validate(json.loads(exported), schema)
        assert schema["$defs"]["node"]["properties"]["git_branch"] == {
            "$ref": "#/$defs/text"
        }


def test_the_parquet_dataset_carries_the_place(tmp_path: Path) -> None:
    """Each node's project and git branch, as the forest has them; an llm
    file's dataset has no such columns."""
    import pyarrow.parquet as pq

    run("export", "--db", PROJECTS, "--format", "parquet", "-o", tmp_path / "agents")
    written = pq.read_table(tmp_path / "agents" / "nodes").to_pandas()
    forest = read_forest(PROJECTS, text=False)
    assert sorted(
        zip(written["id"], written["project"], written["git_branch"], strict=True)
    ) == places(forest)
    logs = Path(__file__).parent.parent / "examples" / "logs.db"
    run("export", "--db", logs, "--format", "parquet", "-o", tmp_path / "llm")
    columns = pq.read_table(tmp_path / "llm" / "nodes").column_names
    assert not set(PLACE_ATTRIBUTES) & set(columns)
