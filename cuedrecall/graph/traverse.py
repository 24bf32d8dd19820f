"""The traverse tool's answer: the entities within some hops of a named one, their relations and mentions.

Every entity readable in the scope that the name names (its name or an alias; a
project's and the global pool's may both) starts the search. Entities are listed
fewer hops first, then by the more recent relation that reached them, then by id;
the first ``limit`` are kept, and a relation is listed when both its ends are.
"""

from __future__ import annotations

from typing import Any

from cuedrecall.graph.names import normalize_name
from cuedrecall.graph.reach import Neighbourhood, Reach, in_walk_order, reach
from cuedrecall.store.base import Entity, Relation, Scope, Store


def traverse(store: Store, scope: Scope, entity: str, *, max_hops: int, limit: int) -> dict[str, Any]:
    """The answer ``{entity, max_hops, limit, entities, relations}``, with ``entities_omitted`` and
    ``bounds.omitted`` (``max_hops``, ``limit``) when something was left out, or ``reason: no_such_entity``."""
    out: dict[str, Any] = {"entity": entity, "max_hops": max_hops, "limit": limit, "entities": [], "relations": []}
    name = normalize_name(entity)
    with store.snapshot():
        starts = store.entities_named(scope, name) if name and store.has_graph(scope.agent_id) else []
        if not starts:
            return {**out, "reason": "no_such_entity"}
        graph = Neighbourhood(store, scope)
        found = reach(graph, {start.id for start in starts}, max_hops)
        ordered = in_walk_order(found.steps, found.steps.__getitem__, lambda entity_id: entity_id)
        kept = ordered[:limit]
        entities = store.entities(kept)
        aliases = store.aliases(kept)
        mentions = graph.mentions(kept, limit)
        relations = graph.loaded()
        anchors = _readable_anchors(store, scope, relations)
    listed = [_entity(entities[entity_id], found, aliases, mentions) for entity_id in kept if entity_id in entities]
    out["entities"] = listed
    out["relations"] = _relations(relations, set(kept), anchors)
    omitted = []
    if found.beyond:
        omitted.append("max_hops")
    if len(ordered) > len(kept) or any(entry.get("mentions_omitted") for entry in listed):
        omitted.append("limit")
    if len(ordered) > len(kept):
        out["entities_omitted"] = len(ordered) - len(kept)
    if omitted:
        out["bounds"] = {"omitted": omitted}
    return out


def _entity(entity: Entity, found: Reach, aliases: dict[int, Any], mentions: dict[int, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": entity.id, "name": entity.name, "hops": found.steps[entity.id].hops}
    if aliases.get(entity.id):
        entry["aliases"] = [alias.written for alias in aliases[entity.id]]
    listed = mentions[entity.id]
    if listed.refs:
        entry["mentions"] = list(listed.refs)
    if listed.total > len(listed.refs):
        entry["mentions_omitted"] = listed.total - len(listed.refs)
    return entry


def _readable_anchors(store: Store, scope: Scope, relations: list[Relation]) -> set[str]:
    """The records the relations were declared in that the scope may read. A relation is readable in its
    project and channel, but the record it cites may lie in another, or carry a source the read leaves out:
    such an anchor is not named (isolation is the search space, docs/recall-process.md#invariants)."""
    refs = sorted({relation.anchor_ref for relation in relations if relation.anchor_ref})
    return {ref for ref, record in store.records(refs).items() if scope.reads(record)} if refs else set()


def _relations(relations: list[Relation], kept: set[int], anchors: set[str]) -> list[dict[str, Any]]:
    """The relations read whose both ends were kept, most recently declared first (then higher id); each
    with the record it was declared in when that record is among the readable ``anchors``."""
    out = []
    for relation in sorted(relations, key=lambda relation: relation.recency, reverse=True):
        if relation.subject_id not in kept or relation.object_id not in kept:
            continue
        entry: dict[str, Any] = {
            "id": relation.id,
            "subject": relation.subject_id,
            "predicate": relation.predicate,
            "object": relation.object_id,
            "declared_by": relation.declared_by,
            "declared_at": relation.declared_at,
        }
        if relation.anchor_ref in anchors:
            entry["anchor_ref"] = relation.anchor_ref
        out.append(entry)
    return out
