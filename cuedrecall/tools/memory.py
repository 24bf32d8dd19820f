"""The everyday tools: store, recall, read, correct, protect and delete memories, episodes and the profile."""

from __future__ import annotations

from typing import Any

from cuedrecall.access import READ, WRITE
from cuedrecall.errors import ToolArgumentError
from cuedrecall.handlers import read, write
from cuedrecall.handlers.recall import recall_with_context, run_recall
from cuedrecall.tools.associations import ASSOCIATIONS
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

_SOURCE_FORMS = {
    "description": "who said it: {type: User|Agent|System, id, name}, or a word (user, assistant)",
    "type": ["object", "string", "null"],
}
_MESSAGE_FIELDS = {
    "content": {"type": "string", "maxLength": TEXT_MAX, "description": "the text to remember"},
    "id": {"type": "string", "maxLength": NAME_MAX, "description": "your message id: the same id again is skipped"},
    "source": _SOURCE_FORMS,
    "timestamp": {"type": "string", "maxLength": 64, "description": "ISO-8601 time of the event; default now"},
    "metadata": {"type": "object", "description": "free-form JSON, at most 8000 characters"},
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


_LIMIT = Param("integer", "rows to return", default=10, minimum=0, maximum=100)
_EXCLUDE = Param(
    "array",
    "texts already in context: rows equal to (or, from 32 chars, starting with) one of "
    "them are left out (at most 1000)",
    default=[],
    items="string",
    max_items=1000,
)
_FULL = Param("boolean", "return whole rows instead of 500-character previews", default=False)
_DEEP = Param("boolean", "halve the quality gate to find weaker matches", default=False)
_CONTEXT_ENTRY = {
    "type": "object",
    "properties": {
        "role": {"type": "string", "description": "user or assistant join the answer; any other role only filters"},
        "content": {"type": "string"},
        "name": {"type": "string"},
        "user_id": {"type": "string"},
        "timestamp": {"type": "string", "description": "ISO-8601; orders the merged answer (undated first)"},
    },
}

_INDEX = {"type": "integer", "minimum": 0}
_INDEXES = {"anyOf": [_INDEX, {"type": "array", "items": _INDEX, "minItems": 2, "maxItems": 2}]}
_CONTENTS_ITEM = {
    "anyOf": [
        {"type": "string", "description": "a ref: mem:<id> or ep:<id>, the whole record"},
        {
            "type": "object",
            "description": "one range of a record's text (an episode's summary without its label)",
            "properties": {
                "ref": {"type": "string", "description": "mem:<id> or ep:<id>"},
                "block": {
                    **_INDEXES,
                    "description": "a block index, or [first, last] (the indexes recall's match_reason names)",
                },
                "span": {
                    "type": "array",
                    "items": _INDEX,
                    "minItems": 2,
                    "maxItems": 2,
                    "description": "[start, end): character offsets, the end clamped to the text",
                },
                "node": {
                    **_INDEXES,
                    "description": "CPersona's node range: read, answered in unresolved (not supported)",
                },
                "revision": {
                    "type": "string",
                    "description": "CPersona's revision: read, answered in unresolved (not supported)",
                },
            },
            "required": ["ref"],
            "additionalProperties": False,
        },
    ]
}

TOOLS = [
    Tool(
        "store",
        "Save one message to long-term memory: a fact, decision, preference or conversation turn worth recalling "
        "later. The same id or the same text again is skipped, never duplicated.",
        {
            "agent_id": AGENT_OMITTABLE,
            "content": Param("string", "the text to remember", max_length=TEXT_MAX),
            "id": identifier("your message id: the same id again is skipped"),
            "source": Param(
                "object",
                'who said it: {type: User|Agent|System, id, name} (a word such as "user" '
                "is read too); id and name at most 256 characters",
                also=("string", "null"),
                refine=_source_bounded,
            ),
            "timestamp": Param("string", "ISO-8601 time of the event; default now", max_length=64),
            "metadata": Param("object", "free-form JSON, at most 8000 characters"),
            "lock": Param("boolean", "also protect it from update and delete", default=False),
            "message": Param(
                "object",
                "the older form of content, id, source, timestamp and metadata",
                properties=_MESSAGE_FIELDS,
                strict_fields=True,
                refine=_message_bounded,
            ),
            "channel": CHANNEL_WRITE,
            "project_id": PROJECT_WRITE,
            "session_key": SESSION_KEY,
            "associations": Param(
                "object",
                "entities and relations to declare against this memory, as "
                "declare_associations takes them: {entities: [{name, aliases}], relations: "
                "[{subject, predicate, object}]}; reported under associations (a malformed one "
                "never fails the store)",
                properties=ASSOCIATIONS,
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
        "Search long-term memory for what is relevant to a query (hybrid: meaning, words and identifiers). "
        "Call it before answering anything that may depend on earlier sessions. The answer's rows run "
        "from worst to best: the LAST row is the best match. An empty query lists the newest memories. "
        'Pass time_cue only when the request itself names a time ("in March", "two weeks ago"); never '
        "fill it with today's date. A cue moves rows found in that period up by a few places at most and "
        "may add up to 3 rows; it never removes one.",
        {
            "agent_id": AGENT,
            "query": Param(
                "string", 'what to look for; "" lists the newest memories', required=True, max_length=QUERY_MAX
            ),
            "limit": _LIMIT,
            "deep": _DEEP,
            "channel": CHANNEL_READ,
            "project_id": PROJECT_READ,
            "source_id": SOURCE_ID,
            "exclude_contents": _EXCLUDE,
            "full_content": _FULL,
            "trace": Param(
                "boolean",
                "also return what every stage kept, dropped and why (refs and scores, never text)",
                default=False,
            ),
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
        "recall, leaving out what the conversation already holds, merged with that conversation in time order.",
        {
            "agent_id": AGENT,
            "query": Param("string", "what to look for", required=True, max_length=QUERY_MAX),
            "external_context": Param(
                "array",
                "the conversation so far: [{role, content, name?, user_id?, timestamp?}] (at most 1000 turns; "
                "an entry that is not an object is skipped and reported)",
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
        "Read the whole text of records a recall returned as previews, by their refs (mem:<id>, ep:<id>), or "
        "one range of a record: {ref, block} for some of its blocks, {ref, span} for character offsets.",
        {
            "agent_id": AGENT,
            "refs": Param(
                "array",
                'up to 20 items, each a ref such as "mem:12" or "ep:3" (the whole record), or an object '
                'such as {"ref": "mem:12", "block": [2, 3]} or {"ref": "ep:3", "span": [0, 800]} (one '
                "range of it; at most one of block, span)",
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
        "Save your summary of a finished session or task as an episode, so later recalls find the whole episode. "
        "history (the turns, with timestamps) only sets its start and end time.",
        {
            "agent_id": AGENT,
            "summary": Param(
                "string", "your summary of the episode", required=True, non_empty=True, max_length=TEXT_MAX
            ),
            "keywords": Param("string", "space-separated keywords", default="", max_length=TEXT_MAX),
            "history": Param(
                "array",
                "the turns [{timestamp, ...}], for the start and end time (at most 10,000)",
                default=[],
                items="object",
                max_items=10_000,
            ),
            "start_time": Param("string", "ISO-8601 start (overrides history)", nullable=True, max_length=64),
            "end_time": Param("string", "ISO-8601 end (overrides history)", nullable=True, max_length=64),
            "resolved": Param("boolean", "whether the episode's matter is settled", default=False, nullable=True),
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
        "Correct the text of one stored memory (it is embedded again). Locked memories refuse.",
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
        "Protect one memory from update and delete (ranking is unchanged).",
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
        "Delete one memory for good (locked memories refuse). Use it when asked to forget.",
        {"memory_id": MEMORY_ID, "agent_id": AGENT_OWNER, "session_key": SESSION_KEY},
        write.delete_memory,
        on_agent(WRITE),
        destructive=True,
        idempotent=True,
        paused={"deleted_id": None},
    ),
    Tool(
        "delete_episode",
        "Delete one episode for good.",
        {"episode_id": EPISODE_ID, "agent_id": AGENT_OWNER, "session_key": SESSION_KEY},
        write.delete_episode,
        on_agent(WRITE),
        destructive=True,
        idempotent=True,
        paused={"deleted_id": None},
    ),
    Tool(
        "delete_agent_data",
        "Delete every memory, episode and profile of one agent, and its calibration.",
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
        "Browse stored memories, newest first (no search; use recall to search).",
        {
            "agent_id": AGENT_OR_ALL,
            "limit": Param("integer", "rows to return (at most 500)", default=100, minimum=0, maximum=500, clamp=True),
            "project_id": PROJECT_READ,
        },
        read.list_memories,
        on_agent(READ),
        read_only=True,
        failure={"memories": [], "count": 0},
    ),
    Tool(
        "list_episodes",
        "Browse stored episodes, newest first.",
        {
            "agent_id": AGENT_OR_ALL,
            "limit": Param("integer", "rows to return (at most 200)", default=50, minimum=0, maximum=200, clamp=True),
            "project_id": PROJECT_READ,
        },
        read.list_episodes,
        on_agent(READ),
        read_only=True,
        failure={"episodes": [], "count": 0},
    ),
    Tool(
        "get_profile",
        "Read the agent's profile: standing facts about the user and the agent.",
        {"agent_id": AGENT},
        read.get_profile,
        on_agent(READ),
        read_only=True,
    ),
    Tool(
        "update_profile",
        "Replace the agent's profile (at most 2000 characters). Keep it to standing facts.",
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
