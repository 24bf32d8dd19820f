"""Health and housekeeping: check and repair the store, the (empty) task queue, the findings of a session."""

from __future__ import annotations

from cuedrecall.access import EVERY_AGENT, READ, WRITE, Demand
from cuedrecall.handlers import health
from cuedrecall.tools.common import AGENT, AGENT_OR_ALL, SESSION_KEY
from cuedrecall.tools.spec import Param, Tool, no_demand, on_every_agent

_FIX = Param("boolean", "also repair", default=False)
_CHECKS = Param(
    "array",
    "the checks to run (empty = all)",
    default=[],
    items={"type": "string", "maxLength": 64},
    max_items=100,
)


def _check_demands(bound: dict) -> list[Demand]:
    """Reading is enough to look; repairing writes."""
    return [Demand(bound.get("agent_id") or EVERY_AGENT, WRITE if bound.get("fix") else READ)]


TOOLS = [
    Tool(
        "check_health",
        "Check the store (rows without a vector, indexes out of step, malformed values); fix repairs.",
        {"agent_id": AGENT_OR_ALL, "fix": _FIX, "checks": _CHECKS, "session_key": SESSION_KEY},
        health.check_health,
        _check_demands,
        destructive=True,  # a fix deletes empty and duplicate rows, and rewrites oversized ones
        takes_session=True,
    ),
    Tool(
        "deep_check",
        "Slower checks of an agent's memory (near duplicates, odd content, stale calibration); fix repairs the safe.",
        {"agent_id": AGENT, "fix": _FIX, "checks": _CHECKS, "session_key": SESSION_KEY},
        health.deep_check,
        _check_demands,
        destructive=True,  # a fix rewrites the text of memories with stray whitespace
        takes_session=True,
    ),
    Tool(
        "get_queue_status",
        "Background tasks waiting.",
        {},
        health.queue_status,
        no_demand,
        read_only=True,
    ),
    Tool(
        "get_session_findings",
        "check_health's findings in the whole store, by kind, repairing nothing.",
        {
            "per_kind_limit": Param("integer", "findings per kind", default=5, minimum=1, maximum=1000, clamp=True),
            "include_summary": Param("boolean", "with a prose summary", default=True),
            "session_key": SESSION_KEY,
        },
        health.session_findings,
        on_every_agent(READ),
        read_only=True,
    ),
]
