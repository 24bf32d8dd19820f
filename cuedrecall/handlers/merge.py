"""merge_memories: one agent's memories, episodes and profile copied (or moved) under another agent.

Duplicates are skipped, never overwritten (strategy ``skip``): a memory the target
already holds by msg_id or by text in the same project and channel, an episode
with the same summary there, a profile when the target has one. A move deletes
only the rows it copied. A dry run does all of it in a transaction that is rolled
back, so its counts are exactly what a real run would do.
"""

from __future__ import annotations

from typing import Any

from cuedrecall.errors import ToolArgumentError
from cuedrecall.handlers.blocks import queue_build
from cuedrecall.handlers.rows import episode_row, json_object, memory_row
from cuedrecall.runtime import Runtime
from cuedrecall.store.base import EPISODE, MEMORY, make_ref


class _RolledBack(Exception):
    """Raised inside the transaction to undo a dry run."""


def merge_memories(
    rt: Runtime, source_agent_id: str, target_agent_id: str, strategy: str, mode: str, dry_run: bool
) -> dict[str, Any]:
    if source_agent_id == target_agent_id:
        raise ToolArgumentError("arguments 'source_agent_id' and 'target_agent_id' must differ")
    counts: dict[str, Any] = {
        "merged_memories": 0,
        "skipped_memories": 0,
        "merged_episodes": 0,
        "skipped_episodes": 0,
        "profile_copied": False,
        "skipped_profile": False,
    }
    try:
        with rt.store.write() as conn:
            copied = _copy_memories(rt, conn, source_agent_id, target_agent_id, counts)
            copied += _copy_episodes(rt, conn, source_agent_id, target_agent_id, counts)
            _copy_profile(rt, conn, source_agent_id, target_agent_id, counts)
            if mode == "move":
                for ref in copied:
                    rt.store.delete(conn, ref)
            if dry_run:
                raise _RolledBack()
    except _RolledBack:
        pass
    out = {
        "ok": True,
        "dry_run": dry_run,
        "source_agent_id": source_agent_id,
        "target_agent_id": target_agent_id,
        "strategy": strategy,
        "mode": mode,
        **counts,
    }
    if mode == "move":
        out["source_deleted"] = len(copied)
        out["left_at_source"] = counts["skipped_memories"] + counts["skipped_episodes"]
    return out


def _copy_memories(rt: Runtime, conn: Any, source: str, target: str, counts: dict[str, Any]) -> list[str]:
    copied = []
    for row in rt.store.export_rows(MEMORY, source):
        if rt.store.find_duplicate(target, [row["project_id"]], [row["channel"]], row["msg_id"], row["content"]):
            counts["skipped_memories"] += 1
            continue
        new_id = rt.store.insert_memory(
            conn,
            memory_row(
                agent_id=target,
                project_id=row["project_id"],
                channel=row["channel"],
                msg_id=row["msg_id"],
                content=row["content"],
                source=json_object(row["source"]),
                timestamp=row["timestamp"],
                metadata=json_object(row["metadata"]),
                created_at=row["created_at"],
                vector=row["embedding"],
                model=row["embedding_model"],
                locked=bool(row["locked"]),
            ),
        )
        queue_build(rt, conn, make_ref(MEMORY, new_id))
        copied.append(make_ref(MEMORY, row["id"]))
        counts["merged_memories"] += 1
    return copied


def _copy_episodes(rt: Runtime, conn: Any, source: str, target: str, counts: dict[str, Any]) -> list[str]:
    copied = []
    for row in rt.store.export_rows(EPISODE, source):
        if rt.store.find_episode(target, row["project_id"], row["channel"], row["summary"]) is not None:
            counts["skipped_episodes"] += 1
            continue
        new_id = rt.store.insert_episode(
            conn,
            episode_row(
                agent_id=target,
                project_id=row["project_id"],
                channel=row["channel"],
                summary=row["summary"],
                keywords=row["keywords"],
                start_time=row["start_time"],
                end_time=row["end_time"],
                resolved=bool(row["resolved"]),
                created_at=row["created_at"],
                vector=row["embedding"],
                model=row["embedding_model"],
            ),
        )
        queue_build(rt, conn, make_ref(EPISODE, new_id))
        copied.append(make_ref(EPISODE, row["id"]))
        counts["merged_episodes"] += 1
    return copied


def _copy_profile(rt: Runtime, conn: Any, source: str, target: str, counts: dict[str, Any]) -> None:
    found = rt.store.profile(source)
    if found is None:
        return
    if rt.store.profile(target) is not None:
        counts["skipped_profile"] = True
        return
    rt.store.set_profile(conn, target, found[0], found[1])
    counts["profile_copied"] = True
