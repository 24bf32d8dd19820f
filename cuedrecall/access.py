"""Who may touch which agent: a caller's grants, and what each tool demands of them.

A principal holds grants per agent id (``"*"`` = every agent): ``read`` or
``read-write``. An exact grant beats ``"*"``. A demand on ``"*"`` (a read or a
write across every agent: listing all agents, an unscoped delete) needs ``"*"``
at that level and no narrower grant below it. Without an ACL file the one
caller of a process (stdio, the library, the single HTTP token) is ``LOCAL``:
read-write on every agent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

NONE, READ, WRITE = "none", "read", "read-write"
LEVELS = {NONE: 0, READ: 1, WRITE: 2}
EVERY_AGENT = "*"


@dataclass(frozen=True)
class Demand:
    agent: str  # an agent id, or "*" for every agent
    need: str  # READ | WRITE


@dataclass(frozen=True)
class Principal:
    client_id: str
    grants: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def level(self, agent: str) -> int:
        if agent == EVERY_AGENT:
            if EVERY_AGENT not in self.grants:
                return 0
            return min(LEVELS[g] for g in self.grants.values())
        return LEVELS[self.grants.get(agent, self.grants.get(EVERY_AGENT, NONE))]

    def allows(self, demand: Demand) -> bool:
        return self.level(demand.agent) >= LEVELS[demand.need]

    def sole_agent(self, need: str) -> str | None:
        """The one agent this principal may act on at ``need``, when there is exactly one (and no ``"*"``)."""
        if EVERY_AGENT in self.grants:
            return None
        agents = [agent for agent, grant in self.grants.items() if LEVELS[grant] >= LEVELS[need]]
        return agents[0] if len(agents) == 1 else None


LOCAL = Principal("local", MappingProxyType({EVERY_AGENT: WRITE}))


def denied(tool: str, demand: Demand, principal: Principal) -> dict[str, object]:
    """The refusal a caller gets: what was needed on which agent, and who asked."""
    return {"ok": False, "error": "permission_denied", "tool": tool, "agent_id": demand.agent,
            "required": demand.need, "client_id": principal.client_id}
