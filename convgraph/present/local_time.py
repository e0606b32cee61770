"""Times as a person reads them: in their own zone, to the minute."""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from typing import Any

from convgraph.times import parse_time


def person_time(value: Any, zone: tzinfo | None = None, named: bool = True) -> str:
    """A moment (aware `datetime` or stored text) in `zone` (else $TZ's or the
    system's), to the minute, named unless not `named`; "" for none, non-times
    as they are."""
    if value is None or value == "":
        return ""
    moment = value if isinstance(value, datetime) else parse_time(value)
    if moment is None:
        return str(value)
    try:
        local = moment.astimezone(zone)
    except (OverflowError, ValueError, OSError):
        # The first or last days a datetime holds: shown in UTC.
        local = moment.astimezone(UTC)
    # Formatted by hand: strftime writes the year 1 as "1" on glibc.
    text = (
        f"{local.year:04d}-{local.month:02d}-{local.day:02d}"
        f" {local.hour:02d}:{local.minute:02d}"
    )
    if named and local.tzname():
        text += f" {local.tzname()}"
    return text
