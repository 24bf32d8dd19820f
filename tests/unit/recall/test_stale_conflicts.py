"""Stale conflicts (stale-v1, recall/stale.py): each rule makes a conflict, nothing is dropped or moved,
the trace holds refs only, and reconstruct reads the same rule."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from cuedrecall.api import Memory
from cuedrecall.clock import to_epoch
from cuedrecall.graph.relations import RecordRelation
from cuedrecall.recall import trace_schema as schema
from cuedrecall.recall.stale import find, roles
from cuedrecall.store.base import ENTITY, MEMORY, Record, Relation
from cuedrecall.trace_view import print_trace
from tests.conftest import open_memory

A = "agent"
OLD, NEW = "2026-01-01T00:00:00Z", "2026-03-01T00:00:00Z"


def turn(text: str, ts: str, who: str = "bob") -> dict[str, Any]:
    return {"content": text, "timestamp": ts, "source": {"type": "User", "id": f"discord:{who}", "name": who}}


def record(row_id: int, *, ts: str | None = OLD, msg_id: str = "", project: str = "") -> Record:
    return Record(
        f"mem:{row_id}",
        MEMORY,
        row_id,
        A,
        project,
        "",
        f"text {row_id}",
        ts or "",
        ts or "",
        msg_id=msg_id,
        ts_epoch=to_epoch(ts) if ts else None,
    )


def declared(subject: str, predicate: str, object_: str, relation_id: int = 1) -> RecordRelation:
    return RecordRelation(relation_id, subject, predicate, object_, NEW)


def attribute(anchor: str, entity: int, predicate: str, value: int, relation_id: int = 1) -> Relation:
    return Relation(relation_id, A, "", "", ENTITY, entity, predicate, ENTITY, value, anchor, "agent", NEW)


def refs(answer: dict[str, Any]) -> list[str]:
    return [m["ref"] for m in answer["messages"] if "ref" in m]


def without_roles(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages less what stale-v1 and the msg_id write into them."""
    return [{k: v for k, v in m.items() if k not in ("conflict_role", "id")} for m in answer["messages"]]


@pytest.fixture
def launch(tmp_path: Path) -> Memory:
    """Two statements of a launch date, January's and March's."""
    memory = open_memory(tmp_path / "s.db")
    memory.store(agent_id=A, message=turn("The rocket launch date is March 3.", OLD))
    memory.store(agent_id=A, message=turn("The rocket launch date moved to March 9.", NEW, "carol"))
    return memory


def recall(memory: Memory, **extra: Any) -> dict[str, Any]:
    return memory.recall(agent_id=A, query="rocket launch date", limit=10, **extra)


def link_versions(memory: Memory, *ids: int) -> None:
    """Make records versions of one message, as an import from elsewhere leaves them (a store refuses a second
    row with a msg_id already stored)."""
    with memory.store_.write() as conn:
        conn.execute(f"UPDATE memories SET msg_id = 'launch' WHERE id IN ({', '.join(map(str, ids))})")


# -- the rules, each firing in a recall ------------------------------------------------------------------


def test_same_msg_id_versions_are_both_returned_with_roles_and_nothing_dropped_or_moved(launch: Memory) -> None:
    before = recall(launch)
    link_versions(launch, 1, 2)
    after = recall(launch)
    assert refs(after) == refs(before) and {"mem:1", "mem:2"} <= set(refs(after))
    assert without_roles(after) == without_roles(before)
    assert after["conflicts"] == [{"why": "same_msg_id", "current": "mem:2", "stale": ["mem:1"], "msg_id": "launch"}]
    role = {m["ref"]: m.get("conflict_role") for m in after["messages"]}
    assert role == {"mem:2": "current", "mem:1": "stale"}


@pytest.mark.parametrize("predicate", ["supersedes", "corrects"])
def test_a_declared_supersedes_or_corrects_makes_its_subject_current_whatever_the_times(
    launch: Memory, predicate: str
) -> None:
    before = recall(launch)
    launch.declare_associations(
        agent_id=A, associations={"relations": [{"subject": "mem:1", "predicate": predicate, "object": "mem:2"}]}
    )  # the older one replaces the newer
    after = recall(launch)
    assert refs(after) == refs(before)
    assert after["conflicts"] == [{"why": predicate, "current": "mem:1", "stale": ["mem:2"]}]
    assert {m["ref"]: m["conflict_role"] for m in after["messages"]} == {"mem:1": "current", "mem:2": "stale"}


