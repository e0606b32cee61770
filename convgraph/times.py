"""Times as llm stores them: read by one rule, shown one way.

llm writes `datetime_utc` as ISO 8601 text in UTC: its legacy rows without
an offset (`datetime.utcnow().isoformat()`), the turns of its message store
with one (`+00:00`); the chat exports give epoch seconds or text with `Z`.
The rule for reading them: a time without an offset is UTC, never the local
time of the machine that reads it, so a run under `TZ=Asia/Tokyo` reads the
same moments (and an import makes the same ids) as one in London. A moment
is a time of Python's range, from `EARLIEST` to `LATEST` in UTC, to the
microsecond, in every form: `parse_time` reads one value and `parse_times`
a whole pandas column (`DATETIME_DTYPE`, microseconds, so that year 1, what
Go writes for a zero time, and year 9999 are times in a table as they are
in a tree), side by side, with one property test for the pair
(tests/test_times.py), and `time_bounds` the first and last of each group of
a column; `epoch_microseconds` is the integer an index compares a moment
by. `shown_time` is how a person sees a stored time in a table or the
browser: in UTC, to the second or the minute. `parse_bound` reads what a
person types as a bound of a time filter (`--since`, `--until`): a date, a
time, or a span back from now (`7d`), always a moment of that range, so a
bound is comparable wherever a time is. Nothing here imports pandas until
`parse_times` is called.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

#: The dtype of a column of times: UTC, to the microsecond, as Python's
#: datetime holds them (a nanosecond column ends in 1677 and 2262, and a
#: time outside it would be no time in a table but one in a tree).
DATETIME_DTYPE: Final = "datetime64[us, UTC]"

#: The first and last moments a stored time or a bound may be: Python's
#: datetime's, in UTC.
EARLIEST: Final = datetime.min.replace(tzinfo=UTC)
LATEST: Final = datetime.max.replace(tzinfo=UTC)

# What may follow "YYYY-MM-DDTHH:MM:SS" in a time already in UTC: a
# fraction, and no offset, `Z` or a zero one.
_UTC_TAIL = re.compile(r"(?:\.\d*)?(?:Z|[+-]00:?00)?")

# A span back from now: a count and its unit (hours, days, weeks).
_SPAN = re.compile(r"(\d{1,6})([hdw])")
_SPAN_UNITS: Final = {"h": "hours", "d": "days", "w": "weeks"}
# A date alone, which as an upper bound means the whole of that day.
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def parse_time(value: Any) -> datetime | None:
    """ISO 8601 text as an aware time, UTC where it has no offset; None for a
    value that is no ISO 8601 text, or whose moment in UTC lies outside the
    years Python's datetime holds (1 to 9999).

    Examples
    --------
    >>> parse_time("2024-03-01T12:00:00")
    datetime.datetime(2024, 3, 1, 12, 0, tzinfo=datetime.timezone.utc)
    >>> parse_time("2024-03-01T21:00:00+09:00") == parse_time("2024-03-01T12:00:00Z")
    True
    >>> parse_time("yesterday"), parse_time(None)
    (None, None)
    >>> parse_time("9999-12-31T23:00:00-05:00") is None  # past year 9999 in UTC
    True
    """
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        # A moment that is one in its own offset but not in UTC (the last
        # hours of year 9999 west of Greenwich) would fail every reader that
        # converts it: it is out of range, as a number column's overflow is.
        moment.astimezone(UTC)
    except OverflowError:
        return None
    return moment


def parse_bound(
    value: str, now: datetime | None = None, end: bool = False
) -> datetime | None:
    """A bound of a time filter as a person types it, as an aware time in
    UTC; None for text that is none of its forms.

    The forms: a date (`2026-11-01`), a time (`2026-11-01T14:00`, UTC where
    it has no offset, as `parse_time` reads it), or a span back from `now`
    (`12h`, `7d`, `2w`: hours, days, weeks; `now` is the present moment in
    UTC when not given, and a test gives it). A date as an upper bound
    (`end=True`) means the last moment of that day, so `--until 2026-11-01`
    keeps what was logged on the first of November.

    Examples
    --------
    >>> now = datetime(2026, 11, 8, 12, 0, tzinfo=UTC)
    >>> parse_bound("7d", now)
    datetime.datetime(2026, 11, 1, 12, 0, tzinfo=datetime.timezone.utc)
    >>> parse_bound("2026-11-01T14:00", now).isoformat()
    '2026-11-01T14:00:00+00:00'
    >>> parse_bound("2026-11-01", now, end=True).isoformat()
    '2026-11-01T23:59:59.999999+00:00'
    >>> parse_bound("yesterday-ish", now) is None
    True
    """
    text = value.strip()
    span = _SPAN.fullmatch(text)
    if span:
        moment = now if now is not None else datetime.now(UTC)
        try:
            return moment - timedelta(**{_SPAN_UNITS[span[2]]: int(span[1])})
        except OverflowError:
            return None
    given = parse_time(text)
    if given is None:
        return None
    moment = given.astimezone(UTC)
    if end and _DATE.fullmatch(text):
        moment += timedelta(days=1, microseconds=-1)
    return moment


def parse_times(column: pd.Series) -> pd.Series:
    """`parse_time` of a whole column at once: UTC times (`DATETIME_DTYPE`,
    the fraction cut to the microsecond as `parse_time` cuts it), NaT where
    a value is missing, is no ISO 8601 text or lies outside `EARLIEST` to
    `LATEST`.

    Examples
    --------
    >>> import pandas as pd
    >>> times = parse_times(pd.Series(["2024-03-01T12:00:00",
    ...     "2024-03-01T21:00:00+09:00", None, "yesterday", "0001-01-01T00:00:00Z"]))
    >>> times.tolist()[:2] == [pd.Timestamp("2024-03-01 12:00", tz="UTC")] * 2
    True
    >>> times.isna().tolist()
    [False, False, True, True, False]
    >>> str(times[4])
    '0001-01-01 00:00:00+00:00'
    """
    import pandas as pd

    times = _to_utc(column)
    # pandas reads a column at the finest unit one of its texts needs: one
    # time with nanoseconds makes every time outside the nanoseconds' years
    # (1677 to 2262) NaT. Those few are read again without it, and what
    # pandas still refuses there by Python itself, as `parse_time` reads it.
    missed = times.isna() & column.notna()
    if missed.any():
        again = _to_utc(column[missed])
        left = again.isna()
        if left.any():
            again[left] = pd.Series(
                [_utc_or_none(value) for value in column[missed][left]],
                index=again.index[left],
                dtype=DATETIME_DTYPE,
            )
        times[missed] = again
    # A year 0 or 10000 (a text pandas reads, or an offset past the range)
    # is no moment for Python: no moment here either. Compared as integers:
    # pandas' own comparison of a year 0 with a datetime raises.
    counts = times.dt.tz_localize(None).to_numpy("datetime64[us]").view("int64")
    inside = (counts >= _FIRST_COUNT) & (counts <= _LAST_COUNT)
    return times.where(inside | times.isna().to_numpy())


def _to_utc(column: pd.Series) -> pd.Series:
    """pandas' reading of ISO 8601 texts (or times), in `DATETIME_DTYPE`."""
    import pandas as pd

    times = pd.to_datetime(column, utc=True, format="ISO8601", errors="coerce")
    if times.dt.tz is None:  # a column without a single time stays naive
        times = times.dt.tz_localize("UTC")
    return times.astype(DATETIME_DTYPE)


