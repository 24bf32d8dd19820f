"""Health and housekeeping: check and repair the store, the (empty) task queue, the findings of a session."""

from __future__ import annotations

from cuedrecall.access import EVERY_AGENT, READ, WRITE, Demand
from cuedrecall.handlers import health
from cuedrecall.tools.common import AGENT, AGENT_OR_ALL, SESSION_KEY
from cuedrecall.tools.spec import Param, Tool, no_demand, on_every_agent

_FIX = Param("boolean", "also repair what is found", default=False)
_CHECKS = Param(
    "array",
    "names of the checks to run (empty = all; at most 100, each at most 64 characters)",
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
        "Check the store for problems (rows without a vector, full-text and vector index out of step with the rows, "
        "malformed values) and, with fix, repair them.",
        {"agent_id": AGENT_OR_ALL, "fix": _FIX, "checks": _CHECKS, "session_key": SESSION_KEY},
        health.check_health,
        _check_demands,
        destructive=True,  # a fix deletes empty and duplicate rows, and rewrites oversized ones
        takes_session=True,
    ),
    Tool(
        "deep_check",
        "Slower checks of one agent's memory (near duplicates, short or unnormalised content, anonymous sources, "
        "stale calibration) and, with fix, the repairs that are safe.",
        {"agent_id": AGENT, "fix": _FIX, "checks": _CHECKS, "session_key": SESSION_KEY},
        health.deep_check,
        _check_demands,
        destructive=True,  # a fix rewrites the text of memories with stray whitespace
        takes_session=True,
    ),
    Tool(
        "get_queue_status",
        "How many background tasks are waiting.",
        {},
        health.queue_status,
        no_demand,
        read_only=True,
    ),
    Tool(
        "get_session_findings",
        "What check_health finds in the whole store, grouped by kind, without repairing anything.",
        {
            "per_kind_limit": Param(
                "integer", "findings shown per kind (1 to 1000)", default=5, minimum=1, maximum=1000, clamp=True
            ),
            "include_summary": Param("boolean", "also a short prose summary", default=True),
            "session_key": SESSION_KEY,
        },
        health.session_findings,
        on_every_agent(READ),
        read_only=True,
    ),
]
