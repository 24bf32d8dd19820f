"""Episode context (episode-context-v1): an episode the arms reached lends its fused place to the memories of its
span; the vote orders and never admits (docs/recall-process.md#episode-context)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock
from tests.conftest import make_settings, open_memory

A = "agent-a"
ON = {"episode_context_enabled": True, "word_arm_enabled": True, "recall_depth_floor": 100, "rrf_k": 15}
OFF = {**ON, "episode_context_enabled": False}


def stored(memory: Memory, content: str, when: str) -> str:
    memory.clock = fixed_clock(when)
    answer = memory.store(agent_id=A, message={"content": content, "timestamp": when})
    return answer["ref"]


def archived(memory: Memory, summary: str, start: str, end: str) -> str:
    memory.clock = fixed_clock(end)
    answer = memory.archive_episode(agent_id=A, summary=summary, start_time=start, end_time=end)
    return answer["ref"]


def recalled(memory: Memory, query: str, **overrides: Any) -> dict[str, Any]:
    memory.clock = fixed_clock("2025-06-01T00:00:00+00:00")
    return memory.recall(agent_id=A, query=query, trace=True, **overrides)


def refs(answer: dict[str, Any]) -> list[str]:
    return [m["ref"] for m in reversed(answer["messages"]) if "ref" in m]


def two_conversations(path: Path, toggles: dict[str, Any]) -> tuple[Memory, str, str, str]:
    """One agent's store, lexical arms only (no embedder, so the order is the lexical arms' alone): a talk with Rosa
    about her dog (an episode over it, "dog" in three of its turns) and, a month later, a talk with Ivo whose one
    turn holds the question's rarer word "called". (memory, Rosa's naming turn, Ivo's turn, the episode)"""
    memory = open_memory(path, settings=make_settings(embedding_mode="none", **toggles))
    start, end = "2025-03-02T10:00:00+00:00", "2025-03-02T10:30:00+00:00"
    named = stored(memory, "Rosa: the dog is named Biscuit", "2025-03-02T10:05:00+00:00")
    stored(memory, "Rosa: the dog sleeps all day on the sofa", "2025-03-02T10:10:00+00:00")
    stored(memory, "Rosa: my dog loves the park", "2025-03-02T10:15:00+00:00")
    episode = archived(memory, "Rosa talked about her dog and its name", start, end)
    lookalike = stored(memory, "Ivo: the new bakery is called Crumbs", "2025-04-05T09:00:00+00:00")
    stored(memory, "Ivo: the train was late again", "2025-04-05T09:10:00+00:00")
    return memory, named, lookalike, episode


def test_a_memory_inside_a_reached_episode_takes_the_vote_of_its_place(tmp_path: Path) -> None:
    memory, dog, _lookalike, episode = two_conversations(tmp_path / "m.db", ON)
    trace = recalled(memory, "what is the dog called?")["trace"]
    fused = {row["ref"]: row for row in trace["fusion"]}
    assert episode in fused and trace["scoring"]["episode_context"][dog] == episode
    before = {ref: row["score"] - row["votes"].get("episode_context", 0.0) for ref, row in fused.items()}
    place = sum(1 for score in before.values() if score > before[episode])  # the episode's place before the votes
    assert abs(fused[dog]["votes"]["episode_context"] - 1 / (15 + place + 1)) < 1e-12
    assert all("episode_context" not in row["votes"] for row in trace["fusion"] if row["ref"].startswith("ep:"))


def test_the_episodes_turn_rises_above_a_lexical_lookalike_from_outside_it(tmp_path: Path) -> None:
    on, dog, lookalike, _ = two_conversations(tmp_path / "on.db", ON)
    off, dog_off, lookalike_off, _ = two_conversations(tmp_path / "off.db", OFF)
    with_context = refs(recalled(on, "what is the dog called?"))
    without = refs(recalled(off, "what is the dog called?"))
    assert without.index(lookalike_off) < without.index(dog_off)  # "called" is the rarer word
    assert with_context.index(dog) < with_context.index(lookalike)
    assert set(with_context) == set(without)  # the vote reorders; it never adds or removes a row here


def test_the_vote_never_changes_a_gate_decision(tmp_path: Path) -> None:
    on, *_ = two_conversations(tmp_path / "on.db", ON)
    off, *_ = two_conversations(tmp_path / "off.db", OFF)
    for query in ("what is the dog called?", "train late", "sofa", "bakery"):
        decided = [{d["ref"]: d["passed"] for d in recalled(m, query)["trace"]["gate"]["decisions"]} for m in (on, off)]
        assert decided[0] == decided[1]


@settings(max_examples=15, deadline=None)
@given(
    texts=st.lists(
        st.sampled_from(["dog named Biscuit", "train late", "bakery called Crumbs", "sofa nap", "fur colour"]),
        min_size=1,
        max_size=8,
    ),
    query=st.sampled_from(["dog", "train", "called", "Biscuit fur", "sofa"]),
)
def test_a_store_without_episodes_is_ranked_as_before(tmp_path_factory: Any, texts: list[str], query: str) -> None:
    folder = tmp_path_factory.mktemp("plain")
    answers = []
    for name, toggles in (("on", ON), ("off", OFF)):
        memory = open_memory(folder / f"{name}.db", settings=make_settings(**toggles))
        for i, text in enumerate(texts):
            stored(memory, f"{text} {i}", f"2025-03-0{1 + i % 9}T10:00:00+00:00")
        answers.append(refs(recalled(memory, query)))
        memory.close()
    assert answers[0] == answers[1]


def test_an_episode_without_both_ends_lends_nothing(tmp_path: Path) -> None:
    memory = open_memory(tmp_path / "m.db", settings=make_settings(**ON))
    stored(memory, "the dog is called Biscuit", "2025-03-02T10:05:00+00:00")
    memory.clock = fixed_clock("2025-03-02T11:00:00+00:00")
    memory.archive_episode(agent_id=A, summary="about the dog Biscuit")  # no start or end time
    trace = recalled(memory, "dog Biscuit")["trace"]
    assert "episode_context" not in trace["scoring"]
    assert all("episode_context" not in row["votes"] for row in trace["fusion"])
