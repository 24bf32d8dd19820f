"""Declaring and retracting associations: entities, aliases, mentions and relations, in one transaction.

The caller's values arrive checked for shape and size (the tool's validation); what
is left to decide here is meaning, and an item that means nothing usable is
dropped with a reason and its label (``entities[3]``, ``entities[0].aliases[2]``,
``relations[1].subject``, ``retract.relations[0]``) while the rest is declared.

Where an entity is looked for: the exact scope of the call (agent, project,
channel), then the agent's global pool (project "", channel ""), by name or alias,
lowest id first; not found, it is registered in the exact scope. An alias follows
the scope it is declared in: a declaration from a project that gives aliases for a
name only the global pool has registers the project's own entity, so the aliases
never reach the other projects that read the global pool.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cuedrecall.graph.names import normalize_name
from cuedrecall.store.base import ENTITY, NewRelation, Store, make_ref, split_ref

MAX_ENTITIES = 64
MAX_RELATIONS = 64
MAX_ALIASES = 32  # per entity
MAX_RETRACTIONS = 64  # relation ids, and mentions, per call


@dataclass(frozen=True)
class EntityDeclaration:
    name: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class RelationDeclaration:
    subject: str  # an entity name or a record ref
    predicate: str
    object: str


@dataclass(frozen=True)
class Declaration:
    """What one call declares and retracts, already checked for shape and size."""

    entities: tuple[EntityDeclaration, ...] = ()
    relations: tuple[RelationDeclaration, ...] = ()
    retract_relations: tuple[int, ...] = ()
    retract_mentions: tuple[tuple[int, str], ...] = ()  # (entity id, record ref)
    retracting: bool = False  # a retract was asked for: the answer says what it removed


@dataclass(frozen=True)
class Bucket:
    """The exact scope a declaration is written in."""

    agent_id: str
    project_id: str
    channel: str


@dataclass
class _Run:
    """One declaration under way: its transaction, and what the answer reports."""

    store: Store
    conn: Any
    bucket: Bucket
    now: str
    entities: list[dict[str, Any]] = field(default_factory=list)
    relations: list[int] = field(default_factory=list)
    dropped: list[dict[str, str]] = field(default_factory=list)

    def drop(self, item: str, reason: str) -> None:
        self.dropped.append({"item": item, "reason": reason})


def declare(store: Store, bucket: Bucket, declaration: Declaration, anchor_ref: str, now: str) -> dict[str, Any]:
    """Retract, then declare, in one write transaction of its own (``declare_in``'s answer)."""
    with store.write() as conn:
        return declare_in(store, conn, bucket, declaration, anchor_ref, now)


def declare_in(
    store: Store, conn: Any, bucket: Bucket, declaration: Declaration, anchor_ref: str, now: str
) -> dict[str, Any]:
    """Retract, then declare, inside the caller's write transaction ``conn`` (a store and its rider commit or
    roll back together); the answer ``{ok, result: "declared", entities, mentions, relations, dropped,
    retracted?}``."""
    run = _Run(store, conn, bucket, now)
    anchor = _anchor(run, anchor_ref)
    retracted = _retract(run, declaration) if declaration.retracting else None
    declared = [_entity(run, i, entry) for i, entry in enumerate(declaration.entities)]
    mentioned = list(dict.fromkeys(entity_id for entity_id in declared if entity_id is not None))
    if anchor:
        for entity_id in mentioned:
            store.add_mention(conn, entity_id, anchor, now)
    for i, relation in enumerate(declaration.relations):
        _relation(run, i, relation, anchor)
    out: dict[str, Any] = {
        "ok": True,
        "result": "declared",
        "entities": run.entities,
        "mentions": len(mentioned) if anchor else 0,
        "relations": run.relations,
        "dropped": run.dropped,
    }
    if retracted is not None:
        out["retracted"] = retracted
    return out


def _anchor(run: _Run, anchor_ref: str) -> str:
    """The anchor as a canonical ref when it is a record of this agent, else "" (and dropped when given)."""
    text = anchor_ref.strip()
    if not text:
        return ""
    ref = _record_of_agent(run, text)
    if ref is None:
        run.drop(
            "anchor_ref", f"{text!r} is not a record of this agent (mem:<id> or ep:<id>): declared without an anchor"
        )
        return ""
    return ref


def _record_of_agent(run: _Run, text: str) -> str | None:
    try:
        ref = make_ref(*split_ref(text))
    except ValueError:
        return None
    record = run.store.records([ref]).get(ref)
    return ref if record is not None and record.agent_id == run.bucket.agent_id else None


def _retract(run: _Run, declaration: Declaration) -> dict[str, int]:
    """Remove relations by id and mentions by (entity, ref), this agent's only; the counts removed."""
    relations = mentions = 0
    for i, relation_id in enumerate(declaration.retract_relations):
        if run.store.retract_relation(run.conn, run.bucket.agent_id, relation_id):
            relations += 1
        else:
            run.drop(f"retract.relations[{i}]", f"no relation {relation_id} of this agent")
    for i, (entity_id, text) in enumerate(declaration.retract_mentions):
        try:
            ref = make_ref(*split_ref(text.strip()))
        except ValueError:
            run.drop(f"retract.mentions[{i}]", "ref must be mem:<id> or ep:<id>")
            continue
        if run.store.retract_mention(run.conn, run.bucket.agent_id, entity_id, ref):
            mentions += 1
        else:
            run.drop(f"retract.mentions[{i}]", f"entity {entity_id} of this agent has no mention of {ref}")
    return {"relations": relations, "mentions": mentions}


def _entity(run: _Run, i: int, entry: EntityDeclaration) -> int | None:
    """Resolve or register one declared entity and add its aliases; its id, None when dropped."""
    name = entry.name.strip()
    normalized = normalize_name(name)
    if not normalized:
        run.drop(f"entities[{i}]", "name is empty after normalization")
        return None
    entity_id, created = _resolve(run, name, normalized, own=bool(entry.aliases))
    stored = run.store.entities([entity_id])[entity_id]
    run.entities.append({"id": entity_id, "name": stored.name, "created": created})
    for j, alias in enumerate(entry.aliases):
        _alias(run, f"entities[{i}].aliases[{j}]", stored.id, stored.normalized, alias.strip())
    return entity_id


def _resolve(run: _Run, name: str, normalized: str, *, own: bool) -> tuple[int, bool]:
    """(entity id, whether registered now): the exact scope first, then (unless ``own``: the entry brings
    aliases, which stay in its scope) the agent's global pool; else a new entity in the exact scope."""
    bucket = run.bucket
    found = run.store.find_entity(bucket.agent_id, bucket.project_id, bucket.channel, normalized)
    if found is None and not own and (bucket.project_id or bucket.channel):
        found = run.store.find_entity(bucket.agent_id, "", "", normalized)
    if found is not None:
        return found.id, False
    return run.store.insert_entity(
        run.conn, bucket.agent_id, bucket.project_id, bucket.channel, name, normalized, run.now
    ), True


def _alias(run: _Run, label: str, entity_id: int, entity_normalized: str, alias: str) -> None:
    """Add one alias unless it names another entity where the call can see (its own global twin aside)."""
    normalized = normalize_name(alias)
    if not normalized:
        run.drop(label, "alias is empty after normalization")
        return
    if normalized == entity_normalized:
        return  # the entity's own name: nothing to add
    bucket = run.bucket
    owner = run.store.find_entity(bucket.agent_id, bucket.project_id, bucket.channel, normalized)
    if owner is None and (bucket.project_id or bucket.channel):
        owner = run.store.find_entity(bucket.agent_id, "", "", normalized)
    if owner is not None and owner.id != entity_id and owner.normalized != entity_normalized:
        run.drop(label, f"{alias!r} already names another entity in this scope ({owner.name!r}, id {owner.id})")
        return
    run.store.add_alias(run.conn, entity_id, alias, normalized)


def _relation(run: _Run, i: int, relation: RelationDeclaration, anchor: str) -> None:
    """Insert one relation (or find the same one) and report its id; dropped when an end or the predicate is bad."""
    predicate = normalize_name(relation.predicate)
    problems = {
        f"relations[{i}].{end}": _end_problem(run, text)
        for end, text in (("subject", relation.subject), ("object", relation.object))
    }
    if not predicate:
        problems[f"relations[{i}].predicate"] = "predicate is empty after normalization"
    bad = {label: reason for label, reason in problems.items() if reason}
    for label, reason in bad.items():
        run.drop(label, reason)
    if bad:
        return
    subject, object_ = _end(run, relation.subject), _end(run, relation.object)
    bucket = run.bucket
    run.relations.append(
        run.store.add_relation(
            run.conn,
            NewRelation(
                bucket.agent_id,
                bucket.project_id,
                bucket.channel,
                subject[0],
                subject[1],
                predicate,
                object_[0],
                object_[1],
                anchor,
                run.now,
            ),
        )
    )


def _is_ref(text: str) -> bool:
    return text.startswith(("mem:", "ep:"))


def _end_problem(run: _Run, text: str) -> str:
    """Why a relation's end is unusable ("" when it is a record of this agent or a name)."""
    value = text.strip()
    if _is_ref(value):
        return "" if _record_of_agent(run, value) else f"{value!r} is not a record of this agent"
    return "" if normalize_name(value) else "endpoint must be an entity name or a record ref (mem:<id>, ep:<id>)"


def _end(run: _Run, text: str) -> tuple[str, int]:
    """A checked end as (kind, id): a record, or an entity resolved or registered (and reported when new)."""
    value = text.strip()
    if _is_ref(value):
        return split_ref(value)
    entity_id, created = _resolve(run, value, normalize_name(value), own=False)
    if created:
        run.entities.append({"id": entity_id, "name": value, "created": True})
    return ENTITY, entity_id
