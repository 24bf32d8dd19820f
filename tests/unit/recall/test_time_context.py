"""Time context (time-context-v1): a memory the arms reached lends half its place's vote to the reached memories
recorded within WINDOW_S of it; the vote orders and never admits (docs/recall-process.md#time-context)."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import event, given, settings
from hypothesis import strategies as st

from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock
from cuedrecall.recall.time_context import SHARE, WINDOW_S, best_neighbours
from tests.conftest import make_settings, open_memory

A = "agent-a"
K = 15
ON = {"time_context_enabled": True, "episode_context_enabled": False, "recall_depth_floor": 100, "rrf_k": K}
OFF = {**ON, "time_context_enabled": False}
NOON = datetime.fromisoformat("2025-03-02T12:00:00+00:00")


def at(seconds: float) -> str:
    return (NOON + timedelta(seconds=seconds)).isoformat()


def stored(memory: Memory, content: str, when: str) -> str:
    memory.clock = fixed_clock(when)
    return memory.store(agent_id=A, message={"content": content, "timestamp": when})["ref"]


def recalled(memory: Memory, query: str) -> dict[str, Any]:
    memory.clock = fixed_clock("2025-06-01T00:00:00+00:00")
    return memory.recall(agent_id=A, query=query, trace=True)


def refs(answer: dict[str, Any]) -> list[str]:
    return [m["ref"] for m in reversed(answer["messages"]) if "ref" in m]


def one_sitting_and_a_lookalike(path: Path, toggles: dict[str, Any]) -> tuple[Memory, str, str]:
    """Lexical arms only (no embedder): a sitting about Rosa's dog, three turns a minute apart, and a week later a
    lone turn holding the question's rarer word "called". (memory, the naming turn, the look-alike)"""
    memory = open_memory(path, settings=make_settings(embedding_mode="none", **toggles))
    named = stored(memory, "Rosa: the dog is named Biscuit", at(0))
    stored(memory, "Rosa: the dog sleeps all day on the sofa", at(60))
    stored(memory, "Rosa: my dog loves the park", at(120))
    lookalike = stored(memory, "Ivo: the new bakery is called Crumbs", at(7 * 86400))
    return memory, named, lookalike


def test_a_memory_takes_half_the_vote_of_its_best_placed_neighbours_place(tmp_path: Path) -> None:
    memory, named, lookalike = one_sitting_and_a_lookalike(tmp_path / "m.db", ON)
    trace = recalled(memory, "what is the dog called?")["trace"]
    fused = {row["ref"]: row for row in trace["fusion"]}
    lent = trace["scoring"]["time_context"]
    assert named in lent and lookalike not in lent  # the look-alike has no reached neighbour within the window
    before = {ref: row["score"] - row["votes"].get("time_context", 0.0) for ref, row in fused.items()}
    neighbour = lent[named]
    place = sum(1 for score in before.values() if score > before[neighbour])  # its place before the votes
    assert abs(fused[named]["votes"]["time_context"] - SHARE / (K + place + 1)) < 1e-12


def test_the_sittings_turn_rises_above_a_lone_lexical_lookalike(tmp_path: Path) -> None:
    on, named, lookalike = one_sitting_and_a_lookalike(tmp_path / "on.db", ON)
    off, named_off, lookalike_off = one_sitting_and_a_lookalike(tmp_path / "off.db", OFF)
    with_context, without = (
        refs(recalled(on, "what is the dog called?")),
        refs(recalled(off, "what is the dog called?")),
    )
    assert without.index(lookalike_off) < without.index(named_off)  # "called" is the rarer word
    assert with_context.index(named) < with_context.index(lookalike)
    assert set(with_context) == set(without)  # the vote reorders; it never adds or removes a row


def test_the_vote_never_changes_a_gate_decision(tmp_path: Path) -> None:
    on, *_ = one_sitting_and_a_lookalike(tmp_path / "on.db", ON)
    off, *_ = one_sitting_and_a_lookalike(tmp_path / "off.db", OFF)
    for query in ("what is the dog called?", "sofa park", "bakery", "Biscuit"):
        decided = [{d["ref"]: d["passed"] for d in recalled(m, query)["trace"]["gate"]["decisions"]} for m in (on, off)]
        assert decided[0] == decided[1]


@settings(max_examples=20, deadline=None)
@given(
    texts=st.lists(
        st.sampled_from(["dog named Biscuit", "train late", "bakery called Crumbs", "sofa nap", "dog fur colour"]),
        min_size=2,
        max_size=8,
    ),
    gaps=st.lists(st.sampled_from([0.0, 30.0, WINDOW_S, WINDOW_S + 1, 3 * WINDOW_S]), min_size=8, max_size=8),
    query=st.sampled_from(["dog", "train", "called", "Biscuit fur", "sofa dog"]),
)
def test_only_memories_with_a_reached_neighbour_within_the_window_take_the_vote(
    tmp_path_factory: Any, texts: list[str], gaps: list[float], query: str
) -> None:
    memory = open_memory(tmp_path_factory.mktemp("w") / "m.db", settings=make_settings(embedding_mode="none", **ON))
    moments, clock = {}, 0.0
    for i, text in enumerate(texts):
        clock += gaps[i]
        moments[stored(memory, f"{text} {i}", at(clock))] = clock
    trace = recalled(memory, query)["trace"]
    reached = [row["ref"] for row in trace["fusion"] if row["ref"] in moments]
    lent = trace["scoring"].get("time_context", {})
    for ref in reached:
        near = [other for other in reached if other != ref and abs(moments[other] - moments[ref]) <= WINDOW_S]
        assert (ref in lent) == bool(near)
        event("a reached row with a neighbour" if near else "a reached row without one")
        if near:  # the lender is the best placed neighbour before the votes
            before = {row["ref"]: row["score"] - row["votes"].get("time_context", 0.0) for row in trace["fusion"]}
            assert lent[ref] in near and before[lent[ref]] >= max(before[other] for other in near) - 1e-12
    memory.close()


def test_off_the_recall_is_ranked_as_without_the_rule(tmp_path: Path) -> None:
    off, *_ = one_sitting_and_a_lookalike(tmp_path / "off.db", OFF)
    trace = recalled(off, "what is the dog called?")["trace"]
    assert "time_context" not in trace["scoring"]
    assert all("time_context" not in row["votes"] for row in trace["fusion"])


@settings(max_examples=300, deadline=None)
@given(
    offsets=st.lists(
        st.one_of(st.sampled_from([0.0, WINDOW_S, WINDOW_S + 0.5]), st.floats(0, 20 * WINDOW_S)),
        min_size=1,
        max_size=60,
    ),
    seed=st.randoms(use_true_random=False),
)
def test_each_memorys_best_neighbour_is_the_best_placed_other_within_the_window(
    offsets: list[float], seed: Any
) -> None:
    moments = sorted(offsets)
    places = list(range(len(moments)))
    seed.shuffle(places)
    found = best_neighbours(np.array(moments), np.array(places, dtype=np.int64)).tolist()
    for i, moment in enumerate(moments):
        near = [places[j] for j in range(len(moments)) if j != i and abs(moments[j] - moment) <= WINDOW_S]
        assert found[i] == (min(near) if near else -1)
        event("a neighbour within the window" if near else "no neighbour")
