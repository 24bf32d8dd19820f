"""The recall tool: turns validated arguments into a response (plain newest-first listing for now)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cuedrecall.store.base import MEMORY

if TYPE_CHECKING:
    from cuedrecall.api import Memory


def run_recall(memory: "Memory", *, agent_id: str, query: str, limit: int, channel: str, project_id: str | None,
               source_id: str, **_: Any) -> dict[str, Any]:
    scope = memory.scope(agent_id, project_id, channel, source_id)
    hits = memory.store_.newest(scope, MEMORY, limit)
    records = memory.store_.records([h.ref for h in hits])
    rows = [{"content": records[h.ref].display_content, "ref": h.ref, "source": records[h.ref].source,
             "timestamp": records[h.ref].timestamp} for h in hits]
    return {"messages": rows[::-1]}
