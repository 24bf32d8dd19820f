"""declare_associations, traverse and store's associations rider.

The nested values of a declaration (``associations``, ``retract``) are checked for
shape and size here, before anything is written: a wrong type, a missing field, an
unknown field, a string over 256 characters or a list over its bound refuses the
call, naming the item (``associations.entities[2].aliases[0]``). What is well formed
but unusable (an empty name, an alias another entity holds, a ref of another agent)
is the declaring code's to drop, with a reason, while the rest is declared.
"""

from __future__ import annotations

from typing import Any

from cuedrecall.errors import ToolArgumentError
from cuedrecall.graph.declare import (
    MAX_ALIASES,
    MAX_ENTITIES,
    MAX_RELATIONS,
    MAX_RETRACTIONS,
    Bucket,
    Declaration,
    EntityDeclaration,
    RelationDeclaration,
    declare,
    declare_in,
)
from cuedrecall.graph.names import MAX_NAME
from cuedrecall.graph.traverse import traverse as traverse_graph
from cuedrecall.runtime import Runtime
from cuedrecall.store.base import Scope
from cuedrecall.tools.bounds import check_ref_range

_KINDS = (
    (bool, "a boolean"),
    (int, "an integer"),
    (float, "a number"),
    (str, "a string"),
    (dict, "an object"),
    (list, "an array"),
    (type(None), "null"),
)


def declare_associations(
    rt: Runtime,
    agent_id: str,
    associations: dict[str, Any] | None,
    anchor_ref: str,
    retract: dict[str, Any] | None,
    channel: str,
    project_id: str,
) -> dict[str, Any]:
    """Declare entities, aliases, mentions (with an anchor) and relations, and retract, in one transaction."""
    declaration = parse_declaration(associations, retract)
    return declare(rt.store, Bucket(agent_id, project_id, channel), declaration, anchor_ref, rt.now_iso())


def traverse(
    rt: Runtime,
    agent_id: str,
    entity: str,
    max_hops: int,
    limit: int,
    channel: str,
    project_id: str | None,
    source_id: str,
) -> dict[str, Any]:
    """The entities within ``max_hops`` relations of the named one, readable in the scope (read-only)."""
    return traverse_graph(
        rt.store, Scope(agent_id, project_id, channel, source_id), entity, max_hops=max_hops, limit=limit
    )


def parse_rider(associations: dict[str, Any]) -> Declaration | dict[str, Any]:
    """store's ``associations``, checked before anything is written: the declaration, or the ``{ok: false,
    error}`` report a malformed one is answered with (a malformed rider never fails the store)."""
    try:
        return parse_declaration(associations, None)
    except ToolArgumentError as exc:
        return {"ok": False, "error": f"{exc}: nothing was declared (the memory is stored)"}


def declare_rider(
    rt: Runtime, conn: Any, agent_id: str, project_id: str, channel: str, declaration: Declaration, anchor_ref: str
) -> dict[str, Any]:
    """store's ``associations``, declared against the stored memory inside the store's own transaction
    ``conn``: a failure here rolls the memory back too, so a store answered ok:false has written nothing."""
    bucket = Bucket(agent_id, project_id, channel)
    return declare_in(rt.store, conn, bucket, declaration, anchor_ref, rt.now_iso())


def parse_declaration(associations: dict[str, Any] | None, retract: dict[str, Any] | None) -> Declaration:
    """The checked declaration; ToolArgumentError naming the first malformed item."""
    given = _fields("associations", associations or {}, required=(), allowed=("entities", "relations"))
    entities = _list("associations.entities", given.get("entities"), MAX_ENTITIES)
    relations = _list("associations.relations", given.get("relations"), MAX_RELATIONS)
    asked = _fields("retract", retract or {}, required=(), allowed=("relations", "mentions"))
    relation_ids = _list("retract.relations", asked.get("relations"), MAX_RETRACTIONS)
    mentions = _list("retract.mentions", asked.get("mentions"), MAX_RETRACTIONS)
    return Declaration(
        entities=tuple(_entity(f"associations.entities[{i}]", item) for i, item in enumerate(entities)),
        relations=tuple(_relation(f"associations.relations[{i}]", item) for i, item in enumerate(relations)),
        retract_relations=tuple(_integer(f"retract.relations[{i}]", value) for i, value in enumerate(relation_ids)),
        retract_mentions=tuple(_mention(f"retract.mentions[{i}]", item) for i, item in enumerate(mentions)),
        retracting=retract is not None,
    )


def _entity(label: str, item: Any) -> EntityDeclaration:
    given = _fields(label, item, required=("name",), allowed=("name", "aliases"))
    aliases = _list(f"{label}.aliases", given.get("aliases"), MAX_ALIASES)
    return EntityDeclaration(
        _string(f"{label}.name", given["name"]),
        tuple(_string(f"{label}.aliases[{j}]", alias) for j, alias in enumerate(aliases)),
    )


def _relation(label: str, item: Any) -> RelationDeclaration:
    ends = ("subject", "predicate", "object")
    given = _fields(label, item, required=ends, allowed=ends)
    return RelationDeclaration(*(_string(f"{label}.{end}", given[end]) for end in ends))


def _mention(label: str, item: Any) -> tuple[int, str]:
    given = _fields(label, item, required=("entity", "ref"), allowed=("entity", "ref"))
    return _integer(f"{label}.entity", given["entity"]), _string(f"{label}.ref", given["ref"])


def _fields(label: str, value: Any, *, required: tuple[str, ...], allowed: tuple[str, ...]) -> dict[str, Any]:
    """An object with no unknown field and every required one."""
    if not isinstance(value, dict):
        raise _wrong(label, "an object", value)
    unknown = sorted(str(key) for key in value if key not in allowed)
    if unknown:
        raise ToolArgumentError(
            f"argument '{label}' has unknown field(s): {', '.join(unknown)[:200]} (accepted: {', '.join(allowed)})"
        )
    missing = [name for name in required if name not in value]
    if missing:
        raise ToolArgumentError(f"argument '{label}.{missing[0]}' is required")
    return value


def _list(label: str, value: Any, bound: int) -> list[Any]:
    """An array of at most ``bound`` items; absent (or null) is empty."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise _wrong(label, "an array", value)
    if len(value) > bound:
        raise ToolArgumentError(f"argument '{label}' holds {len(value)} items, at most {bound}")
    return value


def _string(label: str, value: Any) -> str:
    """A string of at most MAX_NAME characters once trimmed (an empty one is the declaring code's to drop)."""
    if not isinstance(value, str):
        raise _wrong(label, "a string", value)
    if len(value.strip()) > MAX_NAME:
        raise ToolArgumentError(f"argument '{label}' is too long ({len(value.strip())}, at most {MAX_NAME})")
    check_ref_range(label, value)  # a ref's id past 64 bits: refused by name, before it could reach SQL
    return value


def _integer(label: str, value: Any) -> int:
    """An id: an integer, never a boolean."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise _wrong(label, "an integer id", value)
    return value


def _wrong(label: str, expected: str, value: Any) -> ToolArgumentError:
    got = next((name for kind, name in _KINDS if isinstance(value, kind)), type(value).__name__)
    return ToolArgumentError(f"argument '{label}' must be {expected}, got {got}")
