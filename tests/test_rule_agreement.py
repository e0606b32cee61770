"""The read rules declared in pairs (`convgraph.links.rules`) held to one
answer, and a file read by either form listing its trees in one order.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import convgraph
from convgraph.analysis.abandoned import (
    abandoned_nodes,
    abandoned_nodes_table,
    abandoned_work_nodes,
    abandoned_work_nodes_table,
    tree_records,
)
from convgraph.analysis.stats import summary, summary_table
from convgraph.analysis.summaries import SMALL_INPUT_BYTES
from convgraph.analysis.tool_stats import tree_tool_totals, tree_tool_totals_table
from convgraph.contract import (
    INTEGER_ATTRIBUTES,
    NODE_ATTRIBUTES,
    SIDECHAIN,
    TOOL_CALLS,
    TOOLS,
)
from convgraph.links.integrity import Problem, check_links, check_links_table
from convgraph.links.rules import RULES, TABLE
from convgraph.model.filters import (
    TreeFilter,
    node_matches,
    node_matches_table,
    tree_is_in,
    tree_is_in_table,
)
from convgraph.model.marks import (
    hidden_records,
    hidden_records_table,
    mark_tree,
    mark_tree_table,
)
from convgraph.model.tree import ConversationTree
from convgraph.sources.llm import legacy, runs
from convgraph.sources.llm.generations import (
    CONTINUES,
    first_of_each_id,
    first_of_each_id_table,
    join_generations,
    join_generations_table,
)
from convgraph.sources.llm.legacy import link_as_chains, link_as_chains_table
from convgraph.sources.llm.message_chains import (
    OTHER,
    TOOL,
    USER,
    Chains,
    own_messages,
    own_messages_table,
)
from convgraph.sources.llm.message_store import Continuation
from convgraph.sources.llm.old_writers import (
    Placing,
    place_records,
    place_records_table,
)
from convgraph.sources.llm.turn_parents import (
    NearestAbove,
    turn_parents,
)
from convgraph.sources.notes import NodeNote
from convgraph.sources.source import log_order
from convgraph.sources.tables import conform_nodes
from convgraph.times import utc_iso
from tests.databases import LINEAR, LlmLog, add_response, add_tree, legacy_database
from tests.helpers import ROOT, examples, run
from tests.test_read_rules import turn_parent_rows
from tests.test_startup import imported_after

# -- one order of trees under and over the size threshold -------------------------


def upgraded_file(directory: Path) -> Path:
    """Legacy history of llm 0.31's schema, upgraded and continued by llm
    0.36, then legacy rows an older llm logs after the threads (one later,
    one earlier than every turn), and a table llm never reads."""
    db = directory / "logs.db"
    conn = legacy_database(db, with_parent=False)
    add_tree(conn, "c1", [(node, None) for node, _ in LINEAR])
    conn.close()
    with LlmLog(directory) as log:
        log.prompt("hello store")
        log.prompt("more", continue_conversation="c1")
    conn = sqlite3.connect(db)
    add_response(conn, "late", "c9", "late", datetime_utc="2099-01-01T00:00:00")
    add_response(conn, "early", "c0", "early", datetime_utc="2000-01-01T00:00:00")
    conn.execute("create table padding (b blob)")
    conn.commit()
    conn.close()
    return db


def outputs(db: Path) -> list[bytes]:
    commands = [
        ["stats", "--json"],
        ["conversations", "--json"],
        ["export", "--format", "json"],
    ]
    return [run(*words, "--db", db).stdout_bytes for words in commands]


def test_a_file_lists_its_trees_in_one_order_under_and_over_the_threshold(
    tmp_path: Path,
) -> None:
    db = upgraded_file(tmp_path)
    assert db.stat().st_size < SMALL_INPUT_BYTES
    small = outputs(db)
    conn = sqlite3.connect(db)
    padding = os.urandom(SMALL_INPUT_BYTES + 1)
    conn.execute("insert into padding values (?)", [padding])
    conn.commit()
    conn.close()
    assert db.stat().st_size > SMALL_INPUT_BYTES
    assert outputs(db) == small
    trees = [row["tree_id"] for row in json.loads(small[0])]
    # Each tree where its first node is: the thread llm 0.36 began sits
    # between the legacy conversations logged before and after it.
    assert trees[:2] == ["c0", "c1"] and trees[-1] == "c9" and len(trees) == 4


# -- every rule with two forms, held to one answer ----------------------------------

LEGACY, TURNS = legacy.SOURCE, "turns"
#: Times that tie, run backwards against the ids, or are missing.
TIMES = [None, "2025-01-01T00:00:00", "2025-01-01T00:00:01", "2025-01-02T08:00:00"]
ANSWERS = ["A", "B", None]
SUBAGENT = [{"type": "text", "role": "user", "text": "go", SIDECHAIN: "ag1"}]
MOMENTS = [None, datetime(2025, 1, 1, tzinfo=UTC), datetime(2025, 1, 2, tzinfo=UTC)]


@dataclass
class Forest:
    """A hostile forest: raw records of a few trees in log order (ids that
    repeat, parents that are missing, themselves, in a cycle or in another
    tree, legacy rows of chains and of old writers, turns continuing legacy
    history, tool-call runs, subagents), the user's notes (hidden, noted
    and preferred branches), the migration's placing, a filter, and a
    message store behind the turns."""

    records: list[dict[str, Any]]
    notes: dict[str, NodeNote]
    placing: Placing | None
    where: TreeFilter
    text: bool
    linked: bool
    store: dict[str, Any]


@st.composite
def hostile_forests(draw: st.DrawFn) -> Forest:
    trees = [f"t{n}" for n in range(draw(st.integers(1, 4)))]
    ids = {
        tree: [f"{tree}n{n}" for n in range(draw(st.integers(1, 6)))] for tree in trees
    }
    every = [node for nodes in ids.values() for node in nodes]
    records = []
    for tree in trees:
        threads = [tree, f"{tree}f"]
        for node in ids[tree]:
            source = draw(st.sampled_from([LEGACY, TURNS, "claude-code"]))
            parent = draw(
                st.none()
                | st.sampled_from(ids[tree])
                | st.sampled_from([*every, "gone"])
            )
            continuation = None
            if source == TURNS and draw(st.booleans()):
                continuation = Continuation(
                    threads=tuple(
                        draw(
                            st.lists(st.sampled_from(threads), min_size=1, unique=True)
                        )
                    ),
                    answers=tuple(draw(st.lists(st.sampled_from("AB"), max_size=3))),
                )
            names = draw(st.none() | st.lists(st.sampled_from(["a", "b"]), max_size=2))
            subagent = draw(st.integers(0, 5)) == 0
            for _ in range(draw(st.sampled_from([1, 1, 1, 2]))):
                records.append(
                    {
                        "id": node,
                        "tree_id": tree,
                        "parent_id": parent,
                        "conversation_id": draw(st.sampled_from(threads)),
                        "prompt": draw(st.sampled_from([None, "", f"p {node}"])),
                        "system": draw(st.sampled_from([None, "s"])),
                        "response": draw(st.sampled_from(ANSWERS)),
                        "parts": SUBAGENT if subagent else None,
                        "tool_calls": len(names or ()),
                        "tools": None,
                        "model": draw(st.sampled_from(["m1", "m2", None])),
                        "datetime_utc": draw(st.sampled_from(TIMES)),
                        **{
                            key: draw(st.none() | st.integers(0, 9))
                            for key in INTEGER_ATTRIBUTES
                        },
                        "source": source,
                        runs.RUN: draw(st.booleans()),
                        runs.TOOL_NAMES: names or None,
                        CONTINUES: continuation if source == TURNS else False,
                    }
                )
    records.sort(key=log_order)
    noted = draw(st.lists(st.sampled_from([*every, "gone"]), unique=True, max_size=4))
    notes = {
        node: NodeNote(
            note=draw(st.sampled_from([None, "why"])),
            preferred=draw(st.booleans()),
            hidden=draw(st.booleans()),
        )
        for node in noted
    }
    placing = draw(
        st.none()
        | st.builds(
            Placing,
            st.sampled_from(["", "2025-01-01T00:00:01", "2026"]),
            st.frozensets(st.sampled_from(every), max_size=2),
        )
    )
    where = TreeFilter(
        since=draw(st.sampled_from(MOMENTS)),
        until=draw(st.sampled_from(MOMENTS)),
        models=tuple(draw(st.lists(st.sampled_from(["m1", "m*", "x"]), max_size=2))),
        sources=tuple(draw(st.lists(st.sampled_from([LEGACY, TURNS]), max_size=1))),
    )
    messages: dict[str, str | None] = {}
    roles: dict[str, str] = {}
    for index in range(draw(st.integers(0, 6))):
        above = [f"m{n}" for n in range(index)]
        messages[f"m{index}"] = draw(st.none() | st.sampled_from([*above, "lost"]))
        roles[f"m{index}"] = draw(st.sampled_from(["user", "tool", "assistant", "?"]))
    hashes = st.none() | st.sampled_from([*messages, "lost"])
    store = {
        "messages": messages,
        "roles": roles,
        "forked_from": {
            thread: (tree if thread != tree else None)
            for tree in trees
            for thread in (tree, f"{tree}f")
        },
        "hashes": {node: (draw(hashes), draw(hashes)) for node in every},
    }
    return Forest(
        records,
        notes,
        placing,
        where,
        draw(st.booleans()),
        draw(st.booleans()),
        store,
    )


# Each rule's two forms applied to a forest: (the reference form tree by
# tree, the table form once, split by tree), each a list of one value per
# tree in the order of the trees' first rows.
Sides = tuple[list[Any], list[Any]]


def by_tree(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each tree's records (copies), trees in the order of their first row."""
    found: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        found.setdefault(record["tree_id"], []).append(dict(record))
    return found


