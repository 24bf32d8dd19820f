"""traverse: the entities within some hops of a named one, in order, bounded, with their relations and mentions."""

from __future__ import annotations

import itertools
from typing import Any

from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock

A = "agent-a"


def declare(memory: Memory, **arguments: Any) -> dict[str, Any]:
    result = memory.declare_associations(agent_id=A, **arguments)
    assert result.get("ok") is True and result["dropped"] == [], result
    return result


def chain(memory: Memory, *names: str, predicate: str = "next") -> None:
    """name0 -predicate-> name1 -> name2 ..., one relation per pair."""
    declare(
        memory,
        associations={
            "relations": [{"subject": a, "predicate": predicate, "object": b} for a, b in itertools.pairwise(names)]
        },
    )


def listed(answer: dict[str, Any]) -> list[tuple[str, int]]:
    return [(entity["name"], entity["hops"]) for entity in answer["entities"]]


def test_an_unknown_name_answers_no_such_entity_with_empty_lists(memory: Memory) -> None:
    declare(memory, associations={"entities": [{"name": "Ana"}]})
    for name in ("Bo", "ana b", "!"):
        assert memory.traverse(agent_id=A, entity=name) == {
            "entity": name,
            "max_hops": 1,
            "limit": 20,
            "entities": [],
            "relations": [],
            "reason": "no_such_entity",
        }


def test_a_blank_name_is_refused_as_an_argument(memory: Memory) -> None:
    answer = memory.traverse(agent_id=A, entity="   ")
    assert answer["ok"] is False and "'entity'" in answer["error"] and answer["entities"] == []


def test_zero_hops_returns_the_entity_alone(memory: Memory) -> None:
    chain(memory, "Ana", "Bo")
    answer = memory.traverse(agent_id=A, entity="ana", max_hops=0)
    assert listed(answer) == [("Ana", 0)] and answer["relations"] == []
    assert answer["bounds"] == {"omitted": ["max_hops"]}  # a relation leads further than zero hops


def test_hops_follow_relations_in_either_direction_up_to_max_hops(memory: Memory) -> None:
    chain(memory, "A1", "A2", "A3", "A4")
    # A2-A3 was declared after A1-A2 (same time, higher id): the more recent relation first
    assert listed(memory.traverse(agent_id=A, entity="A2", max_hops=1)) == [("A2", 0), ("A3", 1), ("A1", 1)]
    two = memory.traverse(agent_id=A, entity="A1", max_hops=2)
    assert listed(two) == [("A1", 0), ("A2", 1), ("A3", 2)] and two["bounds"] == {"omitted": ["max_hops"]}
    whole = memory.traverse(agent_id=A, entity="A1", max_hops=5)
    assert listed(whole)[-1] == ("A4", 3) and "bounds" not in whole


def test_max_hops_and_limit_are_clamped_to_their_ranges(memory: Memory) -> None:
    chain(memory, "A1", "A2")
    answer = memory.traverse(agent_id=A, entity="A1", max_hops=99, limit=0)
    assert (answer["max_hops"], answer["limit"]) == (5, 1)


def test_entities_at_one_hop_are_ordered_by_the_more_recent_relation_then_id(memory: Memory) -> None:
    times = iter(["2025-01-01T00:00:00+00:00", "2025-03-01T00:00:00+00:00", "2025-02-01T00:00:00+00:00"])
    for other in ("Old", "Newest", "Middle"):
        memory.clock = fixed_clock(next(times))
        chain(memory, "Hub", other, predicate=f"to {other}")
    answer = memory.traverse(agent_id=A, entity="Hub")
    assert listed(answer) == [("Hub", 0), ("Newest", 1), ("Middle", 1), ("Old", 1)]
    assert [r["predicate"] for r in answer["relations"]] == ["to newest", "to middle", "to old"]


def test_equal_declaration_times_order_by_the_higher_relation_id(memory: Memory) -> None:
    declare(
        memory,
        associations={
            "relations": [{"subject": "Hub", "predicate": "p", "object": name} for name in ("First", "Second", "Third")]
        },
    )
    assert listed(memory.traverse(agent_id=A, entity="Hub"))[1:] == [("Third", 1), ("Second", 1), ("First", 1)]


def test_limit_keeps_the_first_entities_and_counts_the_rest(memory: Memory) -> None:
    declare(
        memory, associations={"relations": [{"subject": "Hub", "predicate": "p", "object": f"E{i}"} for i in range(5)]}
    )
    answer = memory.traverse(agent_id=A, entity="Hub", limit=3)
    assert len(answer["entities"]) == 3 and answer["entities_omitted"] == 3
    assert answer["bounds"] == {"omitted": ["limit"]}
    kept = {entity["id"] for entity in answer["entities"]}
    assert all(r["subject"] in kept and r["object"] in kept for r in answer["relations"])
    assert len(answer["relations"]) == 2


