"""The session controls: pause persistence for a while, resume it, read its state."""

from __future__ import annotations

from cuedrecall.access import WRITE
from cuedrecall.handlers import session
from cuedrecall.tools.common import SESSION_KEY
from cuedrecall.tools.spec import Param, Tool, no_demand, on_every_agent

TOOLS = [
    Tool(
        "pause_persistence",
        "Go off the record: this session's writes answer but nothing is kept, until resumed or timed out.",
        {
            "ttl_seconds": Param(
                "integer",
                "seconds; moved into 1 to 86400",
                default=1800,
                minimum=1,
                maximum=86400,
                clamp=True,
            ),
            "session_key": SESSION_KEY,
        },
        session.pause_persistence,
        on_every_agent(WRITE),
        takes_session=True,
    ),
    Tool(
        "resume_persistence",
        "Keep this session's writes again.",
        {"session_key": SESSION_KEY},
        session.resume_persistence,
        on_every_agent(WRITE),
        idempotent=True,
        takes_session=True,
    ),
    Tool(
        "persistence_status",
        "Whether this session's writes are paused, and how long.",
        {"session_key": SESSION_KEY},
        session.persistence_status,
        no_demand,
        read_only=True,
        takes_session=True,
    ),
]
