"""Reconstruct's stage 3: the bounded relation walk from each chosen item to records it does not hold.

An item's records mention entities; relations lead from those to other entities;
records mentioning those are the walked rows. Sharing an entity is not a path: a
walked record is at least one relation away. The walk adds rows to items, never
items: a record the candidate pool holds, or an earlier item already took, is not
taken again.
"""

from __future__ import annotations

from dataclasses import dataclass

from cuedrecall.graph.reach import Neighbourhood, Step, in_walk_order, reach
from cuedrecall.store.base import MEMORY, GraphStore, Scope, split_ref


@dataclass(frozen=True)
class Walked:
    ref: str  # "mem:<id>" / "ep:<id>"
    hops: int  # >= 1
    predicate: str  # the normalized predicate of the relation that reached its entity


@dataclass(frozen=True)
class WalkResult:
    rows: list[list[Walked]]  # per item (same order as given), the walked rows in kept order
    hop_bound: list[bool]  # per item: a relation was left unfollowed at the hop bound
    evidence_reached: bool  # some reached entity had more mentioning records than were read


def walk(
    store: GraphStore, scope: Scope, items: list[list[str]], *, max_hops: int, max_evidence: int, pool: set[str]
) -> WalkResult:
    """Walk from each item's refs, in item order, up to ``max_hops`` relations; read at most ``max_evidence``
    mentioning records per reached entity.

    An item's rows are kept fewer hops first, then by the more recent relation, then
    by lower record id; a record is taken once, by the first item reaching it, and
    never when ``pool`` holds it. ``max_hops`` 0 walks nothing and reports no bound.
    An agent without a graph costs one cached read.
    """
    nothing = WalkResult([[] for _ in items], [False] * len(items), False)
    if max_hops <= 0 or not any(items) or not store.has_graph(scope.agent_id):
        return nothing
    seeds = store.mentioned_entities(scope, sorted({ref for refs in items for ref in refs}))
    if not seeds:
        return nothing
    graph = Neighbourhood(store, scope)
    taken = set(pool)
    rows: list[list[Walked]] = []
    bounds: list[bool] = []
    cut = False
    for refs in items:
        starts = {entity_id for ref in refs for entity_id in seeds.get(ref, [])}
        found = reach(graph, starts, max_hops) if starts else None
        walked, more = _rows(graph, found.steps if found else {}, max_evidence, taken)
        taken.update(row.ref for row in walked)
        rows.append(walked)
        bounds.append(bool(found and found.beyond))
        cut = cut or more
    return WalkResult(rows, bounds, cut)


def _rows(
    graph: Neighbourhood, steps: dict[int, Step], max_evidence: int, taken: set[str]
) -> tuple[list[Walked], bool]:
    """The records mentioning the reached entities (hop 1 and further), each by its best step, in kept order;
    and whether an entity had more mentioning records than were read."""
    reached = [entity_id for entity_id, step in steps.items() if step.hops > 0]
    if not reached:
        return [], False
    mentions = graph.mentions(reached, max_evidence)
    best: dict[str, Step] = {}
    # entities in walk order, so the first step that reaches a record is its best
    for entity_id in in_walk_order(reached, steps.__getitem__, lambda entity_id: entity_id):
        for ref in mentions[entity_id].refs:
            if ref not in taken and ref not in best:
                best[ref] = steps[entity_id]
    ordered = in_walk_order(best, best.__getitem__, _record_order)
    walked = [Walked(ref, best[ref].hops, _predicate(best[ref])) for ref in ordered]
    return walked, any(found.total > len(found.refs) for found in mentions.values())


def _predicate(step: Step) -> str:
    """The predicate of the relation the step crossed; "" for a step that crossed none."""
    return step.relation.predicate if step.relation else ""


def _record_order(ref: str) -> tuple[int, int]:
    """Lower record id first; a memory before an episode of the same id."""
    kind, row_id = split_ref(ref)
    return row_id, 0 if kind == MEMORY else 1
