"""The tool surface a CPersona 2.6 client uses: its argument forms, and the tools it has that were missing.

Each test states one rule a CPersona client relies on and checks it through ``Memory``,
so the dispatcher's validation, grants and pauses run as they do over MCP.
"""

from __future__ import annotations

import json
from types import MappingProxyType
from typing import Any

import pytest

from cuedrecall.access import READ, WRITE, Principal
from cuedrecall.api import Memory
from cuedrecall.handlers import read
from cuedrecall.tools import TOOLS
from tests.conftest import failed, snapshot

A, B = "agent-a", "agent-b"


def contents(memory: Memory, agent: str = A) -> list[str]:
    return sorted(row["content"] for row in memory.list_memories(agent_id=agent)["memories"])


# -- store's forms ------------------------------------------------------------------------------------


def test_store_takes_content_at_the_top_level_as_it_does_inside_message(memory: Memory) -> None:
    top = memory.store(
        agent_id=A,
        content="the top-level form",
        id="t1",
        source="user",
        timestamp="2025-03-01T10:00:00+00:00",
        metadata={"k": 1},
    )
    old = memory.store(
        agent_id=A,
        message={
            "content": "the message form",
            "id": "t2",
            "source": "user",
            "timestamp": "2025-03-01T10:00:00+00:00",
            "metadata": {"k": 1},
        },
    )
    assert top["result"] == old["result"] == "stored"
    rows = {row["content"]: row for row in memory.list_memories(agent_id=A)["memories"]}
    first, second = rows["the top-level form"], rows["the message form"]
    assert first["source"] == second["source"] == {"type": "User"} and first["timestamp"] == second["timestamp"]
    again = memory.store(agent_id=A, content="other text, same id", id="t1")
    assert (again["result"], again["reason"], again["id"]) == ("skipped", "duplicate msg_id", top["id"])


def test_store_refuses_a_field_given_both_ways_with_different_values_and_writes_nothing(memory: Memory) -> None:
    before = snapshot(memory)
    result = memory.store(agent_id=A, content="one text", message={"content": "another text"})
    assert failed(result, "content") and result["result"] == "rejected"
    assert failed(memory.store(agent_id=A, id="x"), "'content'")
    assert snapshot(memory) == before


def test_an_object_argument_sent_as_json_text_is_read_as_the_object(memory: Memory) -> None:
    stored = memory.store(agent_id=A, message=json.dumps({"content": "sent as text", "id": "j1"}))
    assert stored["result"] == "stored"
    cue = json.dumps({"after": "2025-01-01", "before": "2026-01-01", "confidence": "vague"})
    answer = memory.recall(agent_id=A, query="sent as text", time_cue=cue)
    assert answer["time_cue"]["confidence"] == "vague"
    assert failed(memory.store(agent_id=A, message="{not json"), "'message'")


# -- locks and refs -----------------------------------------------------------------------------------


def test_a_locked_memory_refuses_update_and_delete_until_unlocked(memory: Memory) -> None:
    ref = memory.store(agent_id=A, content="keep me as I am", lock=True)["ref"]
    assert failed(memory.update_memory(memory_id=ref, content="changed", agent_id=A), "locked")
    assert failed(memory.delete_memory(memory_id=ref, agent_id=A), "locked")
    assert memory.unlock_memory(memory_id=ref, agent_id=A) == {"ok": True, "unlocked_id": int(ref[4:])}
    assert memory.update_memory(memory_id=ref, content="changed", agent_id=A)["ok"] is True
    assert memory.lock_memory(memory_id=ref, agent_id=A) == {"ok": True, "locked_id": int(ref[4:])}
    assert contents(memory) == ["changed"]


def test_ids_are_taken_as_refs_too_and_a_ref_of_the_other_kind_is_refused(memory: Memory) -> None:
    ref = memory.store(agent_id=A, content="address me by ref")["ref"]
    assert failed(memory.delete_memory(memory_id="ep:1", agent_id=A), "'memory_id'")
    assert memory.delete_memory(memory_id=ref, agent_id=A)["deleted_id"] == int(ref[4:])
    episode = memory.archive_episode(agent_id=A, summary="a session")["ref"]
    assert memory.delete_episode(episode_id=episode, agent_id=A)["ok"] is True


