"""migrate_channel_axis: CPersona's repair of an old filing, answered for our schema.

See docs/tools.md#migrate_channel_axis.

CPersona's older versions filed some memories under the bridge's type, channel ``discord``,
instead of the concrete channel, and its tool moves them to the channel recovered from the
session id in their metadata (``"<channel id>:<user id>:<chunk>"``). Our schema has had the
channel axis from the start: every record is filed under the channel its writer names, so
there is nothing to migrate. The tool says so, with the counts it looked at, and writes
nothing. Rows a CPersona export brought in under ``discord`` are kept as they were filed
(recall with channel ``discord``, or every channel, reaches them); they are counted in
CPersona's buckets so a migrating user sees them, and a call asking to move them
(``dry_run: false``) is refused, since this server does not rewrite a row's channel.
"""

from __future__ import annotations

import json
import re
from typing import Any

from cuedrecall.runtime import Runtime
from cuedrecall.store.base import MEMORY

BRIDGE = "discord"  # the bridge type CPersona's older versions filed under
_SNOWFLAKE_SESSION = re.compile(r"[0-9]+:")  # a session id that starts with a channel id
SAMPLES = 5
INVALID_IDS = 10


def migrate_channel_axis(
    rt: Runtime, agent_id: str = "", dry_run: bool = True, globalize_unrecoverable: bool = False
) -> dict[str, Any]:
    agents = [a for a in rt.store.agents() if not agent_id or a.agent_id == agent_id]
    channels = sorted({channel for a in agents for channel in a.channels})
    bridge = _bridge_rows(rt, [a.agent_id for a in agents if BRIDGE in a.channels])
    recoverable = bridge["by_channel"]
    answer: dict[str, Any] = {
        "ok": True,
        "agent_id": agent_id,
        "dry_run": True,  # nothing is ever moved here
        "needed": False,
        "schema": "this server files every record under the channel its writer names (the channel axis is part "
        "of its schema), so no row needs migrating",
        "agents": len(agents),
        "memories": sum(a.memories for a in agents),
        "episodes": sum(a.episodes for a in agents),
        "channels": channels,
        "recoverable_total": sum(recoverable.values()),
        "recoverable_by_channel": [
            {"channel": channel, "count": count}
            for channel, count in sorted(recoverable.items(), key=lambda kv: (-kv[1], kv[0]))
        ],
        "unrecoverable_total": bridge["rows"] - sum(recoverable.values()),
        "invalid_metadata_total": len(bridge["invalid"]),
        "invalid_metadata_ids": bridge["invalid"][:INVALID_IDS],
        "globalize_unrecoverable": globalize_unrecoverable,
        "migrated": 0,
        "globalized": 0,
        "samples": bridge["samples"],
    }
    if bridge["rows"]:
        answer["note"] = (
            f"{bridge['rows']} memories are filed under channel {BRIDGE!r}, as the export they came from filed "
            f"them; they stay there (recall with channel {BRIDGE!r}, or every channel, reaches them)"
        )
        if not dry_run:
            answer.update(
                ok=False,
                error=f"this server does not move rows between channels: the {bridge['rows']} memories under "
                f"{BRIDGE!r} were left as they are (run CPersona's migrate_channel_axis before exporting to have "
                "them filed under their own channels)",
            )
    return answer


def _bridge_rows(rt: Runtime, agents: list[str]) -> dict[str, Any]:
    """The memories under the bridge channel of these agents: how many, the channels their session ids recover
    (CPersona's recoverable bucket), the ids whose metadata is not a JSON object, a few samples."""
    rows, by_channel, invalid, samples = 0, dict[str, int](), list[int](), list[dict[str, Any]]()
    for agent in agents:
        for row in rt.store.export_rows(MEMORY, agent):
            if row.get("channel") != BRIDGE:
                continue
            rows += 1
            metadata = _metadata(row.get("metadata"))
            if metadata is None:
                invalid.append(int(row["id"]))
                continue
            session = metadata.get("session_id")
            if isinstance(session, str) and _SNOWFLAKE_SESSION.match(session):
                channel = session.split(":", 1)[0]
                by_channel[channel] = by_channel.get(channel, 0) + 1
                if len(samples) < SAMPLES:
                    samples.append({"id": int(row["id"]), "recovered_channel": channel, "session_id": session})
    return {"rows": rows, "by_channel": by_channel, "invalid": invalid, "samples": samples}


def _metadata(value: Any) -> dict[str, Any] | None:
    """A row's metadata as an object, or None when it is not one (CPersona's invalid-metadata bucket)."""
    if isinstance(value, dict) or value in (None, ""):
        return value or {}
    try:
        decoded = json.loads(value) if isinstance(value, str) else None
    except (ValueError, RecursionError):
        return None
    return decoded if isinstance(decoded, dict) else None
