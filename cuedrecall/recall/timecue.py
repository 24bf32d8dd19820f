"""The time cue: reading it and turning it into a period.

The rules: docs/recall-process.md#reading-a-cue and docs/recall-process.md#periods."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Literal

from cuedrecall.clock import EARLIEST, LATEST, UTC, parse_instant, to_utc
from cuedrecall.errors import ToolArgumentError
from cuedrecall.recall.cue_policy import (
    CONFIDENCES,
    DAY,
    MARGIN,
    RECENT_ONLY,
    UNIT_LENGTH,
    Confidence,
)

LONG_AGO: Literal["long_ago"] = "long_ago"


# An empty period still has to be a period: the smallest one a record time can fall in.
_ONE_SECOND = timedelta(seconds=1)

_FIELDS = frozenset({"after", "before", "ago", "confidence"})
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_SHOWN_CHARS = 80  # the most of a caller's value a message quotes

Period = tuple[datetime, datetime]
Span = tuple[datetime | None, datetime | None]


class TimeCueError(ToolArgumentError, ValueError):
    """A time cue that cannot be read; the message names the part, and the call is refused."""


@dataclass(frozen=True)
class Ago:
    """A relative cue: value units before now."""

    unit: str
    value: int

    @property
    def length(self) -> timedelta:
        """One unit; a month is 30 days."""
        return UNIT_LENGTH[self.unit]


@dataclass(frozen=True)
class TimeCue:
    """A parsed cue: aware UTC bounds (before already exclusive) or a relative ago."""

    confidence: Confidence
    after: datetime | None = None
    before: datetime | None = None
    ago: Ago | Literal["long_ago"] | None = None

    def echo(self) -> dict[str, object]:
        """The cue as the trace's request.time_cue records it."""
        out: dict[str, object] = {"confidence": self.confidence}
        if self.after is not None:
            out["after"] = self.after.isoformat()
        if self.before is not None:
            out["before"] = self.before.isoformat()
        if isinstance(self.ago, Ago):
            out["ago"] = {"unit": self.ago.unit, "value": self.ago.value}
        elif self.ago is not None:
            out["ago"] = self.ago
        return out


# --- clipped arithmetic -------------------------------------------------------------


def _later(moment: datetime, delta: timedelta) -> datetime:
    """moment + delta (delta ≥ 0), clipped to LATEST."""
    try:
        return moment + delta
    except OverflowError:
        return LATEST


def _earlier(moment: datetime, delta: timedelta) -> datetime:
    """moment − delta (delta ≥ 0), clipped to EARLIEST."""
    try:
        return moment - delta
    except OverflowError:
        return EARLIEST


def _times(delta: timedelta, factor: float) -> timedelta:
    """delta × factor (both ≥ 0), clipped to the longest timedelta."""
    try:
        return delta * factor
    except OverflowError:
        return timedelta.max


# --- parsing ---------------------------------------------------------------------------


def _shown(value: object) -> str:
    """The caller's value as a message quotes it: a string in quotes, anything else as JSON; long ones cut."""
    if isinstance(value, str):
        text = f"'{value}'"
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError):  # a circular structure from a library caller
            text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


def _parse_bound(field: str, value: object) -> datetime:
    """One absolute end; a date names the whole day, so before moves to the next midnight."""
    if not isinstance(value, str) or not value.strip():
        raise TimeCueError(
            f"time_cue.{field} must be a date (YYYY-MM-DD) or an ISO-8601 timestamp, not {_shown(value)}"
        )
    text = value.strip()
    unreadable = TimeCueError(f"time_cue.{field} is not a date or timestamp: {_shown(value)}")
    if _DATE.fullmatch(text):
        try:
            midnight = datetime.combine(date.fromisoformat(text), time(), UTC)
        except ValueError:
            raise unreadable from None
        return _later(midnight, DAY) if field == "before" else midnight
    moment = parse_instant(text)
    if moment is None:
        raise unreadable
    return moment


def _parse_ago(value: object) -> Ago | Literal["long_ago"]:
    """The relative part: "long_ago" or exactly {unit, value}."""
    if value == LONG_AGO:
        return LONG_AGO
    if not isinstance(value, Mapping) or set(value) != {"unit", "value"}:
        raise TimeCueError(f'time_cue.ago must be {{"unit": ..., "value": ...}} or "long_ago", not {_shown(value)}')
    unit, count = value["unit"], value["value"]
    if not isinstance(unit, str) or unit not in UNIT_LENGTH:
        raise TimeCueError(f"time_cue.ago.unit must be one of {', '.join(UNIT_LENGTH)}, not {_shown(unit)}")
    # bool is an int subclass, and True is not a number of days.
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise TimeCueError(f"time_cue.ago.value must be a whole number, 0 or more, not {_shown(count)}")
    return Ago(unit, count)


