"""Times as llm stores them, read by one rule: a time without an offset is UTC, never
the reading machine's local time; a moment lies in Python's range (`EARLIEST` to
`LATEST`) to the microsecond, in a tree (`parse_time`) as in a table (`parse_times`).
pandas is imported only by the column functions."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

#: Microseconds, as Python's datetime: nanoseconds end in 1677 and 2262.
DATETIME_DTYPE: Final = "datetime64[us, UTC]"

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
    """ISO 8601 text as an aware time (UTC where it has no offset); None for
    other values or a moment outside years 1 to 9999 in UTC."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        # The last hours of year 9999 west of Greenwich are no moment in UTC.
        moment.astimezone(UTC)
    except OverflowError:
        return None
    return moment


def parse_bound(
    value: str, now: datetime | None = None, end: bool = False
) -> datetime | None:
    """A `--since`/`--until` bound as an aware UTC time, None if unreadable: a
    date, a time, or a span back from `now` (`12h`, `7d`, `2w`). A date with
    `end` means the last moment of that day."""
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
    """`parse_time` of a whole column, in `DATETIME_DTYPE`; NaT where it gives None."""
    import pandas as pd

    times = _to_utc(column)
    # One text with nanoseconds makes pandas read every time outside 1677 to
    # 2262 as NaT: those are read again, and what pandas refuses by Python.
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
    # Year 0 or 10000 is no moment for Python either; compared as integers
    # because pandas' comparison of a year 0 with a datetime raises.
    counts = times.dt.tz_localize(None).to_numpy("datetime64[us]").view("int64")
    inside = (counts >= _FIRST_COUNT) & (counts <= _LAST_COUNT)
    return times.where(inside | times.isna().to_numpy())


def _to_utc(column: pd.Series) -> pd.Series:
    import pandas as pd

    times = pd.to_datetime(column, utc=True, format="ISO8601", errors="coerce")
    if times.dt.tz is None:  # a column without a single time stays naive
        times = times.dt.tz_localize("UTC")
    return times.astype(DATETIME_DTYPE)


def _utc_or_none(value: Any) -> datetime | None:
    moment = parse_time(value)
    return None if moment is None else moment.astimezone(UTC)


def epoch_microseconds(moment: datetime) -> int:
    """An aware time as exact microseconds since 1970 UTC (a search index's integer)."""
    return (moment - _EPOCH) // timedelta(microseconds=1)


_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_FIRST_COUNT: Final = epoch_microseconds(EARLIEST)
_LAST_COUNT: Final = epoch_microseconds(LATEST)


#: llm's UTC form, which Arrow parses in C as `parse_times` does.
_UTC_TIME = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(\+00:00)?$"


def time_bounds(
    dates: pd.Series, codes: np.ndarray, groups: int
) -> tuple[pd.api.extensions.ExtensionArray, pd.api.extensions.ExtensionArray]:
    """Each group's first and last time (`parse_times`, NaT where none), the
    groups numbered 0 to `groups` - 1 by `codes`, one per row of `dates`, in
    any order of the rows: a grouped min and max."""
    import numpy as np
    import pandas as pd

    times = None
    if isinstance(dates.array, pd.arrays.ArrowStringArray):
        import pyarrow.compute as pc

        texts = dates.array.__arrow_array__()  # its Arrow strings, not a copy
        # llm's own form, as nearly every time is: parsed by Arrow in C.
        if pc.all(pc.match_substring_regex(texts, _UTC_TIME)).as_py() is not False:
            times = _utc_times(texts)
    if times is None:
        times = parse_times(dates)
    counts = times.dt.tz_localize(None).to_numpy("datetime64[us]").view("int64")
    known = times.notna().to_numpy()
    first = np.full(groups, np.iinfo(np.int64).max)
    np.minimum.at(first, codes[known], counts[known])
    last = np.full(groups, np.iinfo(np.int64).min)
    np.maximum.at(last, codes[known], counts[known])
    # A group without a time is left with first > last: NaT.
    bounds = pd.Series(np.concatenate([first, last]).view("datetime64[us]"))
    bounds = bounds.where(np.tile(first <= last, 2)).dt.tz_localize("UTC")
    return bounds.array[:groups], bounds.array[groups:]


def _utc_times(texts: Any) -> pd.Series | None:
    """`parse_times` by Arrow in C of texts all of the `_UTC_TIME` form; None
    where Arrow refuses one or gives year 0, for `parse_times` to read."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    # "+00:00" may only end the text: without it Arrow reads the same moment.
    naive = pc.replace_substring(texts, "+00:00", "")
    try:
        moments = pc.cast(naive, pa.timestamp("us"))
    except pa.ArrowInvalid:
        return None
    counts = moments.to_numpy(zero_copy_only=False)
    # Year 0, which Arrow reads, is no moment (a missing time is NaT).
    if ((counts.view("int64") < _FIRST_COUNT) & pd.notna(counts)).any():
        return None
    return pd.Series(counts).dt.tz_localize("UTC")


def utc_iso(value: Any, timespec: str = "auto") -> str | None:
    """A time as ISO 8601 in UTC with `+00:00`; None for a value that is no time."""
    moment = parse_time(value)
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat(timespec=timespec)


def shown_time(value: str | None, seconds: bool = True) -> str:
    """A stored time as a table shows it: UTC without the offset, to the second
    (or minute); "" for none, and text that is no time as it is."""
    if not value:
        return ""
    end = 19 if seconds else 16
    if len(value) >= 19 and value[10] == "T" and _UTC_TAIL.fullmatch(value, 19):
        # Already UTC, the common case: strftime's answer without parsing.
        return f"{value[:10]} {value[11:end]}"
    moment = parse_time(value)
    if moment is None:
        return value
    shape = "%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M"
    return moment.astimezone(UTC).strftime(shape)
