"""Cue propagation (propagated-v1, off by default; docs/recall-process.md "Cue propagation"): a strong hit's
period proposed as a vague cue: its rows rise at most one place, one seat, the count's rows always returned."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cuedrecall.recall.cue_propagation import BOUND, POLICY, SEAT, SEATS
from tests.conftest import make_settings, open_memory

A = "alice"
WORDS = ["lantern", "harbour", "violin", "orchard", "glacier", "ticket", "concert", "budget"]
FIRED: Counter[str] = Counter()


def fill(memory: Any, texts: list[list[str]]) -> None:
    for i, words in enumerate(texts):
        day, hour = 1 + i // 4, 8 + (i % 4) * 3
        memory.store(
            agent_id=A,
            message={"content": " ".join(words) + f" entry {i}.", "timestamp": f"2025-03-{day:02d}T{hour:02d}:00:00Z"},
        )


def refs(answer: dict[str, Any]) -> list[str]:
    return [m["ref"] for m in reversed(answer["messages"]) if "ref" in m]


def is_proposed_seat(message: dict[str, Any]) -> bool:
    return (message.get("match_reason") or {}).get("signal") == SEAT


def test_propagation_is_off_by_default_and_leaves_no_stage(tmp_path: Path) -> None:
    memory = open_memory(tmp_path / "m.db")
    fill(memory, [["lantern", "harbour"], ["lantern", "violin"], ["orchard"]])
    answer = memory.recall(agent_id=A, query="lantern harbour", trace=True)
    assert not any(stage.get("source") for stage in answer["trace"]["stages"])
    assert POLICY not in answer["trace"]["policy"]["process"]


def test_a_propagated_cue_is_named_in_the_policy_and_numbered_as_its_own_stage(tmp_path: Path) -> None:
    memory = open_memory(tmp_path / "m.db", settings=make_settings(cue_propagation=True, gate_relief=False))
    fill(
        memory,
        [
            ["lantern", "harbour"],
            ["violin"],
            ["lantern", "orchard"],
            ["glacier"],
            ["lantern", "ticket"],
            ["harbour", "budget"],
        ],
    )
    trace = memory.recall(agent_id=A, query="lantern harbour", trace=True)["trace"]
    assert trace["policy"]["process"] == f"single-pass-v0+{POLICY}"
    stages = trace["stages"]
    assert [s["stage"] for s in stages] == list(range(len(stages)))
    proposed = [s for s in stages if s.get("source")]
    assert len(proposed) == 1 and proposed[0]["stopped"] in ("found", "a proposed cue is not revised")
    assert "cue_propagation" in trace["timing_ms"]


def check(before: dict[str, Any], answer: dict[str, Any]) -> None:
    """The bounds of propagated-v1 against the same recall without it."""
    old = refs(before)
    rows = [m for m in reversed(answer["messages"]) if "ref" in m]
    kept = [m["ref"] for m in rows if not is_proposed_seat(m)]
    seated = [m for m in rows if is_proposed_seat(m)]
    # the count's rows (and the held seats) are all returned, the proposed seat after them, at most SEATS
    assert sorted(kept) == sorted(old) and len(seated) <= SEATS
    assert [m["ref"] for m in rows[len(kept) :]] == [m["ref"] for m in seated]
    # no row rises more than BOUND places
    for place, ref in enumerate(kept):
        assert old.index(ref) - place <= BOUND, (ref, old.index(ref), place)
    FIRED["moved"] += sum(old.index(ref) != place for place, ref in enumerate(kept))
    trace = answer["trace"]
    stage = next((s for s in trace["stages"] if s.get("source")), None)
    if stage is None:
        assert not seated
        return
    FIRED["proposed"] += 1
    assert stage["source"] == old[0] == kept[0]  # the strong hit keeps first place
    assert all(m["from"] - m["to"] <= BOUND for m in stage["lifted"])
    # a seat never holds a row the gate or autocut refused, and says where it came from
    refused = {d["ref"] for d in trace["gate"]["decisions"] if not d["passed"]} | set(
        trace["autocut"].get("dropped", [])
    )
    arm = {hit["ref"]: hit["rank"] for hit in trace["arms"][SEAT]}
    for message in seated:
        FIRED["seated"] += 1
        assert message["ref"] not in refused and message["ref"] in arm
        assert message["match_reason"] == {"signal": SEAT, "admission": "reservation", "cue_rank": arm[message["ref"]]}
        assert {"ref": message["ref"], "kind": SEAT} in trace["reservation"]
    assert stage["seated"] == [m["ref"] for m in seated]


@settings(max_examples=40, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4), min_size=2, max_size=24),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    st.integers(1, 8),
)
def propagation_property(tmp_path_factory: Any, texts: list[list[str]], query: list[str], limit: int) -> None:
    folder = tmp_path_factory.mktemp("prop")
    plain = open_memory(folder / "a.db", settings=make_settings(gate_relief=False))
    propagated = open_memory(folder / "b.db", settings=make_settings(cue_propagation=True, gate_relief=False))
    fill(plain, texts)
    fill(propagated, texts)
    args = {"agent_id": A, "query": " ".join(query), "limit": limit, "deep": True}
    check(plain.recall(**args), propagated.recall(**args, trace=True))


def test_propagation_keeps_the_count_rows_moves_none_more_than_one_place_and_adds_at_most_one_seat(
    tmp_path_factory: Any,
) -> None:
    FIRED.clear()
    propagation_property(tmp_path_factory)  # type: ignore[call-arg]
    assert FIRED["proposed"] and FIRED["moved"] and FIRED["seated"], FIRED
