"""The read rules that have two forms, each pair held to one answer.

- The chunked-read rule (`convgraph.sources.llm.snapshot`): the row readers and
  the columnar reader pace their statements by the one `paced`, so on the
  same file, statements that take the same time, they ask for the same
  rows, statement by statement.
- The message store's turn parents and a run merged into one node, on
  known cases (the pairs' agreement: tests/test_rule_agreement.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

from benchmarks import synthetic
from convgraph import parts as kinds
from convgraph.sources import open_logs
from convgraph.sources.llm import columnar, runs, snapshot
from convgraph.sources.llm.message_store import _thread_roots
from convgraph.sources.llm.turn_parents import (
    NearestAbove,
    turn_parents,
    turn_parents_table,
)

# -- the chunked-read rule -------------------------------------------------------


def paced_statements(
    monkeypatch: pytest.MonkeyPatch, read: Callable[[], None], seconds: float
) -> list[tuple[int, float]]:
    """The `paced` calls of one read (rows read, seconds taken), every
    statement taking `seconds` by the rule's clock."""
    # Each statement reads the clock before and after it.
    ticks = itertools.cycle([0.0, seconds])
    monkeypatch.setattr(snapshot, "clock", lambda: next(ticks))
    calls = []
    paced = snapshot.paced

    def recording(rows: int, took: float) -> int:
        calls.append((rows, took))
        return paced(rows, took)

    monkeypatch.setattr(snapshot, "paced", recording)
    read()
    return calls


@pytest.mark.parametrize("with_parent", [True, False])
def test_both_readers_pace_their_statements_alike(tmp_path, monkeypatch, with_parent):
    pytest.importorskip("pyarrow")
    pytest.importorskip("adbc_driver_sqlite")
    path = synthetic.build_legacy(
        tmp_path / "logs.db", 5000, 7, "bushy", with_parent=with_parent
    )

    def read_columns() -> None:
        with open_logs(path) as logs:
            assert columnar.read_forest(logs, text=True) is not None

    def read_rows() -> None:
        with open_logs(path) as logs, monkeypatch.context() as patch:
            patch.setattr(columnar, "available", lambda: False)
            logs.read(texts=True)

    # Every statement takes twice CHUNK_SECONDS: each next one reads half
    # as many rows, down to MIN_CHUNK_ROWS; the last, short one is not
    # paced. (The conversations are one short statement.)
    expected = [(2000, 0.06), (1000, 0.06), (500, 0.06), (250, 0.06)]
    expected += [(200, 0.06)] * 6
    assert paced_statements(monkeypatch, read_columns, 0.06) == expected
    assert paced_statements(monkeypatch, read_rows, 0.06) == expected
    # Quick statements: twice as many rows each time.
    assert paced_statements(monkeypatch, read_columns, 0.0) == [(2000, 0.0)]
    assert paced_statements(monkeypatch, read_rows, 0.0) == [(2000, 0.0)]


def test_a_slow_statement_is_followed_by_one_sized_for_the_rule_at_once():
    # No floor on the shrink: ten times too slow, a tenth as many rows.
    assert snapshot.paced(20_000, 10 * snapshot.CHUNK_SECONDS) == 2_000
    assert snapshot.paced(2_000, 10.0) == snapshot.MIN_CHUNK_ROWS
    assert snapshot.paced(80_000, 0.0) == snapshot.MAX_CHUNK_ROWS


# -- turn parents ------------------------------------------------------------------


def parents_turn_by_turn(store: dict) -> list[str | None]:
    """The row reader's form: each turn's parent id."""
    roots = _thread_roots(store["forked_from"])[0]
    turns = [dict(turn) for turn in store["turns"]]
    for turn in turns:
        turn["tree_id"] = roots.get(turn["thread_id"], turn["thread_id"])
    nearest = NearestAbove(store["messages"].get)
    found = turn_parents(turns, nearest, store["forked_from"])
    return [None if parent is None else parent["id"] for parent in found]


def numbers(keys: list, *others: list) -> tuple[int, list[np.ndarray]]:
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


def turn_parent_rows(
    messages: dict, forked_from: dict, turns: list[dict], trees: list[str]
) -> np.ndarray:
    """`turn_parents_table` as the columnar reader calls it: each turn's
    parent row (-1 for none), the hashes, threads and trees numbered."""
    message_count, (parent_rows, start_rows, tip_rows) = numbers(
        list(messages),
        list(messages.values()),
        [turn["parent_message_hash"] for turn in turns],
        [turn["tip_message_hash"] for turn in turns],
    )
    # A hash that names no message: a message of its own, with no parent.
    parent_rows = np.concatenate(
        [parent_rows, np.full(message_count - len(messages), -1, np.int64)]
    )
    thread_count, (fork_rows, thread_codes) = numbers(
        list(forked_from),
        list(forked_from.values()),
        [turn["thread_id"] for turn in turns],
    )
    fork_up = np.concatenate(
        [fork_rows, np.full(thread_count - len(forked_from), -1, np.int64)]
    )
    tree_codes = pd.factorize(pd.Series(trees, dtype=object))[0].astype(np.int64)
    return turn_parents_table(
        tree_codes, parent_rows, start_rows, tip_rows, thread_codes, fork_up
    )


