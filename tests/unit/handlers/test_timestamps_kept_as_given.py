"""A store's timestamp in another format is kept as given, the row's time is its store time, and check_health
reports it (docs/tools.md#timestamps)."""

from __future__ import annotations

import pytest

from cuedrecall.api import Memory
from cuedrecall.clock import to_epoch
from tests.conftest import NOW, failed, snapshot

A = "agent-a"


@pytest.mark.parametrize("stamp", ["t", "last tuesday", "11/01/2025", "2025-13-45T99:00:00Z", ""])
def test_a_timestamp_in_another_format_is_kept_and_the_row_is_timed_by_its_store(memory: Memory, stamp: str) -> None:
    stored = memory.store(agent_id=A, message={"content": "a note with its own clock", "timestamp": stamp})
    assert stored["result"] == "stored"
    row = memory.list_memories(agent_id=A)["memories"][0]
    assert row["timestamp"] == stamp  # as given
    record = memory.store_.records([stored["ref"]])[stored["ref"]]
    assert record.ts_epoch == to_epoch(NOW)  # the store time: recall ages it and a time cue places it by this


def test_the_top_level_timestamp_is_kept_the_same_way(memory: Memory) -> None:
    stored = memory.store(agent_id=A, content="a note from yesterday-ish", timestamp="yesterday-ish")
    assert stored["result"] == "stored"
    assert memory.list_memories(agent_id=A)["memories"][0]["timestamp"] == "yesterday-ish"


def test_an_iso_timestamp_still_times_its_row(memory: Memory) -> None:
    stored = memory.store(agent_id=A, content="a note from March", timestamp="2025-03-01T10:00:00+00:00")
    assert memory.store_.records([stored["ref"]])[stored["ref"]].ts_epoch == to_epoch("2025-03-01T10:00:00+00:00")


def test_a_timestamp_that_is_not_a_string_is_refused_naming_it(memory: Memory) -> None:
    before = snapshot(memory)
    result = memory.store(agent_id=A, message={"content": "x", "timestamp": 1730000000})
    assert failed(result, "message.timestamp") and result["result"] == "rejected"
    assert snapshot(memory) == before


def test_check_health_reports_the_drift_and_repairs_nothing(memory: Memory) -> None:
    memory.store(agent_id=A, content="an ordinary note", timestamp="2025-03-01T10:00:00+00:00")
    memory.store(agent_id=A, content="a note in Tokyo time", timestamp="2025-03-01T19:00:00+09:00")
    odd = memory.store(agent_id=A, message={"content": "a note with its own clock", "timestamp": "t"})
    before = snapshot(memory)
    result = memory.check_health(agent_id=A, fix=True)
    drift = next(i for i in result["issues"] if i["check"] == "timestamp_format_drift")
    assert (drift["utc"], drift["aware"], drift["naive"], drift["count"]) == (1, 1, 1, 2)
    assert drift["severity"] == "info" and odd["ref"] in drift["sample_refs"] and "fixed" not in drift
    invalid = next(i for i in result["issues"] if i["check"] == "invalid_timestamp")
    assert invalid["sample_refs"] == [odd["ref"]]
    assert snapshot(memory) == before  # the texts are kept as given


def test_one_form_throughout_is_no_drift(memory: Memory) -> None:
    for day in ("01", "02"):
        memory.store(agent_id=A, content=f"a note of March {day}", timestamp=f"2025-03-{day}T10:00:00Z")
    result = memory.check_health(agent_id=A, checks=["timestamp_format_drift"])
    assert result["issues"] == [] and result["checks_run"] == ["timestamp_format_drift"]
