"""Suspected-failure rates per stage over the trace log: the numbers an operator reads each week.

``summarize`` is pure: it counts entries (``handlers/trace_log.py``'s shape) whose ``at``
falls in a window. A reconstruct entry counts through the recall trace it holds, so
every entry is one recall. Rates are per recall in the window. ``summarize_log``
reads a log, its rotated file first, and counts the lines it had to skip.

What is counted, per recall:

- ``suspected``: each ``{stage, code}`` of the trace's ``suspected`` list, by occurrence;
- ``gate_fallback``: the gate admitted rows by its fallback (``gate.gate_fallback``);
- ``autocut``: autocut cut the answer (``autocut.fired``);
- ``time_cue_given`` / ``time_cue_ignored`` / ``time_cue_revised``: the request held a time cue; the cue was
  not used (``cue_ignored``); the cue ran more than one stage (the period was widened at least once);
- ``relief``: gate relief admitted rows (reservations of kind ``relief``; ``relief_rows`` counts the rows);
- ``timing_ms``: the median and 95th percentile (nearest rank) of each timing key.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from cuedrecall.clock import iso, parse_instant
from cuedrecall.handlers.trace_log import read_entries

EVENTS = ("gate_fallback", "autocut", "time_cue_given", "time_cue_ignored", "time_cue_revised", "relief")


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def recall_trace(entry: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The recall trace an entry holds (a reconstruct's is under ``recall``), or None when it holds none."""
    trace = entry.get("trace")
    if not isinstance(trace, Mapping):
        return None
    inner = trace.get("recall")
    if isinstance(inner, Mapping):
        return inner
    return None if "recall" in trace else trace  # a reconstruct whose recall was not traced holds no counts


def events(trace: Mapping[str, Any]) -> dict[str, bool]:
    """Which of ``EVENTS`` happened in one recall trace."""
    stages = [s for s in _list(trace.get("stages")) if isinstance(s, Mapping)]
    cue_stages = sum(1 for s in stages if "confidence" in s)  # the cue's stages, and only they, name one
    return {
        "gate_fallback": _dict(trace.get("gate")).get("gate_fallback") is True,
        "autocut": _dict(trace.get("autocut")).get("fired") is True,
        "time_cue_given": "time_cue" in _dict(trace.get("request")),
        "time_cue_ignored": isinstance(trace.get("cue_ignored"), Mapping),
        "time_cue_revised": cue_stages > 1,
        "relief": relief_rows(trace) > 0,
    }


def relief_rows(trace: Mapping[str, Any]) -> int:
    """The rows gate relief admitted in one recall trace (its reservations of kind ``relief``)."""
    held = _list(trace.get("reservation"))
    return sum(1 for r in held if isinstance(r, Mapping) and r.get("kind") == "relief")


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile of ``values`` (non-empty): the least value with ``share`` of them at or
    under it."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def _rate(count: int, recalls: int) -> float:
    return round(count / recalls, 4) if recalls else 0.0


def summarize(
    entries: Iterable[tuple[int, Mapping[str, Any]]],
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    skipped_lines: int = 0,
) -> dict[str, Any]:
    """The counts and rates of the entries whose ``at`` lies in [since, until) (either end open when None).

    ``skipped_lines`` (lines that were not JSON objects) is reported as given. An entry without a recall
    trace or without a readable ``at`` is skipped and counted, never raised.
    """
    recalls = 0
    tools: Counter[str] = Counter()
    suspected: Counter[tuple[int | None, str]] = Counter()
    fired: Counter[str] = Counter()
    relieved = 0
    timings: dict[str, list[float]] = {}
    no_trace = undated = outside = 0
    first: datetime | None = None
    last: datetime | None = None
    for _, entry in entries:
        trace = recall_trace(entry)
        if trace is None:
            no_trace += 1
            continue
        at = parse_instant(entry.get("at"))
        if at is None:
            undated += 1
            continue
        if (since is not None and at < since) or (until is not None and at >= until):
            outside += 1
            continue
        recalls += 1
        first = at if first is None or at < first else first
        last = at if last is None or at > last else last
        tools[str(entry.get("tool") or "?")] += 1
        for item in _list(trace.get("suspected")):
            if isinstance(item, Mapping):
                stage = item.get("stage")
                suspected[
                    (
                        stage if isinstance(stage, int) and not isinstance(stage, bool) else None,
                        str(item.get("code") or "?"),
                    )
                ] += 1
        for name, happened in events(trace).items():
            fired[name] += happened
        relieved += relief_rows(trace)
        for key, value in _dict(trace.get("timing_ms")).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                timings.setdefault(str(key), []).append(float(value))
    ordered = sorted(suspected.items(), key=lambda kv: (-kv[1], kv[0][0] is None, kv[0][0] or 0, kv[0][1]))
    return {
        "window": {
            "since": iso(since) if since else None,
            "until": iso(until) if until else None,
            "first": iso(first) if first else None,
            "last": iso(last) if last else None,
        },
        "recalls": recalls,
        "tools": dict(sorted(tools.items())),
        "suspected": [
            {"stage": stage, "code": code, "count": count, "rate": _rate(count, recalls)}
            for (stage, code), count in ordered
        ],
        "events": {name: {"count": fired[name], "rate": _rate(fired[name], recalls)} for name in EVENTS},
        "relief_rows": relieved,
        "timing_ms": {
            key: {
                "n": len(values),
                "median": round(statistics.median(values), 3),
                "p95": round(percentile(values, 0.95), 3),
            }
            for key, values in sorted(timings.items())
        },
        "skipped": {"malformed_lines": skipped_lines, "no_trace": no_trace, "undated": undated},
        "outside_window": outside,
    }


def summarize_log(path: str | Path, *, since: datetime | None = None, until: datetime | None = None) -> dict[str, Any]:
    """``summarize`` over a trace log and its rotated file; OSError when a file cannot be read."""
    skipped: list[int] = []
    out = summarize(read_entries(path, skipped=skipped), since=since, until=until)  # streamed, one pass
    out["skipped"]["malformed_lines"] = len(skipped)  # filled by the reader as the pass went
    out["path"] = str(path)
    return out
