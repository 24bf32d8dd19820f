"""Stale conflicts (stale-v1): which returned records are versions of one thing, and which of them is current.

The rule (docs/stale-conflicts.md) looks only at the rows one answer returns:

- ``same_msg_id``: memories with one non-empty msg_id in one project are versions of one message;
- ``supersedes`` / ``corrects``: a declared relation "A supersedes B" (or "A corrects B") between two returned
  records makes A current and B stale whatever their times; a chain of them is one group under its head;
- ``entity_attribute``: relations between two entities declared from returned records (their anchor), with
  one subject and one predicate and no object in common, state different values of one attribute.

Where time decides (msg_id versions, attribute values) the newest record is current, undated ones count as
oldest, and several sharing the newest time leave it ``undecided``. Nothing is dropped or reordered: an answer
with a conflict holds the same rows in the same order; it only names their roles.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cuedrecall.graph.relations import RecordRelation, record_relations
from cuedrecall.recall.trace_schema import StaleConflict
from cuedrecall.store.base import MEMORY, GraphStore, Record, Relation, Scope

if TYPE_CHECKING:
    from cuedrecall.recall.context import RecallContext

POLICY = "stale-v1"
REPLACING = ("supersedes", "corrects")  # record -> record predicates whose subject replaces the object
_PRIORITY = {"stale": 0, "undecided": 1, "current": 2}  # a record with two roles shows the first of these


@dataclass(frozen=True)
class Conflict:
    """One group of returned records that disagree: the current one (or the undecided newest), the stale."""

    why: str  # "same_msg_id", "supersedes", "corrects", "corrects+supersedes" (mixed), "entity_attribute"
    current: str | None  # None when the newest share one time: then ``undecided`` holds them
    undecided: tuple[str, ...] = ()
    stale: tuple[str, ...] = ()  # newest first
    msg_id: str = ""  # same_msg_id
    entity_id: int | None = None  # entity_attribute: the subject entity
    attribute: str = ""  # entity_attribute: the predicate

    @property
    def refs(self) -> tuple[str, ...]:
        return (*((self.current,) if self.current else ()), *self.undecided, *self.stale)

    def newer(self) -> tuple[str, ...]:
        """The records that replace each stale one: the current, or every undecided newest."""
        return (self.current,) if self.current else self.undecided

    def as_trace(self) -> StaleConflict:
        """Refs and the rule's name only, as the trace holds it."""
        out: StaleConflict = {"why": self.why}
        if self.current:
            out["current"] = self.current
        if self.undecided:
            out["undecided"] = list(self.undecided)
        if self.stale:
            out["stale"] = list(self.stale)
        return out

    def as_dict(self) -> dict[str, Any]:
        """The answer's entry: the trace's, and what the records share (msg_id, or entity and attribute)."""
        out: dict[str, Any] = dict(self.as_trace())
        if self.msg_id:
            out["msg_id"] = self.msg_id
        if self.entity_id is not None:
            out.update(entity_id=self.entity_id, attribute=self.attribute)
        return out


def find(
    records: Sequence[Record], relations: Sequence[RecordRelation], attributes: Sequence[Relation]
) -> list[Conflict]:
    """Every conflict among ``records`` (given best first), once, in order of its best-placed record.

    ``relations``: declared record relations (any; those between two of the records count); ``attributes``:
    entity -> entity relations with their anchor (those anchored at one of the records count)."""
    by_ref = {record.ref: record for record in records}
    place = {ref: i for i, ref in enumerate(by_ref)}
    found = [*_versions(list(by_ref.values())), *_declared(by_ref, relations), *_attributes(by_ref, attributes)]
    return sorted(dict.fromkeys(found), key=lambda c: min(place[ref] for ref in c.refs))


def anchored(store: GraphStore, scope: Scope, refs: Sequence[str]) -> list[Relation]:
    """The entity relations declared from ``refs``; an agent without a graph costs one cached read."""
    if not refs or not store.has_graph(scope.agent_id):
        return []
    return store.anchored_relations(scope, refs)


def among(store: GraphStore, scope: Scope, records: Sequence[Record]) -> list[Conflict]:
    """The conflicts among records one answer returns (best first), reading what is declared of them."""
    refs = [record.ref for record in records]
    if len(refs) < 2:
        return []
    return find(records, record_relations(store, scope, refs), anchored(store, scope, refs))


def roles(conflicts: Sequence[Conflict]) -> dict[str, str]:
    """Each involved record's role: "current", "undecided" or "stale" (stale wins where two differ)."""
    out: dict[str, str] = {}
    for conflict in conflicts:
        named = [(conflict.current, "current")] if conflict.current else []
        named += [(ref, "undecided") for ref in conflict.undecided]
        named += [(ref, "stale") for ref in conflict.stale]
        for ref, role in named:
            if ref not in out or _PRIORITY[role] < _PRIORITY[out[ref]]:
                out[ref] = role
    return out


