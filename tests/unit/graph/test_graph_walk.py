"""Reconstruct's stage 3 (graph/walk.py), the bounded relation walk, and the record relations it bundles by
(graph/relations.py)."""

from __future__ import annotations

import tempfile
from collections import deque
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock
from cuedrecall.graph.relations import RecordRelation, record_relations
from cuedrecall.graph.walk import Walked, WalkResult, walk
from cuedrecall.store.base import Scope
from tests.conftest import open_memory
from tests.unit.graph.test_graph_cues import Spy

A = "agent-a"
SCOPE = Scope(A)


def record(memory: Memory, text: str, *mentioned: str, **scope: Any) -> str:
    """Store a record and declare it mentions the named entities."""
    ref = memory.store(agent_id=A, content=text, **scope)["ref"]
    if mentioned:
        memory.declare_associations(
            agent_id=A, anchor_ref=ref, associations={"entities": [{"name": name} for name in mentioned]}, **scope
        )
    return ref


def relate(memory: Memory, *triples: tuple[str, str, str], **scope: Any) -> list[int]:
    answer = memory.declare_associations(
        agent_id=A,
        associations={"relations": [{"subject": s, "predicate": p, "object": o} for s, p, o in triples]},
        **scope,
    )
    assert answer["dropped"] == [], answer
    return answer["relations"]


def walked(
    memory: Memory,
    items: list[list[str]],
    *,
    max_hops: int = 2,
    max_evidence: int = 10,
    pool: set[str] | None = None,
    scope: Scope = SCOPE,
) -> WalkResult:
    pool = {ref for refs in items for ref in refs} if pool is None else pool
    return walk(memory.store_, scope, items, max_hops=max_hops, max_evidence=max_evidence, pool=pool)


# -- the walk -----------------------------------------------------------------------------------------------


def test_a_record_one_relation_away_is_walked_with_its_hops_and_predicate(memory: Memory) -> None:
    seed = record(memory, "Ana leads the office", "Ana")
    far = record(memory, "the Osaka office opened in May", "Osaka office")
    relate(memory, ("Ana", "Leads", "Osaka office"))
    assert walked(memory, [[seed]]) == WalkResult([[Walked(far, 1, "leads")]], [False], False)


def test_sharing_an_entity_is_not_a_path(memory: Memory) -> None:
    seed = record(memory, "Ana said hello", "Ana")
    record(memory, "Ana said goodbye", "Ana")
    assert walked(memory, [[seed]]).rows == [[]]


def test_hops_never_exceed_max_hops_and_the_bound_is_reported(memory: Memory) -> None:
    seed = record(memory, "about A1", "A1")
    refs = {name: record(memory, f"about {name}", name) for name in ("A2", "A3", "A4")}
    relate(memory, ("A1", "next", "A2"), ("A2", "next", "A3"), ("A3", "next", "A4"))
    two = walked(memory, [[seed]], max_hops=2)
    assert [(row.ref, row.hops) for row in two.rows[0]] == [(refs["A2"], 1), (refs["A3"], 2)]
    assert two.hop_bound == [True]
    three = walked(memory, [[seed]], max_hops=3)
    assert [row.hops for row in three.rows[0]] == [1, 2, 3] and three.hop_bound == [False]


def test_zero_hops_walks_nothing(memory: Memory) -> None:
    seed = record(memory, "about A1", "A1")
    record(memory, "about A2", "A2")
    relate(memory, ("A1", "next", "A2"))
    assert walked(memory, [[seed]], max_hops=0) == WalkResult([[]], [False], False)


def test_a_record_in_the_candidate_pool_is_never_walked(memory: Memory) -> None:
    seed = record(memory, "about Ana", "Ana")
    candidate = record(memory, "about Bo, also a candidate", "Bo")
    other = record(memory, "about Bo", "Bo")
    relate(memory, ("Ana", "knows", "Bo"))
    assert [row.ref for row in walked(memory, [[seed]], pool={seed, candidate}).rows[0]] == [other]