def _utc_or_none(value: Any) -> datetime | None:
    moment = parse_time(value)
    return None if moment is None else moment.astimezone(UTC)


def epoch_microseconds(moment: datetime) -> int:
    """An aware time as microseconds since 1970 UTC, exact: the integer a
    search index stores for a node's time and compares a filter's bounds
    with (a 64-bit integer holds every moment from `EARLIEST` to `LATEST`,
    where nanoseconds would not).

    Examples
    --------
    >>> epoch_microseconds(EARLIEST), epoch_microseconds(LATEST)
    (-62135596800000000, 253402300799999999)
    >>> epoch_microseconds(parse_time("1970-01-01T00:00:01+00:00"))
    1000000
    """
    return (moment - _EPOCH) // timedelta(microseconds=1)


#: Where `epoch_microseconds` counts from.
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
#: `EARLIEST` and `LATEST` as `epoch_microseconds` counts them.
_FIRST_COUNT: Final = epoch_microseconds(EARLIEST)
_LAST_COUNT: Final = epoch_microseconds(LATEST)


#: A time as llm writes it, in UTC: ISO 8601 to the second, perhaps a
#: fraction, perhaps "+00:00". Texts all of this form sort as their times do.
_UTC_TIME = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(\+00:00)?$"


def time_bounds(
    dates: pd.Series, codes: np.ndarray, groups: int
) -> tuple[pd.api.extensions.ExtensionArray, pd.api.extensions.ExtensionArray]:
    """Each group's first and last time (`parse_times`; NaT where it has
    none), the groups (a forest's trees) numbered 0 to `groups` - 1 by
    `codes`, one per row of `dates`.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> dates = pd.Series(["2024-03-01T12:00:00", "2024-03-02T08:00:00+00:00",
    ...     "2024-03-01T21:00:00+09:00"], dtype="string[pyarrow]")
    >>> first, last = time_bounds(dates, np.array([0, 0, 1]), 2)
    >>> [str(moment) for moment in first], [str(moment) for moment in last]
    (['2024-03-01 12:00:00+00:00', '2024-03-01 12:00:00+00:00'], ['2024-03-02 08:00:00+00:00', '2024-03-01 12:00:00+00:00'])
    """
    import numpy as np
    import pandas as pd

    texts = None
    if isinstance(dates.array, pd.arrays.ArrowStringArray):
        # Arrow's strings exist, so pyarrow does (an optional dependency).
        import pyarrow as pa
        import pyarrow.compute as pc

        texts = pa.array(dates.array)  # its Arrow strings, not a copy
    if (
        texts is not None
        and len(texts) > 1
        and not texts.null_count
        and pc.all(pc.match_substring_regex(texts, _UTC_TIME)).as_py()
        and pc.all(
            pc.greater_equal(texts.slice(1), texts.slice(0, len(texts) - 1))
        ).as_py()
    ):
        # Every text written alike and the rows in their order (log order,
        # as the readers give them nearly always): a tree's first row holds
        # its first time and its last row its last, and only those are
        # parsed, not a million texts as Python strings.
        rows = np.arange(len(codes))
        first_rows = np.full(groups, len(codes), dtype=np.int64)
        np.minimum.at(first_rows, codes, rows)
        last_rows = np.zeros(groups, dtype=np.int64)
        np.maximum.at(last_rows, codes, rows)
        rows = np.concatenate([first_rows, last_rows])
        bounds = _utc_times(texts.take(rows))
        if bounds is None:
            bounds = parse_times(dates.iloc[rows])
        if not bounds.isna().any():
            return bounds.array[:groups], bounds.array[groups:]
    times = parse_times(dates).groupby(codes)
    return (
        times.min().reindex(range(groups)).array,
        times.max().reindex(range(groups)).array,
    )


