"""How `stats --json` writes its rows: a batch of records a call of the
encoder, each record as `json_text` writes it alone, and the table's times
as `isoformat` writes them, whichever way they are made."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from convgraph.cli.output import echo_json_array, json_text
from convgraph.cli.tables import plain_records
from tests.helpers import printed


def test_a_batch_orjson_refuses_is_written_item_by_item() -> None:
    # 2**70 is past orjson's integers: that item alone is json's, and the
    # NaN beside it is still orjson's null, as when each item was written
    # on its own.
    items = [{"a": math.nan, "b": np.int64(3)}, {"big": 2**70}, {"c": "\u202e"}]
    assert printed(echo_json_array, items) == (
        '[\n  {\n    "a": null,\n    "b": 3\n  },\n'
        '  {\n    "big": 1180591620717411303424\n  },\n'
        '  {\n    "c": "\\u202e"\n  }\n]\n'
    )
    assert printed(echo_json_array, items[:1]) == json_text(items[:1]) + "\n"


def times_table(texts: list[str | None], unit: str) -> pd.DataFrame:
    moments = pd.to_datetime(pd.Series(texts), format="ISO8601", utc=True)
    return pd.DataFrame({"first_datetime": moments.astype(f"datetime64[{unit}, UTC]")})


def test_times_are_written_as_isoformat_writes_them() -> None:
    after_1970 = [
        "2025-01-01T00:00:00Z",
        None,
        "2025-01-01T00:01:24.156092Z",
        "1999-12-31T23:59:59.5Z",
    ]
    expected = [
        "2025-01-01T00:00:00+00:00",
        None,
        "2025-01-01T00:01:24.156092+00:00",
        "1999-12-31T23:59:59.500000+00:00",
    ]
    for unit in ("ns", "us"):
        records = list(plain_records(times_table(after_1970, unit)))
        assert [record["first_datetime"] for record in records] == expected
        # Before 1970 (which orjson does not write) and finer than a
        # microsecond: Python's and pandas' own text.
        records = list(
            plain_records(
                times_table([*after_1970, "1700-02-03T01:02:03.000001Z"], unit)
            )
        )
        assert records[-1]["first_datetime"] == "1700-02-03T01:02:03.000001+00:00"
        assert [record["first_datetime"] for record in records[:-1]] == expected
    records = list(plain_records(times_table(["2025-01-01T00:00:00.123456789Z"], "ns")))
    assert records == [{"first_datetime": "2025-01-01T00:00:00.123456789+00:00"}]
    records = list(plain_records(times_table([None, None], "ns")))
    assert records == [{"first_datetime": None}, {"first_datetime": None}]


def tree_times(dates: list[str | None]) -> list[tuple[str | None, str | None]]:
    """Each tree's first and last time by `summary_table`, of two
    trees whose rows alternate, the times given as Arrow's strings."""
    from convgraph.analysis.stats import summary_table
    from convgraph.contract import NODE_ATTRIBUTES

    count = len(dates)
    nodes = pd.DataFrame(
        {
            "id": [f"n{row}" for row in range(count)],
            "tree_id": ["a", "b"] * (count // 2),
            "parent_id": [None, None] + [f"n{row}" for row in range(count - 2)],
            **dict.fromkeys(NODE_ATTRIBUTES),
        }
    )
    nodes["datetime_utc"] = pd.Series(dates, dtype=pd.StringDtype("pyarrow"))
    table = summary_table(nodes)
    return [
        tuple(None if pd.isna(time) else time.isoformat() for time in row)
        for row in zip(table["first_datetime"], table["last_datetime"], strict=True)
    ]


def test_each_trees_first_and_last_time_whatever_the_order_of_the_texts() -> None:
    # In log order and written alike: each tree's first and last rows.
    in_order = [
        "2025-01-01T00:00:00",
        "2025-01-01T00:00:00.5",
        "2025-01-01T00:00:00.5+00:00",
        "2025-01-01T00:00:01+00:00",
        "2025-01-01T00:00:02.25",
        "2025-01-02T00:00:00",
    ]
    expected = [
        ("2025-01-01T00:00:00+00:00", "2025-01-01T00:00:02.250000+00:00"),
        ("2025-01-01T00:00:00.500000+00:00", "2025-01-02T00:00:00+00:00"),
    ]
    assert tree_times(in_order) == expected
    # Out of order (a tree's rows swapped): every text parsed, the same
    # answers.
    swapped = [in_order[2], in_order[1], in_order[0], *in_order[3:]]
    assert tree_times(swapped) == expected
    # Other forms of time, a missing one, a text that is no time.
    mixed = [
        "2025-01-01T09:00:00+09:00",
        None,
        "2025-01-01T00:00:00.5+00:00",
        "2025-01-01 00:00:01Z",
        "2025-02-30T00:00:00",
        "2025-01-02T00:00:00",
    ]
    assert tree_times(mixed) == [
        ("2025-01-01T00:00:00+00:00", "2025-01-01T00:00:00.500000+00:00"),
        ("2025-01-01T00:00:01+00:00", "2025-01-02T00:00:00+00:00"),
    ]
    # Written alike and in order, but a tree's first text is no date: the
    # tree's first time is its first that is one.
    no_date = ["2025-02-30T00:00:00", *in_order[1:]]
    assert tree_times(no_date) == [
        ("2025-01-01T00:00:00.500000+00:00", "2025-01-01T00:00:02.250000+00:00"),
        expected[1],
    ]