def test_lock_belongs_to_the_owner(memory: Memory) -> None:
    ref = memory.store(agent_id=A, content="mine")["ref"]
    assert failed(memory.lock_memory(memory_id=ref, agent_id=B), "not owned")


# -- session pauses -----------------------------------------------------------------------------------


def test_a_paused_session_is_answered_but_keeps_nothing_and_other_sessions_are_unaffected(memory: Memory) -> None:
    paused = memory.pause_persistence(ttl_seconds=600, session_key="s1")
    assert paused["paused"] is True and paused["scope"] == "session"
    before = snapshot(memory, agents=(A,))
    answer = memory.store(agent_id=A, content="off the record", session_key="s1")
    assert answer["ok"] is True and answer["persisted"] is False and answer["id"] == "no-persist"
    assert memory.update_profile(agent_id=A, profile="secret", session_key="s1")["persisted"] is False
    assert snapshot(memory, agents=(A,)) == before
    assert memory.store(agent_id=A, content="on the record", session_key="s2")["result"] == "stored"
    assert memory.persistence_status(session_key="s1")["paused"] is True
    assert memory.resume_persistence(session_key="s1") == {"paused": False, "was_active": True, "scope": "session"}
    assert memory.store(agent_id=A, content="off the record", session_key="s1")["result"] == "stored"
    assert contents(memory) == ["off the record", "on the record"]


def test_reads_are_never_paused(memory: Memory) -> None:
    memory.store(agent_id=A, content="readable while paused")
    memory.pause_persistence(ttl_seconds=600)
    assert [m["content"] for m in memory.recall(agent_id=A, query="")["messages"]] == ["readable while paused"]
    assert memory.persistence_status()["scope"] == "process"


# -- the tools that were missing --------------------------------------------------------------------------


def test_delete_agent_data_deletes_one_agent_and_its_calibration_only(memory: Memory) -> None:
    for agent in (A, B):
        memory.store(agent_id=agent, content=f"a note of {agent}")
        memory.archive_episode(agent_id=agent, summary=f"a session of {agent}")
        memory.update_profile(agent_id=agent, profile=f"profile of {agent}")
    memory.calibration.set(A, "cosine", 0.4)
    result = memory.delete_agent_data(agent_id=A)
    assert (result["deleted_memories"], result["deleted_episodes"], result["deleted_profiles"]) == (1, 1, 1)
    assert contents(memory, A) == [] and memory.get_profile(agent_id=A) == {"profile": ""}
    assert memory.calibration.thresholds(A) == {}
    assert contents(memory, B) == [f"a note of {B}"] and memory.get_profile(agent_id=B)["profile"]


@pytest.mark.parametrize("mode", ["copy", "move"])
def test_merge_copies_what_the_target_lacks_and_a_move_deletes_only_what_it_copied(memory: Memory, mode: str) -> None:
    memory.store(agent_id=A, content="only in the source")
    memory.store(agent_id=A, content="in both")
    memory.store(agent_id=B, content="in both")
    memory.update_profile(agent_id=A, profile="source profile")
    dry = memory.merge_memories(source_agent_id=A, target_agent_id=B, mode=mode, dry_run=True)
    assert contents(memory, B) == ["in both"]  # a dry run writes nothing
    done = memory.merge_memories(source_agent_id=A, target_agent_id=B, mode=mode)
    assert {k: v for k, v in dry.items() if k != "dry_run"} == {k: v for k, v in done.items() if k != "dry_run"}
    assert (done["merged_memories"], done["skipped_memories"], done["profile_copied"]) == (1, 1, True)
    assert contents(memory, B) == ["in both", "only in the source"]
    assert contents(memory, A) == (["in both"] if mode == "move" else ["in both", "only in the source"])
    assert failed(memory.merge_memories(source_agent_id=A, target_agent_id=A), "must differ")