def _given(raw: Mapping[object, object], field: str) -> bool:
    """Whether a field was given; JSON null counts as left out."""
    return raw.get(field) is not None


def _confidence_fault(raw: Mapping[object, object]) -> str | None:
    """What is wrong with the cue's confidence, None when nothing is."""
    if not _given(raw, "confidence"):
        return f"time_cue.confidence is required: one of {', '.join(CONFIDENCES)}"
    value = raw["confidence"]
    if not isinstance(value, str) or value not in CONFIDENCES:
        return f"time_cue.confidence must be one of {', '.join(CONFIDENCES)}, not {_shown(value)}"
    return None


def parse_time_cue(raw: object) -> TimeCue | None:
    """The caller's time_cue argument as a TimeCue; None or {} is no cue; TimeCueError otherwise.

    Every fault of the cue is named with the field and the value that was sent (joined by "; "), so a
    caller with a missing confidence and an unreadable date learns of both at once.
    """
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise TimeCueError(f"time_cue must be an object, not {_shown(raw)}")
    if not raw:
        return None
    unknown = sorted(str(key) for key in raw if key not in _FIELDS)
    if unknown:
        raise TimeCueError(f"time_cue has unknown fields: {unknown} (it takes {', '.join(sorted(_FIELDS))})")
    faults = [fault for fault in (_confidence_fault(raw),) if fault]
    absolute = _given(raw, "after") or _given(raw, "before")
    bounds: dict[str, datetime | None] = {"after": None, "before": None}
    ago: Ago | Literal["long_ago"] | None = None
    if absolute == _given(raw, "ago"):
        faults.append("time_cue needs either after/before or ago, not both and not neither")
    else:
        for field in ("after", "before", "ago"):
            if not _given(raw, field):
                continue
            try:
                if field == "ago":
                    ago = _parse_ago(raw[field])
                else:
                    bounds[field] = _parse_bound(field, raw[field])
            except TimeCueError as exc:
                faults.append(str(exc))
    after, before = bounds["after"], bounds["before"]
    if after is not None and before is not None and before <= after:
        faults.append("time_cue.before must be later than time_cue.after")
    if faults:
        raise TimeCueError("; ".join(faults))
    confidence: Confidence = raw["confidence"]  # one of CONFIDENCES: _confidence_fault checked it
    if ago is not None:
        return TimeCue(confidence, ago=ago)
    return TimeCue(confidence, after=after, before=before)


# --- periods -----------------------------------------------------------------------------


def _relative(ago: Ago, now: datetime) -> Period:
    """One unit centred value units before now, ending no later than now."""
    half = ago.length / 2
    centre = _earlier(now, _times(ago.length, ago.value))
    return _earlier(centre, half), min(_later(centre, half), now)


def base_period(cue: TimeCue, now: datetime, span: Span | None) -> Period | None:
    """The cue's own period [start, end), before any margin; None when it names none.

    span is the scope's (oldest, newest) record time: it sizes long_ago and closes an
    open after-less cue.
    """
    now = to_utc(now)
    oldest, newest = (None, None) if span is None else span
    if cue.ago == LONG_AGO:
        if oldest is None or newest is None:
            return None
        oldest, newest = to_utc(oldest), to_utc(newest)
        start, end = oldest, oldest + (newest - oldest) / 3
    elif isinstance(cue.ago, Ago):
        start, end = _relative(cue.ago, now)
    else:
        first = cue.after if cue.after is not None else oldest
        if first is None:
            return None
        start = to_utc(first)
        end = to_utc(cue.before) if cue.before is not None else now
    if end <= start:
        end = _later(start, _ONE_SECOND)
    return start, end


def period(cue: TimeCue, confidence: Confidence, now: datetime, span: Span | None) -> Period | None:
    """The period searched at a confidence step: the base widened by its margin on both sides."""
    base = base_period(cue, now, span)
    if base is None:
        return None
    start, end = base
    margin = _times(end - start, MARGIN[confidence])
    return _earlier(start, margin), _later(end, margin)


def is_recent_only(cue: TimeCue, now: datetime, span: Span | None) -> bool:
    """Whether the cue's own period starts within 24 hours of now, so it is not used.

    docs/recall-process.md#a-cue-for-today-is-not-used
    """
    base = base_period(cue, now, span)
    return base is not None and base[0] >= _earlier(to_utc(now), RECENT_ONLY)