def split(values: list[Any], trees: list[str]) -> list[list[Any]]:
    """Values aligned with rows, as one list per tree."""
    found: dict[str, list[Any]] = {}
    for value, tree in zip(values, trees, strict=True):
        found.setdefault(tree, []).append(plain(value))
    return list(found.values())


#: The keys of a hostile forest's records.
KEYS = [
    *("id", "tree_id", "parent_id", "conversation_id", "prompt", "system"),
    *("response", "parts", "tool_calls", "tools", "model", "datetime_utc"),
    *INTEGER_ATTRIBUTES,
    *("source", runs.RUN, runs.TOOL_NAMES, CONTINUES),
]


def table(records: list[dict[str, Any]]) -> pd.DataFrame:
    """The records as a reader's table: the contract's dtypes, the rest as
    objects."""
    columns = list(records[0]) if records else KEYS
    frame = pd.DataFrame(
        {name: pd.Series([r[name] for r in records], dtype=object) for name in columns}
    )
    return conform_nodes(frame)


def problems_by_tree(
    problems: list[Problem], records: list[dict[str, Any]]
) -> list[list[dict[str, Any]]]:
    """Each tree's problems, named by the node they are about."""
    tree_of = {record["id"]: record["tree_id"] for record in records}
    found: dict[str, list[dict[str, Any]]] = {tree: [] for tree in by_tree(records)}
    for problem in problems:
        found[tree_of[problem.node_id]].append(problem.to_dict())
    return list(found.values())


