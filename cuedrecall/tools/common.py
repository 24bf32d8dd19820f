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


AGENT = identifier("the agent whose memory this is", required=True, non_empty=True)
AGENT_OMITTABLE = identifier(
    "the agent whose memory this is; may be omitted when your access names exactly one agent", default=""
)
AGENT_OR_ALL = identifier('the agent; "" for every agent (needs access to every agent)', default="")
AGENT_OWNER = identifier('the owning agent; "" acts on any agent\'s row (needs access to every agent)', default="")
SESSION_KEY = identifier(
    "your session's name for pause_persistence (a partition hint, not a filter); omitted = the process's shared bucket",
    default="",
)
PROJECT_WRITE = identifier('project to file under; "" = the global pool', default="")
PROJECT_READ = identifier(
    'omit for every project; "" = the global pool only; "X" = project X and the global pool', nullable=True
)
CHANNEL_WRITE = identifier('channel to file under; "" = shared by every channel', default="")
CHANNEL_READ = identifier('"" = every channel; "C" = channel C and the shared channel', default="")
SOURCE_ID = identifier(
    "only memories from this source: an id ending in a letter or digit matches exactly; "
    'anything else ("discord:") is a prefix',
    default="",
)
MEMORY_ID = Param("integer", "the memory's id, or its ref mem:<id>", required=True, minimum=1, ref="mem")
EPISODE_ID = Param("integer", "the episode's id, or its ref ep:<id>", required=True, minimum=1, ref="ep")

_INSTANT = {"type": "string", "maxLength": 64}
TIME_CUE = Param(
    "object",
    "only when the request itself names a time (never today's date): a period {after, before} or {ago}, "
    "and how sure you are (confidence, required)",
    nullable=True,
    properties={
        "after": {**_INSTANT, "description": "the period starts here: YYYY-MM-DD or an ISO-8601 instant"},
        "before": {**_INSTANT, "description": "the period ends before this (a date: the end of that day)"},
        "ago": {
            "description": 'instead of after/before: {unit, value} before now, or "long_ago"',
            "anyOf": [
                {
                    "type": "object",
                    "properties": {
                        "unit": {"type": "string", "enum": ["days", "weeks", "months"]},
                        "value": {"type": "integer", "minimum": 0},
                    },
                    "required": ["unit", "value"],
                    "additionalProperties": False,
                },
                {"type": "string", "enum": ["long_ago"]},
            ],
        },
        "confidence": {
            "type": "string",
            "enum": ["sure", "likely", "vague"],
            "description": "sure: that period; likely: it or near it; vague: roughly then",
        },
    },
    extra={"required": ["confidence"], "additionalProperties": False},
    strict_fields=True,
)
