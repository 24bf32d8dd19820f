"""check_health, deep_check and get_session_findings: each check reports its rule, and a fix repairs exactly that."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cuedrecall.api import Memory
from cuedrecall.handlers import health
from cuedrecall.handlers.health import run as health_run
from cuedrecall.handlers.rows import memory_row
from cuedrecall.store.base import MEMORY, Scope, Threshold, make_ref
from tests.conftest import NOW, failed, make_settings, open_memory, snapshot

A, B = "agent-a", "agent-b"


@pytest.fixture
def memory(db_path: Path) -> Iterator[Memory]:
    """A store whose agents have profiles, so missing_profile stays quiet unless a test wants it."""
    with open_memory(db_path) as m:
        for agent in (A, B):
            m.update_profile(agent_id=agent, profile=f"the profile of {agent}")
        yield m


def insert(memory: Memory, content: str, agent: str = A, vector: Any = "embed", **columns: Any) -> int:
    """A memory row written straight through the store, past the tools' checks (what an old import could leave)."""
    fields = {
        "project_id": "",
        "channel": "",
        "msg_id": "",
        "source": {},
        "timestamp": NOW,
        "metadata": {},
        "created_at": NOW,
    }
    locked = columns.pop("locked", False)
    fields.update(columns)
    made = memory.embed([content])[0] if isinstance(vector, str) else vector
    row = memory_row(agent_id=agent, content=content, vector=made, model=memory.embedder.model, locked=locked, **fields)
    with memory.store_.write() as conn:
        return memory.store_.insert_memory(conn, row)


def issue(result: dict[str, Any], check: str) -> dict[str, Any] | None:
    return next((i for i in result["issues"] if i["check"] == check), None)


def vector_refs(memory: Memory, agent: str, query: str) -> set[str]:
    """What the vector arm finds for the query over the agent's whole store (any score)."""
    hits = memory.store_.vector_near(Scope(agent), memory.embed([query])[0], floor=-1.0, depth=100, window=1000)
    return {hit.ref for hit in hits}


def keyword_refs(memory: Memory, agent: str, term: str) -> set[str]:
    return {hit.ref for hit in memory.store_.memory_keyword(Scope(agent), [term], term, depth=50)}


# -- check_health ----------------------------------------------------------------------------------


def test_a_healthy_store_reports_no_issue_and_counts_its_rows(memory: Memory) -> None:
    memory.store(agent_id=A, content="a plain memory about tea")
    memory.archive_episode(agent_id=A, summary="a session about tea")
    result = memory.check_health(agent_id="")
    assert result["issues"] == [] and result["status"] == "healthy" and result["fixed"] is False
    # blocks are not built under the test settings: missing_blocks is not run, and the answer says so
    assert result["checks_run"] == [name for name in health.HEALTH_CHECKS if name != "missing_blocks"]
    assert list(result["not_run"]) == ["missing_blocks"]
    assert result["stats"] == {"memories": 1, "episodes": 1, "embedded_memories": 1, "embedded_episodes": 1}
    assert result["total_memories"] == 1
    assert result["severity_summary"] == {"info": 0, "warn": 0, "critical": 0}


