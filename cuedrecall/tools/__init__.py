"""The tool surface, declared once: every tool's arguments, schema, handler and access demand.

``Memory.call`` validates and dispatches against these declarations and the MCP
server publishes them, so the two can never disagree.
"""

from cuedrecall.tools import (
    associations,
    maintenance,
    memory,
    operator,
    portability,
    quality,
    reconstruct,
    session,
)
from cuedrecall.tools.spec import Param, Tool

TOOLS: dict[str, Tool] = {
    tool.name: tool
    for group in (memory, quality, portability, maintenance, session, associations, reconstruct, operator)
    for tool in group.TOOLS
}

# The compact list (settings.tool_list, compact_tool_clients): the tools of a session, for a client that cannot
# afford the whole list; every tool stays callable (docs/tools.md#the-compact-tool-list)
COMPACT_TOOLS = (
    "recall",
    "reconstruct",
    "store",
    "get_contents",
    "archive_episode",
    "update_memory",
    "lock_memory",
    "unlock_memory",
    "pause_persistence",
    "resume_persistence",
)

__all__ = ["COMPACT_TOOLS", "TOOLS", "Param", "Tool"]
