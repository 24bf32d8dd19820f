"""migrate_channel_axis answers truthfully for our schema (docs/tools.md#migrate_channel_axis): the channel axis is
part of it, so nothing needs migrating; it counts what it looked at, counts rows an export brought in under
CPersona's bridge channel in CPersona's buckets, and writes nothing."""

from __future__ import annotations

from typing import Any

from cuedrecall.api import Memory
from cuedrecall.handlers.rows import memory_row
from tests.conftest import NOW, snapshot


def _bridge_row(memory: Memory, agent: str, content: str, metadata: Any) -> int:
    """A memory filed under channel discord, as a CPersona export of its older versions brings one in."""
    row = memory_row(
        agent_id=agent,
        project_id="",
        channel="discord",
        msg_id="",
        content=content,
        source={},
        timestamp=NOW,
        metadata=metadata,
        created_at=NOW,
        vector=None,
        model="",
    )
    with memory.store_.write() as conn:
        return memory.store_.insert_memory(conn, row)


def test_nothing_needs_migrating_and_the_answer_counts_what_it_looked_at(memory: Memory) -> None:
    memory.store(agent_id="a", content="a fact in the shared channel")
    memory.store(agent_id="a", content="a fact in a channel", channel="123456")
    memory.archive_episode(agent_id="b", summary="a session")
    before = snapshot(memory)
    answer = memory.migrate_channel_axis(dry_run=False)
    assert answer["ok"] is True and answer["needed"] is False and "channel" in answer["schema"]
    assert (answer["agents"], answer["memories"], answer["episodes"]) == (2, 2, 1)
    assert answer["channels"] == ["", "123456"]
    assert answer["recoverable_total"] == answer["unrecoverable_total"] == answer["migrated"] == 0
    assert answer["recoverable_by_channel"] == [] and answer["samples"] == [] and answer["dry_run"] is True
    assert snapshot(memory) == before


def test_one_agents_counts_only(memory: Memory) -> None:
    memory.store(agent_id="a", content="one")
    memory.store(agent_id="b", content="two")
    answer = memory.migrate_channel_axis(agent_id="b")
    assert answer["agent_id"] == "b" and (answer["agents"], answer["memories"]) == (1, 1)


def test_rows_under_the_bridge_channel_are_counted_in_cpersonas_buckets_and_left_where_they_are(
    memory: Memory,
) -> None:
    recoverable = _bridge_row(memory, "a", "said in a guild channel", {"session_id": "9876543210:42:0"})
    _bridge_row(memory, "a", "said somewhere unknown", {})
    broken = _bridge_row(memory, "a", "metadata that is not JSON", {})
    with memory.store_.write() as conn:  # a column CPersona wrote that is not JSON, carried as it was
        memory.store_.update_memory(conn, broken, {"metadata": "{not json"})
    before = snapshot(memory)
    answer = memory.migrate_channel_axis(agent_id="a")
    assert answer["ok"] is True and answer["recoverable_total"] == 1 and answer["unrecoverable_total"] == 2
    assert answer["recoverable_by_channel"] == [{"channel": "9876543210", "count": 1}]
    assert answer["samples"] == [
        {"id": recoverable, "recovered_channel": "9876543210", "session_id": "9876543210:42:0"}
    ]
    assert answer["invalid_metadata_total"] == 1 and answer["invalid_metadata_ids"] == [broken]
    assert "discord" in answer["note"] and answer["migrated"] == 0
    moved = memory.migrate_channel_axis(agent_id="a", dry_run=False, globalize_unrecoverable=True)
    assert moved["ok"] is False and "does not move rows" in moved["error"]
    assert moved["migrated"] == moved["globalized"] == 0 and moved["globalize_unrecoverable"] is True
    assert snapshot(memory) == before
