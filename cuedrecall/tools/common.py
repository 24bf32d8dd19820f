"""The arguments many tools share, declared once."""

from __future__ import annotations

from typing import Any

from cuedrecall.errors import ToolArgumentError
from cuedrecall.tools.spec import Param

NAME_MAX = 256  # characters of an identifier: agent, project, channel, source, session key, message id
TEXT_MAX = 1_000_000  # characters of a text argument (content, summary, profile); stored text is cut to
# settings.max_content_length (16,000 by default) and the answer says truncated
QUERY_MAX = 16_000  # characters of a recall or reconstruct query


def no_nul(name: str, value: Any) -> None:
    """An identifier never holds a NUL character (C-string readers of the database would cut it there)."""
    if isinstance(value, str) and "\x00" in value:
        raise ToolArgumentError(f"argument '{name}' must not contain a NUL character")


def identifier(doc: str, **more: Any) -> Param:
    """A string that names something (an agent, a project, a channel, a source): at most NAME_MAX characters,
    no NUL."""
    return Param("string", doc, max_length=NAME_MAX, refine=no_nul, **more)


AGENT = identifier("whose memory", required=True, non_empty=True)
AGENT_OMITTABLE = identifier("whose memory; omit if your access names one agent", default="")
AGENT_OR_ALL = identifier('"" = every agent', default="")
AGENT_OWNER = identifier('the owner ("" = any)', default="")
SESSION_KEY = identifier("for pause_persistence", default="")
PROJECT_WRITE = identifier('project; "" = global pool', default="")
PROJECT_READ = identifier('omit = all; "" = global pool; "X" = X and global', nullable=True)
CHANNEL_WRITE = identifier('channel; "" = shared', default="")
CHANNEL_READ = identifier('"" = all; "C" = C and shared', default="")
SOURCE_ID = identifier('only this source ("x:" is a prefix)', default="")
MEMORY_ID = Param("integer", "id or mem:<id>", required=True, minimum=1, ref="mem")
EPISODE_ID = Param("integer", "id or ep:<id>", required=True, minimum=1, ref="ep")

_INSTANT = {"type": "string", "maxLength": 64}
TIME_CUE = Param(
    "object",
    "only when the request itself names a time, never today: {after, before} or {ago}",
    nullable=True,
    properties={
        "after": _INSTANT,
        "before": _INSTANT,
        # {unit, value} before now, or "long_ago": the pattern applies to a string only, the rest to an object only
        "ago": {
            "type": ["object", "string"],
            "pattern": "^long_ago$",
            "properties": {
                "unit": {"type": "string", "enum": ["days", "weeks", "months"]},
                "value": {"type": "integer", "minimum": 0},
            },
            "required": ["unit", "value"],
            "additionalProperties": False,
        },
        "confidence": {"type": "string", "enum": ["sure", "likely", "vague"]},
    },
    extra={"required": ["confidence"], "additionalProperties": False},
    strict_fields=True,
)
