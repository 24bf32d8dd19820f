"""Every trace the recorder writes has the shape ``recall/trace_schema.py`` declares, and nothing else."""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_type_hints

from cuedrecall.recall import trace_schema as schema
from tests.conftest import open_memory


def _keys(typed: type) -> set[str]:
    return set(get_type_hints(typed))


def _traced(tmp_path: Path, **arguments: Any) -> dict[str, Any]:
    with open_memory(tmp_path / "schema.db") as memory:
        for day in range(1, 21):
            memory.store(
                agent_id="a",
                message={
                    "content": f"standup {day}: the release and bug-{day}",
                    "timestamp": f"2025-06-{day:02d}T09:00:00+00:00",
                },
            )
        memory.archive_episode(agent_id="a", summary="release planning", keywords="release")
        memory.calibration.set("a", "cosine", 0.05)
        return memory.recall(agent_id="a", query="what happened with the release", trace=True, **arguments)["trace"]


def test_a_cued_traced_recall_writes_only_declared_sections_in_their_declared_shapes(tmp_path: Path) -> None:
    trace = _traced(
        tmp_path,
        time_cue={"after": "2025-06-01", "before": "2025-06-08", "confidence": "likely"},
        exclude_contents=["standup 3: the release and bug-3"],
    )
    assert set(trace) <= set(schema.SECTIONS)
    assert {"arms", "fusion", "gate", "order", "stages", "cue", "coverage", "excluded"} <= set(trace)
    assert trace["trace_version"] == schema.TRACE_VERSION
    assert set(trace["policy"]) == _keys(schema._PolicyBase)  # policy.propagation only where that seat ran
    for hits in trace["arms"].values():
        assert all(set(hit) == _keys(schema.ArmHit) for hit in hits)
    assert all(set(row) == _keys(schema.FusionRow) for row in trace["fusion"])
    gate = trace["gate"]
    assert _keys(schema._GateBase) <= set(gate) <= _keys(schema.GateSection)
    for decision in gate["decisions"]:
        assert _keys(schema._GateDecisionBase) <= set(decision) <= _keys(schema.GateDecision)
    assert set(trace["order"]) == _keys(schema.OrderSection)
    assert set(trace["cue"]) == _keys(schema.CueSection)
    assert all(set(stage) <= _keys(schema.Stage) for stage in trace["stages"])
    assert all(
        _keys(schema._ReservationBase) <= set(item) <= _keys(schema.Reservation) for item in trace["reservation"]
    )


def test_an_uncued_recall_records_no_cue_sections(tmp_path: Path) -> None:
    trace = _traced(tmp_path)
    assert "cue" not in trace and "cue_ignored" not in trace
    assert trace["stages"] == [{"stage": 0, "searched": "all arms", "next": None}]
