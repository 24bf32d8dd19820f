"""The read tools that are not recall: get_contents, list_memories, list_episodes, get_profile."""

from __future__ import annotations

from typing import Any

from cuedrecall.errors import ToolArgumentError
from cuedrecall.runtime import Runtime
from cuedrecall.store.base import EPISODE, MEMORY, split_ref

MAX_REFS = 20


def get_contents(rt: Runtime, agent_id: str, refs: list[str]) -> dict[str, Any]:
    if not refs:
        raise ToolArgumentError("argument 'refs' must hold at least one ref")
    if len(refs) > MAX_REFS:
        raise ToolArgumentError(f"argument 'refs' holds {len(refs)} refs, at most {MAX_REFS}")
    for ref in refs:
        try:
            split_ref(ref)
        except ValueError as exc:
            raise ToolArgumentError(f"argument 'refs': {exc}") from None
    found = rt.store.records(refs)
    items, missing = [], []
    for ref in refs:
        record = found.get(ref)
        if record is None or record.agent_id != agent_id:
            missing.append(ref)
            continue
        items.append({"ref": ref, "content": record.display_content, "source": record.source,
                      "timestamp": record.timestamp, **({"id": record.msg_id} if record.msg_id else {})})
    return {"items": items, "missing": missing, "count": len(items)}


# What a listing may return in characters, spent front to back; past it, long rows become previews.
MEMORY_LIST_BUDGET = 1_000_000
EPISODE_LIST_BUDGET = 800_000
PREVIEW_CHARS = 500


def list_memories(rt: Runtime, agent_id: str, limit: int, project_id: str | None) -> dict[str, Any]:
    records = rt.store.list_records(MEMORY, agent_id, project_id, limit)
    rows = [{"id": r.id, "ref": r.ref, "agent_id": r.agent_id, "project_id": r.project_id,
             "channel": r.channel, "content": r.text, "source": r.source, "timestamp": r.timestamp,
             "created_at": r.created_at, "locked": r.locked} for r in records]
    return {"memories": rows, "count": len(rows), **_budgeted(rows, ("content",), MEMORY_LIST_BUDGET)}


def list_episodes(rt: Runtime, agent_id: str, limit: int, project_id: str | None) -> dict[str, Any]:
    records = rt.store.list_records(EPISODE, agent_id, project_id, limit)
    rows = [{"id": r.id, "ref": r.ref, "agent_id": r.agent_id, "project_id": r.project_id,
             "channel": r.channel, "summary": r.text, "keywords": r.keywords, "start_time": r.start_time,
             "end_time": r.end_time, "time": r.timestamp,
             "created_at": r.created_at, "resolved": r.resolved} for r in records]
    return {"episodes": rows, "count": len(rows), **_budgeted(rows, ("summary", "keywords"), EPISODE_LIST_BUDGET)}


def _budgeted(rows: list[dict[str, Any]], fields: tuple[str, ...], budget: int) -> dict[str, Any]:
    """Spend the character budget front to back; the first row is always whole, later rows past the budget
    are cut to a preview (``<field>_truncated``, ``<field>_len``; get_contents has the rest)."""
    spent, cut = 0, False
    for position, row in enumerate(rows):
        size = sum(len(row[name]) for name in fields)
        if position == 0 or spent + size <= budget:
            spent += size
            continue
        for name in fields:
            if len(row[name]) > PREVIEW_CHARS:
                row[f"{name}_len"], row[name] = len(row[name]), row[name][:PREVIEW_CHARS]
                row[f"{name}_truncated"] = cut = True
        spent += sum(len(row[name]) for name in fields)
    return {"budget_chars": budget} if cut else {}


def get_profile(rt: Runtime, agent_id: str) -> dict[str, Any]:
    found = rt.store.profile(agent_id)
    return {"profile": found[0] if found else ""}
