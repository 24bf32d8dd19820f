"""The everyday tools: store, recall, read, correct, protect and delete memories, episodes and the profile."""

from __future__ import annotations

from typing import Any

from cuedrecall.access import READ, WRITE
from cuedrecall.errors import ToolArgumentError
from cuedrecall.handlers import read, write
from cuedrecall.handlers.recall import recall_with_context, run_recall
from cuedrecall.tools.bounds import check_ref
from cuedrecall.tools.common import (
    AGENT,
    AGENT_OMITTABLE,
    AGENT_OR_ALL,
    AGENT_OWNER,
    CHANNEL_READ,
    CHANNEL_WRITE,
    EPISODE_ID,
    MEMORY_ID,
    NAME_MAX,
    PROJECT_READ,
    PROJECT_WRITE,
    QUERY_MAX,
    SESSION_KEY,
    SOURCE_ID,
    TEXT_MAX,
    TIME_CUE,
    identifier,
)
from cuedrecall.tools.spec import Param, Tool, on_agent

# the older form of store's arguments: each field as its top-level argument (described there)
_MESSAGE_FIELDS = {
    "content": {"type": "string", "maxLength": TEXT_MAX},
    "id": {"type": "string", "maxLength": NAME_MAX},
    "source": {"type": ["object", "string", "null"]},
    "timestamp": {"type": "string", "maxLength": 64},
    "metadata": {"type": "object"},
}


def _source_bounded(name: str, value: Any) -> None:
    """A source's id and name are identifiers: at most NAME_MAX characters each (a word source is its id)."""
    fields = {"id": value} if isinstance(value, str) else value if isinstance(value, dict) else {}
    for key in ("id", "name"):
        if isinstance(fields.get(key), str) and len(fields[key]) > NAME_MAX:
            where = name if isinstance(value, str) else f"{name}.{key}"
            raise ToolArgumentError(  # CPersona's words for a source over its bound: source too large
                f"argument '{where}' is too long ({len(fields[key]):,} characters, at most {NAME_MAX}): "
                "source too large"
            )


def _message_bounded(name: str, value: dict[str, Any]) -> None:
    if "source" in value:
        _source_bounded(f"{name}.source", value["source"])


def _refs_wellformed(name: str, refs: list[Any]) -> None:
    """Each ref (or an item's ref) is mem:<id> or ep:<id> with an id below 2**63 (a malformed one is named)."""
    for position, item in enumerate(refs):
        ref = item.get("ref") if isinstance(item, dict) else item
        check_ref(name, ref, f"{name}[{position}]")


_LIMIT = Param("integer", "rows", default=10, minimum=0, maximum=100)
_EXCLUDE = Param("array", "texts already in context, left out", default=[], items="string", max_items=1000)
_FULL = Param("boolean", "whole rows, not previews", default=False)
_DEEP = Param("boolean", "weaker matches too (a halved gate)", default=False)
_CONTEXT_ENTRY = {
    "type": "object",
    "properties": {
        "role": {"type": "string", "description": "user, assistant: join the answer; others filter"},
        "content": {"type": "string"},
        "name": {"type": "string"},
        "user_id": {"type": "string"},
        "timestamp": {"type": "string"},
    },
}

_INDEX = {"type": "integer", "minimum": 0}
_INDEXES = {"anyOf": [_INDEX, {"type": "array", "items": _INDEX, "minItems": 2, "maxItems": 2}]}
_CONTENTS_ITEM = {
    "anyOf": [
        {"type": "string"},
        {
            "type": "object",
            "properties": {
                "ref": {"type": "string"},
                "block": _INDEXES,
                "span": {"type": "array", "items": _INDEX, "minItems": 2, "maxItems": 2},
                "node": {},  # CPersona's: read, answered under unresolved (not supported)
                "revision": {},  # CPersona's, as node
            },
            "required": ["ref"],
            "additionalProperties": False,
        },
    ]
}

