"""``Memory``: the tools as a Python object. The MCP server, the CLI, benchmarks and tests all come through here.

Every tool takes a dict of JSON arguments and returns a JSON-ready dict. A bad
argument is answered ``{"ok": false, "error": ...}`` naming it, and nothing is
written.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

from cuedrecall.clock import Clock, iso, system_clock
from cuedrecall.config import Settings
from cuedrecall.embed import EmbeddingError, QueryVectorCache, make_embedder
from cuedrecall.errors import ToolArgumentError
from cuedrecall.recall.calibrate import calibrate
from cuedrecall.recall.calibration import PRECISION_BETA, Calibration, CalibrationError
from cuedrecall.recall.scoring_version import fingerprint
from cuedrecall.recall.timecue import to_epoch
from cuedrecall.store.base import EPISODE, MEMORY, Scope, make_ref, split_ref
from cuedrecall.store.sqlite import SqliteStore
from cuedrecall.text.sanitise import sanitise
from cuedrecall.tools import TOOLS

# Failures still carry the collection key the tool documents, so a caller can always read it.
_EMPTY_ON_FAILURE: dict[str, dict[str, Any]] = {
    "recall": {"messages": []},
    "get_contents": {"items": []},
    "list_memories": {"memories": [], "count": 0},
    "list_episodes": {"episodes": [], "count": 0},
    "archive_episode": {"episode_id": None},
    "store": {"result": "rejected"},
}
_SOURCE_TYPES = {"user": "User", "agent": "Agent", "assistant": "Agent", "ai": "Agent", "system": "System",
                 "session": "System"}
_MESSAGE_FIELDS = ("content", "id", "source", "timestamp", "metadata")


def normalise_source(source: Any) -> dict[str, Any]:
    """Fold the spellings of a source into {type, id, name}; anything unrecognised is kept as given."""
    if source is None:
        return {}
    if isinstance(source, str):
        kind = _SOURCE_TYPES.get(source.strip().lower())
        return {"type": kind} if kind else {"id": source}
    if len(source) == 1:
        (key, value), = source.items()
        kind = _SOURCE_TYPES.get(str(key).lower())
        if kind and isinstance(value, dict):
            return {"type": kind, **value}
    if isinstance(source.get("type"), str) and source["type"].lower() in _SOURCE_TYPES:
        return {**source, "type": _SOURCE_TYPES[source["type"].lower()]}
    return dict(source)


class Memory:
    """A memory server over one database: ``Memory(path)`` then ``memory.store(...)``, ``memory.recall(...)``."""

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        settings: Settings | None = None,
        embedder: Any = None,
        clock: Clock = system_clock,
    ) -> None:
        self.settings = settings or Settings.from_env()
        if path is not None:
            self.settings = replace(self.settings, db_path=str(path))
        self.embedder = embedder or make_embedder(
            self.settings.embedding_mode, url=self.settings.embedding_url,
            timeout_s=self.settings.embedding_timeout_secs,
        )
        self.queries = QueryVectorCache(self.embedder, size=max(1, self.settings.embedding_cache_size))
        self.clock = clock
        self.store_ = SqliteStore(self.settings.db_path, common_term_ratio=self.settings.keyword_common_ratio)
        self.calibration = Calibration.load(
            self.settings.db_path, self.embedder.model, fingerprint(self.settings.prior_far_weight)
        )
        if self.calibration.stale and self.settings.calibrate_on_model_change and self.embedder.available:
            self._recalibrate_all()

    def _recalibrate_all(self) -> None:
        """The embedding model or the scoring version changed: thresholds made under the old one mean nothing."""
        agents = list(self.calibration.agents)
        self.calibration.agents, self.calibration.stale = {}, False
        for agent in agents:
            try:
                calibrate(self, agent, 200, "separation", 0.95, 1.0)
            except CalibrationError:
                continue  # too little data now; the heuristic gate applies until the next calibration
        self.calibration.save()

    def close(self) -> None:
        self.store_.close()

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- dispatch ----------------------------------------------------------------------

    def call(self, tool: str, arguments: Any = None) -> dict[str, Any]:
        """Run one tool by name with JSON arguments; bad input becomes ok:false, never an exception."""
        spec = TOOLS.get(tool)
        if spec is None:
            return {"ok": False, "error": f"unknown tool {tool!r} (tools: {', '.join(TOOLS)})"}
        try:
            bound = spec.bind(arguments)
            return getattr(self, f"_{tool}")(**bound)
        except ToolArgumentError as exc:
            return {"ok": False, "error": str(exc), **_EMPTY_ON_FAILURE.get(tool, {})}

    def store(self, **arguments: Any) -> dict[str, Any]:
        return self.call("store", arguments)

    def recall(self, **arguments: Any) -> dict[str, Any]:
        return self.call("recall", arguments)

    def get_contents(self, **arguments: Any) -> dict[str, Any]:
        return self.call("get_contents", arguments)

    def archive_episode(self, **arguments: Any) -> dict[str, Any]:
        return self.call("archive_episode", arguments)

    def update_memory(self, **arguments: Any) -> dict[str, Any]:
        return self.call("update_memory", arguments)

    def delete_memory(self, **arguments: Any) -> dict[str, Any]:
        return self.call("delete_memory", arguments)

    def delete_episode(self, **arguments: Any) -> dict[str, Any]:
        return self.call("delete_episode", arguments)

    def list_memories(self, **arguments: Any) -> dict[str, Any]:
        return self.call("list_memories", arguments)

    def list_episodes(self, **arguments: Any) -> dict[str, Any]:
        return self.call("list_episodes", arguments)

    def get_profile(self, **arguments: Any) -> dict[str, Any]:
        return self.call("get_profile", arguments)

    def update_profile(self, **arguments: Any) -> dict[str, Any]:
        return self.call("update_profile", arguments)

    def calibrate_threshold(self, **arguments: Any) -> dict[str, Any]:
        return self.call("calibrate_threshold", arguments)

    def set_recall_precision(self, **arguments: Any) -> dict[str, Any]:
        return self.call("set_recall_precision", arguments)

    def get_recall_precision(self, **arguments: Any) -> dict[str, Any]:
        return self.call("get_recall_precision", arguments)

    def export_memories(self, **arguments: Any) -> dict[str, Any]:
        return self.call("export_memories", arguments)

    def import_memories(self, **arguments: Any) -> dict[str, Any]:
        return self.call("import_memories", arguments)

    # -- shared helpers ------------------------------------------------------------------

    def now_iso(self) -> str:
        return iso(self.clock())

    def embed(self, texts: list[str]) -> list[np.ndarray | None]:
        """Vectors for texts; None for each when embedding is off or fails (the row is still stored)."""
        if not self.embedder.available or not texts:
            return [None] * len(texts)
        try:
            return list(self.embedder.embed(texts))
        except EmbeddingError:
            return [None] * len(texts)

    def _checked_time(self, name: str, value: Any) -> tuple[str, float]:
        if not isinstance(value, str) or to_epoch(value) is None:
            raise ToolArgumentError(f"argument '{name}' must be an ISO-8601 timestamp, got {value!r}")
        return value, float(to_epoch(value))

    # -- write tools ------------------------------------------------------------------------

    def _store(self, agent_id: str, message: dict[str, Any], channel: str, project_id: str) -> dict[str, Any]:
        row = self._memory_row(agent_id, message, channel, project_id)
        if "reason" in row:
            return {"ok": False, "result": "rejected", "reason": row["reason"], "error": row["reason"]}
        truncated = row.pop("_truncated")
        projects = [project_id, ""] if project_id else [""]
        channels = [channel, ""] if channel else [""]
        duplicate = self.store_.find_duplicate(agent_id, projects, channels, row["msg_id"], row["content"])
        if duplicate:
            return {"ok": True, "result": "skipped", "reason": duplicate[0], "id": duplicate[1]}
        row["embedding"] = self.embed([row["content"]])[0]
        row["embedding_model"] = self.embedder.model if row["embedding"] is not None else ""
        with self.store_.write() as conn:
            new_id = self.store_.insert_memory(conn, row)
        out = {"ok": True, "result": "stored", "id": new_id, "ref": make_ref(MEMORY, new_id),
               "embedded": row["embedding"] is not None}
        return {**out, "truncated": True} if truncated else out

    def _memory_row(self, agent_id: str, message: dict[str, Any], channel: str, project_id: str) -> dict[str, Any]:
        """The row to insert, or {"reason": ...} for a refusal; raises for malformed arguments."""
        unknown = sorted(set(message) - set(_MESSAGE_FIELDS))
        if unknown:
            raise ToolArgumentError(
                f"argument 'message' has unknown field(s): {', '.join(unknown)} (accepted: {', '.join(_MESSAGE_FIELDS)})"
            )
        content = message.get("content")
        if not isinstance(content, str):
            raise ToolArgumentError("argument 'message.content' is required and must be a string")
        for name, kinds in (("id", (str,)), ("source", (dict, str, type(None))), ("metadata", (dict,))):
            if name in message and not isinstance(message[name], kinds):
                raise ToolArgumentError(f"argument 'message.{name}' has the wrong type")
        stamp = message.get("timestamp")
        timestamp, epoch = self._checked_time("message.timestamp", stamp) if stamp is not None else (
            self.now_iso(), self.clock().timestamp())
        if not content.strip():
            return {"reason": "empty content"}
        source = normalise_source(message.get("source"))
        texts = {"source": json.dumps(source, ensure_ascii=False),
                 "metadata": json.dumps(message.get("metadata") or {}, ensure_ascii=False)}
        cap = self.settings.max_metadata_length
        for name, text in texts.items():
            if len(text) > cap:
                return {"reason": f"{name} too large ({len(text)} chars, max {cap})"}
        clean, truncated = sanitise(content, self.settings.max_content_length)
        if not clean:
            return {"reason": "empty after sanitization"}
        return {
            "agent_id": agent_id, "project_id": project_id, "channel": channel, "msg_id": message.get("id", ""),
            "content": clean, "source": texts["source"], "source_id": str(source.get("id", "")),
            "timestamp": timestamp, "ts_epoch": epoch, "metadata": texts["metadata"],
            "created_at": self.now_iso(), "_truncated": truncated,
        }

    def _archive_episode(
        self, agent_id: str, summary: str, keywords: str, history: list[dict[str, Any]],
        start_time: str | None, end_time: str | None, resolved: bool, channel: str, project_id: str,
    ) -> dict[str, Any]:
        start, end = _history_span(history)
        for name, value in (("start_time", start_time), ("end_time", end_time)):
            if value is not None:
                self._checked_time(name, value)
        start, end = start_time or start, end_time or end
        cap = self.settings.max_content_length
        clean, truncated = sanitise(summary, cap)
        if not clean:
            return {"ok": False, "episode_id": None, "error": "argument 'summary' is empty after sanitization"}
        created = self.now_iso()
        vector = self.embed([clean])[0]
        row = {
            "agent_id": agent_id, "project_id": project_id, "channel": channel, "summary": clean,
            "keywords": sanitise(keywords, cap)[0], "start_time": start, "end_time": end,
            "ts_epoch": to_epoch(start or created), "resolved": int(resolved), "embedding": vector,
            "embedding_model": self.embedder.model if vector is not None else "", "created_at": created,
        }
        with self.store_.write() as conn:
            episode_id = self.store_.insert_episode(conn, row)
        out = {"ok": True, "episode_id": episode_id, "ref": make_ref(EPISODE, episode_id), "embedded": vector is not None}
        return {**out, "truncated": True} if truncated else out

    def _update_memory(self, memory_id: int, content: str, agent_id: str) -> dict[str, Any]:
        current = self._owned_memory(memory_id, agent_id)
        clean, truncated = sanitise(content, self.settings.max_content_length)
        if not clean:
            raise ToolArgumentError("argument 'content' is empty after sanitization")
        vector = self.embed([clean])[0]
        changes = {"content": clean, "embedding": vector,
                   "embedding_model": self.embedder.model if vector is not None else ""}
        with self.store_.write() as conn:
            self.store_.update_memory(conn, current["id"], changes)
        out = {"ok": True, "updated_id": memory_id, "embedded": vector is not None}
        return {**out, "truncated": True} if truncated else out

    def _owned_memory(self, memory_id: int, agent_id: str) -> dict[str, Any]:
        row = self.store_.memory_row(memory_id)
        if row is None or (agent_id and row["agent_id"] != agent_id):
            raise ToolArgumentError(f"argument 'memory_id': memory {memory_id} not found or not owned by agent")
        if row["locked"]:
            raise ToolArgumentError(f"argument 'memory_id': memory {memory_id} is locked")
        return row

    def _delete_memory(self, memory_id: int, agent_id: str) -> dict[str, Any]:
        self._owned_memory(memory_id, agent_id)
        with self.store_.write() as conn:
            self.store_.delete(conn, make_ref(MEMORY, memory_id))
        return {"ok": True, "deleted_id": memory_id}

    def _delete_episode(self, episode_id: int, agent_id: str) -> dict[str, Any]:
        ref = make_ref(EPISODE, episode_id)
        record = self.store_.records([ref]).get(ref)
        if record is None or (agent_id and record.agent_id != agent_id):
            raise ToolArgumentError(f"argument 'episode_id': episode {episode_id} not found or not owned by agent")
        with self.store_.write() as conn:
            self.store_.delete(conn, ref)
        return {"ok": True, "deleted_id": episode_id}

    def _update_profile(self, agent_id: str, profile: str) -> dict[str, Any]:
        if not profile.strip():
            return {"ok": True, "profiles_updated": 0, "reason": "empty profile"}
        clean, truncated = sanitise(profile, self.settings.max_profile_length)
        if not clean:
            return {"ok": True, "profiles_updated": 0, "reason": "empty after sanitization"}
        with self.store_.write() as conn:
            self.store_.set_profile(conn, agent_id, clean, self.now_iso())
        out = {"ok": True, "profiles_updated": 1}
        return {**out, "truncated": True} if truncated else out

    # -- read tools -----------------------------------------------------------------------

    def _get_contents(self, agent_id: str, refs: list[str]) -> dict[str, Any]:
        if not refs:
            raise ToolArgumentError("argument 'refs' must hold at least one ref")
        if len(refs) > 20:
            raise ToolArgumentError(f"argument 'refs' holds {len(refs)} refs, at most 20")
        for ref in refs:
            try:
                split_ref(ref)
            except ValueError as exc:
                raise ToolArgumentError(f"argument 'refs': {exc}") from None
        found = self.store_.records(refs)
        items, missing = [], []
        for ref in refs:
            record = found.get(ref)
            if record is None or record.agent_id != agent_id:
                missing.append(ref)
                continue
            items.append({"ref": ref, "content": record.display_content, "timestamp": record.timestamp,
                          **({"id": record.msg_id} if record.msg_id else {})})
        return {"items": items, "missing": missing, "count": len(items)}

    def _list_memories(self, agent_id: str, limit: int, project_id: str | None) -> dict[str, Any]:
        records = self.store_.list_records(MEMORY, agent_id, project_id, limit)
        rows = [{"id": r.id, "ref": r.ref, "agent_id": r.agent_id, "project_id": r.project_id,
                 "channel": r.channel, "content": r.text, "source": r.source, "timestamp": r.timestamp,
                 "created_at": r.created_at, "locked": r.locked} for r in records]
        return {"memories": rows, "count": len(rows)}

    def _list_episodes(self, agent_id: str, limit: int, project_id: str | None) -> dict[str, Any]:
        records = self.store_.list_records(EPISODE, agent_id, project_id, limit)
        rows = [{"id": r.id, "ref": r.ref, "agent_id": r.agent_id, "project_id": r.project_id,
                 "channel": r.channel, "summary": r.text, "keywords": r.keywords, "start_time": r.start_time,
                 "end_time": r.end_time, "time": r.timestamp,
                 "created_at": r.created_at, "resolved": r.resolved} for r in records]
        return {"episodes": rows, "count": len(rows)}

    def _get_profile(self, agent_id: str) -> dict[str, Any]:
        found = self.store_.profile(agent_id)
        return {"profile": found[0] if found else ""}

    def _recall(self, **arguments: Any) -> dict[str, Any]:
        from cuedrecall.recall.request import run_recall

        return run_recall(self, **arguments)

    # -- calibration ------------------------------------------------------------------------

    def _calibrate_threshold(self, agent_id: str, sample_size: int, method: str, percentile: float,
                             z_factor: float) -> dict[str, Any]:
        try:
            return calibrate(self, agent_id, sample_size, method, percentile, z_factor)
        except CalibrationError as exc:
            return {"ok": False, "error": str(exc), "agent_id": agent_id}

    def _set_recall_precision(self, agent_id: str, precision: str) -> dict[str, Any]:
        previous = self.calibration.betas.get(agent_id)
        self.calibration.betas[agent_id] = PRECISION_BETA[precision]
        result = self._calibrate_threshold(agent_id, 200, "separation", 0.95, 1.0)
        if not result["ok"]:  # nothing changes when the new gate cannot be measured
            if previous is None:
                del self.calibration.betas[agent_id]
            else:
                self.calibration.betas[agent_id] = previous
        return {"ok": result["ok"], "agent_id": agent_id, "precision": precision,
                "beta": PRECISION_BETA[precision], "calibrate": result}

    def _get_recall_precision(self, agent_id: str) -> dict[str, Any]:
        beta = self.calibration.beta(agent_id, self.settings.recall_precision)
        named = next((name for name, value in PRECISION_BETA.items() if value == beta), "custom")
        return {"ok": True, "agent_id": agent_id, "precision": named, "beta": beta,
                "overridden": agent_id in self.calibration.betas, "default_precision": self.settings.recall_precision,
                "thresholds": self.calibration.thresholds(agent_id)}

    # -- portability ------------------------------------------------------------------------

    def _export_memories(self, agent_id: str, output_path: str, include_embeddings: bool) -> dict[str, Any]:
        from cuedrecall.portability import export_jsonl

        return export_jsonl(self, agent_id, output_path, include_embeddings)

    def _import_memories(
        self, input_path: str, target_agent_id: str, dry_run: bool, progress: Callable[[int], None] | None = None
    ) -> dict[str, Any]:
        from cuedrecall.portability import import_jsonl

        return import_jsonl(self, input_path, target_agent_id, dry_run, progress)

    def scope(self, agent_id: str, project_id: str | None, channel: str, source_id: str) -> Scope:
        return Scope(agent_id, project_id, channel, source_id)


def _history_span(history: list[dict[str, Any]]) -> tuple[str | None, str | None]:
    """The earliest and latest timestamps of the turns that carry a readable one (original strings)."""
    stamped = [(to_epoch(t["timestamp"]), t["timestamp"]) for t in history if isinstance(t.get("timestamp"), str)]
    stamped = [pair for pair in stamped if pair[0] is not None]
    if not stamped:  # nothing parses: the strings' own order is the best guess left
        texts = sorted(t["timestamp"] for t in history if isinstance(t.get("timestamp"), str) and t["timestamp"])
        return (texts[0], texts[-1]) if texts else (None, None)
    stamped.sort()
    return stamped[0][1], stamped[-1][1]