def test_relations_list_entity_ids_and_their_anchor(memory: Memory) -> None:
    ref = memory.store(agent_id=A, content="Ana leads the Osaka office")["ref"]
    made = declare(
        memory,
        anchor_ref=ref,
        associations={
            "entities": [{"name": "Ana"}],
            "relations": [{"subject": "Ana", "predicate": "Leads", "object": "Osaka"}],
        },
    )
    ana, osaka = (entity["id"] for entity in made["entities"])
    (relation,) = memory.traverse(agent_id=A, entity="Osaka")["relations"]
    assert relation == {
        "id": made["relations"][0],
        "subject": ana,
        "predicate": "leads",
        "object": osaka,
        "declared_by": "agent",
        "declared_at": relation["declared_at"],
        "anchor_ref": ref,
    }
    declare(memory, associations={"relations": [{"subject": "Bo", "predicate": "knows", "object": "Cy"}]})
    assert "anchor_ref" not in memory.traverse(agent_id=A, entity="Bo")["relations"][0]


def test_mentions_are_the_readable_refs_lowest_id_first_up_to_limit(memory: Memory) -> None:
    refs = [memory.store(agent_id=A, content=f"note {i} about Ana")["ref"] for i in range(4)]
    for ref in reversed(refs):
        declare(memory, anchor_ref=ref, associations={"entities": [{"name": "Ana"}]})
    (entity,) = memory.traverse(agent_id=A, entity="Ana", limit=3)["entities"]
    assert entity["mentions"] == refs[:3] and entity["mentions_omitted"] == 1
    assert memory.traverse(agent_id=A, entity="Ana", limit=3)["bounds"] == {"omitted": ["limit"]}
    whole = memory.traverse(agent_id=A, entity="Ana")["entities"][0]
    assert whole["mentions"] == refs and "mentions_omitted" not in whole


def test_mentions_follow_the_read_scope_and_the_source_filter(memory: Memory) -> None:
    ana = memory.store(agent_id=A, content="from Ana", source={"type": "User", "id": "ana"}, channel="c1")["ref"]
    bo = memory.store(agent_id=A, content="from Bo", source={"type": "User", "id": "bo"})["ref"]
    episode = memory.archive_episode(agent_id=A, summary="a session")["ref"]
    for ref in (ana, bo, episode):
        declare(memory, anchor_ref=ref, associations={"entities": [{"name": "Topic"}]})

    def seen(**scope: Any) -> list[str]:
        return memory.traverse(agent_id=A, entity="Topic", **scope)["entities"][0].get("mentions", [])

    assert seen() == [ana, episode, bo]  # by record id (mem:1, ep:1, mem:2), a memory before an episode
    assert seen(source_id="bo") == [bo]  # episodes are hidden by a source filter without a channel
    assert seen(source_id="ana", channel="c1") == [ana, episode]
    assert seen(channel="c2") == [episode, bo]


def test_an_entity_without_aliases_or_mentions_lists_neither_key(memory: Memory) -> None:
    declare(memory, associations={"entities": [{"name": "Ana"}]})
    assert memory.traverse(agent_id=A, entity="Ana")["entities"][0] == {
        "id": memory.traverse(agent_id=A, entity="Ana")["entities"][0]["id"],
        "name": "Ana",
        "hops": 0,
    }


def test_aliases_are_listed_by_their_normalised_form(memory: Memory) -> None:
    declare(memory, associations={"entities": [{"name": "Ana", "aliases": ["zed", "Bee", "alpha"]}]})
    assert memory.traverse(agent_id=A, entity="ZED")["entities"][0]["aliases"] == ["alpha", "Bee", "zed"]


def test_a_relation_through_an_entity_the_scope_cannot_read_is_not_followed(memory: Memory) -> None:
    declare(memory, associations={"entities": [{"name": "Hub"}]})
    declare(
        memory, project_id="p1", associations={"relations": [{"subject": "Hub", "predicate": "p", "object": "Secret"}]}
    )
    assert listed(memory.traverse(agent_id=A, entity="Hub", project_id="p1")) == [("Hub", 0), ("Secret", 1)]
    elsewhere = memory.traverse(agent_id=A, entity="Hub", project_id="p2")
    assert listed(elsewhere) == [("Hub", 0)] and "bounds" not in elsewhere


def test_a_name_both_a_project_and_the_global_pool_hold_starts_from_both(memory: Memory) -> None:
    declare(memory, associations={"relations": [{"subject": "Ana", "predicate": "p", "object": "Global friend"}]})
    declare(
        memory,
        project_id="p1",
        associations={
            "entities": [{"name": "Ana", "aliases": ["A."]}],
            "relations": [{"subject": "A.", "predicate": "p", "object": "Project friend"}],
        },
    )
    answer = memory.traverse(agent_id=A, entity="ana", project_id="p1")
    assert sorted(listed(answer)) == [("Ana", 0), ("Ana", 0), ("Global friend", 1), ("Project friend", 1)]
