"""Time comes from an injected clock, never from the wall clock directly.

Tests pin it and benchmarks replay a history against a fixed "now".
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Callable

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    return datetime.now(timezone.utc)


def fixed_clock(at: datetime | str) -> Clock:
    """A clock that always answers ``at`` (an aware datetime or an ISO-8601 string)."""
    moment = datetime.fromisoformat(at) if isinstance(at, str) else at
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return lambda: moment


def iso(moment: datetime) -> str:
    """The one spelling of an instant this package writes: ISO-8601 in UTC with offset."""
    return moment.astimezone(timezone.utc).isoformat()