def unique(forest: Forest) -> list[dict[str, Any]]:
    """The forest's records, each id once (the first)."""
    return first_of_each_id([dict(record) for record in forest.records])[0]


def first_of_each_id_sides(forest: Forest) -> Sides:
    reference = []
    problems: list[Problem] = []
    for records in by_tree(forest.records).values():
        kept, found = first_of_each_id(records)
        reference.append([record["id"] for record in kept])
        problems += found
    nodes, table_problems = first_of_each_id_table(table(forest.records))
    return (
        [reference, problems_by_tree(problems, forest.records)],
        [split(nodes["id"].tolist(), nodes["tree_id"].tolist()),
         problems_by_tree(table_problems, forest.records)],
    )  # fmt: skip


def join_generations_sides(forest: Forest) -> Sides:
    records = unique(forest)
    reference = []
    for tree in by_tree(records).values():
        join_generations(tree, linked=forest.linked)
        reference.append([record["parent_id"] for record in tree])
    nodes = table(records)
    join_generations_table(nodes, linked=forest.linked)
    return reference, split(nodes["parent_id"].tolist(), nodes["tree_id"].tolist())


def legacy_rows(forest: Forest) -> list[dict[str, Any]]:
    return [record for record in unique(forest) if record["source"] == LEGACY]