def test_rows_stored_without_an_embedder_are_reported_and_fix_embeds_them_so_vector_recall_finds_them(
    db_path: Path,
) -> None:
    with open_memory(db_path, settings=make_settings(embedding_mode="none")) as before:
        refs = [before.store(agent_id=A, content=f"note {i} about the harbour cranes")["ref"] for i in range(3)]
        episode = before.archive_episode(agent_id=A, summary="a walk along the harbour")["ref"]
        quiet = before.check_health(agent_id="")["issues"]  # no embedder: a row without a vector is normal
        assert not {i["check"] for i in quiet} & {"null_embedding", "null_episode_embedding"}
    with open_memory(db_path) as memory:
        found = memory.check_health(agent_id=A)
        assert issue(found, "null_embedding")["count"] == 3
        assert issue(found, "null_embedding")["sample_refs"] == refs
        assert issue(found, "null_episode_embedding")["sample_refs"] == [episode]
        assert found["status"] == "degraded" and (found["fixed"], found["fixed_count"]) == (False, 0)
        assert vector_refs(memory, A, "harbour cranes") == set()
        fixed = memory.check_health(agent_id=A, fix=True)
        assert issue(fixed, "null_embedding")["fixed"] == 3 and issue(fixed, "null_episode_embedding")["fixed"] == 1
        assert (fixed["fixed"], fixed["fixed_count"]) == (True, 4) and fixed["status"] == "healthy"
        assert fixed["stats"]["embedded_memories"] == 3 and fixed["stats"]["embedded_episodes"] == 1
        assert vector_refs(memory, A, "harbour cranes") == {*refs, episode}
        assert issue(memory.check_health(agent_id=A), "null_embedding") is None


