"""export_memories: one agent's (or every agent's) records written as a ``cuedrecall-export/1`` file.

The file goes into the export folder (``paths``), created 0600 under a temporary
name and renamed into place: never half a file. Export never replaces another
agent's export without write access on that agent.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import numpy as np

from cuedrecall.access import EVERY_AGENT, LOCAL, WRITE, Demand, Principal, denied
from cuedrecall.handlers.portability.formats import EPISODE_KEYS, FORMAT, MEMORY_KEYS
from cuedrecall.handlers.portability.paths import ResolvedPath, default_folder, refuse, resolve, write_private
from cuedrecall.handlers.rows import json_object
from cuedrecall.runtime import Runtime
from cuedrecall.store.base import EPISODE, MEMORY


def export_jsonl(rt: Runtime, agent_id: str, output_path: str, include_embeddings: bool,
                 anywhere: bool = False, principal: Principal = LOCAL) -> dict[str, Any]:
    """Write one agent's (or every agent's) records into the export folder.

    The file is created 0600 under a temporary name and renamed into place: never
    half a file. Export makes no folders (but the default export folder itself).
    ``anywhere`` (not a tool argument: the operator's command line) takes any path.
    """
    path = _destination(rt, output_path, anywhere)
    owner = _owner(path.real)
    if owner is not None and not principal.allows(Demand(owner or EVERY_AGENT, WRITE)):
        return denied("export_memories", Demand(owner or EVERY_AGENT, WRITE), principal)  # another's export
    lines, counts = _lines(rt, agent_id, include_embeddings)
    write_private(path.real, lines)
    return {"ok": True, "path": str(path.shown), **counts}


def _destination(rt: Runtime, output_path: str, anywhere: bool) -> ResolvedPath:
    """The file to write: confined (see ``paths.resolve``), not a folder, in a folder that exists.

    Only the default export folder is made here (0700); any other folder must exist.
    """
    path = resolve(rt, "output_path", output_path, anywhere=anywhere)
    if path.confined and not rt.settings.export_dir:
        try:
            default_folder(rt.settings.db_path).mkdir(mode=0o700, exist_ok=True)
        except OSError:
            pass  # answered just below: its folder does not exist
    if path.real.is_dir():
        raise refuse("output_path", "names a folder, not a file")
    if not path.real.parent.is_dir():
        raise refuse("output_path", "names a folder that does not exist (export never creates folders)")
    return path


def _lines(rt: Runtime, agent_id: str, include_embeddings: bool) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The file's lines (header, memories, episodes, profiles) and how many of each kind they hold."""
    store = rt.store
    memories = list(store.export_rows(MEMORY, agent_id))
    episodes = list(store.export_rows(EPISODE, agent_id))
    profiles = store.profiles(agent_id)
    header = {"_type": "header", "version": FORMAT, "agent_id": agent_id, "exported_at": rt.now_iso(),
              "memory_count": len(memories), "episode_count": len(episodes), "profile_count": len(profiles)}
    lines = [header]
    for row in memories:
        record = {k: row[k] for k in MEMORY_KEYS}
        record["source"], record["metadata"] = json_object(row["source"]), json_object(row["metadata"])
        lines.append({"_type": "memory", "id": row["id"], **record,
                      **(_encode(row["embedding"], row["embedding_model"]) if include_embeddings else {})})
    for row in episodes:
        lines.append({"_type": "episode", "id": row["id"], **{k: row[k] for k in EPISODE_KEYS},
                      **(_encode(row["embedding"], row["embedding_model"]) if include_embeddings else {})})
    for agent, content, updated_at in profiles:
        lines.append({"_type": "profile", "agent_id": agent, "content": content, "updated_at": updated_at})
    return lines, {"memories": len(memories), "episodes": len(episodes), "profiles": len(profiles)}


def _encode(vector: np.ndarray | None, model: str) -> dict[str, str]:
    """The vector as base64 little-endian float32, with the label of the model that made it."""
    if vector is None:
        return {}
    encoded = base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")
    return {"embedding_b64": encoded, "embedding_model": model}


def _owner(path: Path) -> str | None:
    """The agent an existing export at ``path`` belongs to ("" = every agent), None when there is no export
    there to replace (no file, or not one of ours)."""
    try:
        with path.open(encoding="utf-8") as handle:
            header = json.loads(handle.readline(64 * 1024) or "null")
    except (OSError, ValueError):
        return None
    if not isinstance(header, dict) or header.get("_type") != "header":
        return None
    agent = header.get("agent_id")
    return agent if isinstance(agent, str) else None