TOOLS = [
    Tool(
        "store",
        "Save a fact, decision, preference or turn worth recalling. The same id or text again is skipped.",
        {
            "agent_id": AGENT_OMITTABLE,
            "content": Param("string", "the text", max_length=TEXT_MAX),
            "id": identifier("your message id"),
            "source": Param(
                "object",
                'who said it: {type: User|Agent|System, id, name} or "user"',
                also=("string", "null"),
                refine=_source_bounded,
            ),
            "timestamp": Param("string", "ISO-8601; default now", max_length=64),
            "metadata": Param("object", "free-form JSON, at most 8000 chars"),
            "lock": Param("boolean", "protect it from update and delete", default=False),
            "message": Param(
                "object",
                "older form of the five above",
                properties=_MESSAGE_FIELDS,
                strict_fields=True,
                refine=_message_bounded,
            ),
            "channel": CHANNEL_WRITE,
            "project_id": PROJECT_WRITE,
            "session_key": SESSION_KEY,
            # as CPersona publishes it: a rider is reported, never refused, so its shape constrains no call
            "associations": Param(
                "object",
                "declare_associations' {entities, relations}, anchored here; never fails the store",
            ),
        },
        write.store,
        on_agent(WRITE),
        idempotent=True,
        omit_agent=True,
        paused={"result": "skipped", "id": "no-persist", "embedded": False},
        failure={"result": "rejected"},
    ),
    Tool(
        "recall",
        "Search memory before answering what may depend on the past. Rows run worst to best: the LAST is the "
        "best match; each row's rank says its place (1 = best). Pass time_cue only when the request itself "
        "names a time; never fill it with today's date. A cue lifts rows a few places, may add up to 3 rows, "
        "never removes one.",
        {
            "agent_id": AGENT,
            "query": Param("string", '"" lists the newest', required=True, max_length=QUERY_MAX),
            "limit": _LIMIT,
            "deep": _DEEP,
            "channel": CHANNEL_READ,
            "project_id": PROJECT_READ,
            "source_id": SOURCE_ID,
            "exclude_contents": _EXCLUDE,
            "full_content": _FULL,
            "trace": Param("boolean", "also each stage's decisions", default=False),
            "time_cue": TIME_CUE,
            "session_key": SESSION_KEY,
        },
        run_recall,
        on_agent(READ),
        read_only=True,
        failure={"messages": []},
    ),
    Tool(
        "recall_with_context",
        "recall, leaving out what the conversation holds, merged with it in time order.",
        {
            "agent_id": AGENT,
            "query": Param("string", "what to look for", required=True, max_length=QUERY_MAX),
            "external_context": Param(
                "array",
                "the conversation so far (a non-object entry is skipped and reported)",
                default=[],
                max_items=1000,
                extra={"items": _CONTEXT_ENTRY},  # published, not enforced: a malformed entry is skipped
            ),
            "limit": _LIMIT,
            "deep": _DEEP,
            "channel": CHANNEL_READ,
            "project_id": PROJECT_READ,
            "source_id": SOURCE_ID,
            "full_content": _FULL,
            "session_key": SESSION_KEY,
        },
        recall_with_context,
        on_agent(READ),
        read_only=True,
        failure={"messages": []},
    ),
    Tool(
        "get_contents",
        "Whole texts of records recall previewed, by ref.",
        {
            "agent_id": AGENT,
            "refs": Param(
                "array",
                '"mem:12", "ep:3", or a range: {ref, block: i or [i, j]} or {ref, span: [start, end]}',
                required=True,
                items=_CONTENTS_ITEM,
                extra={"minItems": 1, "maxItems": 20},
                refine=_refs_wellformed,
            ),
        },
        read.get_contents,
        on_agent(READ),
        read_only=True,
        failure={"items": []},
    ),
    Tool(
        "archive_episode",
        "Save your summary of a finished session or task as an episode.",
        {
            "agent_id": AGENT,
            "summary": Param("string", "your summary", required=True, non_empty=True, max_length=TEXT_MAX),
            "keywords": Param("string", "space-separated", default="", max_length=TEXT_MAX),
            "history": Param(
                "array", "turns [{timestamp}]: their start and end", default=[], items="object", max_items=10_000
            ),
            "start_time": Param("string", "ISO-8601 (over history)", nullable=True, max_length=64),
            "end_time": Param("string", "ISO-8601 (over history)", nullable=True, max_length=64),
            "resolved": Param("boolean", "its matter is settled", default=False, nullable=True),
            "channel": CHANNEL_WRITE,
            "project_id": PROJECT_WRITE,
            "session_key": SESSION_KEY,
        },
        write.archive_episode,
        on_agent(WRITE),
        paused={"episode_id": None, "id": "no-persist"},
        failure={"episode_id": None},
    ),
    Tool(
        "update_memory",
        "Correct a memory's text. A locked one refuses.",
        {
            "memory_id": MEMORY_ID,
            "content": Param("string", "the new text", required=True, non_empty=True, max_length=TEXT_MAX),
            "agent_id": AGENT_OWNER,
            "session_key": SESSION_KEY,
        },
        write.update_memory,
        on_agent(WRITE),
        destructive=True,  # the old text is replaced
        idempotent=True,
        paused={"updated_id": None},
    ),
    Tool(
        "lock_memory",
        "Protect a memory from update and delete.",
        {"memory_id": MEMORY_ID, "agent_id": AGENT_OWNER, "session_key": SESSION_KEY},
        write.lock_memory,
        on_agent(WRITE),
        idempotent=True,
        paused={"locked_id": None},
    ),
    Tool(
        "unlock_memory",
        "Lift lock_memory's protection.",
        {"memory_id": MEMORY_ID, "agent_id": AGENT_OWNER, "session_key": SESSION_KEY},
        write.unlock_memory,
        on_agent(WRITE),
        idempotent=True,
        paused={"unlocked_id": None},
    ),
    Tool(
        "delete_memory",
        "Delete a memory for good (a locked one refuses), as when asked to forget.",
        {"memory_id": MEMORY_ID, "agent_id": AGENT_OWNER, "session_key": SESSION_KEY},
        write.delete_memory,
        on_agent(WRITE),
        destructive=True,
        idempotent=True,
        paused={"deleted_id": None},
    ),
    Tool(
        "delete_episode",
        "Delete an episode for good.",
        {"episode_id": EPISODE_ID, "agent_id": AGENT_OWNER, "session_key": SESSION_KEY},
        write.delete_episode,
        on_agent(WRITE),
        destructive=True,
        idempotent=True,
        paused={"deleted_id": None},
    ),
    Tool(
        "delete_agent_data",
        "Delete an agent's memories, episodes, profile and calibration.",
        {"agent_id": AGENT, "session_key": SESSION_KEY},
        write.delete_agent_data,
        on_agent(WRITE),
        destructive=True,
        idempotent=True,
        paused=lambda rt, bound: {
            "agent_id": bound["agent_id"],
            "deleted_memories": 0,
            "deleted_profiles": 0,
            "deleted_episodes": 0,
            "deleted_pending_tasks": 0,
        },
    ),
    Tool(
        "list_memories",
        "Browse memories, newest first (recall searches).",
        {
            "agent_id": AGENT_OR_ALL,
            "limit": Param("integer", "rows (at most 500)", default=100, minimum=0, maximum=500, clamp=True),
            "project_id": PROJECT_READ,
        },
        read.list_memories,
        on_agent(READ),
        read_only=True,
        failure={"memories": [], "count": 0},
    ),
    Tool(
        "list_episodes",
        "Browse episodes, newest first.",
        {
            "agent_id": AGENT_OR_ALL,
            "limit": Param("integer", "rows (at most 200)", default=50, minimum=0, maximum=200, clamp=True),
            "project_id": PROJECT_READ,
        },
        read.list_episodes,
        on_agent(READ),
        read_only=True,
        failure={"episodes": [], "count": 0},
    ),
    Tool(
        "get_profile",
        "The agent's profile: standing facts about the user and the agent.",
        {"agent_id": AGENT},
        read.get_profile,
        on_agent(READ),
        read_only=True,
    ),
    Tool(
        "update_profile",
        "Replace the agent's profile (at most 2000 characters of standing facts).",
        {
            "agent_id": AGENT,
            "profile": Param("string", "the whole new profile", required=True, max_length=TEXT_MAX),
            "session_key": SESSION_KEY,
        },
        write.update_profile,
        on_agent(WRITE),
        destructive=True,  # the old profile is replaced
        idempotent=True,
        paused={"profiles_updated": 0},
    ),
]
