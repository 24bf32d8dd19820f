"""Our answers may add keys, never drop or retype one a CPersona client reads (docs/tools.md#cpersonas-behaviour-kept).

The keys and types here are the ones CPersona 2.6's clients and its own tests read: the
health checks' ``fixed`` (a boolean echo of ``fix``), the answers of a paused session's
writes (the real answer's keys), calibrate_threshold's and set_recall_precision's keys.
"""

from __future__ import annotations

from typing import Any

import pytest

from cuedrecall.api import Memory
from tests.conftest import snapshot

A, B = "agent-a", "agent-b"
PAUSE = "no-persist"
CPERSONA_CALIBRATION_KEYS = (
    "ok",
    "sidecar_persisted",
    "scope",
    "agent_id",
    "sampled_embeddings",
    "num_pairs",
    "method",
    "z_factor",
    "percentile",
    "embedding_dim",
    "embedding_model",
    "distribution",
    "null_admit_rate",
    "old_threshold",
    "new_threshold",
)
PRECISION_KEYS = ("ok", "agent_id", "precision", "beta", "cleared", "fused_gate", "calibrate")


def fill(memory: Memory, agent: str = A, count: int = 12) -> None:
    topics = ["garden", "taxes", "piano", "cycling", "bread", "chess", "rust", "birds", "maps", "tea", "sails", "jazz"]
    for topic in topics[:count]:
        memory.store(agent_id=agent, content=f"a thought about {topic} and what came of it")


def paused(memory: Memory) -> None:
    memory.pause_persistence(ttl_seconds=600, session_key=PAUSE)


@pytest.mark.parametrize("tool", ["check_health", "deep_check"])
def test_fixed_is_the_boolean_echo_of_fix_and_the_count_is_fixed_count(memory: Memory, tool: str) -> None:
    fill(memory, count=2)
    looked = memory.call(tool, {"agent_id": A})
    assert looked["fixed"] is False and looked["fixed_count"] == 0
    repaired = memory.call(tool, {"agent_id": A, "fix": True})
    assert repaired["fixed"] is True and isinstance(repaired["fixed_count"], int)
    paused(memory)
    held = memory.call(tool, {"agent_id": A, "fix": True, "session_key": PAUSE})
    assert held["fixed"] is False and held["repairs_skipped"] is True and "no-persist" in held["repairs_skip_reason"]


def test_a_paused_delete_agent_data_answers_every_key_of_the_real_one(memory: Memory) -> None:
    real = memory.delete_agent_data(agent_id="nobody")
    paused(memory)
    fill(memory, count=1)
    before = snapshot(memory)
    held = memory.delete_agent_data(agent_id=A, session_key=PAUSE)
    assert set(real) <= set(held) and held["persisted"] is False
    assert (held["agent_id"], held["deleted_pending_tasks"]) == (A, 0)
    assert snapshot(memory) == before


@pytest.mark.parametrize("mode", ["copy", "move"])
def test_a_paused_merge_answers_every_key_of_the_real_one(memory: Memory, mode: str) -> None:
    fill(memory, count=2)
    real = memory.merge_memories(source_agent_id=A, target_agent_id=B, mode=mode, dry_run=True)
    paused(memory)
    before = snapshot(memory)
    held = memory.merge_memories(source_agent_id=A, target_agent_id=B, mode=mode, session_key=PAUSE)
    assert set(real) <= set(held) and held["persisted"] is False and held["merged_memories"] == 0
    assert snapshot(memory) == before


def test_calibrate_answers_cpersona_s_keys_and_so_does_its_paused_answer(memory: Memory) -> None:
    fill(memory)
    real = memory.calibrate_threshold(agent_id=A, method="percentile", percentile=90)
    assert real["ok"] is True and set(CPERSONA_CALIBRATION_KEYS) <= set(real)
    assert (real["scope"], real["percentile"], real["z_factor"]) == ("per_agent", 0.9, 1.0)
    assert real["new_threshold"] == real["new_thresholds"]["cosine"] and isinstance(real["old_threshold"], float)
    paused(memory)
    held = memory.calibrate_threshold(agent_id="", method="zscore", z_factor=2.0, session_key=PAUSE)
    assert set(CPERSONA_CALIBRATION_KEYS) <= set(held) and "sample_size" not in held
    assert (held["persisted"], held["sidecar_persisted"], held["scope"], held["z_factor"]) == (
        False,
        False,
        "global",
        2.0,
    )
    assert held["new_threshold"] is None
    refused = memory.calibrate_threshold(agent_id=A, percentile=200, session_key=PAUSE)  # still checked
    assert refused["ok"] is False and "percentile" in refused["error"]


def test_set_recall_precision_answers_its_keys_paused_or_not(memory: Memory) -> None:
    fill(memory)
    real = memory.set_recall_precision(agent_id=A, precision="lenient")
    assert real["ok"] is True and set(PRECISION_KEYS) <= set(real) and "fused_gate" in real
    paused(memory)
    held: dict[str, Any] = memory.set_recall_precision(agent_id=A, precision="strict", session_key=PAUSE)
    assert set(PRECISION_KEYS) <= set(held) and held["persisted"] is False
    assert (held["precision"], held["beta"], held["cleared"]) == ("strict", 2.0, False)
    assert memory.get_recall_precision(agent_id=A)["precision"] == "lenient"  # nothing applied


def test_a_pause_longer_than_a_day_is_moved_to_a_day(memory: Memory) -> None:
    answer = memory.pause_persistence(ttl_seconds=10_000_000, session_key=PAUSE)
    assert answer["paused"] is True and answer["ttl_seconds"] == 86_400
