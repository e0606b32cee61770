"""Times of llm's UTC form parsed by Arrow (`convgraph.times._utc_times`,
the first and last time of each tree in `time_bounds`): exactly what
`parse_times` gives, to the microsecond, from year 1 to 9999, or a refusal
that leaves the texts to it."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from convgraph.times import (
    _UTC_TIME,
    _utc_times,
    epoch_microseconds,
    parse_times,
    time_bounds,
)


def both(texts: list[str]) -> tuple[list[int | None] | None, list[int | None]]:
    """The microseconds of each text by Arrow (None where it refuses them)
    and by `parse_times` (None for NaT)."""
    by_arrow = _utc_times(pa.array(texts, pa.string()))
    # The columnar reader's times are large strings: the same answer.
    large = _utc_times(pa.chunked_array([pa.array(texts, pa.large_string())]))
    assert (large is None) == (by_arrow is None)
    assert large is None or large.equals(by_arrow)
    by_pandas = parse_times(pd.Series(texts, dtype=object))
    assert str(by_pandas.dtype) == "datetime64[us, UTC]"

    def values(times: pd.Series) -> list[int | None]:
        return [
            None if pd.isna(time) else epoch_microseconds(time.to_pydatetime())
            for time in times
        ]

    if by_arrow is None:
        return None, values(by_pandas)
    assert str(by_arrow.dtype) == "datetime64[us, UTC]"
    return values(by_arrow), values(by_pandas)


def test_every_fraction_with_and_without_its_offset() -> None:
    texts = []
    for digits in range(10):
        fraction = "." + "987654321"[:digits] if digits else ""
        for offset in ("", "+00:00"):
            texts += [
                f"2025-01-01T00:01:24{fraction}{offset}",
                f"1969-12-31T23:59:59{fraction}{offset}",
                f"2024-02-29T23:59:59{fraction}{offset}",
            ]
    by_arrow, by_pandas = both(texts[:42])  # up to six digits
    assert by_arrow == by_pandas
    assert by_pandas[:2] == [1735689684000000, -1000000]
    # Six digits are microseconds; Arrow refuses more, and pandas cuts them
    # to the microsecond, as Python's datetime reads them.
    assert by_pandas[-3:] == [1735689684987654, -12346, 1709251199987654]
    assert both(texts)[0] is None
    assert both(texts)[1][-3:] == [1735689684987654, -12346, 1709251199987654]


def test_every_year_python_holds() -> None:
    first, last = "0001-01-01T00:00:00", "9999-12-31T23:59:59.999999"
    assert both([first, last]) == (
        [-62135596800000000, 253402300799999999],
        [-62135596800000000, 253402300799999999],
    )
    # Around the nanoseconds' ends, which no longer end anything.
    around = ["1677-09-21T00:12:43", "2262-04-11T23:47:17", "2300-01-01T00:00:00"]
    by_arrow, by_pandas = both(around)
    assert (
        by_arrow
        == by_pandas
        == [-9223372037000000, 9223372037000000, 10413792000000000]
    )


def test_what_arrow_refuses_parse_times_reads() -> None:
    refused = [
        "2025-01-01T00:00:00.1234567891",  # ten digits: pandas cuts them
        "2025-02-30T00:00:00",  # no such day
        "2023-02-29T00:00:00",
        "2025-01-01T24:00:00",
        "0000-01-01T00:00:00",  # year 0, which Arrow reads: no moment
    ]
    for text in refused:
        assert both([text])[0] is None, text
    assert both(refused[:1]) == (None, [1735689600123456])
    assert both(refused[1:]) == (None, [None] * 4)
    # One refused text refuses the lot: parse_times reads them all.
    assert both(["2025-01-01T00:00:00", refused[1]]) == (
        None,
        [1735689600000000, None],
    )


def two_digits(least: int, most: int) -> st.SearchStrategy[str]:
    """Two digits: mostly a value in range (`least` to `most`), sometimes any."""
    in_range = st.integers(least, most)
    return st.one_of(in_range, in_range, in_range, st.integers(0, 99)).map(
        "{:02d}".format
    )


#: Texts of llm's UTC form (`_UTC_TIME`), mostly in range, sometimes not:
#: years around the ends of a nanosecond time, of Python's and anywhere,
#: days a month lacks, 60 seconds, fractions of any length.
UTC_FORM_TEXTS = st.builds(
    "{}-{}-{}T{}:{}:{}{}{}".format,
    st.one_of(
        st.integers(1960, 2030),
        st.integers(1960, 2030),
        st.integers(1677, 1678),
        st.integers(2261, 2262),
        st.sampled_from([0, 1, 9999]),
        st.integers(0, 9999),
    ).map("{:04d}".format),
    two_digits(1, 12),
    two_digits(1, 31),
    two_digits(0, 23),
    two_digits(0, 59),
    two_digits(0, 59),
    st.one_of(
        st.just(""),
        st.text("0123456789", min_size=1, max_size=9).map(".{}".format),
        st.text("0123456789", min_size=1, max_size=12).map(".{}".format),
    ),
    st.sampled_from(["", "+00:00"]),
)


@given(st.lists(UTC_FORM_TEXTS, min_size=1, max_size=3))
def test_arrow_gives_what_parse_times_gives_or_refuses(texts: list[str]) -> None:
    assert all(re.fullmatch(_UTC_TIME, text) for text in texts)
    by_arrow, by_pandas = both(texts)
    assert by_arrow is None or by_arrow == by_pandas


def test_each_groups_bounds_in_any_order_of_the_rows() -> None:
    """A grouped min and max by time: rows out of order, a missing time, a
    group without one, and a time of another offset (all read by parse_times)."""
    texts = [
        "2024-03-01T00:00:00",
        "2024-01-01T00:00:00.5+00:00",
        None,
        "2024-02-01T00:00:00",
        None,
        "2023-12-31T23:00:00",
    ]
    codes = np.array([0, 0, 0, 1, 2, 1])

    def bounds(values: list[str | None]) -> list[list[str]]:
        answers = []
        for dtype in (object, pd.StringDtype("pyarrow")):
            found = time_bounds(pd.Series(values, dtype=dtype), codes, 3)
            assert all(str(side.dtype) == "datetime64[us, UTC]" for side in found)
            answers.append([[str(time) for time in side] for side in found])
        assert answers[0] == answers[1]  # parse_times' answer, and Arrow's
        return answers[0]

    assert bounds(texts) == [
        ["2024-01-01 00:00:00.500000+00:00", "2023-12-31 23:00:00+00:00", "NaT"],
        ["2024-03-01 00:00:00+00:00", "2024-02-01 00:00:00+00:00", "NaT"],
    ]
    refused = [*texts[:5], "2023-12-31T23:00:00+01:00"]
    assert bounds(refused)[0][1] == "2023-12-31 22:00:00+00:00"