def test_entity_attribute_values_that_differ_make_the_older_statement_stale(tmp_path: Path) -> None:
    memory = open_memory(tmp_path / "e.db")
    memory.store(agent_id=A, message=turn("Ana lives in Berlin, near the river.", OLD))
    memory.store(agent_id=A, message=turn("Ana lives in Paris since she moved.", NEW))
    memory.store(agent_id=A, message=turn("Ana likes long walks by the river.", OLD))
    before = memory.recall(agent_id=A, query="where does Ana live", limit=10)
    for anchor, city in (("mem:1", "Berlin"), ("mem:2", "Paris"), ("mem:3", "Berlin")):
        predicate = "lives in" if anchor != "mem:3" else "walks in"  # another attribute: no conflict
        memory.declare_associations(
            agent_id=A,
            anchor_ref=anchor,
            associations={"relations": [{"subject": "Ana", "predicate": predicate, "object": city}]},
        )
    ana = memory.store_.find_entity(A, "", "", "ana")
    assert ana is not None
    after = memory.recall(agent_id=A, query="where does Ana live", limit=10)
    assert refs(after) == refs(before)
    assert after["conflicts"] == [
        {
            "why": "entity_attribute",
            "current": "mem:2",
            "stale": ["mem:1"],
            "entity_id": ana.id,
            "attribute": "lives in",
        }
    ]
    assert {m["ref"]: m.get("conflict_role") for m in after["messages"]} == {
        "mem:1": "stale",
        "mem:2": "current",
        "mem:3": None,
    }


def test_rows_that_agree_carry_no_conflict_section(tmp_path: Path) -> None:
    memory = open_memory(tmp_path / "a.db")
    memory.store(agent_id=A, message=turn("Ana lives in Berlin.", OLD))
    memory.store(agent_id=A, message=turn("Still: Ana lives in Berlin, in Kreuzberg.", NEW))
    for anchor in ("mem:1", "mem:2"):
        memory.declare_associations(
            agent_id=A,
            anchor_ref=anchor,
            associations={"relations": [{"subject": "Ana", "predicate": "lives in", "object": "Berlin"}]},
        )
    answer = memory.recall(agent_id=A, query="where does Ana live", limit=10, trace=True)
    assert {"mem:1", "mem:2"} <= set(refs(answer))
    assert "conflicts" not in answer and "conflicts" not in answer["trace"]
    assert not any("conflict_role" in m for m in answer["messages"])


def test_the_trace_names_the_conflict_by_refs_only(launch: Memory) -> None:
    link_versions(launch, 1, 2)
    answer = recall(launch, trace=True)
    section = answer["trace"]["conflicts"]
    assert section == [{"why": "same_msg_id", "current": "mem:2", "stale": ["mem:1"]}]
    assert set(answer["trace"]) <= set(schema.SECTIONS)
    for entry in section:
        assert set(entry) <= {"why", "current", "undecided", "stale"}
    written = json.dumps(answer["trace"])
    for text in ("rocket launch date", "March 3", "March 9", "launch"):  # stored text, and the msg_id
        assert text not in written


def test_the_trace_view_prints_the_conflict(launch: Memory) -> None:
    link_versions(launch, 1, 2)
    out = io.StringIO()
    print_trace(recall(launch, trace=True)["trace"], Console(file=out, width=160, color_system=None))
    assert "conflict (same_msg_id): current mem:2, stale mem:1" in out.getvalue()


def test_a_recall_without_a_conflict_is_unchanged(launch: Memory) -> None:
    """Only a conflict adds anything: a store whose rows agree answers exactly as before stale-v1."""
    answer = recall(launch, trace=True)
    assert "conflicts" not in answer and "conflicts" not in answer["trace"]
    assert not any("conflict_role" in m for m in answer["messages"])


# -- the rule on hand-made records -----------------------------------------------------------------------


def test_versions_sharing_the_newest_time_are_undecided_and_an_older_one_still_stale() -> None:
    rows = [record(1, ts=NEW, msg_id="m"), record(2, msg_id="m"), record(3, ts=NEW, msg_id="m")]
    found = find(rows, [], [])
    assert [c.as_dict() for c in found] == [
        {"why": "same_msg_id", "undecided": ["mem:1", "mem:3"], "stale": ["mem:2"], "msg_id": "m"}
    ]
    assert roles(found) == {"mem:1": "undecided", "mem:3": "undecided", "mem:2": "stale"}


def test_one_msg_id_in_two_projects_is_two_messages() -> None:
    assert find([record(1, msg_id="m"), record(2, ts=NEW, msg_id="m", project="p")], [], []) == []


