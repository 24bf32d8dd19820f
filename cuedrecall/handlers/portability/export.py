"""export_memories: one agent's (or every agent's) records written as a ``cuedrecall-export/1`` file, or
``cuedrecall-export/2`` with what the agent declared beside them (its graph and folders, ``declared``).

The file goes into the export folder (``paths``), created 0600 under a temporary
name in the opened folder and renamed into place: never half a file. What export
replaces (``_replace_denial``): nothing but a regular file; without ``overwrite``,
only its own export of the same agent (our header naming that agent); with
``overwrite: true``, any regular file whose contents the caller may write (the
agent its header names; every agent when it names none or is not an export).
Either way the caller needs write access on what the file holds.
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

from cuedrecall.access import EVERY_AGENT, LOCAL, WRITE, Demand, Principal, denied
from cuedrecall.handlers.portability.declared import export_lines
from cuedrecall.handlers.portability.formats import EPISODE_KEYS, FORMAT, FORMAT_DECLARED, MEMORY_KEYS, OURS, VERSIONS
from cuedrecall.handlers.portability.paths import (
    Existing,
    ResolvedPath,
    default_folder,
    existing,
    opened,
    refuse,
    resolve,
    write_private,
)
from cuedrecall.handlers.rows import json_object
from cuedrecall.runtime import Runtime
from cuedrecall.store.base import EPISODE, MEMORY


def export_jsonl(
    rt: Runtime,
    agent_id: str,
    output_path: str,
    include_embeddings: bool,
    overwrite: bool = False,
    anywhere: bool = False,
    principal: Principal = LOCAL,
) -> dict[str, Any]:
    """Write one agent's (or every agent's) records into the export folder.

    The file is created 0600 under a temporary name and renamed into place: never
    half a file. Export makes no folders (but the default export folder itself).
    ``anywhere`` (not a tool argument: the operator's command line) takes any path.
    """
    path = _destination(rt, output_path, anywhere)
    with opened(rt, path) as (folder_fd, name):
        found = existing(folder_fd, name, "output_path")
        refusal = _replace_denial(found, agent_id, overwrite, principal, anywhere)
        if refusal is not None:
            return refusal
        lines, counts = _lines(rt, agent_id, include_embeddings)
        write_private(folder_fd, name, lines, found)
    return {"ok": True, "path": str(path.shown), **counts}


def _destination(rt: Runtime, output_path: str, anywhere: bool) -> ResolvedPath:
    """The file to write, its spelling confined (see ``paths.resolve``); the default export folder made 0700."""
    path = resolve(rt, "output_path", output_path, anywhere=anywhere)
    if path.confined and not rt.settings.export_dir:
        try:
            default_folder(rt.settings.db_path).mkdir(mode=0o700, exist_ok=True)
        except OSError:
            pass  # answered when it is opened: its folder does not exist
    return path


def _replace_denial(
    found: Existing | None, agent_id: str, overwrite: bool, principal: Principal, anywhere: bool
) -> dict[str, Any] | None:
    """The replace rule; None when the export may go ahead, else the answer (or a refusal raised).

    Nothing there: go ahead. Otherwise the caller needs write access on what the file
    holds (the agent its export header names; every agent for any other file), and,
    unless it is our export of this same agent, ``overwrite: true``. The operator's
    command line (``anywhere``) replaces any regular file.
    """
    if found is None or anywhere:
        return None
    holder = _holder(found)
    demand = Demand(holder or EVERY_AGENT, WRITE)
    if not principal.allows(demand):
        return denied("export_memories", demand, principal)
    ours = found.header is not None and found.header.get("version") in OURS and holder == agent_id
    if not ours and not overwrite:
        held = "another agent's export" if holder is not None else "a file that is not an export of this agent"
        raise refuse(
            "output_path",
            f"names an existing file that export did not write for this agent ({held}): "
            "export replaces only its own export of the same agent, or, with "
            "'overwrite': true, a file whose contents the caller may write",
        )
    return None


def _holder(found: Existing) -> str | None:
    """The agent an export file's header names ("" = every agent); None for a file that is not an export."""
    header = found.header
    if header is None or header.get("_type") != "header" or header.get("version") not in VERSIONS:
        return None
    agent = header.get("agent_id")
    return agent if isinstance(agent, str) else None


def _lines(rt: Runtime, agent_id: str, include_embeddings: bool) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The file's lines (header, memories, episodes, profiles, then the declared graph and folders) and how many
    of each kind they hold. With nothing declared the file is ``cuedrecall-export/1``, as before there was a
    graph to write."""
    store = rt.store
    memories = list(store.export_rows(MEMORY, agent_id))
    episodes = list(store.export_rows(EPISODE, agent_id))
    profiles = store.profiles(agent_id)
    declared, declared_counts = export_lines(store.declared(agent_id))
    header = {
        "_type": "header",
        "version": FORMAT_DECLARED if declared else FORMAT,
        "agent_id": agent_id,
        "exported_at": rt.now_iso(),
        "memory_count": len(memories),
        "episode_count": len(episodes),
        "profile_count": len(profiles),
        **(declared_counts if declared else {}),
    }
    lines = [header]
    for row in memories:
        record = {k: row[k] for k in MEMORY_KEYS}
        record["source"], record["metadata"] = json_object(row["source"]), json_object(row["metadata"])
        lines.append(
            {
                "_type": "memory",
                "id": row["id"],
                **record,
                **(_encode(row["embedding"], row["embedding_model"]) if include_embeddings else {}),
            }
        )
    for row in episodes:
        lines.append(
            {
                "_type": "episode",
                "id": row["id"],
                **{k: row[k] for k in EPISODE_KEYS},
                **(_encode(row["embedding"], row["embedding_model"]) if include_embeddings else {}),
            }
        )
    for agent, content, updated_at in profiles:
        lines.append({"_type": "profile", "agent_id": agent, "content": content, "updated_at": updated_at})
    lines.extend(declared)
    counts: dict[str, Any] = {"memories": len(memories), "episodes": len(episodes), "profiles": len(profiles)}
    graph = {kind: declared_counts[f"{kind}_count"] for kind in ("entity", "mention", "relation")}
    if any(graph.values()):  # CPersona's answer keys for what it exported beside the records
        counts["associations"] = {
            "entities": graph["entity"],
            "mentions": graph["mention"],
            "relations": graph["relation"],
        }
    if declared_counts["folder_count"]:
        counts["folders"] = {
            "folders": declared_counts["folder_count"],
            "members": declared_counts["folder_member_count"],
        }
    return lines, counts


def _encode(vector: np.ndarray | None, model: str) -> dict[str, str]:
    """The vector as base64 little-endian float32, with the label of the model that made it."""
    if vector is None:
        return {}
    encoded = base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")
    return {"embedding_b64": encoded, "embedding_model": model}
