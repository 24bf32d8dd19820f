"""Session pauses: while a caller's session is paused, its writes are answered but nothing is persisted.

A ``session_key`` is an opaque partition a client declares; it is not
authentication and never filters data. A pause belongs to the caller that made it
(its principal, the ACL client or ``local``): another client naming the same key
neither has its writes skipped nor learns whether the key is paused. Callers of one
principal that declare no key share one bucket for the process. Pauses live in the
process only: a restart lifts them. At most ``Pauses.MAX_PAUSES`` are in force at once.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime, timedelta

from cuedrecall.clock import iso
from cuedrecall.errors import ToolArgumentError


@dataclass(frozen=True)
class SessionKey:
    """One caller's session: the principal's client id and the key it declared (trimmed)."""

    owner: str
    name: str = ""

    @classmethod
    def of(cls, owner: str, name: str) -> SessionKey:
        return cls(owner, name.strip())


class Pauses:
    """Pause deadlines per (caller, session key); a deadline in the past is no pause."""

    MAX_PAUSES = 10_000  # live pauses at once; pausing needs a write grant on every agent: few are expected

    def __init__(self, limit: int = MAX_PAUSES) -> None:
        self.limit = limit
        self._until: dict[SessionKey, datetime] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._until)

    def pause(self, key: SessionKey, ttl_seconds: int, now: datetime) -> datetime:
        """Pause (or pause again) ``key`` until ``now + ttl_seconds``; ToolArgumentError naming session_key
        when ``limit`` other pauses are in force (expired ones are dropped first)."""
        until = now + timedelta(seconds=ttl_seconds)
        with self._lock:
            if key not in self._until and len(self._until) >= self.limit:
                for other in [k for k, deadline in self._until.items() if deadline <= now]:
                    del self._until[other]
            if key not in self._until and len(self._until) >= self.limit:
                raise ToolArgumentError(
                    f"argument 'session_key': {self.limit:,} sessions are paused "
                    "already; resume one (or let one expire) first"
                )
            self._until[key] = until
        return until

    def resume(self, key: SessionKey, now: datetime) -> bool:
        """Lift the pause; True when one was in force."""
        with self._lock:
            until = self._until.pop(key, None)
        return until is not None and until > now

    def remaining(self, key: SessionKey, now: datetime) -> float:
        """Seconds of pause left (0 when not paused)."""
        with self._lock:
            until = self._until.get(key)
        return 0.0 if until is None else max(0.0, (until - now).total_seconds())

    def status(self, key: SessionKey, now: datetime) -> dict[str, object]:
        left = self.remaining(key, now)
        return {
            "paused": left > 0,
            "expires_at": iso(now + timedelta(seconds=left)) if left > 0 else None,
            "ttl_remaining_seconds": round(left) if left > 0 else None,
            "scope": scope(key),
        }


def scope(key: SessionKey) -> str:
    """ "session" when the caller named its session, "process" for its shared bucket."""
    return "session" if key.name else "process"
