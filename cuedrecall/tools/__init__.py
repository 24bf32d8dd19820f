"""The tool surface, declared once: every tool's arguments, schema, handler and access demand.

``Memory.call`` validates and dispatches against these declarations and the MCP
server publishes them, so the two can never disagree.
"""

from cuedrecall.tools import associations, maintenance, memory, portability, quality, reconstruct, session
from cuedrecall.tools.spec import Param, Tool

TOOLS: dict[str, Tool] = {
    tool.name: tool
    for group in (memory, quality, portability, maintenance, session, associations, reconstruct)
    for tool in group.TOOLS
}

__all__ = ["TOOLS", "Param", "Tool"]
