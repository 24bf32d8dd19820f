"""One declaration per arm (cuedrecall/recall/arm_registry.py): a dummy arm registered here flows through fusion,
the gate and the trace with no other file touched; the declared names are the trace's keys as before.

See docs/architecture.md#adding-an-arm.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cuedrecall.api import Memory
from cuedrecall.recall.arm_registry import ARMS, ARMS_STAGE, Arm, ArmInputs, Kind, Reads, Role, Run
from cuedrecall.store.base import Hit
from tests.conftest import make_settings, open_memory

A = "agent-a"
DUMMY = "dummy"


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    memory = open_memory(tmp_path / "arms.db", settings=make_settings())
    memory.store(agent_id=A, content="The red bicycle needs new brake pads.")
    memory.store(agent_id=A, content="A recipe for leek and potato soup.")  # nothing of the query: mem:2
    return memory


def dummy(kind: Kind, raw: float, calls: list[Run]) -> Arm:
    """An ordinary arm whose runner returns one fixed hit: the soup, which no other arm reaches."""

    def runner(ctx: ArmInputs, run: Run) -> list[Hit]:
        calls.append(run)
        return [Hit("mem:2", 0, raw)]

    return Arm(DUMMY, kind, Role.FUSED, (Reads.MEMORIES,), ARMS_STAGE, runner=runner, content_words=True)


def traced(memory: Memory) -> dict[str, Any]:
    return memory.recall(agent_id=A, query="bicycle brake pads", trace=True)


@pytest.mark.parametrize(("kind", "raw", "signal"), [(Kind.LEXICAL, -4.0, "rrf"), (Kind.VECTOR, 0.9, "cosine")])
def test_a_registered_arm_flows_through_fusion_the_gate_and_the_trace(
    memory: Memory, kind: Kind, raw: float, signal: str
) -> None:
    before = traced(memory)["trace"]
    calls: list[Run] = []
    with ARMS.registered(dummy(kind, raw, calls)):
        answer = traced(memory)
    trace = answer["trace"]
    assert [run.depth for run in calls] == [trace["request"]["depth"]]  # run once, to the recall depth
    assert list(trace["arms"]) == [*before["arms"], DUMMY]  # listed after the declared arms
    assert trace["arms"][DUMMY] == [{"ref": "mem:2", "rank": 0, "raw": raw}]
    fused = {row["ref"]: row for row in trace["fusion"]}
    assert set(fused["mem:2"]["votes"]) == {DUMMY}  # fusion joined it, and only it reached the soup
    assert fused["mem:2"]["votes"][DUMMY] == pytest.approx(1 / (memory.settings.rrf_k + 1))
    (decision,) = [d for d in trace["gate"]["decisions"] if d["ref"] == "mem:2"]
    assert decision["passed"] and decision["signal"] == signal  # judged on what its kind gives the row
    assert "mem:2" in [m.get("ref") for m in answer["messages"]]
    again = traced(memory)["trace"]  # unregistered: the recall is as before
    assert DUMMY not in again["arms"] and again["fusion"] == before["fusion"]


def test_an_arm_is_declared_once_and_a_fused_one_needs_a_runner() -> None:
    with pytest.raises(ValueError, match="twice"):
        ARMS.register(ARMS["vector_near"])
    with pytest.raises(ValueError, match="runner"):
        ARMS.register(Arm(DUMMY, Kind.LEXICAL, Role.FUSED, (Reads.MEMORIES,), ARMS_STAGE))
    assert DUMMY not in [arm.name for arm in ARMS]


def test_the_declared_names_are_the_trace_keys_of_before() -> None:
    """The wire format: renaming a declaration renames a trace key (docs/trace.md#the-sections)."""
    assert ARMS.fused_names == (
        "vector_near",
        "vector_far",
        "episode_fts",
        "memory_keyword",
        "memory_words",
        "memory_short_words",
    )
    assert ARMS.vector_names == ("vector_near", "vector_far")
    assert ARMS.lexical_names == ("episode_fts", "memory_keyword", "memory_words", "memory_short_words")
    assert ARMS.content_word_names == ("memory_words", "memory_short_words")
    assert [arm.name for arm in ARMS if arm.role is not Role.FUSED] == [
        "vector_in_period",
        "newest",
        "block",
        "far",
        "cue",
        "propagated_cue",
        "propagation",
    ]
    # the cue arm's lists: what it searches over a period, memories first (docs/recall-process.md#the-cue-arm)
    assert [arm.name for arm in ARMS.period_lists] == ["vector_in_period", "episode_fts", "memory_keyword", "newest"]
