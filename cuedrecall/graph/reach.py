"""The breadth-first search over relations between entities that the walk and traverse share.

From a set of start entities (hop 0), each hop follows every relation readable in
the scope that joins an entity of the last hop to one not reached yet, in either
direction. An entity first reached at hop h keeps the most recently declared of the
relations that reached it at that hop: its predicate names the path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from cuedrecall.store.base import ENTITY, GraphStore, Mentions, Relation, Scope

T = TypeVar("T")


@dataclass(frozen=True)
class Step:
    """How an entity was reached: after how many hops, and by which relation (None for a start)."""

    hops: int
    relation: Relation | None

    @property
    def recency(self) -> tuple[str, int]:
        return self.relation.recency if self.relation else ("", 0)


def in_walk_order(keys: Iterable[T], step: Callable[[T], Step], tie: Callable[[T], Any]) -> list[T]:
    """Fewer hops first, then the more recently declared relation (later time, then higher id), then ``tie``.

    Three stable sorts, last key first: the recency sorts descending while the others ascend.
    """
    out = sorted(keys, key=tie)
    out.sort(key=lambda key: step(key).recency, reverse=True)  # reverse keeps equal keys in their order
    out.sort(key=lambda key: step(key).hops)
    return out


@dataclass(frozen=True)
class Reach:
    steps: dict[int, Step]  # every entity reached, the starts included (hops 0)
    beyond: bool  # a relation of an entity at the last hop leads to one not reached: the bound left it


class Neighbourhood:
    """The graph as far as it has been read, for one scope: relations per entity and mentioning records,
    each read once however many searches ask (one reconstruct walks once per item)."""

    def __init__(self, store: GraphStore, scope: Scope) -> None:
        self.store, self.scope = store, scope
        self._relations: dict[int, list[Relation]] = {}
        self._mentions: dict[int, Mentions] = {}
        self._mention_limit = 0

    def relations(self, entity_ids: set[int]) -> list[Relation]:
        """The readable relations between entities that touch one of ``entity_ids``, each once, by id."""
        missing = [entity_id for entity_id in entity_ids if entity_id not in self._relations]
        if missing:
            for entity_id in missing:
                self._relations[entity_id] = []
            for relation in self.store.entity_relations(self.scope, missing):
                for end in {relation.subject_id, relation.object_id} & set(missing):
                    self._relations[end].append(relation)
        found = {relation.id: relation for entity_id in entity_ids for relation in self._relations[entity_id]}
        return [found[key] for key in sorted(found)]

    def loaded(self) -> list[Relation]:
        """Every relation read so far, by id."""
        found = {relation.id: relation for relations in self._relations.values() for relation in relations}
        return [found[key] for key in sorted(found)]

    def mentions(self, entity_ids: list[int], limit: int) -> dict[int, Mentions]:
        """The records mentioning each entity (the first ``limit`` by record id, and the count)."""
        if limit != self._mention_limit:
            self._mentions, self._mention_limit = {}, limit
        missing = [entity_id for entity_id in entity_ids if entity_id not in self._mentions]
        if missing:
            found = self.store.mentioning(self.scope, missing, limit)
            for entity_id in missing:
                self._mentions[entity_id] = found.get(entity_id, Mentions([], 0))
        return {entity_id: self._mentions[entity_id] for entity_id in entity_ids}


def reach(graph: Neighbourhood, starts: set[int], max_hops: int) -> Reach:
    """Every entity within ``max_hops`` relations of the starts, with how it was reached; ``beyond`` when a
    relation of the last hop's entities leads further (read with one more query, so the bound is reported)."""
    steps = {entity_id: Step(0, None) for entity_id in starts}
    frontier = set(starts)
    for hops in range(1, max_hops + 1):
        if not frontier:
            break
        reached = _next_hop(graph.relations(frontier), frontier, steps)
        steps.update({entity_id: Step(hops, relation) for entity_id, relation in reached.items()})
        frontier = set(reached)
    beyond = bool(frontier) and bool(_next_hop(graph.relations(frontier), frontier, steps))
    return Reach(steps, beyond)


def _next_hop(relations: list[Relation], frontier: set[int], steps: dict[int, Step]) -> dict[int, Relation]:
    """The entities one relation away from the frontier and not reached yet, each with its most recent relation."""
    out: dict[int, Relation] = {}
    for relation in relations:
        if relation.subject_kind != ENTITY or relation.object_kind != ENTITY:
            continue
        for near, far in ((relation.subject_id, relation.object_id), (relation.object_id, relation.subject_id)):
            newer = far not in out or relation.recency > out[far].recency
            if near in frontier and far not in steps and newer:
                out[far] = relation
    return out