def test_a_record_an_earlier_item_took_is_not_taken_again(memory: Memory) -> None:
    first, second = record(memory, "about Ana", "Ana"), record(memory, "about Cy", "Cy")
    shared = record(memory, "about Bo", "Bo")
    relate(memory, ("Ana", "knows", "Bo"), ("Cy", "knows", "Bo"))
    result = walked(memory, [[first], [second]])
    assert result.rows == [[Walked(shared, 1, "knows")], []]
    assert walked(memory, [[second], [first]]).rows == [[Walked(shared, 1, "knows")], []]


def test_rows_are_kept_fewer_hops_then_more_recent_relation_then_lower_record_id(memory: Memory) -> None:
    seed = record(memory, "about Hub", "Hub")
    old_a, old_b = record(memory, "Old one", "Old"), record(memory, "Old two", "Old")
    new = record(memory, "about New", "New")
    far = record(memory, "about Far", "Far")
    memory.clock = fixed_clock("2025-01-01T00:00:00+00:00")
    relate(memory, ("Hub", "was", "Old"))
    memory.clock = fixed_clock("2025-06-01T00:00:00+00:00")
    relate(memory, ("New", "is", "Hub"), ("New", "leads to", "Far"))
    rows = walked(memory, [[seed]]).rows[0]
    assert rows == [Walked(new, 1, "is"), Walked(old_a, 1, "was"), Walked(old_b, 1, "was"), Walked(far, 2, "leads to")]


def test_an_entity_reached_twice_keeps_its_most_recent_relation(memory: Memory) -> None:
    seed = record(memory, "about Ana", "Ana")
    bo = record(memory, "about Bo", "Bo")
    relate(memory, ("Ana", "met", "Bo"))
    relate(memory, ("Bo", "works with", "Ana"))  # declared later: the higher id
    assert walked(memory, [[seed]]).rows[0] == [Walked(bo, 1, "works with")]


def test_at_most_max_evidence_records_per_entity_are_read_and_a_cut_is_reported(memory: Memory) -> None:
    seed = record(memory, "about Ana", "Ana")
    bos = [record(memory, f"Bo note {i}", "Bo") for i in range(3)]
    relate(memory, ("Ana", "knows", "Bo"))
    cut = walked(memory, [[seed]], max_evidence=2)
    assert [row.ref for row in cut.rows[0]] == bos[:2] and cut.evidence_reached is True
    whole = walked(memory, [[seed]], max_evidence=3)
    assert [row.ref for row in whole.rows[0]] == bos and whole.evidence_reached is False


def test_an_agent_without_a_graph_costs_one_cached_read(memory: Memory) -> None:
    ref = record(memory, "a plain record")
    spy = Spy(memory.store_)
    result = walk(spy, SCOPE, [[ref], []], max_hops=3, max_evidence=5, pool={ref})  # type: ignore[arg-type]
    assert result == WalkResult([[], []], [False, False], False) and spy.calls == ["has_graph"]


def test_items_whose_records_mention_nothing_cost_one_read_of_mentions(memory: Memory) -> None:
    record(memory, "about Ana", "Ana")
    ref = record(memory, "a plain record")
    spy = Spy(memory.store_)
    assert walk(spy, SCOPE, [[ref]], max_hops=2, max_evidence=5, pool={ref}).rows == [[]]  # type: ignore[arg-type]
    assert spy.calls == ["has_graph", "mentioned_entities"]


def test_the_walk_keeps_to_the_read_scope(memory: Memory) -> None:
    seed = record(memory, "about Ana", "Ana")
    record(memory, "Bo in project p1", "Bo", project_id="p1")
    shared = record(memory, "Bo everywhere", "Bo")
    relate(memory, ("Ana", "knows", "Bo"))  # global: p1's Bo is another entity
    relate(memory, ("Ana", "knows", "Bo"), project_id="p1")
    assert [row.ref for row in walked(memory, [[seed]], scope=Scope(A, "p2")).rows[0]] == [shared]
    in_p1 = walked(memory, [[seed]], scope=Scope(A, "p1")).rows[0]
    assert len(in_p1) == 2 and shared in {row.ref for row in in_p1}