def link_as_chains_sides(forest: Forest) -> Sides:
    records = unique(forest)
    reference = []
    for tree in by_tree(records).values():
        chained = [record for record in tree if record["source"] == LEGACY]
        link_as_chains(chained)
        parent = {record["id"]: record["parent_id"] for record in chained}
        reference.append([parent.get(r["id"], r["parent_id"]) for r in tree])
    nodes = table(records)
    link_as_chains_table(nodes)
    return reference, split(nodes["parent_id"].tolist(), nodes["tree_id"].tolist())


def place_records_sides(forest: Forest) -> Sides:
    records = legacy_rows(forest)
    reference, problems = [], []
    for tree in by_tree(records).values():
        problems += place_records(tree, forest.placing)
        reference.append([record["parent_id"] for record in tree])
    nodes = table(records)
    table_problems = place_records_table(nodes, forest.placing)[2]
    return (
        [reference, problems_by_tree(problems, records)],
        [split(nodes["parent_id"].tolist(), nodes["tree_id"].tolist()),
         problems_by_tree(table_problems, records)],
    )  # fmt: skip


def without_text(forest: Forest) -> list[dict[str, Any]]:
    records = unique(forest)
    if not forest.text:
        for record in records:
            record.update(prompt=None, system=None, response=None, parts=None)
    return records


def fold_runs_sides(forest: Forest) -> Sides:
    records = [
        {key: value for key, value in record.items() if key != CONTINUES}
        for record in without_text(forest)
    ]
    reference, calls = [], {}
    for tree in by_tree(records).values():
        folded, found = runs.fold_runs(tree, forest.text)
        reference.append(sorted(folded, key=log_order))
        calls.update(found)
    # A run's node is logged when its last call is: a tree whose first row
    # was a call inside a run may come later among the nodes.
    reference.sort(key=lambda nodes: log_order(nodes[0]))
    nodes, table_calls = runs.fold_runs_table(table(records), forest.text)
    rows = runs._plain_records(nodes)
    return (
        [reference, calls],
        [split(rows, nodes["tree_id"].astype(object).tolist()), table_calls],
    )


def outsiders(records: list[dict[str, Any]], tree: str) -> dict[str, str]:
    """Where each parent outside `tree` is: its tree, as the table names it."""
    return {r["id"]: r["tree_id"] for r in records if r["tree_id"] != tree}


def checked(forest: Forest) -> tuple[list[dict[str, Any]], dict[str, str | None]]:
    """The forest's records each id once, and every node's checked parent
    by the reference form."""
    records = unique(forest)
    parents: dict[str, str | None] = {}
    for tree, rows in by_tree(records).items():
        parents.update(check_links(rows, outsiders(records, tree))[0])
    return records, parents


