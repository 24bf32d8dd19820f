"""Reading the trace log for people: a newest-first listing of its entries and one entry by id.

The log (``handlers/trace_log.py``) is bounded by its size setting, two files at
most; a listing parses it once and keeps the summaries until either file changes
(size or modification time), so paging through it does not read it again.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from cuedrecall.handlers.trace_log import ROTATED_SUFFIX, read_entries


def _dict_or(value: object, default: dict[str, Any]) -> dict[str, Any]:
    """``value`` when it is a dict, ``default`` otherwise: an entry is read defensively."""
    return value if isinstance(value, dict) else default


def summary(entry: dict[str, Any]) -> dict[str, Any]:
    """What a listing shows of an entry: no trace, no text."""
    trace = _dict_or(entry.get("trace"), {})
    recall = _dict_or(trace.get("recall"), trace)
    policy = _dict_or(recall.get("policy"), {})
    request = _dict_or(recall.get("request"), {})
    scope = _dict_or(entry.get("scope"), {})
    return {
        "id": entry.get("id"),
        "at": entry.get("at"),
        "tool": entry.get("tool"),
        "agent_id": scope.get("agent_id"),
        "refs": len(entry.get("refs") or []),
        "process": policy.get("process"),
        "cued": "time_cue" in request,
        "query_sha256": str(entry.get("query_sha256") or "")[:12],
    }


_Stamp = tuple[int, int, int]  # a file's size, modification time (ns) and inode


class TraceLogReader:
    """Summaries of one trace log (its rotated file included), cached until the files change."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._key: tuple[_Stamp | None, ...] | None = None
        self._summaries: list[dict[str, Any]] = []

    def _stamp(self) -> tuple[_Stamp | None, ...]:
        stamps: list[_Stamp | None] = []
        for file in (self.path.with_name(self.path.name + ROTATED_SUFFIX), self.path):
            try:
                stat = os.stat(file)
                stamps.append((stat.st_size, stat.st_mtime_ns, stat.st_ino))
            except OSError:
                stamps.append(None)
        return tuple(stamps)

    def page(self, offset: int = 0, limit: int = 50) -> dict[str, Any]:
        """Entries newest first: ``limit`` of them after skipping ``offset``, and how many there are."""
        with self._lock:
            stamp = self._stamp()
            if stamp != self._key:
                self._summaries = [summary(entry) for _, entry in read_entries(self.path)]
                self._summaries.reverse()
                self._key = stamp
            rows = self._summaries[offset : offset + limit]
            return {"entries": rows, "total": len(self._summaries), "offset": offset}

    def entry(self, entry_id: str) -> dict[str, Any] | None:
        """The whole entry with this id, or None."""
        found = None
        for _, entry in read_entries(self.path):
            if entry.get("id") == entry_id:
                found = entry  # the last one with the id wins (ids are random; a copy would repeat it)
        return found
