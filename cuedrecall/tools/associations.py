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
        "name": {
            **_NAME,
            "description": "its name, kept as written; names are compared normalised (NFKC, "
            "case-folded, whitespace collapsed), so two that normalise alike are one entity",
        },
        "aliases": {
            "type": "array",
            "items": _NAME,
            "maxItems": MAX_ALIASES,
            "description": "other names for it; an alias names one entity per scope (a second claim on it is dropped)",
        },
    },
}
_RELATION = {
    "type": "object",
    "required": ["subject", "predicate", "object"],
    "additionalProperties": False,
    "properties": {
        "subject": {
            **_NAME,
            "description": "an entity name (registered if new) or a record ref of this agent (mem:<id>, ep:<id>)",
        },
        "predicate": {
            **_NAME,
            "description": "free text, compared normalised; between two records, supports, "
            "supersedes, corrects, qualifies, contradicts and "
            "temporal_predecessor are read as roles by reconstruct",
        },
        "object": {**_NAME, "description": "an entity name or a record ref, as subject"},
    },
}
ASSOCIATIONS: dict[str, Any] = {
    "entities": {
        "type": "array",
        "items": _ENTITY,
        "maxItems": MAX_ENTITIES,
        "description": "entities to register when new; with an anchor, each is marked as mentioned by it",
    },
    "relations": {
        "type": "array",
        "items": _RELATION,
        "maxItems": MAX_RELATIONS,
        "description": "relations to declare (the same one again keeps its id)",
    },
}
_RETRACT: dict[str, Any] = {
    "relations": {
        "type": "array",
        "items": {"type": "integer"},
        "maxItems": MAX_RETRACTIONS,
        "description": "ids of this agent's relations to remove",
    },
    "mentions": {
        "type": "array",
        "maxItems": MAX_RETRACTIONS,
        "description": "mentions to remove",
        "items": {
            "type": "object",
            "required": ["entity", "ref"],
            "additionalProperties": False,
            "properties": {
                "entity": {"type": "integer", "description": "the entity's id"},
                "ref": {**_NAME, "description": "mem:<id> or ep:<id>"},
            },
        },
    },
}

TOOLS = [
    Tool(
        "declare_associations",
        "Tell memory who and what your records are about: entities (with their other names), which record "
        "mentions them (anchor_ref), and relations between entities or records. reconstruct then reaches "
        "records through these even when they use another name. Items that cannot be used are listed in "
        "dropped; the rest is declared. retract removes relations and mentions.",
        {
            "agent_id": AGENT,
            "associations": Param(
                "object",
                "{entities: [{name, aliases}], relations: [{subject, predicate, object}]}",
                properties=ASSOCIATIONS,
            ),
            "anchor_ref": Param(
                "string",
                "the record they were said in (mem:<id>, ep:<id>): each entity is marked as "
                "mentioned by it, and the relations cite it",
                default="",
                max_length=64,
                refine=check_ref_range,
            ),
            "retract": Param(
                "object",
                "{relations: [ids], mentions: [{entity, ref}]}: removed before anything is declared",
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
        "List what is associated with one entity: the entities within max_hops relations of it (fewest hops "
        "first), the relations between them, and the records that mention each.",
        {
            "agent_id": AGENT,
            "entity": Param("string", "a name or alias", required=True, non_empty=True, max_length=MAX_NAME),
            "max_hops": Param(
                "integer",
                "relations to follow, either direction (0 to 5; 0 = the entity alone)",
                default=1,
                minimum=0,
                maximum=5,
                clamp=True,
            ),
            "limit": Param(
                "integer",
                "entities listed, and mentions per entity (1 to 100)",
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