def check_links_sides(forest: Forest) -> Sides:
    records = unique(forest)
    reference, problems = [], []
    for tree, rows in by_tree(records).items():
        parents, found = check_links(rows, outsiders(records, tree))
        reference.append([parents[row["id"]] for row in rows])
        problems += found
    nodes = table(records)
    parent_rows, table_problems = check_links_table(nodes)
    ids = nodes["id"].tolist()
    parents = [ids[row] if row >= 0 else None for row in parent_rows.tolist()]
    return (
        [reference, problems_by_tree(problems, records)],
        [split(parents, nodes["tree_id"].tolist()),
         problems_by_tree(table_problems, records)],
    )  # fmt: skip


def checked_table(forest: Forest) -> tuple[pd.DataFrame, np.ndarray]:
    nodes = table(unique(forest))
    return nodes, check_links_table(nodes)[0]


def hidden_records_sides(forest: Forest) -> Sides:
    records, parents = checked(forest)
    reference = []
    for rows in by_tree(records).values():
        hidden = hidden_records(rows, parents, forest.notes)
        reference.append([row["id"] in hidden for row in rows])
    nodes, parent_rows = checked_table(forest)
    found = hidden_records_table(nodes, parent_rows, forest.notes)
    return reference, split(found.tolist(), nodes["tree_id"].tolist())


def store_turns(forest: Forest) -> list[dict[str, Any]]:
    """The forest's turns as the message store's rules take them."""
    store = forest.store
    return [
        {
            "id": record["id"],
            "tree_id": record["tree_id"],
            "thread_id": record["conversation_id"],
            "parent_message_hash": store["hashes"][record["id"]][0],
            "tip_message_hash": store["hashes"][record["id"]][1],
        }
        for record in unique(forest)
        if record["source"] == TURNS
    ]


def own_messages_sides(forest: Forest) -> Sides:
    store, turns = forest.store, store_turns(forest)
    messages = {
        message: (parent, store["roles"][message])
        for message, parent in store["messages"].items()
    }
    reference = [
        own_messages(rows, Chains(messages)) for rows in by_tree(turns).values()
    ]
    count, (parent_rows, start_rows, tip_rows) = numbers(
        list(messages),
        list(store["messages"].values()),
        [turn["parent_message_hash"] for turn in turns],
        [turn["tip_message_hash"] for turn in turns],
    )
    parent_rows = np.concatenate(
        [parent_rows, np.full(count - len(messages), -1, np.int64)]
    )
    codes = {"user": USER, "tool": TOOL}
    roles = np.array([codes.get(role, OTHER) for _, role in messages.values()])
    walks = own_messages_table(parent_rows, roles, start_rows, tip_rows, len(messages))
    hashes = list(messages)
    found = [
        tuple(
            [hashes[rows[turn]] for rows in reversed(walk) if rows[turn] >= 0]
            for walk in walks
        )
        for turn in range(len(turns))
    ]
    return reference, split(found, [turn["tree_id"] for turn in turns])


def turn_parents_sides(forest: Forest) -> Sides:
    store, turns = forest.store, store_turns(forest)
    nearest = NearestAbove(store["messages"].get)
    reference = []
    for rows in by_tree(turns).values():
        found = turn_parents(rows, nearest, store["forked_from"])
        reference.append([None if turn is None else turn["id"] for turn in found])
    rows = turn_parents_on_arrays(store, turns)
    parents = [None if row < 0 else turns[row]["id"] for row in rows]
    return reference, split(parents, [turn["tree_id"] for turn in turns])


def numbers(keys: list[Any], *others: list[Any]) -> tuple[int, list[np.ndarray]]:
    """Keys numbered 0..len-1 by position, any other value of `others` a
    number past them (first seen first), None -1: the numbering the
    columnar reader makes of hashes and thread ids."""
    number = {key: index for index, key in enumerate(keys)}
    found = []
    for values in others:
        for value in values:
            if value is not None:
                number.setdefault(value, len(number))
        found.append(np.array([number.get(v, -1) for v in values], dtype=np.int64))
    return len(number), found


def turn_parents_on_arrays(
    store: dict[str, Any], turns: list[dict[str, Any]]
) -> np.ndarray:
    trees = [turn["tree_id"] for turn in turns]
    return turn_parent_rows(store["messages"], store["forked_from"], turns, trees)