def report(ctx: RecallContext, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The recall's conflicts as its response lists them; marks each involved message's ``conflict_role`` and
    records the trace's ``conflicts`` (refs only). [] when the returned rows agree: then nothing is added."""
    records = [
        record
        for message in reversed(messages)  # messages run worst to best
        if "ref" in message and (record := ctx.facts.get(message["ref"])) is not None
    ]
    found = among(ctx.store, ctx.scope, records)
    if not found:
        return []
    role = roles(found)
    for message in messages:
        if message.get("ref") in role:
            message["conflict_role"] = role[message["ref"]]
    ctx.recorder.conflicts([conflict.as_trace() for conflict in found])
    return [conflict.as_dict() for conflict in found]


def _newness(record: Record) -> tuple[bool, float]:
    return (record.ts_epoch is not None, record.ts_epoch or 0.0)


def _by_time(why: str, records: list[Record], **shared: Any) -> Conflict:
    """The newest of ``records`` (answer order) is current, the rest stale; a tie at the top is undecided."""
    ordered = sorted(records, key=_newness, reverse=True)  # stable: ties keep the answer's order
    top = [record.ref for record in ordered if _newness(record) == _newness(ordered[0])]
    stale = tuple(record.ref for record in ordered[len(top) :])
    if len(top) == 1:
        return Conflict(why, top[0], (), stale, **shared)
    return Conflict(why, None, tuple(top), stale, **shared)


def _versions(records: list[Record]) -> list[Conflict]:
    groups: dict[tuple[str, str], list[Record]] = defaultdict(list)
    for record in records:
        if record.kind == MEMORY and record.msg_id:
            groups[(record.msg_id, record.project_id)].append(record)
    return [_by_time("same_msg_id", members, msg_id=key[0]) for key, members in groups.items() if len(members) > 1]


def _declared(by_ref: dict[str, Record], relations: Sequence[RecordRelation]) -> list[Conflict]:
    """One conflict per head of a chain of replacing relations (a record nothing replaces); records only a
    circle of them joins are undecided."""
    older: dict[str, list[tuple[str, str]]] = defaultdict(list)  # newer ref -> (older ref, predicate)
    replaced: set[str] = set()
    for relation in relations:
        if (
            relation.predicate in REPLACING
            and relation.subject != relation.object
            and relation.subject in by_ref
            and relation.object in by_ref
        ):
            older[relation.subject].append((relation.object, relation.predicate))
            replaced.add(relation.object)
    order = list(by_ref)
    out, reached = [], set()
    for head in (ref for ref in order if ref in older and ref not in replaced):
        below, predicates = _reach(older, head)
        reached |= below | {head}
        stale = sorted(sorted(below, key=order.index), key=lambda ref: _newness(by_ref[ref]), reverse=True)
        out.append(Conflict("+".join(sorted(predicates)), head, (), tuple(stale)))
    circled = [ref for ref in order if (ref in older or ref in replaced) and ref not in reached]
    for component in _components(older, circled):
        predicates = {p for ref in component for _, p in older.get(ref, ())}
        out.append(Conflict("+".join(sorted(predicates)), None, tuple(component)))
    return out


def _reach(older: dict[str, list[tuple[str, str]]], head: str) -> tuple[set[str], set[str]]:
    """The records below ``head`` through replacing relations, and the predicates followed."""
    seen: set[str] = set()
    predicates: set[str] = set()
    todo = [head]
    while todo:
        for ref, predicate in older.get(todo.pop(), ()):
            predicates.add(predicate)
            if ref not in seen and ref != head:
                seen.add(ref)
                todo.append(ref)
    return seen, predicates


def _components(older: dict[str, list[tuple[str, str]]], refs: list[str]) -> list[list[str]]:
    """The groups the relations join among ``refs``, each in the given order."""
    parent = {ref: ref for ref in refs}

    def root(ref: str) -> str:
        while parent[ref] != ref:
            ref = parent[ref]
        return ref

    for ref in refs:
        for other, _ in older.get(ref, ()):
            if other in parent:
                first, second = sorted((root(ref), root(other)), key=refs.index)
                parent[second] = first
    members: dict[str, list[str]] = defaultdict(list)
    for ref in refs:
        members[root(ref)].append(ref)
    return list(members.values())


def _attributes(by_ref: dict[str, Record], attributes: Sequence[Relation]) -> list[Conflict]:
    """Per (subject entity, predicate): the records stating it, each with the values (objects) it states."""
    stated: dict[tuple[int, str], dict[str, set[int]]] = defaultdict(lambda: defaultdict(set))
    for relation in attributes:
        if relation.anchor_ref in by_ref:
            stated[(relation.subject_id, relation.predicate)][relation.anchor_ref].add(relation.object_id)
    out = []
    for (entity_id, predicate), values in stated.items():
        anchors = [by_ref[ref] for ref in by_ref if ref in values]  # in answer order
        found = _disagreement(anchors, values, entity_id, predicate) if len(anchors) > 1 else None
        if found is not None:
            out.append(found)
    return out


def _disagreement(
    anchors: list[Record], values: dict[str, set[int]], entity_id: int, predicate: str
) -> Conflict | None:
    """The newest statement is current; an older one sharing no value with it is stale. Newest statements
    of one time that share no value leave it undecided; an older one is then stale when it shares a value
    with none of them."""
    ordered = sorted(anchors, key=_newness, reverse=True)
    top = [record.ref for record in ordered if _newness(record) == _newness(ordered[0])]
    split = any(values[a].isdisjoint(values[b]) for i, a in enumerate(top) for b in top[i + 1 :])
    newest = top if split else top[:1]
    stale = tuple(
        record.ref
        for record in ordered[len(top) :]
        if all(values[record.ref].isdisjoint(values[ref]) for ref in newest)
    )
    if not split and not stale:
        return None
    shared: dict[str, Any] = {"entity_id": entity_id, "attribute": predicate}
    return Conflict("entity_attribute", None if split else newest[0], tuple(newest) if split else (), stale, **shared)
