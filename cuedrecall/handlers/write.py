"""The write tools: store, archive_episode, update_memory, the deletes and update_profile.

Each validates what it was given before anything is written; a refusal writes nothing.
"""

from __future__ import annotations

from typing import Any

from cuedrecall.clock import to_epoch
from cuedrecall.errors import ToolArgumentError
from cuedrecall.handlers.associations import declare_rider, parse_rider
from cuedrecall.handlers.blocks import QUEUED, queue_build
from cuedrecall.handlers.rows import embedding, episode_row, json_text, memory_row
from cuedrecall.runtime import Runtime
from cuedrecall.store.base import EPISODE, MEMORY, make_ref
from cuedrecall.text.sanitise import sanitise
from cuedrecall.tools.bounds import named

_SOURCE_TYPES = {
    "user": "User",
    "agent": "Agent",
    "assistant": "Agent",
    "ai": "Agent",
    "system": "System",
    "session": "System",
}
_MESSAGE_FIELDS = ("content", "id", "source", "timestamp", "metadata")


def normalize_source(source: Any) -> dict[str, Any]:
    """Fold the spellings of a source into {type, id, name}; anything unrecognised is kept as given."""
    if source is None:
        return {}
    if isinstance(source, str):
        kind = _SOURCE_TYPES.get(source.strip().lower())
        return {"type": kind} if kind else {"id": source}
    if len(source) == 1:
        ((key, value),) = source.items()
        kind = _SOURCE_TYPES.get(str(key).lower())
        if kind and isinstance(value, dict):
            return {"type": kind, **value}
    if isinstance(source.get("type"), str) and source["type"].lower() in _SOURCE_TYPES:
        return {**source, "type": _SOURCE_TYPES[source["type"].lower()]}
    return dict(source)


def checked_time(name: str, value: Any) -> str:
    """An ISO-8601 timestamp argument, else ToolArgumentError naming it."""
    if not isinstance(value, str) or to_epoch(value) is None:
        raise ToolArgumentError(f"argument '{name}' must be an ISO-8601 timestamp, got {value!r}")
    return value


def with_truncated(out: dict[str, Any], truncated: bool) -> dict[str, Any]:
    return {**out, "truncated": True} if truncated else out


