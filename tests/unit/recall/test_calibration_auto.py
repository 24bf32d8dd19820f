"""Calibration on growth (issue 13): an agent's gate calibrates itself in the background as its memories reach
50, 200 and 1,000, and after a model change; the trace's config says which calibration a recall applied."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from cuedrecall.api import Memory
from cuedrecall.handlers import calibrate
from cuedrecall.recall.calibration import AUTO_MILESTONES, due_milestone, next_milestone
from cuedrecall.store.base import Threshold
from tests.conftest import make_settings, open_memory

A = "grower"
TOPICS = (
    "bike brake pads chain",
    "garden basil tomato pot",
    "checkout coupon ticket review",
    "flight hotel hike holiday",
    "dentist invoice insurance appointment",
)


def growing(path: Path, **overrides: Any) -> Memory:
    return open_memory(path, settings=make_settings(calibrate_on_growth=True, **overrides), background=False)


def fill(memory: Memory, start: int, stop: int, agent: str = A) -> None:
    """Memories start..stop-1, five topics in turn, a minute apart (so calibration has neighbours in time)."""
    for i in range(start, stop):
        stamp = f"2025-03-{1 + i // 600:02d}T{(i // 60) % 10:02d}:{i % 60:02d}:00+00:00"
        out = memory.store(agent_id=agent, content=f"{TOPICS[i % 5]} note {i}", timestamp=stamp)
        assert out["result"] == "stored", out


def config(memory: Memory, agent: str = A) -> dict[str, Any]:
    return memory.recall(agent_id=agent, query="brake pads", trace=True)["trace"]["config"]["calibration"]


def test_the_milestones() -> None:
    assert AUTO_MILESTONES == (50, 200, 1000)
    assert [due_milestone(n, None) for n in (49, 50, 199, 200, 5000)] == [None, 50, 50, 200, 1000]
    assert [due_milestone(n, 50) for n in (50, 199, 200, 1200)] == [None, None, 200, 1000]
    assert due_milestone(1500, 1200) is None  # after the last milestone the gate stays as it is
    assert [next_milestone(m) for m in (None, 49, 50, 999, 1000)] == [50, 50, 200, 1000, None]


def test_a_store_calibrates_itself_at_50_and_200_memories(db_path: Path) -> None:
    with growing(db_path) as memory:
        fill(memory, 0, 49)
        assert memory.store_.pending_tasks(calibrate.TASK) == 0
        assert config(memory) == {"origin": "none", "memories_at": None}
        fill(memory, 49, 50)
        assert memory.store_.pending_tasks(calibrate.TASK) == 1  # queued by the write that reached 50
        assert memory.calibration.thresholds(A) == {}  # measured in the background, not in the write
        assert memory.blocks is not None and memory.blocks.drain() == 1
        assert "cosine" in memory.calibration.thresholds(A)
        assert config(memory) == {"origin": "auto", "memories_at": 50}
        fill(memory, 50, 199)
        assert memory.store_.pending_tasks(calibrate.TASK) == 0
        fill(memory, 199, 200)
        assert memory.blocks.drain() == 1
        assert config(memory) == {"origin": "auto", "memories_at": 200}


def test_a_write_counts_the_agents_memories_once_not_at_every_write(db_path: Path, monkeypatch: Any) -> None:
    counted: list[str] = []
    real = calibrate._memories
    monkeypatch.setattr(calibrate, "_memories", lambda rt, agent: counted.append(agent) or real(rt, agent))
    with growing(db_path) as memory:
        fill(memory, 0, 45)
        assert counted == [A]  # at the agent's first write; then this process's estimate
        fill(memory, 45, 50)
        assert counted == [A, A]  # the estimate reached 50: counted exactly, then queued
        assert memory.store_.pending_tasks(calibrate.TASK) == 1


def test_an_explicit_calibration_is_recorded_and_the_milestones_go_on_from_it(db_path: Path) -> None:
    with open_memory(db_path, background=False) as memory:  # calibration on growth off
        fill(memory, 0, 60)
        assert memory.calibrate_threshold(agent_id=A)["ok"] is True
        assert config(memory) == {"origin": "explicit", "memories_at": 60}
    with growing(db_path) as memory:
        fill(memory, 60, 199)
        assert memory.store_.pending_tasks(calibrate.TASK) == 0  # 50 was passed before the explicit one
        fill(memory, 199, 200)
        assert memory.blocks.drain() == 1
        assert config(memory) == {"origin": "auto", "memories_at": 200}


def test_calibration_on_growth_off_queues_nothing(db_path: Path) -> None:
    with open_memory(db_path, background=False) as memory:  # the tests' settings: off
        fill(memory, 0, 60)
        assert memory.store_.pending_tasks() == 0 and memory.blocks is None
        assert config(memory) == {"origin": "none", "memories_at": None}


def test_a_model_change_queues_a_background_calibration(db_path: Path) -> None:
    with growing(db_path) as memory:
        fill(memory, 0, 60)
        memory.blocks.drain()
        fresh = memory.calibration.thresholds(A)
        with memory.store_.write() as conn:
            memory.store_.set_thresholds(
                conn,
                [
                    Threshold(t.agent_id, t.signal, t.value, "another-model", t.scoring_version)
                    for t in memory.store_.thresholds()
                ],
            )
    with growing(db_path) as memory:
        assert memory.calibration.thresholds(A) == {}  # stale: never applied
        assert memory.store_.pending_tasks(calibrate.TASK) == 1  # queued at the start, not measured in it
        assert memory.blocks.drain() == 1
        assert memory.calibration.thresholds(A) == fresh
        assert config(memory) == {"origin": "auto", "memories_at": 60}
        assert {t.embedding_model for t in memory.store_.thresholds()} == {"hash-384"}


def test_the_runner_thread_calibrates_in_the_background(db_path: Path) -> None:
    with open_memory(db_path, settings=make_settings(calibrate_on_growth=True)) as memory:  # a builder thread
        fill(memory, 0, 50)
        deadline = time.monotonic() + 30
        while not memory.calibration.thresholds(A) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert config(memory) == {"origin": "auto", "memories_at": 50}


def _gate_at(memory: Memory, value: float, *, auto: bool) -> None:
    """A cosine threshold, recorded as an automatic calibration or an explicit one, at 60 memories."""
    cal = memory.calibration
    with memory.store_.write() as conn:
        memory.store_.set_thresholds(conn, [cal.threshold(A, "cosine", value), *cal.stamp(A, auto=auto, memories=60)])


def test_a_standout_match_in_a_small_pool_clears_an_automatic_calibration_but_not_an_explicit_one(
    db_path: Path,
) -> None:
    with open_memory(db_path, background=False) as memory:  # no calibration on growth: the gate is the test's
        fill(memory, 0, 60)
        for auto, origin in ((True, "outlier"), (False, "calibrated")):
            _gate_at(memory, 1.01, auto=auto)  # above any cosine
            trace = memory.recall(agent_id=A, query="bike brake pads chain note 10", trace=True)["trace"]
            assert trace["gate"]["bar"]["cosine"]["origin"] == origin
            best = next(d for d in trace["gate"]["decisions"] if d["signal"] == "cosine")
            assert best["passed"] is (origin == "outlier"), best  # the gate a person chose is kept