def test_a_repair_run_embeds_at_most_its_budget_and_reports_what_remains(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_memory(db_path, settings=make_settings(embedding_mode="none")) as before:
        for i in range(7):
            before.store(agent_id=A, content=f"unembedded note {i}")
    monkeypatch.setattr(health_run, "EMBED_BUDGET", 3)
    with open_memory(db_path) as memory:
        first = issue(memory.check_health(agent_id=A, fix=True, checks=["null_embedding"]), "null_embedding")
        assert (first["count"], first["fixed"], first["remaining"]) == (7, 3, 4)
        second = memory.check_health(agent_id=A, fix=True, checks=["null_embedding"])
        assert issue(second, "null_embedding")["remaining"] == 1 and second["status"] == "degraded"


def test_a_memory_missing_from_the_full_text_index_is_reported_and_a_rebuild_lets_keyword_recall_find_it(
    memory: Memory,
) -> None:
    kept = memory.store(agent_id=A, content="a zebra crossing by the school")
    lost = memory.store(agent_id=A, content="the zebra at the city zoo")
    memory.store_._conn.execute(  # behind the store's back: drop the row's full-text entry
        "INSERT INTO memories_fts(memories_fts, rowid, content) VALUES ('delete', ?, ?)",
        (lost["id"], "the zebra at the city zoo"),
    )
    assert keyword_refs(memory, A, "zebra") == {kept["ref"]}
    found = issue(memory.check_health(agent_id=A), "fts_integrity")
    assert found["count"] == 1 and found["sample_refs"] == [lost["ref"]] and found["severity"] == "warn"
    fixed = memory.check_health(agent_id=A, fix=True)
    assert issue(fixed, "fts_integrity")["fixed"] == 1 and fixed["status"] == "healthy"
    assert keyword_refs(memory, A, "zebra") == {kept["ref"], lost["ref"]}


def test_a_full_text_entry_holding_another_text_than_its_row_is_seen_by_the_integrity_check_and_rebuilt(
    memory: Memory,
) -> None:
    row = memory.store(agent_id=A, content="the quiet lighthouse keeper")
    conn = memory.store_._conn
    conn.execute(
        "INSERT INTO memories_fts(memories_fts, rowid, content) VALUES ('delete', ?, ?)",
        (row["id"], "the quiet lighthouse keeper"),
    )
    conn.execute("INSERT INTO memories_fts(rowid, content) VALUES (?, ?)", (row["id"], "a noisy quokka"))
    assert keyword_refs(memory, A, "quokka") == {row["ref"]}  # the entry lies about the row
    found = issue(memory.check_health(agent_id=""), "fts_integrity")
    assert found["count"] == 1 and "integrity check" in found["detail"]
    memory.check_health(agent_id="", fix=True, checks=["fts_integrity"])
    assert keyword_refs(memory, A, "quokka") == set()
    assert keyword_refs(memory, A, "lighthouse") == {row["ref"]}


def test_a_vector_index_that_disagrees_with_the_rows_is_reported_and_rebuilt(memory: Memory) -> None:
    refs = [memory.store(agent_id=A, content=f"violin lesson number {i}")["ref"] for i in range(3)]
    dropped = refs[1]
    memory.store_._indexes[MEMORY].remove(int(dropped.split(":")[1]))  # the index loses a row the table holds
    assert dropped not in vector_refs(memory, A, "violin lesson")
    found = issue(memory.check_health(agent_id=A), "vector_index")
    assert found["count"] == 1 and found["sample_refs"] == [dropped]
    fixed = memory.check_health(agent_id=A, fix=True)
    assert issue(fixed, "vector_index")["fixed"] == 1 and fixed["status"] == "healthy"
    assert vector_refs(memory, A, "violin lesson") == set(refs)


def test_duplicate_content_fix_keeps_the_lowest_id_and_never_deletes_a_locked_copy(memory: Memory) -> None:
    first = insert(memory, "buy oat milk")
    locked = insert(memory, "buy oat milk", locked=True)
    extra = insert(memory, "buy oat milk")
    other_channel = insert(memory, "buy oat milk", channel="work")  # another channel: not a duplicate
    found = issue(memory.check_health(agent_id=A), "duplicate_content")
    assert found["count"] == 2 and found["sample_refs"] == [make_ref(MEMORY, locked), make_ref(MEMORY, extra)]
    fixed = issue(memory.check_health(agent_id=A, fix=True), "duplicate_content")
    assert fixed["fixed"] == 1 and fixed["remaining"] == 1  # the locked copy stays
    left = {row["id"] for row in memory.list_memories(agent_id=A, limit=50)["memories"]}
    assert left == {first, locked, other_channel}


def test_an_unknown_check_name_is_refused_naming_it_and_nothing_changes(db_path: Path) -> None:
    with open_memory(db_path, settings=make_settings(embedding_mode="none")) as before:
        before.store(agent_id=A, content="an unembedded note")
    with open_memory(db_path) as memory:
        state = snapshot(memory)
        result = memory.check_health(agent_id=A, fix=True, checks=["null_embedding", "no_such_check"])
        assert failed(result, "checks") and "no_such_check" in result["error"]
        assert "null_embedding" in result["error"]  # the known names are listed
        assert snapshot(memory) == state
        assert failed(memory.deep_check(agent_id=A, fix=True, checks=["bogus"]), "checks")
        assert snapshot(memory) == state


def test_named_checks_run_in_the_registry_order_whatever_order_they_are_named_in(memory: Memory) -> None:
    result = memory.check_health(agent_id=A, checks=["missing_profile", "null_embedding", "null_embedding"])
    assert result["checks_run"] == ["null_embedding", "missing_profile"]


def test_a_paused_sessions_fix_repairs_nothing_and_says_so(db_path: Path) -> None:
    with open_memory(db_path, settings=make_settings(embedding_mode="none")) as before:
        before.store(agent_id=A, content="an unembedded note")
    with open_memory(db_path) as memory:
        memory.pause_persistence(ttl_seconds=60, session_key="s1")
        state = snapshot(memory)
        paused = memory.check_health(agent_id=A, fix=True, session_key="s1")
        assert paused["repairs_skipped"] is True and "paused" in paused["repairs_skip_reason"]
        assert (paused["fixed"], paused["fixed_count"]) == (False, 0) and "fixed" not in issue(paused, "null_embedding")
        assert memory.store_.maintenance_counts(A)["embedded_memories"] == 0 and snapshot(memory) == state
        deep = memory.deep_check(agent_id=A, fix=True, session_key="s1")
        assert deep["repairs_skipped"] is True and deep["fixed"] is False and deep["fixed_count"] == 0
        other = memory.check_health(agent_id=A, fix=True, session_key="s2")  # another session is not paused
        assert "repairs_skipped" not in other and (other["fixed"], other["fixed_count"]) == (True, 1)


def test_a_check_for_one_agent_neither_reports_nor_repairs_another_agents_rows(db_path: Path) -> None:
    with open_memory(db_path, settings=make_settings(embedding_mode="none")) as before:
        mine = before.store(agent_id=A, content="my unembedded note")["ref"]
        before.store(agent_id=B, content="their unembedded note")
    with open_memory(db_path, settings=make_settings(max_content_length=20)) as memory:
        insert(memory, "their copy", agent=B)
        insert(memory, "their copy", agent=B)
        insert(memory, "x" * 50, agent=B)
        result = memory.check_health(agent_id=A, fix=True)
        assert [i["check"] for i in result["issues"]] == ["null_embedding", "missing_profile"]
        assert issue(result, "null_embedding")["sample_refs"] == [mine]
        assert result["stats"]["memories"] == 1
        theirs = memory.check_health(agent_id=B)
        assert {i["check"] for i in theirs["issues"]} >= {"null_embedding", "duplicate_content", "oversized_content"}
        assert memory.check_health(agent_id="")["total_memories"] == 5


def test_vectors_of_another_width_are_critical_and_fix_embeds_them_again(memory: Memory) -> None:
    narrow = insert(memory, "an old model's vector", vector=np.ones(8, dtype=np.float32) / np.sqrt(8))
    memory.store(agent_id=A, content="a current vector")
    found = memory.check_health(agent_id=A)
    assert issue(found, "embedding_dimension")["severity"] == "critical" and found["status"] == "unhealthy"
    assert issue(found, "embedding_dimension")["sample_refs"] == [make_ref(MEMORY, narrow)]
    fixed = memory.check_health(agent_id=A, fix=True)
    assert issue(fixed, "embedding_dimension")["fixed"] == 1 and fixed["status"] == "healthy"
    assert memory.store_.memory_row(narrow)["embedding"].shape == (384,)
    assert make_ref(MEMORY, narrow) in vector_refs(memory, A, "an old model's vector")


def test_oversized_content_is_truncated_to_the_cap_and_a_locked_memory_is_kept(db_path: Path) -> None:
    with open_memory(db_path, settings=make_settings(max_content_length=40)) as memory:
        memory.update_profile(agent_id=A, profile="p")
        long_id = insert(memory, "word " * 20)
        locked_id = insert(memory, "lock " * 20, locked=True)
        found = issue(memory.check_health(agent_id=A), "oversized_content")
        assert found["count"] == 2 and found["severity"] == "warn"
        fixed = issue(memory.check_health(agent_id=A, fix=True), "oversized_content")
        assert (fixed["fixed"], fixed["remaining"]) == (1, 1)
        assert memory.store_.memory_row(long_id)["content"] == ("word " * 20)[:40]
        assert memory.store_.memory_row(locked_id)["content"] == "lock " * 20


def test_empty_content_is_reported_and_fix_deletes_it_unless_locked(memory: Memory) -> None:
    empty = insert(memory, "  \n ", vector=None)
    locked = insert(memory, "", vector=None, locked=True)
    found = issue(memory.check_health(agent_id=A), "empty_content")
    assert found["count"] == 2
    fixed = issue(memory.check_health(agent_id=A, fix=True), "empty_content")
    assert fixed["fixed"] == 1 and fixed["remaining"] == 1
    assert memory.store_.memory_row(empty) is None and memory.store_.memory_row(locked) is not None


def test_unreadable_timestamps_and_foreign_source_types_are_reported_and_never_changed(memory: Memory) -> None:
    bad_time = insert(memory, "a note from some day", timestamp="last tuesday")
    bad_source = insert(memory, "a note from a bot", source={"type": "Bot"})
    insert(memory, "a note from a user", source={"type": "User", "id": "u1"})
    insert(memory, "a note from an id only", source={"id": "discord:1"})
    state = snapshot(memory)
    result = memory.check_health(agent_id=A, fix=True)
    assert issue(result, "invalid_timestamp")["sample_refs"] == [make_ref(MEMORY, bad_time)]
    assert issue(result, "invalid_source_type")["sample_refs"] == [make_ref(MEMORY, bad_source)]
    assert "fixed" not in issue(result, "invalid_timestamp") and snapshot(memory) == state
    drift = issue(result, "timestamp_format_drift")  # CPersona's name: one row's text is not in the others' form
    assert drift["sample_refs"] == [make_ref(MEMORY, bad_time)] and (drift["utc"], drift["naive"]) == (3, 1)
    assert result["status"] == "degraded"  # a timestamp no time cue can read is a warning


def test_a_missing_profile_is_info_and_never_degrades_the_status(db_path: Path) -> None:
    with open_memory(db_path) as memory:
        memory.store(agent_id="lonely", content="a memory without a profile")
        result = memory.check_health(agent_id="")
        assert issue(result, "missing_profile")["severity"] == "info"
        assert result["severity_summary"]["info"] == 1 and result["status"] == "healthy"


# -- deep_check --------------------------------------------------------------------------------------


def test_deep_check_finds_near_duplicate_pairs_and_changes_nothing_for_them(memory: Memory) -> None:
    one = memory.store(agent_id=A, content="the cat sat on the mat")["ref"]
    two = memory.store(agent_id=A, content="The cat sat on the mat!")["ref"]
    memory.store(agent_id=A, content="quarterly tax forms are due in april")
    memory.store(agent_id=B, content="the cat sat on the mat")  # another agent's copy is not compared
    state = snapshot(memory)
    result = memory.deep_check(agent_id=A, fix=True, checks=["near_duplicate"])
    near = result["results"]["near_duplicate"]
    assert near["count"] == 1 and near["pairs"][0]["refs"] == [one, two] and near["pairs"][0]["cosine"] >= 0.97
    assert "fixed" not in near and result["fixed_count"] == 0 and snapshot(memory) == state


def test_deep_check_fix_normalizes_whitespace_and_keeps_a_locked_memory(memory: Memory) -> None:
    messy = insert(memory, "  two  spaces\there \n\n\n\nand   far lines   \n  indented  line ")
    locked = insert(memory, "locked   memory ", locked=True)
    tidy = insert(memory, "already tidy\n\nwith a blank line\n  and indentation")
    found = memory.deep_check(agent_id=A)["results"]["unnormalized_content"]
    assert found["count"] == 2 and found["sample_refs"] == [make_ref(MEMORY, messy), make_ref(MEMORY, locked)]
    fixed = memory.deep_check(agent_id=A, fix=True, checks=["unnormalized_content"])
    assert fixed["results"]["unnormalized_content"]["fixed"] == 1 and fixed["fixed_count"] == 1
    assert memory.store_.memory_row(messy)["content"] == "two spaces here\n\nand far lines\n  indented line"
    assert memory.store_.memory_row(locked)["content"] == "locked   memory "
    assert memory.store_.memory_row(tidy)["content"] == "already tidy\n\nwith a blank line\n  and indentation"
    assert keyword_refs(memory, A, "spaces here") == {make_ref(MEMORY, messy)}  # the full-text entry followed


def test_deep_check_reports_vectors_not_of_unit_length_and_fix_embeds_them_again(memory: Memory) -> None:
    long_vector = insert(memory, "a vector stored twice too long", vector=2 * memory.embed(["x"])[0])
    memory.store(agent_id=A, content="a unit vector")
    found = memory.deep_check(agent_id=A, checks=["embedding_norm"])["results"]["embedding_norm"]
    assert found["count"] == 1 and found["sample_refs"] == [make_ref(MEMORY, long_vector)]
    memory.deep_check(agent_id=A, fix=True, checks=["embedding_norm"])
    assert abs(float(np.linalg.norm(memory.store_.memory_row(long_vector)["embedding"])) - 1.0) < 1e-3


def test_deep_check_reports_short_anonymous_orphaned_and_stale_calibration(memory: Memory) -> None:
    short = memory.store(agent_id=A, content="ok then")["ref"]
    memory.store(agent_id=A, content="a long enough memory from the user", source="user")
    orphan = memory.archive_episode(
        agent_id=A, summary="long ago", start_time="2020-01-01T00:00:00+00:00", end_time="2020-01-01T01:00:00+00:00"
    )["ref"]
    memory.archive_episode(
        agent_id=A, summary="today", start_time="2025-11-01T11:00:00+00:00", end_time="2025-11-01T13:00:00+00:00"
    )
    memory.archive_episode(agent_id=A, summary="no start given")
    with memory.store_.write() as conn:
        memory.store_.set_thresholds(conn, [Threshold(A, "cosine", 0.3, "an-old-model", "cued-v0.0")])
    results = memory.deep_check(agent_id=A)["results"]
    assert results["short_content"]["sample_refs"] == [short]
    assert results["anonymous_source"]["sample_refs"] == [short]
    assert results["orphaned_episodes"]["sample_refs"] == [orphan]
    assert results["calibration_staleness"]["count"] == 1
    assert memory.deep_check(agent_id=B)["results"]["calibration_staleness"]["count"] == 0


def test_a_deep_check_cpersona_has_and_we_do_not_is_listed_as_not_run_and_an_unknown_one_still_refused(
    memory: Memory,
) -> None:
    memory.store(agent_id=A, content="ok then")
    state = snapshot(memory)
    result = memory.deep_check(agent_id=A, fix=True, checks=["stale_profile", "short_content"])
    assert result["not_run"] == {"stale_profile": "not implemented in cuedrecall"}
    assert result["checks_run"] == ["short_content"] and list(result["results"]) == ["short_content"]
    only = memory.deep_check(agent_id=A, checks=["stale_profile"])  # naming only it runs nothing, not everything
    assert only["checks_run"] == [] and only["results"] == {} and only["not_run"] == result["not_run"]
    assert "not_run" not in memory.deep_check(agent_id=A)  # all checks: nothing was named that is not run
    refused = memory.deep_check(agent_id=A, checks=["stale_profile", "stale_everything"])
    assert failed(refused, "checks") and "stale_everything" in refused["error"]
    assert "'stale_profile'" not in refused["error"].split("(known")[0]  # only the name neither knows is refused
    assert snapshot(memory) == state


# -- get_session_findings ---------------------------------------------------------------------------


def test_session_findings_cap_each_kind_list_the_capped_kinds_and_repair_nothing(db_path: Path) -> None:
    with open_memory(db_path, settings=make_settings(embedding_mode="none")) as before:
        for i in range(4):
            before.store(agent_id=A, content=f"unembedded note {i}")
    with open_memory(db_path) as memory:
        insert(memory, "a note with an odd time", timestamp="soon")
        state = snapshot(memory)
        result = memory.get_session_findings(per_kind_limit=2, include_summary=True)
        by_kind = {
            kind: [
                {k: v for k, v in f.items() if k not in ("kind", "severity")}
                for f in result["findings"]
                if f["kind"] == kind
            ]
            for kind in result["counts_by_kind"]
        }
        assert by_kind["null_embedding"] == [{"ref": "mem:1"}, {"ref": "mem:2"}]
        assert len(by_kind["invalid_timestamp"]) == 1
        assert result["counts_by_kind"]["null_embedding"] == 4 and result["per_kind_limit"] == 2
        assert {f["severity"] for f in result["findings"] if f["kind"] == "null_embedding"} == {"warn"}
        assert sum(result["counts_by_severity"].values()) == result["total"]
        assert result["capped_kinds"] == ["null_embedding"]
        # four unembedded, one bad time (unreadable, and in another form than the rest), one agent without a profile
        assert result["total"] == 4 + 1 + 1 + 1
        assert "null_embedding" in result["summary"] and "\n" not in result["summary"]
        assert snapshot(memory) == state
        assert "summary" not in memory.get_session_findings(per_kind_limit=2, include_summary=False)