def graphs(forest: Forest, marked: bool = True) -> list[ConversationTree]:
    """Each tree's graph, from its checked records (hidden branches kept)."""
    records, parents = checked(forest)
    found = []
    for tree, rows in by_tree(records).items():
        graph = ConversationTree.from_columns(
            [row["id"] for row in rows],
            [parents[row["id"]] for row in rows],
            [{key: row.get(key) for key in NODE_ATTRIBUTES} for row in rows],
            tree,
            f"name {tree}",
        )
        found.append(mark_tree(graph, forest.notes) if marked else graph)
    return found


def marked_table(forest: Forest) -> tuple[pd.DataFrame, np.ndarray]:
    nodes, parent_rows = checked_table(forest)
    return mark_tree_table(nodes, parent_rows, forest.notes), parent_rows


MARKS = ["active", "note", "preferred"]


def mark_tree_sides(forest: Forest) -> Sides:
    reference = [
        [[graph.nodes[node][key] for key in MARKS] for node in graph]
        for graph in graphs(forest, marked=False)
        for _ in [mark_tree(graph, forest.notes)]
    ]
    nodes, _ = marked_table(forest)
    rows = nodes[MARKS].astype(object).to_numpy().tolist()
    return reference, split(rows, nodes["tree_id"].tolist())


def plain(value: Any) -> Any:
    """A table's value as the reference form gives it."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    if isinstance(value, float):
        return round(value, 9)
    if isinstance(value, np.generic):
        return plain(value.item())
    return value


def marked_records(forest: Forest) -> list[tuple[str, list[dict[str, Any]]]]:
    """Each tree's id and records as the RECORDS rules take them: checked
    `parent_id`, `active` as `mark_tree` sets it."""
    return [
        (graph.graph["tree_id"], list(tree_records(graph))) for graph in graphs(forest)
    ]


def summary_sides(forest: Forest) -> Sides:
    reference = []
    for tree, records in marked_records(forest):
        figures = summary(records, tree, f"name {tree}")
        for key in ("first_datetime", "last_datetime"):
            figures[key] = utc_iso(figures[key])
        reference.append({key: plain(value) for key, value in figures.items()})
    nodes, parent_rows = marked_table(forest)
    names = {tree: f"name {tree}" for tree in by_tree(forest.records)}
    rows = summary_table(nodes, names, parent_rows).to_dict("records")
    for row in rows:
        for key in ("first_datetime", "last_datetime"):
            row[key] = utc_iso(None if row[key] is pd.NaT else row[key].isoformat())
    return reference, [
        {key: plain(value) for key, value in row.items()} for row in rows
    ]


def abandoned_sides(
    reference_form: Callable[..., list[Any]], table_form: Callable[..., np.ndarray]
) -> Callable[[Forest], Sides]:
    def sides(forest: Forest) -> Sides:
        reference = []
        for _, records in marked_records(forest):
            found = set(reference_form(records))
            reference.append([record["id"] in found for record in records])
        nodes, parent_rows = marked_table(forest)
        found = table_form(nodes, parent_rows, nodes["active"].to_numpy())
        return reference, split(found.tolist(), nodes["tree_id"].tolist())

    return sides


def tree_tool_totals_sides(forest: Forest) -> Sides:
    reference = [tree_tool_totals(records) for _, records in marked_records(forest)]
    nodes, _ = checked_table(forest)
    totals = tree_tool_totals_table(nodes)
    found = [
        {TOOL_CALLS: plain(calls), TOOLS: tools}
        for calls, tools in zip(totals[TOOL_CALLS], totals[TOOLS], strict=True)
    ]
    return reference, found


def tree_is_in_sides(forest: Forest) -> Sides:
    reference = [tree_is_in(graph, forest.where) for graph in graphs(forest)]
    nodes, _ = checked_table(forest)
    rows = tree_is_in_table(nodes, forest.where).tolist()
    return reference, [any(tree) for tree in split(rows, nodes["tree_id"].tolist())]


def node_matches_sides(forest: Forest) -> Sides:
    records = unique(forest)
    reference = [
        [node_matches(record, forest.where) for record in rows]
        for rows in by_tree(records).values()
    ]
    nodes = table(records)
    found = node_matches_table(nodes, forest.where).tolist()
    return reference, split(found, nodes["tree_id"].tolist())


#: How each registered rule's two forms are applied to a hostile forest.
SIDES: dict[str, Callable[[Forest], Sides]] = {
    "first_of_each_id": first_of_each_id_sides,
    "join_generations": join_generations_sides,
    "link_as_chains": link_as_chains_sides,
    "place_records": place_records_sides,
    "fold_runs": fold_runs_sides,
    "check_links": check_links_sides,
    "hidden_records": hidden_records_sides,
    "turn_parents": turn_parents_sides,
    "own_messages": own_messages_sides,
    "mark_tree": mark_tree_sides,
    "summary": summary_sides,
    "abandoned_nodes": abandoned_sides(abandoned_nodes, abandoned_nodes_table),
    "abandoned_work_nodes": abandoned_sides(
        abandoned_work_nodes, abandoned_work_nodes_table
    ),
    "tree_tool_totals": tree_tool_totals_sides,
    "tree_is_in": tree_is_in_sides,
    "node_matches": node_matches_sides,
}


@pytest.mark.parametrize("name", sorted(RULES))
@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(forest=hostile_forests())
def test_the_table_form_gives_the_reference_tree_by_tree(
    name: str, forest: Forest
) -> None:
    reference, found = SIDES[name](forest)
    assert found == reference


# -- a rule with two forms is registered ------------------------------------------

PACKAGE = Path(convgraph.__file__).parent
#: The names table forms went by before the one scheme.
OLD_SCHEMES = ("_frame", "_rows", "_forest")


def defined_functions() -> dict[str, set[str]]:
    """The module-level functions of every module of the package."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        tree = ast.parse(path.read_text())
        found[module.removesuffix(".__init__")] = {
            node.name
            for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        }
    return found