def test_recall_with_context_leaves_out_what_the_conversation_holds_and_merges_it_in_time_order(memory: Memory) -> None:
    memory.calibration.set(A, "cosine", 0.0)
    memory.calibration.set(A, "rrf", 0.0)
    memory.store(agent_id=A, content="the boat trip to the lake", timestamp="2025-05-01T10:00:00+00:00")
    memory.store(agent_id=A, content="the boat needs new sails", timestamp="2025-05-03T10:00:00+00:00")
    context = [
        {"role": "user", "content": "the boat needs new sails", "name": "Ana", "timestamp": "2025-05-04T09:00:00Z"},
        {"role": "assistant", "content": "I will remember the boat"},
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": 42},
    ]
    answer = memory.recall_with_context(agent_id=A, query="boat", external_context=context)
    texts = [m["content"] for m in answer["messages"]]
    assert texts.count("the boat needs new sails") == 1  # the stored copy was left out; the turn itself joins
    merged = [m for m in answer["messages"] if m.get("context_type") == "conversation"]
    assert [m["source"] for m in merged] == [
        {"type": "Agent", "id": "self"},
        {"type": "User", "id": "discord:Ana", "name": "Ana"},
    ]
    assert texts[0] == "I will remember the boat"  # undated entries come first
    assert answer["context_filter_only"]["roles"] == ["system"]
    assert answer["context_field_issues"]["entries"] == [{"index": 3, "fields": ["content"]}]


@pytest.mark.parametrize("tool", ["reconstruct", "declare_associations", "traverse"])
def test_the_associative_tools_are_published_and_answer_a_cpersona_call(memory: Memory, tool: str) -> None:
    arguments = {
        "agent_id": A,
        **({"query": "q"} if tool == "reconstruct" else {}),
        **({"entity": "e"} if tool == "traverse" else {}),
    }
    result = memory.call(tool, arguments)
    assert result.get("ok") is not False, result
    assert tool in TOOLS


def test_a_listing_past_its_character_budget_cuts_later_rows_to_previews(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(3):
        memory.store(agent_id=A, content=f"row {i} " + "x" * 900)
    monkeypatch.setattr(read, "MEMORY_LIST_BUDGET", 1000)
    listing = memory.list_memories(agent_id=A)
    first, *rest = listing["memories"]
    assert len(first["content"]) > 900 and "content_truncated" not in first  # the first row is always whole
    assert all(row["content_truncated"] and row["content_len"] > 900 and len(row["content"]) == 500 for row in rest)
    assert listing["budget_chars"] == 1000


# -- access ---------------------------------------------------------------------------------------------


def test_an_omitted_agent_id_on_store_is_the_one_agent_the_caller_may_write(memory: Memory) -> None:
    only_a = Principal("one-agent", MappingProxyType({A: WRITE, B: READ}))
    assert memory.call("store", {"content": "whose is this"}, principal=only_a)["result"] == "stored"
    assert contents(memory, A) == ["whose is this"]
    assert failed(memory.store(content="whose is this now"), "'agent_id'")  # the local caller may write any agent


def test_a_caller_without_the_grant_is_denied_and_nothing_is_written(memory: Memory) -> None:
    reader = Principal("reader", MappingProxyType({A: READ}))
    before = snapshot(memory)
    denied: dict[str, Any] = memory.call("store", {"agent_id": A, "content": "no"}, principal=reader)
    assert (denied["ok"], denied["error"], denied["required"], denied["agent_id"]) == (
        False,
        "permission_denied",
        WRITE,
        A,
    )
    assert memory.call("list_memories", {"agent_id": ""}, principal=reader)["error"] == "permission_denied"
    assert memory.call("recall", {"agent_id": A, "query": ""}, principal=reader)["messages"] == []
    assert snapshot(memory) == before


def test_an_associations_rider_is_declared_against_the_stored_memory_and_never_fails_the_store(
    memory: Memory,
) -> None:
    stored = memory.store(
        agent_id=A,
        content="Ana runs the Osaka office",
        associations={"entities": [{"name": "Osaka office", "aliases": ["Kansai branch"]}]},
    )
    assert stored["result"] == "stored" and stored["associations"]["result"] == "declared"
    malformed = memory.store(agent_id=A, content="Bo runs the Kyoto office", associations={"entities": "Kyoto"})
    assert malformed["result"] == "stored" and malformed["associations"]["ok"] is False
    assert "associations" not in memory.store(agent_id=A, content="no rider here")