def store(
    rt: Runtime,
    agent_id: str,
    message: dict[str, Any] | None,
    channel: str,
    project_id: str,
    content: str | None = None,
    id: str | None = None,
    source: Any = None,
    timestamp: str | None = None,
    metadata: dict[str, Any] | None = None,
    lock: bool = False,
    associations: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The tool: ``_store``, with a field of ``message`` it does not know ignored and named under
    ``ignored_arguments`` (refused under settings.strict_arguments, as an unknown argument is)."""
    ignored: list[str] = []
    if message is not None and not rt.settings.strict_arguments:
        ignored = named(set(message) - set(_MESSAGE_FIELDS), prefix="message.")
        message = {name: value for name, value in message.items() if name in _MESSAGE_FIELDS}
    top = {"content": content, "id": id, "source": source, "timestamp": timestamp, "metadata": metadata}
    answer = _store(rt, agent_id, message, channel, project_id, top, lock, associations)
    return {**answer, "ignored_arguments": ignored} if ignored else answer


def _store(
    rt: Runtime,
    agent_id: str,
    message: dict[str, Any] | None,
    channel: str,
    project_id: str,
    top: dict[str, Any],
    lock: bool,
    associations: dict[str, Any] | None,
) -> dict[str, Any]:
    """Store one memory, given at the top level (``top``: content, id, ...) or in the older ``message`` object.

    ``associations``, when given, is declared against the memory the store resolved to
    (the new row, or the one a duplicate was skipped for) in the store's project and
    channel, in the same write transaction as the row, and reported under
    ``associations``: a failure while declaring writes neither. A malformed one (checked
    before anything is written) never fails the store; its report says what was wrong.
    """
    rider = None if associations is None else parse_rider(associations)
    checked = _checked_message(rt, _one_message(message, {k: v for k, v in top.items() if v is not None}))
    if "reason" in checked:
        return {"ok": False, "result": "rejected", "reason": checked["reason"], "error": checked["reason"]}

    def declared(conn: Any, memory_id: int) -> dict[str, Any]:
        """The rider's report for the memory ``memory_id``, declared in the transaction ``conn``."""
        if rider is None or isinstance(rider, dict):
            return {} if rider is None else {"associations": rider}
        report = declare_rider(rt, conn, agent_id, project_id, channel, rider, make_ref(MEMORY, memory_id))
        return {"associations": report}

    projects = [project_id, ""] if project_id else [""]
    channels = [channel, ""] if channel else [""]
    duplicate = rt.store.find_duplicate(agent_id, projects, channels, checked["msg_id"], checked["content"])
    if duplicate:  # known before embedding: a repeat costs no model call
        if rider is None or isinstance(rider, dict):
            return {**_skipped(duplicate), **declared(None, duplicate[1])}
        with rt.store.write() as conn:
            return {**_skipped(duplicate), **declared(conn, duplicate[1])}
    vector = rt.embed([checked["content"]])[0]
    row = memory_row(
        agent_id=agent_id,
        project_id=project_id,
        channel=channel,
        msg_id=checked["msg_id"],
        content=checked["content"],
        source=checked["source"],
        timestamp=checked["timestamp"],
        metadata=checked["metadata"],
        created_at=rt.now_iso(),
        vector=vector,
        model=rt.embedder.model,
        locked=lock,
    )
    with rt.store.write() as conn:
        # checked again under the writers' lock: another process (or thread) may have stored the same memory while
        # this one embedded, and two servers storing one text at once must keep one row
        duplicate = rt.store.find_duplicate(agent_id, projects, channels, checked["msg_id"], checked["content"])
        if duplicate:
            return {**_skipped(duplicate), **declared(conn, duplicate[1])}
        new_id = rt.store.insert_memory(conn, row)
        queued = queue_build(rt, conn, make_ref(MEMORY, new_id))
        rider_report = declared(conn, new_id)  # in this transaction: a failure here rolls the memory back
    out = {
        "ok": True,
        "result": "stored",
        "id": new_id,
        "ref": make_ref(MEMORY, new_id),
        "embedded": vector is not None,
    }
    if lock:
        out["locked"] = True
    if queued:
        out["blocks"] = dict(QUEUED)
    return with_truncated({**out, **rider_report}, checked["truncated"])


def _skipped(duplicate: tuple[str, int]) -> dict[str, Any]:
    return {"ok": True, "result": "skipped", "reason": duplicate[0], "id": duplicate[1]}


def _one_message(message: dict[str, Any] | None, top: dict[str, Any]) -> dict[str, Any]:
    """The message's fields from whichever form the caller used; a field given both ways must agree."""
    if message is None:
        if "content" not in top:
            raise ToolArgumentError("argument 'content' is required (or the older form, 'message.content')")
        return top
    clashes = sorted(name for name, value in top.items() if name in message and message[name] != value)
    if clashes:
        raise ToolArgumentError(
            f"argument(s) {', '.join(clashes)} given both at the top level and in 'message' "
            "with different values: give each once"
        )
    return {**message, **top}


def _checked_message(rt: Runtime, message: dict[str, Any]) -> dict[str, Any]:
    """The message's parts, cleaned, or {"reason": ...} for a refusal; raises for malformed arguments."""
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
    if stamp is not None and not isinstance(stamp, str):
        raise ToolArgumentError("argument 'message.timestamp' must be a string (ISO-8601)")
    # a time in another format is kept as given; the row's time is then the store time (memory_row), and
    # check_health's timestamp_format_drift reports it (docs/tools.md#timestamps)
    timestamp = rt.now_iso() if stamp is None else stamp
    if not content.strip():
        return {"reason": "empty content"}
    source, metadata = normalize_source(message.get("source")), message.get("metadata") or {}
    cap = rt.settings.max_metadata_length
    for name, value in (("source", source), ("metadata", metadata)):
        if len(json_text(value)) > cap:
            return {"reason": f"{name} too large ({len(json_text(value))} chars, max {cap})"}
    clean, truncated = sanitise(content, rt.settings.max_content_length)
    if not clean:
        return {"reason": "empty after sanitization"}
    return {
        "content": clean,
        "truncated": truncated,
        "msg_id": message.get("id", ""),
        "source": source,
        "metadata": metadata,
        "timestamp": timestamp,
    }


def archive_episode(
    rt: Runtime,
    agent_id: str,
    summary: str,
    keywords: str,
    history: list[dict[str, Any]],
    start_time: str | None,
    end_time: str | None,
    resolved: bool,
    channel: str,
    project_id: str,
) -> dict[str, Any]:
    start, end = _history_span(history)
    for name, value in (("start_time", start_time), ("end_time", end_time)):
        if value is not None:
            checked_time(name, value)
    cap = rt.settings.max_content_length
    clean, truncated = sanitise(summary, cap)
    if not clean:
        return {"ok": False, "episode_id": None, "error": "argument 'summary' is empty after sanitization"}
    vector = rt.embed([clean])[0]
    row = episode_row(
        agent_id=agent_id,
        project_id=project_id,
        channel=channel,
        summary=clean,
        keywords=sanitise(keywords, cap)[0],
        start_time=start_time or start,
        end_time=end_time or end,
        resolved=resolved,
        created_at=rt.now_iso(),
        vector=vector,
        model=rt.embedder.model,
    )
    with rt.store.write() as conn:
        episode_id = rt.store.insert_episode(conn, row)
        queued = queue_build(rt, conn, make_ref(EPISODE, episode_id))
    out = {"ok": True, "episode_id": episode_id, "ref": make_ref(EPISODE, episode_id), "embedded": vector is not None}
    return with_truncated({**out, "blocks": dict(QUEUED)} if queued else out, truncated)


def update_memory(rt: Runtime, memory_id: int, content: str, agent_id: str) -> dict[str, Any]:
    current = _owned_memory(rt, memory_id, agent_id)
    clean, truncated = sanitise(content, rt.settings.max_content_length)
    if not clean:
        raise ToolArgumentError("argument 'content' is empty after sanitization")
    vector = rt.embed([clean])[0]
    with rt.store.write() as conn:
        rt.store.update_memory(conn, current["id"], {"content": clean, **embedding(vector, rt.embedder.model)})
        queued = queue_build(rt, conn, make_ref(MEMORY, current["id"]))
    out = {"ok": True, "updated_id": memory_id, "embedded": vector is not None}
    return with_truncated({**out, "blocks": dict(QUEUED)} if queued else out, truncated)


def _owned_memory(rt: Runtime, memory_id: int, agent_id: str, unlocked: bool = True) -> dict[str, Any]:
    """The memory's row when it exists, belongs to ``agent_id`` (when given) and, if asked, is not locked."""
    row = rt.store.memory_row(memory_id)
    if row is None or (agent_id and row["agent_id"] != agent_id):
        raise ToolArgumentError(f"argument 'memory_id': memory {memory_id} not found or not owned by agent")
    if unlocked and row["locked"]:
        raise ToolArgumentError(f"argument 'memory_id': memory {memory_id} is locked")
    return row


def lock_memory(rt: Runtime, memory_id: int, agent_id: str) -> dict[str, Any]:
    """Protect a memory from update and delete (no effect on ranking)."""
    return _set_lock(rt, memory_id, agent_id, True)


def unlock_memory(rt: Runtime, memory_id: int, agent_id: str) -> dict[str, Any]:
    return _set_lock(rt, memory_id, agent_id, False)


def _set_lock(rt: Runtime, memory_id: int, agent_id: str, locked: bool) -> dict[str, Any]:
    _owned_memory(rt, memory_id, agent_id, unlocked=False)
    with rt.store.write() as conn:
        rt.store.update_memory(conn, memory_id, {"locked": int(locked)})
    return {"ok": True, ("locked_id" if locked else "unlocked_id"): memory_id}


def delete_agent_data(rt: Runtime, agent_id: str) -> dict[str, Any]:
    """Every memory, episode and profile of one agent, and its calibration, in one transaction."""
    with rt.store.write() as conn:
        counts = rt.store.delete_agent(conn, agent_id)
        rt.store.drop_thresholds(conn, [agent_id])
        rt.store.set_beta(conn, agent_id, None)
    return {
        "ok": True,
        "agent_id": agent_id,
        "deleted_memories": counts["memories"],
        "deleted_profiles": counts["profiles"],
        "deleted_episodes": counts["episodes"],
        "deleted_pending_tasks": 0,
    }


def delete_memory(rt: Runtime, memory_id: int, agent_id: str) -> dict[str, Any]:
    _owned_memory(rt, memory_id, agent_id)
    with rt.store.write() as conn:
        rt.store.delete(conn, make_ref(MEMORY, memory_id))
    return {"ok": True, "deleted_id": memory_id}


def delete_episode(rt: Runtime, episode_id: int, agent_id: str) -> dict[str, Any]:
    ref = make_ref(EPISODE, episode_id)
    record = rt.store.records([ref]).get(ref)
    if record is None or (agent_id and record.agent_id != agent_id):
        raise ToolArgumentError(f"argument 'episode_id': episode {episode_id} not found or not owned by agent")
    with rt.store.write() as conn:
        rt.store.delete(conn, ref)
    return {"ok": True, "deleted_id": episode_id}


def update_profile(rt: Runtime, agent_id: str, profile: str) -> dict[str, Any]:
    if not profile.strip():
        return {"ok": True, "profiles_updated": 0, "reason": "empty profile"}
    clean, truncated = sanitise(profile, rt.settings.max_profile_length)
    if not clean:
        return {"ok": True, "profiles_updated": 0, "reason": "empty after sanitization"}
    with rt.store.write() as conn:
        rt.store.set_profile(conn, agent_id, clean, rt.now_iso())
    return with_truncated({"ok": True, "profiles_updated": 1}, truncated)


def _history_span(history: list[dict[str, Any]]) -> tuple[str | None, str | None]:
    """The earliest and latest timestamps of the turns that carry a readable one (original strings)."""
    stamped = [(to_epoch(t["timestamp"]), t["timestamp"]) for t in history if isinstance(t.get("timestamp"), str)]
    stamped = [pair for pair in stamped if pair[0] is not None]
    if not stamped:  # nothing parses: the strings' own order is the best guess left
        texts = sorted(t["timestamp"] for t in history if isinstance(t.get("timestamp"), str) and t["timestamp"])
        return (texts[0], texts[-1]) if texts else (None, None)
    stamped.sort()
    return stamped[0][1], stamped[-1][1]
