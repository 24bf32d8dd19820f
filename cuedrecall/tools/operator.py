"""The server's own state: the operator's operating context, the release running, the channel axis."""

from __future__ import annotations

from typing import Any

from cuedrecall.access import EVERY_AGENT, READ, WRITE, Demand
from cuedrecall.handlers import channel_axis, operating_context, update_check
from cuedrecall.tools.common import AGENT_OR_ALL, SESSION_KEY, identifier
from cuedrecall.tools.spec import Param, Tool, no_demand, on_agent


def _update_demands(bound: dict[str, Any]) -> list[Demand]:
    """The release is the whole process's: reading about it reads every agent's server; installing one writes it."""
    return [Demand(EVERY_AGENT, WRITE if bound.get("apply") else READ)]


TOOLS = [
    Tool(
        "get_operating_context",
        "The operator's operating context: instructions, project registry, each agent's @auto project, doctrine "
        "sections.",
        {"section": identifier('one section in full; "" = the overview', default="")},
        operating_context.get_operating_context,
        no_demand,
        read_only=True,
        idempotent=True,
    ),
    Tool(
        "check_update",
        "The release running, how it was installed, whether a newer one is known. Never automatic.",
        {
            "refresh": Param("boolean", "ask the package index now (if the operator allows)", default=False),
            "apply": Param("boolean", "install the newer release (a wheel install; restart after)", default=False),
        },
        update_check.check_update,
        _update_demands,
        destructive=True,  # apply replaces the installed release
    ),
    Tool(
        "migrate_channel_axis",
        "CPersona's re-filing of rows under channel 'discord'. Every row here has its channel: it counts, and "
        "writes nothing.",
        {
            "agent_id": AGENT_OR_ALL,
            "dry_run": Param("boolean", "only report (always, here)", default=True),
            "globalize_unrecoverable": Param("boolean", "CPersona's; echoed", default=False),
            "session_key": SESSION_KEY,
        },
        channel_axis.migrate_channel_axis,
        on_agent(READ),
        read_only=True,
        idempotent=True,
    ),
]
