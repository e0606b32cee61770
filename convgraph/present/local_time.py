"""Times as a person reads them: in their own time zone, to the minute.

Every output for a person (the tables of conversations, a transcript's
headings, the browser's details, the messages that name a filter's bounds)
shows a stored time through `person_time`; the outputs for programs (--json,
--csv, --tsv and every export) keep the ISO 8601 text in UTC that llm
stores. The zone is the system's, which $TZ overrides, as `date` has it.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from typing import Any

from convgraph.times import parse_time


def person_time(value: Any, zone: tzinfo | None = None, named: bool = True) -> str:
    """A moment (an aware `datetime`, or stored text) as a person reads it:
    in the user's own time zone (`zone`, else the system's or $TZ's), to
    the minute, with the zone's name; "" for none, and text that is no time
    as it is. Data outputs (--json, --csv, the exports) keep ISO 8601 in
    UTC instead. `named` False leaves the zone's name out (a table's
    column of times, where one zone is every row's).
    """
    if value is None or value == "":
        return ""
    moment = value if isinstance(value, datetime) else parse_time(value)
    if moment is None:
        return str(value)
    try:
        local = moment.astimezone(zone)
    except (OverflowError, ValueError, OSError):
        # A moment the zone cannot place (the first or last days a
        # datetime holds): shown in UTC.
        local = moment.astimezone(UTC)
    # Formatted by hand: strftime writes the year 1 as "1" on glibc.
    text = (
        f"{local.year:04d}-{local.month:02d}-{local.day:02d}"
        f" {local.hour:02d}:{local.minute:02d}"
    )
    if named and local.tzname():
        text += f" {local.tzname()}"
    return text
