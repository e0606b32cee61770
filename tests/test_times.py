"""Stored times: a time without an offset is UTC, whatever the machine's
time zone, in every place that reads one (`convgraph.times`)."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone

import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from convgraph.times import parse_time, parse_times, shown_time, utc_iso

#: The same moment written three ways, as llm's generations and the chat
#: exports write it.
SAME_MOMENT = (
    "2024-03-01T12:00:00",
    "2024-03-01T12:00:00+00:00",
    "2024-03-01T21:00:00+09:00",
)


def in_time_zone(zone: str, script: str) -> str:
    """What `script` prints, run by Python under the time zone `zone`."""
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "TZ": zone},
    )
    return done.stdout.strip()


def test_an_imported_conversation_gets_the_same_ids_in_every_time_zone():
    script = (
        "from convgraph.store.importer import stable_ulid\n"
        f"for moment in {SAME_MOMENT!r}:\n"
        "    print(stable_ulid(moment, 'chatgpt', 'conversation'))\n"
    )
    tokyo = in_time_zone("Asia/Tokyo", script).split()
    utc = in_time_zone("UTC", script).split()
    # The time part of each id is the moment's, the same in both runs.
    assert tokyo == utc
    assert len(set(utc)) == 1
    assert utc[0][:10] == "01hqwy5cg0"


# -- the rule's two forms: one value, a whole column --------------------------

#: Offsets as the apps write them: none (llm's legacy rows), UTC as +00:00
#: or Z, and whole or half hours either side.
OFFSETS = st.one_of(
    st.none(),
    st.just("Z"),
    st.integers(-14 * 4, 14 * 4).map(lambda quarters: timedelta(minutes=15 * quarters)),
)

#: Text that is no time at all, as hostile or damaged data holds it.
NOT_TIMES = st.sampled_from(["", "yesterday", "2024-13-01T00:00:00", "12:00", "null"])


@st.composite
def stored_times(draw: st.DrawFn) -> str:
    # Every year Python holds, its ends more often than chance would: year
    # 1 (Go's zero time) and 9999, where an offset leaves the range.
    moment = draw(
        st.one_of(
            st.datetimes(),
            st.datetimes(max_value=datetime(1, 1, 2)),
            st.datetimes(min_value=datetime(9999, 12, 31)),
            st.datetimes(
                min_value=datetime(1677, 1, 1), max_value=datetime(2263, 1, 1)
            ),
        )
    )
    offset = draw(OFFSETS)
    timespec = draw(st.sampled_from(["seconds", "milliseconds", "microseconds"]))
    if offset is None:
        return moment.isoformat(timespec=timespec)
    if offset == "Z":
        return moment.isoformat(timespec=timespec) + "Z"
    return moment.replace(tzinfo=timezone(offset)).isoformat(timespec=timespec)


@given(st.lists(st.one_of(stored_times(), NOT_TIMES, st.none()), max_size=12))
def test_a_column_reads_each_time_as_one_value_does(values):
    column = parse_times(pd.Series(values, dtype=object))
    expected = [parse_time(value) for value in values]
    assert [None if pd.isna(time) else time.to_pydatetime() for time in column] == [
        None if moment is None else moment.astimezone(UTC) for moment in expected
    ]


def test_a_time_without_an_offset_is_utc():
    moments = [parse_time(text) for text in SAME_MOMENT]
    assert moments == [datetime(2024, 3, 1, 12, tzinfo=UTC)] * 3
    assert (
        parse_times(pd.Series(SAME_MOMENT)).tolist()
        == [pd.Timestamp("2024-03-01 12:00", tz="UTC")] * 3
    )
    assert {utc_iso(text) for text in SAME_MOMENT} == {"2024-03-01T12:00:00+00:00"}


def test_tables_show_times_in_utc_to_the_second_or_the_minute():
    assert [shown_time(text) for text in SAME_MOMENT] == ["2024-03-01 12:00:00"] * 3
    assert shown_time("2024-03-01T12:00:59.999+00:00", seconds=False) == (
        "2024-03-01 12:00"
    )
    assert shown_time("not a time") == "not a time"