# -- a property over random graphs -------------------------------------------------------------------------

NAMES = ["e0", "e1", "e2", "e3", "e4", "e5"]
graphs = st.fixed_dictionaries(
    {
        "mentions": st.lists(st.lists(st.sampled_from(NAMES), max_size=2), min_size=1, max_size=8),
        "relations": st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(NAMES)), max_size=8),
        "items": st.lists(st.lists(st.integers(0, 7), min_size=1, max_size=2), min_size=1, max_size=3),
        "extra_pool": st.lists(st.integers(0, 7), max_size=2),
        "max_hops": st.integers(0, 3),
    }
)


def _distances(relations: list[tuple[str, str]], starts: set[str]) -> dict[str, int]:
    """Hops from the starts over the relations in either direction (an independent breadth-first search)."""
    seen = {name: 0 for name in starts}
    queue = deque(starts)
    while queue:
        here = queue.popleft()
        for a, b in relations:
            for near, far in ((a, b), (b, a)):
                if near == here and far not in seen:
                    seen[far] = seen[here] + 1
                    queue.append(far)
    return seen


@settings(max_examples=30, deadline=None)
@given(graph=graphs)
def test_the_walk_reaches_exactly_the_records_within_max_hops_never_a_pool_ref_or_one_taken_before(
    graph: dict[str, Any],
) -> None:
    with tempfile.TemporaryDirectory() as folder, open_memory(f"{folder}/m.db") as memory:
        refs = [record(memory, f"record {i}", *names) for i, names in enumerate(graph["mentions"])]
        mentioned = {ref: set(names) for ref, names in zip(refs, graph["mentions"])}
        if graph["relations"]:
            relate(memory, *((a, "p", b) for a, b in graph["relations"]))
        items = [[refs[i % len(refs)] for i in item] for item in graph["items"]]
        pool = {ref for refs_ in items for ref in refs_} | {refs[i % len(refs)] for i in graph["extra_pool"]}
        result = walked(memory, items, max_hops=graph["max_hops"], max_evidence=100, pool=pool)
        taken: set[str] = set(pool)
        for item, rows in zip(items, result.rows):
            starts = {name for ref in item for name in mentioned[ref]}
            hops = _distances(graph["relations"], starts) if graph["max_hops"] else {}
            expected = {}
            for ref, names in mentioned.items():
                near = [hops[name] for name in names if 1 <= hops.get(name, -1) <= graph["max_hops"]]
                if near and ref not in taken:
                    expected[ref] = min(near)
            assert {row.ref: row.hops for row in rows} == expected
            assert [row.hops for row in rows] == sorted(row.hops for row in rows)
            taken |= set(expected)


# -- record relations -------------------------------------------------------------------------------------


def test_record_relations_are_those_with_both_ends_among_the_refs(memory: Memory) -> None:
    one, two, three = (record(memory, f"record {i}") for i in range(3))
    ids = relate(memory, (two, "Supersedes", one), (three, "supports", "Ana"), (one, "cites", three))
    found = record_relations(memory.store_, SCOPE, [one, two, "profile"])
    assert found == [RecordRelation(ids[0], two, "supersedes", one, found[0].declared_at)]
    assert [r.id for r in record_relations(memory.store_, SCOPE, [one, two, three])] == [ids[0], ids[2]]


def test_record_relations_keep_to_the_read_scope(memory: Memory) -> None:
    one, two = record(memory, "first"), record(memory, "second")
    relate(memory, (two, "supports", one), project_id="p1")
    assert len(record_relations(memory.store_, Scope(A, "p1"), [one, two])) == 1
    assert record_relations(memory.store_, Scope(A, "p2"), [one, two]) == []
    assert record_relations(memory.store_, Scope("agent-b"), [one, two]) == []


def test_record_relations_of_an_agent_without_a_graph_cost_one_cached_read(memory: Memory) -> None:
    one, two = record(memory, "first"), record(memory, "second")
    spy = Spy(memory.store_)
    assert record_relations(spy, SCOPE, [one, two]) == [] and spy.calls == ["has_graph"]  # type: ignore[arg-type]