def test_an_undated_version_counts_as_older() -> None:
    found = find([record(1, ts=None, msg_id="m"), record(2, msg_id="m")], [], [])
    assert [(c.current, c.stale) for c in found] == [("mem:2", ("mem:1",))]


def test_a_chain_of_declared_replacements_is_one_group_under_its_head() -> None:
    rows = [record(1), record(2, ts=NEW), record(3, ts="2026-02-01T00:00:00Z")]
    chain = [declared("mem:3", "supersedes", "mem:2", 1), declared("mem:2", "corrects", "mem:1", 2)]
    found = find(rows, chain, [])
    assert [c.as_dict() for c in found] == [
        {"why": "corrects+supersedes", "current": "mem:3", "stale": ["mem:2", "mem:1"]}
    ]


def test_a_circle_of_declared_replacements_is_undecided_and_other_predicates_are_no_conflict() -> None:
    rows = [record(1), record(2), record(3)]
    circle = [
        declared("mem:1", "supersedes", "mem:2", 1),
        declared("mem:2", "supersedes", "mem:1", 2),
        declared("mem:3", "supports", "mem:1", 3),
        declared("mem:3", "supersedes", "mem:9", 4),
    ]
    assert [c.as_dict() for c in find(rows, circle, [])] == [{"why": "supersedes", "undecided": ["mem:1", "mem:2"]}]


def test_an_attribute_stated_with_a_shared_value_is_no_conflict() -> None:
    rows = [record(1), record(2, ts=NEW)]
    overlapping = [
        attribute("mem:1", 7, "speaks", 10, 1),
        attribute("mem:1", 7, "speaks", 11, 2),
        attribute("mem:2", 7, "speaks", 11, 3),
    ]
    assert find(rows, [], overlapping) == []
    anchored_elsewhere = [attribute("mem:1", 7, "speaks", 10, 1), attribute("mem:9", 7, "speaks", 11, 2)]
    assert find(rows, [], anchored_elsewhere) == []


def test_attribute_statements_of_one_time_that_differ_are_undecided() -> None:
    rows = [record(1), record(2), record(3, ts="2025-01-01T00:00:00Z")]
    split = [
        attribute("mem:1", 7, "lives in", 10, 1),
        attribute("mem:2", 7, "lives in", 11, 2),
        attribute("mem:3", 7, "lives in", 12, 3),
    ]
    assert [c.as_dict() for c in find(rows, [], split)] == [
        {
            "why": "entity_attribute",
            "undecided": ["mem:1", "mem:2"],
            "stale": ["mem:3"],
            "entity_id": 7,
            "attribute": "lives in",
        }
    ]


# -- reconstruct reads the same rule ---------------------------------------------------------------------


def test_reconstruct_lists_the_same_conflict_in_the_item_and_the_same_roles(launch: Memory) -> None:
    link_versions(launch, 1, 2)
    recalled = recall(launch)
    answer = launch.reconstruct(agent_id=A, query="rocket launch date")
    item = next(i for i in answer["items"] if i["head_ref"] == "mem:2")
    assert item["conflicts"] == recalled["conflicts"]
    stale_claim = next(c for c in item["claims"] if c["ref"] == "mem:1")
    assert stale_claim["roles"] == [{"ref": "mem:2", "role": "supersedes"}]
    assert "conflicts" not in answer  # the conflict lies inside one item


def test_reconstruct_lists_an_attribute_conflict_between_items_in_the_answer(tmp_path: Path) -> None:
    memory = open_memory(tmp_path / "r.db")
    memory.store(agent_id=A, message=turn("Ana lives in Berlin, near the river.", OLD, "bob"))
    memory.store(agent_id=A, message=turn("Ana lives in Paris since she moved.", NEW, "carol"))
    for anchor, city in (("mem:1", "Berlin"), ("mem:2", "Paris")):
        memory.declare_associations(
            agent_id=A,
            anchor_ref=anchor,
            associations={"relations": [{"subject": "Ana", "predicate": "lives in", "object": city}]},
        )
    recalled = memory.recall(agent_id=A, query="where does Ana live", limit=10)
    answer = memory.reconstruct(agent_id=A, query="where does Ana live")
    heads = {item["head_ref"] for item in answer["items"]}
    assert {"mem:1", "mem:2"} <= heads  # sharing an entity never bundles: two items
    assert answer["conflicts"] == recalled["conflicts"]
    assert all("conflicts" not in item for item in answer["items"])
