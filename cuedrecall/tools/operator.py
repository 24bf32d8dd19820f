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
        "The operator's operating context: revision, instructions, project registry, each agent's @auto project, "
        "doctrine section names; section: one section in full. Set by the operator's file, never by a tool.",
        {"section": identifier('a doctrine section to read in full; "" = the overview', default="")},
        operating_context.get_operating_context,
        no_demand,
        read_only=True,
        idempotent=True,
    ),
    Tool(
        "check_update",
        "Which release runs, how it was installed (wheel, editable, source), whether the package index may be "
        "asked. refresh asks it now (only if the operator allows); apply installs the newer release (wheel "
        "installs only; restart after). Never automatic.",
        {
            "refresh": Param("boolean", "ask the package index now", default=False),
            "apply": Param("boolean", "install the newer release the index offered", default=False),
        },
        update_check.check_update,
        _update_demands,
        destructive=True,  # apply replaces the installed release
    ),
    Tool(
        "migrate_channel_axis",
        "CPersona's move of rows filed under channel 'discord' to their own channels. Here every row already has "
        "its channel: answers the counts and that nothing needs moving; writes nothing.",
        {
            "agent_id": AGENT_OR_ALL,
            "dry_run": Param("boolean", "only report (nothing is ever moved here)", default=True),
            "globalize_unrecoverable": Param("boolean", "CPersona's option; echoed", default=False),
            "session_key": SESSION_KEY,
        },
        channel_axis.migrate_channel_axis,
        on_agent(READ),
        read_only=True,
        idempotent=True,
    ),
]
