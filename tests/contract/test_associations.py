"""declare_associations and store's associations rider: what is declared, dropped, retracted, and where it is seen.

Each test names one rule of the associative layer (docs/reconstruct-and-graph.md) and checks it
through ``Memory``, so validation, pauses and transactions run as over MCP. What the
graph holds is read back with ``traverse`` or, for "nothing was written", from the
database file's graph tables.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cuedrecall.api import Memory
from cuedrecall.graph.declare import MAX_ALIASES, MAX_ENTITIES, MAX_RELATIONS
from tests.conftest import failed, open_memory

A, B = "agent-a", "agent-b"


def graph_rows(memory: Memory) -> dict[str, list[tuple]]:
    """Every row of the four graph tables, read through the store's own connection whatever the backend (what
    "nothing was written" compares); the write transaction around the reads changes nothing."""
    with memory.store_.write() as conn:
        return {
            table: [tuple(row) for row in conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()]
            for table in ("entities", "entity_aliases", "entity_mentions", "relations")
        }


def remember(memory: Memory, text: str, agent: str = A, **scope: str) -> str:
    result = memory.store(agent_id=agent, content=text, **scope)
    assert result["result"] == "stored", result
    return result["ref"]


def declare(memory: Memory, agent: str = A, **arguments: Any) -> dict[str, Any]:
    result = memory.declare_associations(agent_id=agent, **arguments)
    assert result.get("ok") is True, result
    return result


def names(answer: dict[str, Any]) -> list[str]:
    return [entity["name"] for entity in answer["entities"]]


def mentions(memory: Memory, entity: str, agent: str = A, **scope: Any) -> list[str]:
    found = memory.traverse(agent_id=agent, entity=entity, max_hops=0, **scope)
    return found["entities"][0].get("mentions", []) if found["entities"] else []


# -- declaring -----------------------------------------------------------------------------------------


def test_a_declaration_registers_new_entities_and_finds_known_ones_by_name_or_alias(memory: Memory) -> None:
    first = declare(memory, associations={"entities": [{"name": "Osaka office", "aliases": ["Kansai branch"]}]})
    assert first == {
        "ok": True,
        "result": "declared",
        "entities": [{"id": first["entities"][0]["id"], "name": "Osaka office", "created": True}],
        "mentions": 0,
        "relations": [],
        "dropped": [],
    }
    again = declare(memory, associations={"entities": [{"name": "  KANSAI   Branch "}, {"name": "osaka office"}]})
    assert again["entities"] == [{**first["entities"][0], "created": False}] * 2


def test_names_that_normalize_alike_name_one_entity(memory: Memory) -> None:
    """NFKC, case folding and whitespace: full-width letters and a second space change nothing."""
    first = declare(memory, associations={"entities": [{"name": "Tokyo  Tower"}]})
    again = declare(memory, associations={"entities": [{"name": "ＴＯＫＹＯ tower"}]})
    assert again["entities"][0]["id"] == first["entities"][0]["id"] and again["entities"][0]["created"] is False


def test_an_anchor_marks_every_declared_entity_as_mentioned_by_that_record(memory: Memory) -> None:
    ref = remember(memory, "Ana and Bo met at the harbour")
    answer = declare(
        memory, anchor_ref=ref, associations={"entities": [{"name": "Ana"}, {"name": "Bo"}, {"name": "ana"}]}
    )
    assert answer["mentions"] == 2  # Ana twice is one entity, mentioned once
    assert mentions(memory, "Ana") == [ref] and mentions(memory, "Bo") == [ref]
    assert declare(memory, anchor_ref=ref, associations={"entities": [{"name": "Ana"}]})["mentions"] == 1
    assert mentions(memory, "Ana") == [ref]  # declared again: still one mention


@pytest.mark.parametrize("anchor", ["mem:999", "ep:1", "mem:x", "note 4", "mem:-1"])
def test_an_anchor_that_is_not_a_record_of_the_agent_is_dropped_and_the_rest_declared(
    memory: Memory, anchor: str
) -> None:
    answer = declare(memory, anchor_ref=anchor, associations={"entities": [{"name": "Ana"}]})
    assert [d["item"] for d in answer["dropped"]] == ["anchor_ref"]
    assert answer["mentions"] == 0 and names(answer) == ["Ana"] and mentions(memory, "Ana") == []


def test_an_anchor_of_another_agent_is_not_this_agents_record(memory: Memory) -> None:
    theirs = remember(memory, "a note of agent b", agent=B)
    answer = declare(memory, anchor_ref=theirs, associations={"entities": [{"name": "Ana"}]})
    assert answer["dropped"][0]["item"] == "anchor_ref" and answer["mentions"] == 0


def test_relations_join_entity_names_and_record_refs_and_the_same_relation_keeps_its_id(memory: Memory) -> None:
    old = remember(memory, "the boiler is serviced yearly")
    new = remember(memory, "the boiler is serviced twice a year")
    answer = declare(
        memory,
        associations={
            "relations": [
                {"subject": "Mara", "predicate": "Owns", "object": "boiler"},
                {"subject": new, "predicate": "supersedes", "object": old},
                {"subject": "Mara", "predicate": "wrote", "object": new},
            ]
        },
    )
    assert names(answer) == ["Mara", "boiler"]  # entities a relation registered are reported too
    assert all(entity["created"] for entity in answer["entities"]) and len(answer["relations"]) == 3
    again = declare(memory, associations={"relations": [{"subject": "mara", "predicate": "OWNS ", "object": "Boiler"}]})
    assert again["relations"] == answer["relations"][:1] and again["entities"] == []
    found = memory.traverse(agent_id=A, entity="Mara")
    assert [(r["subject"], r["predicate"], r["object"]) for r in found["relations"]] == [
        (answer["entities"][0]["id"], "owns", answer["entities"][1]["id"])
    ]


def test_a_relation_declared_under_another_anchor_is_another_relation(memory: Memory) -> None:
    first, second = remember(memory, "first telling"), remember(memory, "second telling")
    relation = {"subject": "Ana", "predicate": "leads", "object": "Osaka office"}
    one = declare(memory, anchor_ref=first, associations={"relations": [relation]})["relations"]
    two = declare(memory, anchor_ref=second, associations={"relations": [relation]})["relations"]
    assert one != two
    listed = memory.traverse(agent_id=A, entity="Ana")["relations"]
    assert sorted(r["anchor_ref"] for r in listed) == [first, second]


def test_unusable_items_are_dropped_with_their_labels_and_the_rest_is_declared(memory: Memory) -> None:
    ref = remember(memory, "a record")
    answer = declare(
        memory,
        associations={
            "entities": [{"name": "Ana"}, {"name": "   "}, {"name": "Bo", "aliases": ["B.", " ", "Bobby"]}],
            "relations": [
                {"subject": "Ana", "predicate": "knows", "object": "Bo"},
                {"subject": "mem:999", "predicate": "cites", "object": ref},
                {"subject": "Ana", "predicate": "  ", "object": "ep:"},
                {"subject": ref, "predicate": "about", "object": "Ana"},
            ],
        },
    )
    assert [(d["item"]) for d in answer["dropped"]] == [
        "entities[1]",
        "entities[2].aliases[1]",
        "relations[1].subject",
        "relations[2].object",
        "relations[2].predicate",
    ]
    assert all(d["reason"] for d in answer["dropped"])
    assert names(answer) == ["Ana", "Bo"] and len(answer["relations"]) == 2
    assert memory.traverse(agent_id=A, entity="Bobby")["entities"][0]["aliases"] == ["B.", "Bobby"]


def test_an_alias_already_naming_another_entity_is_dropped(memory: Memory) -> None:
    declare(memory, associations={"entities": [{"name": "Osaka office", "aliases": ["the branch"]}]})
    answer = declare(
        memory,
        associations={
            "entities": [
                {"name": "Kyoto office", "aliases": ["The Branch", "KO"]},
                {"name": "Nara", "aliases": ["osaka office"]},
            ]
        },
    )
    assert [d["item"] for d in answer["dropped"]] == ["entities[0].aliases[0]", "entities[1].aliases[0]"]
    assert "another entity" in answer["dropped"][0]["reason"]
    assert memory.traverse(agent_id=A, entity="the branch")["entities"][0]["name"] == "Osaka office"
    assert memory.traverse(agent_id=A, entity="KO")["entities"][0]["name"] == "Kyoto office"


def test_a_relation_endpoint_that_is_a_record_of_another_agent_is_dropped(memory: Memory) -> None:
    theirs = remember(memory, "agent b's note", agent=B)
    answer = declare(memory, associations={"relations": [{"subject": "Ana", "predicate": "wrote", "object": theirs}]})
    assert answer["relations"] == [] and answer["dropped"] == [
        {"item": "relations[0].object", "reason": f"'{theirs}' is not a record of this agent"}
    ]
    assert answer["entities"] == []  # a dropped relation registers nothing


# -- retracting ----------------------------------------------------------------------------------------


def test_retract_removes_this_agents_relations_and_mentions_and_drops_the_rest(memory: Memory) -> None:
    ref = remember(memory, "Ana leads the Osaka office")
    answer = declare(
        memory,
        anchor_ref=ref,
        associations={
            "entities": [{"name": "Ana"}],
            "relations": [{"subject": "Ana", "predicate": "leads", "object": "Osaka"}],
        },
    )
    ana = answer["entities"][0]["id"]
    theirs = declare(memory, agent=B, associations={"relations": [{"subject": "X", "predicate": "p", "object": "Y"}]})
    retracted = declare(
        memory,
        retract={
            "relations": [answer["relations"][0], theirs["relations"][0], 12345],
            "mentions": [{"entity": ana, "ref": ref}, {"entity": ana, "ref": "nope"}, {"entity": ana, "ref": ref}],
        },
    )
    assert retracted["retracted"] == {"relations": 1, "mentions": 1}
    assert [d["item"] for d in retracted["dropped"]] == [
        "retract.relations[1]",
        "retract.relations[2]",
        "retract.mentions[1]",
        "retract.mentions[2]",
    ]
    assert memory.traverse(agent_id=A, entity="Ana")["relations"] == [] and mentions(memory, "Ana") == []
    assert memory.traverse(agent_id=B, entity="X")["relations"]  # the other agent's relation stays


def test_a_mention_of_another_agents_entity_cannot_be_retracted(memory: Memory) -> None:
    ref = remember(memory, "b's record", agent=B)
    entity = declare(memory, agent=B, anchor_ref=ref, associations={"entities": [{"name": "Zed"}]})["entities"][0]
    answer = declare(memory, retract={"mentions": [{"entity": entity["id"], "ref": ref}]})
    assert (
        answer["retracted"] == {"relations": 0, "mentions": 0} and answer["dropped"][0]["item"] == "retract.mentions[0]"
    )
    assert mentions(memory, "Zed", agent=B) == [ref]


def test_without_retract_the_answer_has_no_retracted_key(memory: Memory) -> None:
    assert "retracted" not in declare(memory, associations={"entities": [{"name": "Ana"}]})
    assert declare(memory, retract={})["retracted"] == {"relations": 0, "mentions": 0}


# -- malformed arguments: refused naming the item, nothing written -------------------------------------


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"associations": {"entities": [{"name": 3}]}}, "associations.entities[0].name"),
        ({"associations": {"entities": [{"name": True}]}}, "associations.entities[0].name"),
        ({"associations": {"entities": ["Ana"]}}, "associations.entities[0]"),
        ({"associations": {"entities": [{"aliases": ["x"]}]}}, "associations.entities[0].name"),
        ({"associations": {"entities": [{"name": "Ana", "alias": ["x"]}]}}, "associations.entities[0]"),
        ({"associations": {"entities": [{"name": "Ana", "aliases": "A."}]}}, "associations.entities[0].aliases"),
        ({"associations": {"entities": [{"name": "Ana", "aliases": [None]}]}}, "associations.entities[0].aliases[0]"),
        ({"associations": {"entities": {"name": "Ana"}}}, "associations.entities"),
        ({"associations": {"entity": []}}, "associations"),
        ({"associations": {"entities": [{"name": "x" * 257}]}}, "associations.entities[0].name"),
        ({"associations": {"relations": [{"subject": "a", "predicate": "p"}]}}, "associations.relations[0].object"),
        (
            {"associations": {"relations": [{"subject": "a", "predicate": 1, "object": "b"}]}},
            "associations.relations[0].predicate",
        ),
        (
            {"associations": {"relations": [{"subject": "a", "predicate": "p", "object": "b" * 300}]}},
            "associations.relations[0].object",
        ),
        ({"retract": {"relations": [True]}}, "retract.relations[0]"),
        ({"retract": {"relations": ["3"]}}, "retract.relations[0]"),
        ({"retract": {"relations": [1.5]}}, "retract.relations[0]"),
        ({"retract": {"mentions": [{"entity": False, "ref": "mem:1"}]}}, "retract.mentions[0].entity"),
        ({"retract": {"mentions": [{"entity": 1}]}}, "retract.mentions[0].ref"),
        ({"retract": {"mention": []}}, "retract"),
        ({"retract": "relations"}, "retract"),
        ({"anchor_ref": "mem:" + "1" * 70}, "anchor_ref"),
    ],
)
def test_a_malformed_item_refuses_the_call_naming_it_and_writes_nothing(
    memory: Memory, arguments: dict[str, Any], named: str
) -> None:
    ref = remember(memory, "a record")
    declare(
        memory,
        anchor_ref=ref,
        associations={
            "entities": [{"name": "Ana"}],
            "relations": [{"subject": "Ana", "predicate": "p", "object": "B"}],
        },
    )
    before = graph_rows(memory)
    # a valid part beside the malformed one: the whole call writes nothing
    valid = {"associations": {"entities": [{"name": "Cy"}]}, "retract": {"relations": [1]}}
    result = memory.declare_associations(agent_id=A, **{**valid, **arguments})
    assert failed(result, f"'{named}"), result
    assert graph_rows(memory) == before


@pytest.mark.parametrize(("field", "count"), [("entities", MAX_ENTITIES), ("relations", MAX_RELATIONS)])
def test_a_declaration_holds_at_most_64_entities_and_64_relations(memory: Memory, field: str, count: int) -> None:
    item = (
        (lambda i: {"name": f"e{i}"})
        if field == "entities"
        else (lambda i: {"subject": f"s{i}", "predicate": "p", "object": f"o{i}"})
    )
    assert len(declare(memory, associations={field: [item(i) for i in range(count)]})[field]) == count
    before = graph_rows(memory)
    result = memory.declare_associations(agent_id=A, associations={field: [item(i) for i in range(count + 1)]})
    assert failed(result, f"'associations.{field}'") and f"at most {count}" in result["error"]
    assert graph_rows(memory) == before


def test_an_entity_holds_at_most_32_aliases_and_a_string_256_characters(memory: Memory) -> None:
    aliases = [f"alias {i}" for i in range(MAX_ALIASES)]
    declare(memory, associations={"entities": [{"name": "Many", "aliases": aliases}]})
    assert len(memory.traverse(agent_id=A, entity="many")["entities"][0]["aliases"]) == MAX_ALIASES
    too_many = memory.declare_associations(
        agent_id=A, associations={"entities": [{"name": "More", "aliases": [*aliases, "one more"]}]}
    )
    assert failed(too_many, "'associations.entities[0].aliases'")
    assert declare(memory, associations={"entities": [{"name": "  " + "n" * 256 + "  "}]})["entities"][0]["created"]


# -- scope ---------------------------------------------------------------------------------------------


def test_agents_never_see_each_others_entities_aliases_or_relations(memory: Memory) -> None:
    declare(
        memory,
        associations={
            "entities": [{"name": "Ana", "aliases": ["A."]}],
            "relations": [{"subject": "Ana", "predicate": "leads", "object": "Osaka"}],
        },
    )
    assert memory.traverse(agent_id=B, entity="Ana")["reason"] == "no_such_entity"
    theirs = declare(memory, agent=B, associations={"entities": [{"name": "Ana", "aliases": ["A."]}]})
    assert theirs["entities"][0]["created"] is True and theirs["dropped"] == []  # A's alias is no claim on B's


def test_a_project_reads_its_own_entities_and_the_global_pool_and_never_another_project(memory: Memory) -> None:
    declare(memory, project_id="p1", associations={"entities": [{"name": "Ana"}]})
    declare(memory, associations={"entities": [{"name": "Bo"}]})
    assert memory.traverse(agent_id=A, entity="Ana", project_id="p1")["entities"]
    assert memory.traverse(agent_id=A, entity="Bo", project_id="p1")["entities"]  # the global pool
    assert memory.traverse(agent_id=A, entity="Ana", project_id="p2")["reason"] == "no_such_entity"
    assert memory.traverse(agent_id=A, entity="Ana", project_id="")["reason"] == "no_such_entity"
    assert memory.traverse(agent_id=A, entity="Ana")["entities"]  # project omitted: every project


def test_a_project_declaration_resolves_a_name_the_global_pool_has_to_that_entity(memory: Memory) -> None:
    shared = declare(memory, associations={"entities": [{"name": "Ana"}]})["entities"][0]
    from_project = declare(memory, project_id="p1", associations={"entities": [{"name": "ana"}]})["entities"][0]
    assert from_project == {**shared, "created": False}


def test_an_alias_follows_the_scope_it_is_declared_in(memory: Memory) -> None:
    """A project's aliases for a global name register the project's own entity: another project never sees them."""
    shared = declare(memory, associations={"entities": [{"name": "Ana"}]})["entities"][0]
    own = declare(memory, project_id="p1", associations={"entities": [{"name": "Ana", "aliases": ["Ana K."]}]})
    assert own["entities"][0]["id"] != shared["id"] and own["entities"][0]["created"] is True
    assert own["dropped"] == []
    assert (
        memory.traverse(agent_id=A, entity="Ana K.", project_id="p1")["entities"][0]["id"] == own["entities"][0]["id"]
    )
    assert memory.traverse(agent_id=A, entity="Ana K.", project_id="p2")["reason"] == "no_such_entity"
    both = memory.traverse(agent_id=A, entity="Ana", project_id="p1")["entities"]
    assert sorted(e["id"] for e in both) == sorted([shared["id"], own["entities"][0]["id"]])


def test_a_global_alias_is_a_claim_a_project_declaration_cannot_take(memory: Memory) -> None:
    declare(memory, associations={"entities": [{"name": "Osaka office", "aliases": ["the branch"]}]})
    answer = declare(memory, project_id="p1", associations={"entities": [{"name": "Kyoto", "aliases": ["the branch"]}]})
    assert [d["item"] for d in answer["dropped"]] == ["entities[0].aliases[0]"]


def test_a_channel_declaration_is_seen_from_that_channel_and_every_channel_only(memory: Memory) -> None:
    declare(memory, channel="c1", associations={"entities": [{"name": "Ana"}]})
    assert memory.traverse(agent_id=A, entity="Ana", channel="c1")["entities"]
    assert memory.traverse(agent_id=A, entity="Ana")["entities"]  # channel "" reads every channel
    assert memory.traverse(agent_id=A, entity="Ana", channel="c2")["reason"] == "no_such_entity"


# -- deletes ------------------------------------------------------------------------------------------


def test_deleting_a_memory_removes_its_mentions_and_every_relation_naming_it(memory: Memory) -> None:
    kept, gone = remember(memory, "kept record"), remember(memory, "deleted record")
    declare(
        memory,
        anchor_ref=gone,
        associations={
            "entities": [{"name": "Ana"}],
            "relations": [{"subject": "Ana", "predicate": "anchored", "object": "Bo"}],
        },
    )  # anchor
    declare(
        memory,
        anchor_ref=kept,
        associations={
            "entities": [{"name": "Ana"}],
            "relations": [
                {"subject": gone, "predicate": "supports", "object": kept},  # subject
                {"subject": kept, "predicate": "supersedes", "object": gone},  # object
                {"subject": "Ana", "predicate": "stays", "object": "Bo"},
            ],
        },
    )
    memory.delete_memory(memory_id=gone)
    assert mentions(memory, "Ana") == [kept]
    assert [r["predicate"] for r in memory.traverse(agent_id=A, entity="Ana")["relations"]] == ["stays"]
    rows = graph_rows(memory)
    assert [row[6] for row in rows["relations"]] == ["stays"]  # the record relations went too
    assert len(rows["entities"]) == 2  # entities stay


def test_deleting_an_episode_removes_its_mentions_and_relations(memory: Memory) -> None:
    episode = memory.archive_episode(agent_id=A, summary="the planning session")["ref"]
    kept = remember(memory, "a note")
    declare(
        memory,
        anchor_ref=episode,
        associations={
            "entities": [{"name": "Ana"}],
            "relations": [{"subject": episode, "predicate": "supports", "object": kept}],
        },
    )
    memory.delete_episode(episode_id=episode)
    assert mentions(memory, "Ana") == [] and graph_rows(memory)["relations"] == []


def test_changing_a_memorys_text_leaves_its_graph_as_it_is(memory: Memory) -> None:
    ref = remember(memory, "Ana met Bo")
    declare(
        memory,
        anchor_ref=ref,
        associations={
            "entities": [{"name": "Ana"}],
            "relations": [{"subject": "Ana", "predicate": "met", "object": ref}],
        },
    )
    before = graph_rows(memory)
    assert memory.update_memory(memory_id=ref, content="Ana met Bo on Tuesday")["ok"]
    assert graph_rows(memory) == before


def test_delete_agent_data_removes_the_agents_graph_and_no_one_elses(memory: Memory) -> None:
    for agent in (A, B):
        ref = remember(memory, f"a note of {agent}", agent=agent)
        declare(
            memory,
            agent=agent,
            anchor_ref=ref,
            associations={
                "entities": [{"name": "Ana", "aliases": ["A."]}],
                "relations": [{"subject": "Ana", "predicate": "knows", "object": "Bo"}],
            },
        )
    memory.delete_agent_data(agent_id=A)
    rows = graph_rows(memory)
    assert {row[1] for row in rows["entities"]} == {B} and {row[1] for row in rows["relations"]} == {B}
    assert len(rows["entity_aliases"]) == 1 and len(rows["entity_mentions"]) == 1
    assert memory.traverse(agent_id=A, entity="Ana")["reason"] == "no_such_entity"
    assert memory.traverse(agent_id=B, entity="A.")["entities"][0]["mentions"]


# -- the store rider ----------------------------------------------------------------------------------------


def test_store_declares_its_associations_against_the_new_memory(memory: Memory) -> None:
    stored = memory.store(
        agent_id=A,
        content="Ana runs the Osaka office",
        project_id="p",
        channel="c",
        associations={"entities": [{"name": "Osaka office", "aliases": ["Kansai branch"]}]},
    )
    assert stored["result"] == "stored"
    assert stored["associations"]["result"] == "declared" and stored["associations"]["mentions"] == 1
    assert mentions(memory, "Kansai branch", project_id="p", channel="c") == [stored["ref"]]
    assert memory.traverse(agent_id=A, entity="Kansai branch", project_id="q")["reason"] == "no_such_entity"


def test_a_skipped_duplicate_declares_against_the_memory_it_was_skipped_for(memory: Memory) -> None:
    first = memory.store(agent_id=A, content="the same words")
    again = memory.store(agent_id=A, content="the same words", associations={"entities": [{"name": "Ana"}]})
    assert again["result"] == "skipped" and again["associations"]["mentions"] == 1
    assert mentions(memory, "Ana") == [first["ref"]]


def test_a_malformed_rider_never_fails_the_store_and_declares_nothing(memory: Memory) -> None:
    stored = memory.store(agent_id=A, content="Ana runs the office", associations={"entities": [{"name": 7}]})
    assert stored["result"] == "stored" and stored["associations"]["ok"] is False
    assert "associations.entities[0].name" in stored["associations"]["error"]
    assert graph_rows(memory)["entities"] == []


def test_a_store_without_the_rider_has_no_associations_key(memory: Memory) -> None:
    assert "associations" not in memory.store(agent_id=A, content="no rider here")
    assert "associations" in memory.store(agent_id=A, content="an empty rider", associations={})


def test_a_rejected_store_declares_nothing(memory: Memory) -> None:
    rejected = memory.store(agent_id=A, content="   ", associations={"entities": [{"name": "Ana"}]})
    assert rejected["result"] == "rejected" and "associations" not in rejected
    assert graph_rows(memory)["entities"] == []


# -- pauses ----------------------------------------------------------------------------------------------


def test_a_paused_session_declares_nothing_and_says_so(memory: Memory) -> None:
    memory.pause_persistence(ttl_seconds=600, session_key="s1")
    answer = memory.declare_associations(agent_id=A, session_key="s1", associations={"entities": [{"name": "Ana"}]})
    assert answer["ok"] is True and answer["result"] == "skipped" and answer["persisted"] is False
    assert graph_rows(memory)["entities"] == []
    assert memory.traverse(agent_id=A, entity="Ana")["reason"] == "no_such_entity"  # reads are never paused


def test_the_graph_survives_reopening_the_database(db_path: Path) -> None:
    with open_memory(db_path) as memory:
        declare(memory, associations={"entities": [{"name": "Ana", "aliases": ["A."]}]})
    with open_memory(db_path) as memory:
        assert memory.traverse(agent_id=A, entity="a.")["entities"][0]["name"] == "Ana"


def test_a_declaration_by_another_connection_is_seen_at_once(db_path: Path) -> None:
    """Whether an agent has a graph is cached per process; a commit by any connection drops the cache."""
    with open_memory(db_path) as reader, open_memory(db_path) as writer:
        assert reader.traverse(agent_id=A, entity="Ana")["reason"] == "no_such_entity"  # caches "no graph"
        declare(writer, associations={"entities": [{"name": "Ana"}]})
        assert reader.traverse(agent_id=A, entity="Ana")["entities"][0]["name"] == "Ana"