def _utc_times(texts: Any) -> pd.Series | None:
    """`parse_times` of Arrow strings all of llm's UTC form (`_UTC_TIME`),
    parsed by Arrow in C; None where Arrow refuses one (a day the month
    lacks, more than six digits of fraction) or gives what is no moment
    (year 0), which `parse_times` reads instead.

    Where Arrow takes a text of that form it gives the microseconds
    `parse_times` gives (tests/test_time_bounds.py); it refuses more than
    pandas does, never less, so a refusal costs time, never the answer.
    """
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    # The form allows "+00:00" at the end only: without it, every text is
    # one Arrow reads as a time without a zone, the same moment in UTC.
    naive = pc.replace_substring(texts, "+00:00", "")
    try:
        moments = pc.cast(naive, pa.timestamp("us"))
    except pa.ArrowInvalid:
        return None
    counts = moments.to_numpy()
    if len(counts) and counts.view("int64").min() < _FIRST_COUNT:
        return None
    return pd.Series(counts).dt.tz_localize("UTC")


def utc_iso(value: Any, timespec: str = "auto") -> str | None:
    """ISO 8601 text as ISO 8601 text in UTC with its offset (`+00:00`), the
    form llm's message store writes; None for a value that is no time.

    Examples
    --------
    >>> utc_iso("2024-03-01T21:00:00.5+09:00")
    '2024-03-01T12:00:00.500000+00:00'
    >>> utc_iso("2024-03-01T12:00:00", timespec="microseconds")
    '2024-03-01T12:00:00.000000+00:00'
    """
    moment = parse_time(value)
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat(timespec=timespec)


def shown_time(value: str | None, seconds: bool = True) -> str:
    """A stored time as a person reads it in a table: UTC, without the
    offset, to the second (or the minute, `seconds=False`); "" for none, and
    text that is no time as it is.

    Examples
    --------
    >>> shown_time("2025-01-02T03:04:05.678+00:00"), shown_time(None)
    ('2025-01-02 03:04:05', '')
    >>> shown_time("2025-01-02T12:04:05+09:00", seconds=False)
    '2025-01-02 03:04'
    """
    if not value:
        return ""
    end = 19 if seconds else 16
    if len(value) >= 19 and value[10] == "T" and _UTC_TAIL.fullmatch(value, 19):
        # Already UTC, the common case (a table may show 100,000 of them):
        # what strftime below gives, without parsing.
        return f"{value[:10]} {value[11:end]}"
    moment = parse_time(value)
    if moment is None:
        return value
    shape = "%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M"
    return moment.astimezone(UTC).strftime(shape)
