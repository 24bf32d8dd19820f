"""declare_associations and traverse: the associative layer (entities, aliases, mentions, relations)."""

from __future__ import annotations

from typing import Any

from cuedrecall.access import READ, WRITE
from cuedrecall.graph.declare import MAX_ALIASES, MAX_ENTITIES, MAX_RELATIONS, MAX_RETRACTIONS
from cuedrecall.graph.names import MAX_NAME
from cuedrecall.handlers import associations
from cuedrecall.tools.bounds import check_ref_range
from cuedrecall.tools.common import (
    AGENT,
    CHANNEL_READ,
    CHANNEL_WRITE,
    PROJECT_READ,
    PROJECT_WRITE,
    SESSION_KEY,
    SOURCE_ID,
)
from cuedrecall.tools.spec import Param, Tool, on_agent

_NAME = {"type": "string", "maxLength": MAX_NAME}
_ENTITY = {
    "type": "object",
    "required": ["name"],
    "additionalProperties": False,
    "properties": {
        "name": _NAME,
        "aliases": {"type": "array", "items": _NAME, "maxItems": MAX_ALIASES, "description": "its other names"},
    },
}
_RELATION = {
    "type": "object",
    "required": ["subject", "predicate", "object"],
    "additionalProperties": False,
    "properties": {
        "subject": {**_NAME, "description": "an entity name or a ref (mem:<id>, ep:<id>)"},
        "predicate": {
            **_NAME,
            "description": "free text; between records, supports, supersedes, corrects, qualifies, contradicts "
            "or temporal_predecessor are roles",
        },
        "object": {**_NAME, "description": "as subject"},
    },
}
ASSOCIATIONS: dict[str, Any] = {
    "entities": {
        "type": "array",
        "items": _ENTITY,
        "maxItems": MAX_ENTITIES,
        "description": "registered when new; the anchor mentions each",
    },
    "relations": {
        "type": "array",
        "items": _RELATION,
        "maxItems": MAX_RELATIONS,
    },
}

_RETRACT: dict[str, Any] = {
    "relations": {
        "type": "array",
        "items": {"type": "integer"},
        "maxItems": MAX_RETRACTIONS,
    },
    "mentions": {
        "type": "array",
        "maxItems": MAX_RETRACTIONS,
        "items": {
            "type": "object",
            "required": ["entity", "ref"],
            "additionalProperties": False,
            "properties": {"entity": {"type": "integer"}, "ref": _NAME},
        },
    },
}

TOOLS = [
    Tool(
        "declare_associations",
        "Declare entities (and aliases) a record mentions and relations between entities or records: reconstruct "
        "then reaches records by any name. Unusable items come back under dropped.",
        {
            "agent_id": AGENT,
            "associations": Param("object", "{entities, relations}", properties=ASSOCIATIONS),
            "anchor_ref": Param(
                "string",
                "the record they were said in (mem:<id>, ep:<id>)",
                default="",
                max_length=64,
                refine=check_ref_range,
            ),
            "retract": Param(
                "object",
                "{relations: [ids], mentions: [{entity, ref}]}: removed first",
                properties=_RETRACT,
            ),
            "channel": CHANNEL_WRITE,
            "project_id": PROJECT_WRITE,
            "session_key": SESSION_KEY,
        },
        associations.declare_associations,
        on_agent(WRITE),
        destructive=True,
        idempotent=True,  # the same declaration again keeps its ids; a retracted relation stays retracted
        paused={"result": "skipped", "entities": [], "mentions": 0, "relations": [], "dropped": []},
    ),
    Tool(
        "traverse",
        "The entities within max_hops relations of one, the relations between them, the records mentioning each.",
        {
            "agent_id": AGENT,
            "entity": Param("string", "a name or alias", required=True, non_empty=True, max_length=MAX_NAME),
            "max_hops": Param(
                "integer",
                "relations to follow (0 = the entity alone)",
                default=1,
                minimum=0,
                maximum=5,
                clamp=True,
            ),
            "limit": Param(
                "integer",
                "entities, and mentions of each",
                default=20,
                minimum=1,
                maximum=100,
                clamp=True,
            ),
            "channel": CHANNEL_READ,
            "project_id": PROJECT_READ,
            "source_id": SOURCE_ID,
        },
        associations.traverse,
        on_agent(READ),
        read_only=True,
        failure={"entities": [], "relations": []},
    ),
]
