"""Browsing for the explorer (``cuedrecall ui``): the agents a store holds and pages of one scope's records.

Not tools: the operator's own reads, through ``Memory.agents()`` and ``Memory.browse()``.
The rules: a page is at most ``PAGE_MAX`` rows, newest stored (highest id) first, paged by
``before_id`` (keyset) or ``offset``; the date filter is the record time (a memory's
timestamp, an episode's start), ``after`` inclusive and ``before`` exclusive, a bare date
meaning the whole day (``before: 2025-06-30`` includes the 30th, as a time cue reads it);
a row's text is cut to a preview of ``PREVIEW_CHARS`` (get_contents has the rest).
Isolation is the store's: project X with the global pool, channel C with the shared one.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

from cuedrecall.clock import iso, parse_instant
from cuedrecall.errors import ToolArgumentError
from cuedrecall.runtime import Runtime
from cuedrecall.store.base import EPISODE, MEMORY, Record, Scope
from cuedrecall.tools.bounds import check_value

PAGE_MAX = 200
PREVIEW_CHARS = 500
KINDS = {"memories": MEMORY, "episodes": EPISODE, MEMORY: MEMORY, EPISODE: EPISODE}


def agents(rt: Runtime) -> dict[str, Any]:
    """Every agent with a memory, an episode or a profile: counts, projects and channels."""
    return {
        "agents": [
            {
                "agent_id": a.agent_id,
                "memories": a.memories,
                "episodes": a.episodes,
                "projects": list(a.projects),
                "channels": list(a.channels),
                "profile": a.profile,
            }
            for a in rt.store.agents()
        ]
    }


def browse(
    rt: Runtime,
    *,
    kind: str,
    agent_id: str,
    project_id: str | None = None,
    channel: str = "",
    limit: int = 50,
    before_id: int | None = None,
    offset: int = 0,
    after: str | None = None,
    before: str | None = None,
) -> dict[str, Any]:
    """One page of the scope's memories or episodes, newest first, with the scope's totals and time span."""
    if kind not in KINDS:
        raise ToolArgumentError(f"argument 'kind' must be memories or episodes, not {str(kind)[:40]!r}")
    if not agent_id:
        raise ToolArgumentError("argument 'agent_id' is required")
    for name, value in (
        ("agent_id", agent_id),
        ("project_id", project_id),
        ("channel", channel),
        ("limit", limit),
        ("before_id", before_id),
        ("offset", offset),
        ("after", after),
        ("before", before),
    ):
        check_value(name, value)  # the tools' rules: a 64-bit integer, no NUL or lone surrogate in a string
    if not 1 <= limit <= PAGE_MAX:
        raise ToolArgumentError(f"argument 'limit' must be between 1 and {PAGE_MAX}")
    if offset < 0 or (before_id is not None and before_id < 1):
        raise ToolArgumentError("arguments 'offset' and 'before_id' must be positive")
    scope = Scope(agent_id, project_id, channel)
    low = _bound("after", after, end_of_day=False)
    high = _bound("before", before, end_of_day=True)
    period = None if low is None and high is None else (-1e18 if low is None else low, 1e18 if high is None else high)
    with rt.store.snapshot():
        records = rt.store.page_records(
            KINDS[kind], scope, limit=limit, before_id=before_id, offset=offset, period=period
        )
        memories, episodes = rt.store.pool_counts(scope)
        span = rt.store.span(scope)
    return {
        "kind": "memories" if KINDS[kind] == MEMORY else "episodes",
        "rows": [_row(r) for r in records],
        "count": len(records),
        "next_before_id": records[-1].id if len(records) == limit else None,
        "totals": {"memories": memories, "episodes": episodes},
        "span": None if span is None else [_iso(span[0]), _iso(span[1])],
    }


def scope_span(rt: Runtime, agent_id: str, project_id: str | None = None, channel: str = "") -> list[str] | None:
    """[oldest, newest] memory time in the scope (ISO-8601), for a timeline; None when nothing is dated."""
    span = rt.store.span(Scope(agent_id, project_id, channel))
    return None if span is None else [_iso(span[0]), _iso(span[1])]


def _iso(epoch: float) -> str:
    return iso(datetime.fromtimestamp(epoch, UTC))


def _bound(name: str, value: str | None, *, end_of_day: bool) -> float | None:
    """A filter bound as epoch seconds; a bare date is its day's start, or (``before``) the next day's."""
    if value is None or value == "":
        return None
    text = str(value).strip()
    try:
        day = date.fromisoformat(text) if len(text) == 10 else None
    except ValueError:
        day = None
    if day is not None:
        moment = datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(days=int(end_of_day))
        return moment.timestamp()
    parsed = parse_instant(text)
    if parsed is None:
        raise ToolArgumentError(f"argument {name!r} is not a date (YYYY-MM-DD) or an ISO-8601 instant")
    return parsed.timestamp()


def _preview(text: str) -> dict[str, Any]:
    if len(text) <= PREVIEW_CHARS:
        return {"text": text}
    return {"text": text[:PREVIEW_CHARS], "truncated": True, "length": len(text)}


def _row(r: Record) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": r.id,
        "ref": r.ref,
        "project_id": r.project_id,
        "channel": r.channel,
        "timestamp": r.timestamp,
        "created_at": r.created_at,
        **_preview(r.text),
    }
    if r.kind == MEMORY:
        row.update(source=r.source, locked=r.locked)
    else:
        row.update(keywords=r.keywords, start_time=r.start_time, end_time=r.end_time, resolved=r.resolved)
    return row
