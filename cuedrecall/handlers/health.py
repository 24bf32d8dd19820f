"""check_health, deep_check, get_queue_status, get_session_findings (being written)."""

from __future__ import annotations

from typing import Any

from cuedrecall.runtime import Runtime


def queue_status(rt: Runtime) -> dict[str, Any]:
    """Nothing runs in the background yet: every write is complete when it is answered."""
    return {"enabled": False, "pending": 0}


def check_health(rt: Runtime, agent_id: str, fix: bool, checks: list[str], session_key: str) -> dict[str, Any]:
    raise NotImplementedError


def deep_check(rt: Runtime, agent_id: str, fix: bool, checks: list[str], session_key: str) -> dict[str, Any]:
    raise NotImplementedError


def session_findings(rt: Runtime, per_kind_limit: int, include_summary: bool) -> dict[str, Any]:
    raise NotImplementedError
