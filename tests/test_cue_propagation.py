"""Cue propagation (off by default): a strong hit's day searched as a vague cue; rows rise at most one place."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import make_settings, open_memory

A = "alice"
WORDS = ["lantern", "harbour", "violin", "orchard", "glacier", "ticket", "concert", "budget"]


def fill(memory, texts: list[list[str]]) -> None:
    for i, words in enumerate(texts):
        day, hour = 1 + i // 4, 8 + (i % 4) * 3
        memory.store(agent_id=A, message={"content": " ".join(words) + f" entry {i}.",
                                          "timestamp": f"2025-03-{day:02d}T{hour:02d}:00:00Z"})


def refs(answer: dict) -> list[str]:
    return [m["ref"] for m in reversed(answer["messages"]) if "ref" in m]


def test_propagation_is_off_by_default_and_leaves_no_stage(tmp_path: Path) -> None:
    memory = open_memory(tmp_path / "m.db")
    fill(memory, [["lantern", "harbour"], ["lantern", "violin"], ["orchard"]])
    answer = memory.recall(agent_id=A, query="lantern harbour", trace=True)
    assert not any(stage.get("source") for stage in answer["trace"]["stages"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4), min_size=2, max_size=14),
       st.lists(st.sampled_from(WORDS), min_size=1, max_size=3))
def test_propagation_keeps_the_rows_and_moves_none_more_than_one_place(
        tmp_path_factory, texts: list[list[str]], query: list[str]) -> None:
    folder = tmp_path_factory.mktemp("prop")
    plain, propagated = open_memory(folder / "a.db"), open_memory(folder / "b.db",
                                                                 settings=make_settings(cue_propagation=True))
    fill(plain, texts)
    fill(propagated, texts)
    before = refs(plain.recall(agent_id=A, query=" ".join(query)))
    answer = propagated.recall(agent_id=A, query=" ".join(query), trace=True)
    after = refs(answer)
    assert sorted(after) == sorted(before) and len(after) == len(before)
    assert all(after.index(ref) >= before.index(ref) - 1 for ref in before)
    for stage in answer["trace"]["stages"]:
        if stage.get("source"):
            assert stage["source"] == before[0] and all(m["from"] - m["to"] <= 1 for m in stage["lifted"])
