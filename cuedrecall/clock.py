"""Time comes from an injected clock, never from the wall clock directly.

Tests pin it and benchmarks replay a history against a fixed "now".
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

Clock = Callable[[], datetime]
UTC = UTC

# Arithmetic that would leave the representable range is clipped to these, never raised.
EARLIEST = datetime.min.replace(tzinfo=UTC)
LATEST = datetime.max.replace(tzinfo=UTC)


def system_clock() -> datetime:
    return datetime.now(UTC)


def fixed_clock(at: datetime | str) -> Clock:
    """A clock that always answers ``at`` (an aware datetime or an ISO-8601 string)."""
    moment = datetime.fromisoformat(at) if isinstance(at, str) else at
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return lambda: moment


def iso(moment: datetime) -> str:
    """The one spelling of an instant this package writes: ISO-8601 in UTC with offset."""
    return moment.astimezone(UTC).isoformat()


def to_utc(moment: datetime) -> datetime:
    """An aware UTC datetime; a naive one is taken to be UTC already."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:  # e.g. 0001-01-01T00:00+01:00 lies before the first instant
        offset = moment.utcoffset() or timedelta(0)
        return EARLIEST if offset > timedelta(0) else LATEST


# --- instants ------------------------------------------------------------------------


def parse_instant(text: object) -> datetime | None:
    """A stored record time (ISO-8601, "Z", offset or none, or a date) as aware UTC, else None."""
    if isinstance(text, datetime):
        return to_utc(text)
    if not isinstance(text, str):
        return None
    try:
        # Since 3.11 this reads "Z", "+09:00", "YYYY-MM-DD HH:MM:SS" and a bare date.
        return to_utc(datetime.fromisoformat(text.strip()))
    except ValueError:
        return None


def to_epoch(text: object) -> float | None:
    """A stored record time as UTC epoch seconds, the sortable form; None if unreadable."""
    moment = parse_instant(text)
    return None if moment is None else moment.timestamp()
