"""Declared relations between two records, as reconstruct reads them among its candidates.

A relation from one record to another ("mem:7 supersedes mem:3") bundles the two
into one item when both are candidates, and a predicate of the role vocabulary
says what one record is to the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cuedrecall.store.base import GraphStore, Scope, make_ref

# the predicates reconstruct reads as a role of the subject towards the object
ROLE_PREDICATES = ("supports", "supersedes", "corrects", "qualifies", "contradicts", "temporal_predecessor")


@dataclass(frozen=True)
class RecordRelation:
    id: int
    subject: str  # a record ref, "mem:<id>" / "ep:<id>"
    predicate: str  # normalized
    object: str  # a record ref
    declared_at: str


def record_relations(store: GraphStore, scope: Scope, refs: Sequence[str]) -> list[RecordRelation]:
    """The relations readable in the scope whose subject and object are both among ``refs``, by id.

    An agent without a graph costs one cached read.
    """
    if not refs or not store.has_graph(scope.agent_id):
        return []
    return [
        RecordRelation(
            relation.id,
            make_ref(relation.subject_kind, relation.subject_id),
            relation.predicate,
            make_ref(relation.object_kind, relation.object_id),
            relation.declared_at,
        )
        for relation in store.relations_between(scope, refs)
    ]
