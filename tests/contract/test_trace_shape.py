"""The trace's shape, trace_version 1: every field of docs/trace.md#the-sections is present."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cuedrecall import __version__
from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock
from cuedrecall.demo import load_sample
from cuedrecall.recall.arm_registry import ARMS
from cuedrecall.recall.cue_policy import POLICY, SINGLE_PASS_POLICY
from cuedrecall.recall.gate_policy import POLICY as GATE_POLICY
from cuedrecall.recall.params import resolve_params
from cuedrecall.recall.policy import RELIEF, process_policy
from cuedrecall.recall.request import RecallRequest
from cuedrecall.recall.scoring_version import SCORING_VERSION
from cuedrecall.store.base import Scope
from tests.conftest import NOW, make_settings, open_memory

FIELDS = [
    "trace_version",
    "policy",
    "server_version",
    "scope",
    "request",
    "config",
    "arms",
    "fusion",
    "scoring",
    "gate",
    "autocut",
    "order",
    "reservation",
    "stages",
    "suspected",
    "coverage",
    "timing_ms",
]
# the ordinary arms a recall lists: the word arm is off under make_settings (REPLICA_ARMS) and listed only when on
ORDINARY_ARMS = {arm.name for arm in ARMS.fused if arm.listed}
GATE_REASONS = {"below_gate", "common_words_only", "profile_small_pool", "unscored_volume"}
CUE = {"after": "2025-06-01", "before": "2025-06-30", "confidence": "likely"}


@pytest.fixture(scope="module")
def sample(backend: str) -> Memory:
    memory = Memory(":memory:", settings=make_settings(recall_depth_floor=10), clock=fixed_clock(NOW))
    load_sample(memory)
    return memory


def traced(memory: Memory, **arguments: Any) -> dict[str, Any]:
    response = memory.recall(agent_id="demo", trace=True, **arguments)
    assert response.get("ok") is not False, response
    json.dumps(response["trace"])  # JSON-ready
    return response


def check_common(trace: dict[str, Any], memory: Memory) -> None:
    assert set(FIELDS) <= set(trace), set(FIELDS) - set(trace)
    assert trace["trace_version"] == 1
    assert trace["server_version"] == __version__
    assert trace["scope"] == {"agent_id": "demo", "project_id": None, "channel": "", "source_id": ""}
    request = trace["request"]
    assert {"limit", "depth", "deep", "mode", "confidence_ordering", "prior", "episode_penalty"} <= set(request)
    assert set(request["prior"]) == {"far_weight", "age_rate", "age_floor", "age_anchor"}
    assert request["mode"] == memory.settings.recall_mode
    config = trace["config"]
    assert config == {
        "embedding_mode": "hash",
        "embedding_model": "hash-384",
        "scan_window": memory.settings.max_memories,
        "vector_reach": memory.settings.vector_reach,
        "vector_far_limit": memory.settings.vector_far_limit,
        "fused_gate_enabled": memory.settings.fused_gate_enabled,
        "autocut_enabled": memory.settings.autocut_enabled,
        "gate_relief": memory.settings.gate_relief,
        "calibration": {"origin": "none", "memories_at": None},
    }
    for name, hits in trace["arms"].items():
        assert isinstance(hits, list), name
        for position, hit in enumerate(hits):
            assert set(hit) == {"ref", "rank", "raw"}, (name, hit)
            assert hit["rank"] == position
            assert hit["ref"].split(":")[0] in ("mem", "ep")
    for row in trace["fusion"]:
        assert set(row) == {"ref", "score", "votes"}
        assert row["score"] == pytest.approx(sum(row["votes"].values()), abs=1e-5)
        assert set(row["votes"]) <= ORDINARY_ARMS
    assert isinstance(trace["scoring"], dict)
    gate = trace["gate"]
    assert {"decisions", "calibrated", "heuristic_min", "pool", "gate_fallback"} <= set(gate)
    for d in gate["decisions"]:
        assert {"ref", "signal", "score", "threshold", "origin", "passed"} <= set(d)
        assert ("reason" in d) is (not d["passed"]), d
        if not d["passed"]:
            assert d["reason"] in GATE_REASONS
        assert d["origin"] in ("calibrated", "heuristic", "outlier", "repeats", None)
    autocut = trace["autocut"]
    assert autocut["fired"] in (True, False)
    if autocut["fired"]:
        assert {"at", "dropped"} <= set(autocut)
    order = trace["order"]
    assert set(order) == {"before_cut", "limit", "cut_by_count"}
    assert order["cut_by_count"] == order["before_cut"][order["limit"] :]
    for seat in trace["reservation"]:
        assert {"ref", "kind"} <= set(seat) <= {"ref", "kind", "relieved"}
    assert trace["stages"] and trace["stages"][0]["stage"] == 0
    assert isinstance(trace["suspected"], list)
    coverage = trace["coverage"]
    assert {"normalization", "parts", "covered_by", "uncovered", "records"} <= set(coverage)
    timing = trace["timing_ms"]
    # a mark per stage that ran, in the order they ran
    assert list(timing)[:5] == ["arms", "fusion_and_scoring", "gate", "count", "held_seats"]
    assert {"response", "coverage", "total"} <= set(timing)
    assert list(timing)[-3:] == ["response", "coverage", "total"]
    assert [s["stage"] for s in trace["stages"]] == list(range(len(trace["stages"])))
    assert all(isinstance(v, (int, float)) and v >= 0 for v in timing.values())
    assert timing["total"] >= max(v for k, v in timing.items() if k != "total")


def test_the_trace_without_a_cue(sample: Memory) -> None:
    response = traced(sample, query="bike shop brake pads", limit=3)
    trace = response["trace"]
    check_common(trace, sample)
    assert trace["policy"] == {"scoring": SCORING_VERSION, "process": SINGLE_PASS_POLICY, "gate": GATE_POLICY}
    assert SINGLE_PASS_POLICY == "single-pass-v0"
    assert set(trace["arms"]) == ORDINARY_ARMS
    assert "time_cue" not in trace["request"]
    assert trace["stages"] == [{"stage": 0, "searched": "all arms", "next": None}]
    assert trace["reservation"] == [] and trace["suspected"] == []
    assert trace["request"]["limit"] == 3 and trace["order"]["limit"] == 3
    # every fused row was judged, in the order the gate saw them
    assert {row["ref"] for row in trace["fusion"]} <= {d["ref"] for d in trace["gate"]["decisions"]}
    # the returned rows are the kept ones, best first (the wire order is worst to best)
    refs = [m["ref"] for m in reversed(response["messages"]) if "ref" in m]
    assert refs == trace["order"]["before_cut"][: trace["order"]["limit"]]


def test_the_trace_with_a_cue(sample: Memory) -> None:
    response = traced(sample, query="bike shop brake pads", limit=3, time_cue=CUE)
    trace = response["trace"]
    check_common(trace, sample)
    assert trace["policy"] == {"scoring": SCORING_VERSION, "process": POLICY, "gate": GATE_POLICY}
    assert POLICY == "cued-v0.3"
    assert trace["request"]["time_cue"]["confidence"] == "likely"
    assert "cue" in trace["arms"]
    stage = trace["stages"][0]
    assert {"stage", "searched", "confidence", "period", "found", "next"} <= set(stage)
    assert set(trace["cue"]) == {"bound", "confidence", "lifted", "seated"}
    assert [s["ref"] for s in trace["reservation"]] == trace["cue"]["seated"]
    assert all(s["kind"] == "cue" for s in trace["reservation"])


def test_a_cue_period_that_holds_nothing_is_suspected_and_revised(sample: Memory) -> None:
    trace = traced(
        sample,
        query="bike shop brake pads",
        limit=3,
        time_cue={"after": "2020-01-01", "before": "2020-01-02", "confidence": "sure"},
    )["trace"]
    check_common(trace, sample)
    assert [s["stage"] for s in trace["stages"]] == [0, 1]
    assert trace["stages"][0]["found"] == 0 and trace["stages"][0]["next"]
    assert "cue_stage_1" in trace["arms"]
    assert trace["suspected"][0]["code"] == "CANDIDATE_MISS"
    assert {"stage", "code", "reason", "action"} <= set(trace["suspected"][0])


def test_an_ignored_cue_still_names_the_cued_policy(sample: Memory) -> None:
    trace = traced(sample, query="bike", limit=3, time_cue={"ago": {"unit": "days", "value": 0}, "confidence": "sure"})[
        "trace"
    ]
    check_common(trace, sample)
    assert trace["policy"]["process"] == POLICY
    assert trace["cue_ignored"]["reason"] == "recent_only"
    assert "cue" not in trace["arms"]


def test_a_blank_query_lists_the_newest(sample: Memory) -> None:
    trace = traced(sample, query="", limit=4)["trace"]
    check_common(trace, sample)
    assert set(trace["arms"]) == {"newest"}
    assert len(trace["arms"]["newest"]) == 4
    assert trace["fusion"] == []
    assert trace["coverage"]["parts"] == [] and trace["coverage"]["records"] == 4


def test_scoring_records_the_penalty_and_the_prior() -> None:
    memory = Memory(
        ":memory:",
        settings=make_settings(episode_penalty_enabled=True, prior_age_rate=0.01, recall_depth_floor=20),
        clock=fixed_clock(NOW),
    )
    load_sample(memory)
    trace = traced(memory, query="bike ride Sintra", limit=5)["trace"]
    check_common(trace, memory)
    assert trace["request"]["episode_penalty"] is True and trace["request"]["prior"]["age_rate"] == 0.01
    penalty = trace["scoring"]["episode_penalty"]
    assert penalty and all(ref.startswith("mem:") or ref == "profile" for ref in penalty)  # episodes are exempt
    assert all(0.5 <= factor <= 1.0 for factor in penalty.values())
    if trace["order"]["before_cut"]:
        prior = trace["scoring"]["prior"]
        assert set(prior) == set(trace["order"]["before_cut"]) - {"profile"}


def test_rsf_fusion_votes() -> None:
    memory = Memory(":memory:", settings=make_settings(recall_mode="rsf"), clock=fixed_clock(NOW))
    load_sample(memory)
    trace = traced(memory, query="bike shop brake pads", limit=3)["trace"]
    check_common(trace, memory)
    assert trace["request"]["mode"] == "rsf"
    assert any(d["signal"] in ("cosine", "rsf") for d in trace["gate"]["decisions"])


def test_the_policy_names_every_variant_in_force_and_nothing_else(tmp_path: Path) -> None:
    """policy.process is the base policy then each variant that is on, whether or not it fired this call."""
    bike = RecallRequest(Scope("a"), "bike", 3)
    base = resolve_params(make_settings(), {}, bike)
    assert process_policy(base, cued=False) == "single-pass-v0" and process_policy(base, cued=True) == "cued-v0.3"
    every = resolve_params(make_settings(gate_relief=True, recall_cue_stages=3, cue_propagation=True), {}, bike)
    assert process_policy(every, cued=True) == f"cued-v0.3+{RELIEF}+stages-v1"  # a caller's cue: none proposed
    assert process_policy(every, cued=False) == f"single-pass-v0+{RELIEF}+propagated-v1"  # stages need a cue
    with open_memory(tmp_path / "m.db", settings=make_settings(gate_relief=True)) as memory:
        memory.store(agent_id="a", message={"content": "the bike shop fixed the brakes"})
        trace = memory.recall(
            agent_id="a", query="bike", trace=True, time_cue={"after": "2025-01-01", "confidence": "vague"}
        )["trace"]
    assert trace["policy"]["process"] == f"cued-v0.3+{RELIEF}"
