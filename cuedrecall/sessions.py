"""Session pauses: while a caller's session is paused, its writes are answered but nothing is persisted.

A ``session_key`` is an opaque partition a client declares; it is not
authentication and never filters data. Callers that declare none share one bucket
for the process. Pauses live in the process only: a restart lifts them.
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

from cuedrecall.clock import iso


class Pauses:
    """Pause deadlines per session key; a deadline in the past is no pause."""

    def __init__(self) -> None:
        self._until: dict[str, datetime] = {}
        self._lock = threading.Lock()

    def pause(self, session_key: str, ttl_seconds: int, now: datetime) -> datetime:
        until = now + timedelta(seconds=ttl_seconds)
        with self._lock:
            self._until[session_key.strip()] = until
        return until

    def resume(self, session_key: str, now: datetime) -> bool:
        """Lift the pause; True when one was in force."""
        with self._lock:
            until = self._until.pop(session_key.strip(), None)
        return until is not None and until > now

    def remaining(self, session_key: str, now: datetime) -> float:
        """Seconds of pause left (0 when not paused)."""
        with self._lock:
            until = self._until.get(session_key.strip())
        return 0.0 if until is None else max(0.0, (until - now).total_seconds())

    def status(self, session_key: str, now: datetime) -> dict[str, object]:
        left = self.remaining(session_key, now)
        return {"paused": left > 0, "expires_at": iso(now + timedelta(seconds=left)) if left > 0 else None,
                "ttl_remaining_seconds": int(round(left)) if left > 0 else None, "scope": scope(session_key)}


def scope(session_key: str) -> str:
    """"session" when the caller named its session, "process" for the shared bucket."""
    return "session" if session_key.strip() else "process"
