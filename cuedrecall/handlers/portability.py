"""Export to and import from JSONL (``cuedrecall-export/1``): one header line, then one record a line."""

from __future__ import annotations

import base64
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from cuedrecall.errors import ToolArgumentError
from cuedrecall.handlers.rows import episode_row, json_object, memory_row
from cuedrecall.runtime import Runtime
from cuedrecall.store.base import EPISODE, MEMORY
from cuedrecall.text.sanitise import sanitise

FORMAT = "cuedrecall-export/1"
_MEMORY_KEYS = ("agent_id", "project_id", "channel", "msg_id", "content", "source", "timestamp", "metadata",
                "locked", "created_at")
_EPISODE_KEYS = ("agent_id", "project_id", "channel", "summary", "keywords", "start_time", "end_time", "resolved",
                 "created_at")


def _checked_path(name: str, path: str) -> Path:
    if ".." in Path(path).parts:
        raise ToolArgumentError(f"argument '{name}': {path!r} must not contain '..'")
    return Path(path).expanduser()


def _encode(vector: np.ndarray | None, model: str) -> dict[str, str]:
    """The vector as base64 little-endian float32, with the label of the model that made it."""
    if vector is None:
        return {}
    encoded = base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")
    return {"embedding_b64": encoded, "embedding_model": model}


def export_jsonl(rt: Runtime, agent_id: str, output_path: str, include_embeddings: bool) -> dict[str, Any]:
    """Write one agent's (or every agent's) records; a temp file renamed into place, never half a file."""
    path = _checked_path("output_path", output_path)
    store = rt.store
    memories = list(store.export_rows(MEMORY, agent_id))
    episodes = list(store.export_rows(EPISODE, agent_id))
    profiles = store.profiles(agent_id)
    header = {"_type": "header", "version": FORMAT, "agent_id": agent_id, "exported_at": rt.now_iso(),
              "memory_count": len(memories), "episode_count": len(episodes), "profile_count": len(profiles)}
    lines = [header]
    for row in memories:
        record = {k: row[k] for k in _MEMORY_KEYS}
        record["source"], record["metadata"] = json_object(row["source"]), json_object(row["metadata"])
        lines.append({"_type": "memory", "id": row["id"], **record,
                      **(_encode(row["embedding"], row["embedding_model"]) if include_embeddings else {})})
    for row in episodes:
        lines.append({"_type": "episode", "id": row["id"], **{k: row[k] for k in _EPISODE_KEYS},
                      **(_encode(row["embedding"], row["embedding_model"]) if include_embeddings else {})})
    for agent, content, updated_at in profiles:
        lines.append({"_type": "profile", "agent_id": agent, "content": content, "updated_at": updated_at})
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        for line in lines:
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
    os.replace(tmp, path)
    return {"ok": True, "path": str(path), "memories": len(memories), "episodes": len(episodes),
            "profiles": len(profiles)}


