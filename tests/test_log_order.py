"""Log order found without pandas' sort: `sort_log_order` on Arrow strings
and on objects, its parent rows following their rows, and the columnar read
of an imported history (times out of id order) giving the row readers' forest
and `stats`."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from benchmarks import synthetic
from convgraph.analysis.summaries import SMALL_INPUT_BYTES
from convgraph.contract import PARENT_ROWS
from convgraph.sources.source import sort_log_order
from tests.helpers import run

TIMES = ["2024-01-02T00:00:00", None, "2024-01-01T00:00:00", "", "2024-01-01T00:00:00"]
IDS = ["a", "b", "d", "c", "c0"]
# a's parent is d, d's is c; b and c are roots.
PARENTS = [2, -1, 3, -1, 0]


@pytest.mark.parametrize("strings", ["object", "arrow"])
def test_rows_sorted_by_time_then_id_parent_rows_following(strings):
    if strings == "arrow":
        pytest.importorskip("pyarrow")
        dtype: object = pd.StringDtype("pyarrow")
    else:
        dtype = object
    nodes = pd.DataFrame(
        {
            "id": pd.Series(IDS, dtype=dtype),
            "datetime_utc": pd.Series(TIMES, dtype=dtype),
            "model": pd.Categorical(["m1", "m2", "m1", "m3", "m2"]),
            "note": pd.Series(["x", None, None, None, None], dtype=object),
            PARENT_ROWS: np.array(PARENTS),
        }
    ).set_axis([5, 6, 7, 8, 9])
    nodes = sort_log_order(nodes)
    # None and "" alike come first, by id; equal times by id.
    assert nodes["id"].tolist() == ["b", "c", "c0", "d", "a"]
    assert list(nodes.index) == [0, 1, 2, 3, 4]
    assert list(nodes["model"].cat.categories) == ["m1", "m2", "m3"]
    assert nodes["model"].tolist() == ["m2", "m3", "m2", "m1", "m1"]
    # Objects stay objects, a missing one None (pandas 3 would infer str).
    assert nodes["note"].dtype == object
    assert nodes["note"].tolist() == [None, None, None, None, "x"]
    ids = nodes["id"].tolist()
    parents = {
        ids[row]: ids[p] if p >= 0 else None for row, p in enumerate(nodes[PARENT_ROWS])
    }
    assert parents == {"a": "d", "b": None, "c": None, "c0": "a", "d": "c"}


def test_a_table_in_log_order_is_left_as_it_is():
    nodes = pd.DataFrame({"id": ["a", "b"], "datetime_utc": ["t", "t"]}, index=[3, 1])
    assert sort_log_order(nodes)["id"].tolist() == ["a", "b"]


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    path = tmp_path_factory.mktemp("imported") / "logs.db"
    synthetic.build_imported_legacy(path, 1500, seed=3)
    # Over the size under which stats measures tree by tree, without a table.
    assert path.stat().st_size > SMALL_INPUT_BYTES
    return path


def test_an_imported_history_read_as_columns_is_the_row_readers_forest(
    imported, monkeypatch
):
    from tests.test_columnar import assert_same_forest

    forest = assert_same_forest(imported, monkeypatch, text=False)
    times = forest.nodes["datetime_utc"].tolist()
    assert times == sorted(times) and len(times) == 1500


def test_stats_of_an_imported_history_as_the_row_readers_give_it(imported, monkeypatch):
    pytest.importorskip("adbc_driver_sqlite")
    from convgraph.sources.llm import columnar

    fast = run("stats", "--json", "--db", str(imported)).output
    monkeypatch.setattr(columnar, "available", lambda: False)
    rows = run("stats", "--json", "--db", str(imported)).output
    assert fast == rows
    trees = json.loads(fast)
    firsts = [tree["first_datetime"] for tree in trees]
    assert firsts == sorted(firsts) and sum(tree["nodes"] for tree in trees) == 1500