def parents_on_arrays(store: dict) -> list[str | None]:
    """The columnar reader's form: each turn's parent id."""
    forked_from, turns = store["forked_from"], store["turns"]
    roots = _thread_roots(forked_from)[0]
    trees = [roots.get(turn["thread_id"], turn["thread_id"]) for turn in turns]
    rows = turn_parent_rows(store["messages"], forked_from, turns, trees)
    return [None if row < 0 else turns[row]["id"] for row in rows]


def test_turn_parents_of_a_retry_and_a_fork_that_end_at_one_message():
    """A known store: u0 answers m1; u1 (thread t0) and u2 (t1, a fork of
    t0) both end at m3 below m2 below m1; u3 of t1 goes on from m3: its
    parent is u2, its own thread's; u4 of a fork of t1 (t2) takes u2 too,
    up its forks; u5 of t3 (an original) finds no turn of its own tree and
    has no parent."""
    store = {
        "messages": {"m0": None, "m1": "m0", "m2": "m1", "m3": "m2", "m4": "m3"},
        "forked_from": {"t0": None, "t1": "t0", "t2": "t1", "t3": None},
        "turns": [
            {"id": "u0", "thread_id": "t0", "parent_message_hash": "m0",
             "tip_message_hash": "m1"},
            {"id": "u1", "thread_id": "t0", "parent_message_hash": "m2",
             "tip_message_hash": "m3"},
            {"id": "u2", "thread_id": "t1", "parent_message_hash": "m2",
             "tip_message_hash": "m3"},
            {"id": "u3", "thread_id": "t1", "parent_message_hash": "m4",
             "tip_message_hash": None},
            {"id": "u4", "thread_id": "t2", "parent_message_hash": "m3",
             "tip_message_hash": None},
            {"id": "u5", "thread_id": "t3", "parent_message_hash": "m4",
             "tip_message_hash": None},
        ],
    }  # fmt: skip
    expected = [None, "u0", "u0", "u2", "u2", None]
    assert parents_turn_by_turn(store) == expected
    assert parents_on_arrays(store) == expected


# -- legacy chains -----------------------------------------------------------------


# -- tool chains folded into one node -------------------------------------------


def test_a_run_is_merged_as_the_node_contract_says() -> None:
    def call(node, parent, run, **values):
        return {
            "id": node,
            "tree_id": "t",
            "parent_id": parent,
            "conversation_id": "t",
            "prompt": values.get("prompt", ""),
            "system": None,
            "response": values.get("response", ""),
            "parts": None,
            "tool_calls": values.get("tool_calls", 0),
            "tools": None,
            "model": "m",
            "datetime_utc": values.get("time"),
            "input_tokens": 1,
            "output_tokens": None,
            "duration_ms": values.get("ms"),
            "source": "turns",
            runs.RUN: run,
            runs.TOOL_NAMES: values.get("names"),
        }

    calls = [
        call("q", None, False, prompt="hi", response="hello", time="1"),
        call(
            "a",
            "q",
            False,
            prompt="go",
            response="calling",
            tool_calls=2,
            names=["x", "y"],
            time="2",
            ms=5,
        ),
        call("b", "a", True, response="", tool_calls=1, names=["x"], time="3"),
        call("c", "b", True, response="done", time=None, ms=7),
        call("d", "a", True, response="other", time="5"),
    ]
    nodes, inner = runs.fold_runs(calls)
    assert [node["id"] for node in nodes] == ["q", "c", "d"]
    # c's time is missing: the run's latest logged time stands for it.
    assert nodes[1] == {
        "id": "c",
        "tree_id": "t",
        "parent_id": "q",
        "conversation_id": "t",
        "prompt": "go",
        "system": None,
        "response": "calling\n\ndone",
        "parts": [
            kinds.text("user", "go"),
            kinds.text("assistant", "calling"),
            kinds.text("assistant", "done"),
        ],
        "tool_calls": 3,
        "tools": "x, y",
        "model": "m",
        "datetime_utc": "3",
        "input_tokens": 3,
        "output_tokens": None,
        "duration_ms": 12,
        "source": "turns",
    }
    assert nodes[2]["parent_id"] == "q" and nodes[2]["response"] == "calling\n\nother"
    assert inner == {"a": "c", "b": "c"}
