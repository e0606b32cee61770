"""Where the generations of one llm file meet (`convgraph.sources.llm.generations`):
each id once, and turns that go on from legacy history hung below the
response they continue, in the two forms `LogDatabase` uses, one tree's
records (`read_tree`) and the whole forest's table (`read`), which
must give the same nodes and parents for any upgraded file's rows."""

from __future__ import annotations

from typing import Any

import pandas as pd
from hypothesis import strategies as st

from convgraph.sources.llm.generations import (
    CONTINUES,
    first_of_each_id,
    first_of_each_id_table,
    join_generations,
    join_generations_table,
)
from convgraph.sources.llm.legacy import SOURCE as LEGACY
from convgraph.sources.llm.message_store import SOURCE as TURNS
from convgraph.sources.llm.message_store import Continuation
from convgraph.sources.source import log_order, sort_log_order
from convgraph.sources.tables import categorical

#: Few answers and few times, so that answers repeat (the ambiguous matches
#: `legacy_parent` decides) and rows tie in time (log order falls to ids).
ANSWERS = st.sampled_from(["A", "B", "C", None])
TIMES = st.sampled_from(["2024-01-01T00:00:0" + str(second) for second in range(4)])


def legacy_record(
    node_id: str, conversation: str, parent: str | None, answer: Any, time: str
) -> dict[str, Any]:
    return {
        "id": node_id,
        "conversation_id": conversation,
        "parent_id": parent,
        "response": answer,
        "datetime_utc": time,
        "source": LEGACY,
    }


def turn_record(
    node_id: str,
    thread: str,
    parent: str | None,
    answer: Any,
    time: str,
    continuation: Continuation | None,
) -> dict[str, Any]:
    return {
        "id": node_id,
        "conversation_id": thread,
        "parent_id": parent,
        "response": answer,
        "datetime_utc": time,
        "source": TURNS,
        CONTINUES: continuation,
    }


def per_tree(
    records: list[dict[str, Any]], linked: bool
) -> tuple[list[tuple[str, Any]], list[str]]:
    """As `LogDatabase.read_tree`: log order, each id once, then the join."""
    records = sorted((dict(record) for record in records), key=log_order)
    kept, problems = first_of_each_id(records)
    join_generations(kept, linked=linked)
    assert all(CONTINUES not in record for record in kept)
    return [(r["id"], r["parent_id"]) for r in kept], [p.message for p in problems]


def as_table(records: list[dict[str, Any]]) -> pd.DataFrame:
    """The rows as the row readers give them: categories where the contract
    has them, `_continues` False on the legacy rows."""
    columns = ["id", "tree_id", "conversation_id", "parent_id", "response"]
    table = pd.DataFrame(
        {name: pd.Series([r[name] for r in records], dtype=object) for name in columns}
    )
    table["datetime_utc"] = [r["datetime_utc"] for r in records]
    for name in ("tree_id", "conversation_id", "source"):
        table[name] = pd.Series(categorical([r[name] for r in records]))
    table[CONTINUES] = pd.Series(
        [r.get(CONTINUES, False) for r in records], dtype=object
    )
    return table


def test_each_id_once_in_both_forms_names_the_repeats_alike() -> None:
    records = [
        {"id": "a", "n": 1},
        {"id": "b", "n": 2},
        {"id": "a", "n": 3},
        {"id": "c", "n": 4},
        {"id": "b", "n": 5},
        {"id": "a", "n": 6},
    ]
    kept, problems = first_of_each_id(records)
    table, table_problems = first_of_each_id_table(pd.DataFrame(records))
    assert [record["n"] for record in kept] == table["n"].tolist() == [1, 2, 4]
    messages = [
        "a is the id of 3 rows: the first logged is read, the others left out",
        "b is the id of 2 rows: the first logged is read, the others left out",
    ]
    assert [p.message for p in problems] == messages
    assert [p.message for p in table_problems] == messages


def test_a_turn_hangs_below_the_response_its_history_ends_at_in_both_forms() -> None:
    # Legacy r1 -> r2 answered "A" then "B"; r3 answers "A" again, later.
    # llm 0.36 went on from r2 (history "A", "B"); a fork from the thread
    # started after r1's answer alone, which two responses gave: the one
    # whose earlier history matches (none: both are first) is the first.
    records = [
        legacy_record("r1", "c", None, "A", "2024-01-01T00:00:01"),
        legacy_record("r2", "c", "r1", "B", "2024-01-01T00:00:02"),
        legacy_record("r3", "c", "r2", "A", "2024-01-01T00:00:03"),
        turn_record(
            "u1",
            "c",
            None,
            "C",
            "2024-01-01T00:00:04",
            Continuation(("c",), ("A", "B")),
        ),
        turn_record(
            "u2",
            "f",
            None,
            "D",
            "2024-01-01T00:00:05",
            Continuation(("f", "c"), ("A",)),
        ),
        turn_record("u3", "c", "u1", "E", "2024-01-01T00:00:06", None),
    ]
    for record in records:
        record["tree_id"] = "c"
    parents = [("r1", None), ("r2", "r1"), ("r3", "r2")]
    parents += [("u1", "r2"), ("u2", "r1"), ("u3", "u1")]
    assert per_tree(records, linked=True) == (parents, [])
    nodes = sort_log_order(as_table(records))
    join_generations_table(nodes, linked=True)
    assert list(zip(nodes["id"], nodes["parent_id"], strict=True)) == parents
