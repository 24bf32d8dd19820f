"""One write path: the memory and episode rows the store inserts, built the same way by the tools and by import.

A row's derived columns (``source_id``, ``ts_epoch``, the JSON columns, the
embedding's model label) are computed here and nowhere else.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from cuedrecall.clock import to_epoch


def memory_row(
    *,
    agent_id: str,
    project_id: str,
    channel: str,
    msg_id: str,
    content: str,
    source: dict[str, Any],
    timestamp: str,
    metadata: dict[str, Any],
    created_at: str,
    vector: np.ndarray | None,
    model: str,
    locked: bool = False,
) -> dict[str, Any]:
    """A memory as the store inserts it: ``timestamp`` is the caller's time of the event (what cues read), kept as
    given; when it does not read as ISO-8601 the row's time (``ts_epoch``) is ``created_at``."""
    return {
        "agent_id": agent_id,
        "project_id": project_id,
        "channel": channel,
        "msg_id": msg_id,
        "content": content,
        "source": json_text(source),
        "source_id": str(source.get("id", "")),
        "timestamp": timestamp,
        "ts_epoch": _first_time(timestamp, created_at),
        "metadata": json_text(metadata),
        "locked": int(locked),
        "created_at": created_at,
        **embedding(vector, model),
    }


def episode_row(
    *,
    agent_id: str,
    project_id: str,
    channel: str,
    summary: str,
    keywords: str,
    start_time: str | None,
    end_time: str | None,
    resolved: bool,
    created_at: str,
    vector: np.ndarray | None,
    model: str,
) -> dict[str, Any]:
    """An episode as the store inserts it: its time is its start, else when it was recorded."""
    return {
        "agent_id": agent_id,
        "project_id": project_id,
        "channel": channel,
        "summary": summary,
        "keywords": keywords,
        "start_time": start_time,
        "end_time": end_time,
        "ts_epoch": to_epoch(start_time or created_at),
        "resolved": int(resolved),
        "created_at": created_at,
        **embedding(vector, model),
    }


def _first_time(*texts: str) -> float | None:
    """Epoch seconds of the first text that reads as ISO-8601."""
    for text in texts:
        moment = to_epoch(text)
        if moment is not None:
            return moment
    return None


def embedding(vector: np.ndarray | None, model: str) -> dict[str, Any]:
    """The embedding columns: the vector and the model that made it ("" when there is none)."""
    return {"embedding": vector, "embedding_model": model if vector is not None else ""}


def json_text(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False)


def json_object(value: Any) -> dict[str, Any]:
    """A stored JSON column (or a file's object, or its JSON text) as an object; {} for anything else."""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}