def test_every_rule_with_two_forms_is_registered_and_tested() -> None:
    pairs = {}
    for module, names in defined_functions().items():
        for name in names:
            if name.endswith(TABLE) and name.removesuffix(TABLE) in names:
                pairs[name.removesuffix(TABLE)] = module
            assert not any(name + old in names for old in OLD_SCHEMES), name
    for module in set(pairs.values()):
        importlib.import_module(module)
    assert set(RULES) == set(pairs)
    for name, rule in RULES.items():
        assert rule.reference.__module__ == pairs[name]
        assert rule.table is not None and rule.table.__name__ == name + TABLE
    assert set(SIDES) == set(RULES)


def test_the_agents_named_below_them_are_the_agents() -> None:
    from convgraph.contract import AGENT_SOURCES
    from convgraph.contract import SIDECHAIN as NAMED
    from convgraph.sources.agents import files, sessions

    assert tuple(module.SOURCE for module in sessions.FORMATS) == AGENT_SOURCES
    assert NAMED == files.SIDECHAIN


def test_the_llm_pipeline_is_registered_rules_in_order() -> None:
    from convgraph.sources.llm.pipeline import PIPELINE

    steps = [step.rule for step in PIPELINE]
    assert steps == [
        "first_of_each_id",
        "link_as_chains",
        "join_generations",
        "fold_runs",
    ]
    assert set(steps) <= set(RULES)


@pytest.mark.parametrize("name", ["logs.db", "chatgpt-export.zip"])
def test_the_reference_form_of_stats_imports_no_heavy_library(name: str) -> None:
    # `summary` of each tree's records: no graph, no table.
    path = str(ROOT / "examples" / name)
    code = f"from convgraph.cli import cli\ncli(['stats', '--json', '--db', {path!r}])"
    assert imported_after(code) == []
