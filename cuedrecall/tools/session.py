"""The session controls: pause persistence for a while, resume it, read its state."""

from __future__ import annotations

from cuedrecall.access import WRITE
from cuedrecall.handlers import session
from cuedrecall.tools.common import SESSION_KEY
from cuedrecall.tools.spec import Param, Tool, no_demand, on_every_agent

TOOLS = [
    Tool(
        "pause_persistence",
        "Stop keeping this session's writes for a while (an off-the-record stretch): writes answer as usual but "
        "nothing is stored. Pausing again restarts the time.",
        {
            "ttl_seconds": Param(
                "integer",
                "how long, 1 to 86400 seconds (a longer or shorter time is moved to that bound; the answer says)",
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
        "Whether this session's writes are paused, and for how long.",
        {"session_key": SESSION_KEY},
        session.persistence_status,
        no_demand,
        read_only=True,
        takes_session=True,
    ),
]
