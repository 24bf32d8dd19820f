"""The arguments many tools share, declared once."""

from __future__ import annotations

from cuedrecall.tools.spec import Param

NAME_MAX = 256

AGENT = Param("string", "the agent whose memory this is", required=True, non_empty=True, max_length=NAME_MAX)
AGENT_OMITTABLE = Param("string", "the agent whose memory this is; may be omitted when your access names exactly "
                        "one agent", default="", max_length=NAME_MAX)
AGENT_OR_ALL = Param("string", "the agent; \"\" for every agent (needs access to every agent)", default="",
                     max_length=NAME_MAX)
AGENT_OWNER = Param("string", "the owning agent; \"\" acts on any agent's row (needs access to every agent)",
                    default="", max_length=NAME_MAX)
SESSION_KEY = Param("string", "your session's name for pause_persistence (a partition hint, not a filter); "
                    "omitted = the process's shared bucket", default="", max_length=NAME_MAX)
PROJECT_WRITE = Param("string", "project to file under; \"\" = the global pool", default="", max_length=NAME_MAX)
PROJECT_READ = Param(
    "string", "omit for every project; \"\" = the global pool only; \"X\" = project X and the global pool",
    nullable=True, max_length=NAME_MAX,
)
CHANNEL_WRITE = Param("string", "channel to file under; \"\" = shared by every channel", default="",
                      max_length=NAME_MAX)
CHANNEL_READ = Param("string", "\"\" = every channel; \"C\" = channel C and the shared channel", default="",
                     max_length=NAME_MAX)
SOURCE_ID = Param(
    "string",
    "only memories from this source: an id ending in a letter or digit matches exactly; "
    "anything else (\"discord:\") is a prefix",
    default="", max_length=NAME_MAX,
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
            "description": "instead of after/before: {unit, value} before now, or \"long_ago\"",
            "anyOf": [
                {"type": "object", "properties": {"unit": {"type": "string", "enum": ["days", "weeks", "months"]},
                                                  "value": {"type": "integer", "minimum": 0}},
                 "required": ["unit", "value"], "additionalProperties": False},
                {"type": "string", "enum": ["long_ago"]},
            ],
        },
        "confidence": {"type": "string", "enum": ["sure", "likely", "vague"],
                       "description": "sure: that period; likely: it or near it; vague: roughly then"},
    },
    extra={"required": ["confidence"], "additionalProperties": False},
)