def _read_lines(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except ValueError:
                raise ToolArgumentError(f"argument 'input_path': line {number} is not JSON") from None
            if not isinstance(item, dict) or item.get("_type") not in ("header", "memory", "episode", "profile"):
                raise ToolArgumentError(f"argument 'input_path': line {number} is not a {FORMAT} record")
            yield item


def import_jsonl(
    rt: Runtime, input_path: str, target_agent_id: str, dry_run: bool,
    progress: Callable[[int], None] | None = None, batch_size: int = 256,
) -> dict[str, Any]:
    """Load an export in one transaction; records already present are skipped, so a second run adds nothing."""
    path = _checked_path("input_path", input_path)
    if not path.is_file():
        raise ToolArgumentError(f"argument 'input_path': {input_path!r} is not a readable file")
    try:
        items = list(_read_lines(path))
    except UnicodeDecodeError:
        raise ToolArgumentError(f"argument 'input_path': {input_path!r} is not UTF-8") from None
    if not items or items[0]["_type"] != "header" or items[0].get("version") != FORMAT:
        raise ToolArgumentError(f"argument 'input_path': the first line must be a {FORMAT} header")
    _check_counts(items)
    counts = {"imported_memories": 0, "skipped_memories": 0, "imported_episodes": 0, "skipped_episodes": 0,
              "profile_updated": 0}
    records = items[1:]
    vectors = _vectors_for(rt, records, batch_size, progress)
    try:
        with rt.store.write() as conn:
            for item, vector in zip(records, vectors):
                agent = target_agent_id or item.get("agent_id", "")
                if not agent:
                    raise ToolArgumentError(
                        "argument 'target_agent_id' is required: a record of the file has no agent_id")
                counts[_import_one(rt, conn, item, agent, vector)] += 1
            if dry_run:
                raise _DryRun()  # counted inside the transaction, then rolled back
    except _DryRun:
        pass
    return {"ok": True, "dry_run": dry_run, **counts}


class _DryRun(Exception):
    """Raised inside the transaction to roll back a dry run."""


def _check_counts(items: list[dict[str, Any]]) -> None:
    header = items[0]
    for kind, key in (("memory", "memory_count"), ("episode", "episode_count"), ("profile", "profile_count")):
        present = sum(1 for item in items if item["_type"] == kind)
        if key in header and header[key] != present:
            raise ToolArgumentError(f"argument 'input_path': import refused: the header says {header[key]} "
                                    f"{kind} records, the file has {present}")


def _vectors_for(rt: Runtime, records: list[dict[str, Any]], batch: int,
                 progress: Callable[[int], None] | None) -> list[np.ndarray | None]:
    """The file's vector when our embedder made it, else a fresh embedding (batched)."""
    out: list[np.ndarray | None] = [None] * len(records)
    todo: list[int] = []
    for i, item in enumerate(records):
        if item["_type"] not in ("memory", "episode"):
            continue
        # a vector is only comparable with ours when the same model made it; anything else is re-embedded
        if "embedding_b64" in item and item.get("embedding_model") == rt.embedder.model:
            try:
                out[i] = np.frombuffer(base64.b64decode(item["embedding_b64"], validate=True), dtype="<f4")
            except (TypeError, ValueError):  # not base64, or not a whole number of float32s
                raise ToolArgumentError(
                    f"argument 'input_path': record {i + 1} after the header has an unreadable embedding_b64"
                ) from None
        else:
            todo.append(i)
    done = len(records) - len(todo)
    if progress:
        progress(done)
    for start in range(0, len(todo), batch):
        chunk = todo[start : start + batch]
        texts = [records[i].get("content") or records[i].get("summary") or "" for i in chunk]
        for i, vector in zip(chunk, rt.embed(texts)):
            out[i] = vector
        if progress:
            progress(len(chunk))
    return out


def _import_one(rt: Runtime, conn: Any, item: dict[str, Any], agent: str, vector: Any) -> str:
    store, model, now = rt.store, rt.embedder.model, rt.now_iso()
    project, channel = item.get("project_id", ""), item.get("channel", "")
    if item["_type"] == "profile":
        store.set_profile(conn, agent, str(item.get("content", "")), item.get("updated_at") or now)
        return "profile_updated"
    if item["_type"] == "memory":
        content = sanitise(str(item.get("content", "")), rt.settings.max_content_length)[0]
        msg_id = str(item.get("msg_id", ""))
        if store.find_duplicate(agent, [project], [channel], msg_id, content) or not content.strip():
            return "skipped_memories"
        store.insert_memory(conn, memory_row(
            agent_id=agent, project_id=project, channel=channel, msg_id=msg_id, content=content,
            source=json_object(item.get("source")), timestamp=item.get("timestamp") or now,
            metadata=json_object(item.get("metadata")), created_at=item.get("created_at") or now,
            vector=vector, model=model, locked=bool(item.get("locked"))))
        return "imported_memories"
    summary = sanitise(str(item.get("summary", "")), rt.settings.max_content_length)[0]
    if not summary.strip() or store.find_episode(agent, project, channel, summary) is not None:
        return "skipped_episodes"
    store.insert_episode(conn, episode_row(
        agent_id=agent, project_id=project, channel=channel, summary=summary, keywords=item.get("keywords", ""),
        start_time=item.get("start_time"), end_time=item.get("end_time"), resolved=bool(item.get("resolved")),
        created_at=item.get("created_at") or now, vector=vector, model=model))
    return "imported_episodes"
