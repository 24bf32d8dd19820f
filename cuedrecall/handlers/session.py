"""The session controls: pause_persistence, resume_persistence, persistence_status.

Each is given the caller's ``SessionKey`` (its principal and the key it named), so a
pause, a resume and a status reach that caller's own session only.
"""

from __future__ import annotations

from typing import Any

from cuedrecall.clock import iso
from cuedrecall.runtime import Runtime
from cuedrecall.sessions import SessionKey, scope


def pause_persistence(rt: Runtime, ttl_seconds: int, session_key: SessionKey) -> dict[str, Any]:
    """Until the pause ends, this session's writes are answered but not kept. Pausing again resets it."""
    until = rt.pauses.pause(session_key, ttl_seconds, rt.clock())
    return {"paused": True, "expires_at": iso(until), "ttl_seconds": ttl_seconds, "scope": scope(session_key)}


def resume_persistence(rt: Runtime, session_key: SessionKey) -> dict[str, Any]:
    was_active = rt.pauses.resume(session_key, rt.clock())
    return {"paused": False, "was_active": was_active, "scope": scope(session_key)}


def persistence_status(rt: Runtime, session_key: SessionKey) -> dict[str, Any]:
    """The caller's own session only: another client's key of the same name is another session."""
    return rt.pauses.status(session_key, rt.clock())


def paused_answer(rt: Runtime, session_key: SessionKey, body: dict[str, Any]) -> dict[str, Any]:
    """What a write tool answers while its session is paused: its own success shape, nothing kept."""
    left = round(rt.pauses.remaining(session_key, rt.clock()))
    return {
        "ok": True,
        **body,
        "persisted": False,
        "dry_run": True,
        "reason": f"persistence is paused for this session ({left} s left): nothing was written",
    }
