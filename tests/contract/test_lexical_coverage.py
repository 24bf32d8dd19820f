"""Lexical coverage (coverage-order-v1, docs/recall-process.md#lexical-coverage): within each lexical arm, a row
holding more of the question's distinct content words is never ranked below one holding fewer, and the arm keeps
exactly the rows it found."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cuedrecall.config import Settings
from cuedrecall.recall.lexical_coverage import STEM
from tests.conftest import REPLICA_ARMS, make_settings, open_memory

A = "coverer"
SHIPPED = {name: getattr(Settings.from_env({}), name) for name in REPLICA_ARMS}
ON, OFF = {**SHIPPED, "lexical_coverage_enabled": True}, {**SHIPPED, "lexical_coverage_enabled": False}
QUERY_WORDS = ["violin", "recital", "teacher", "harbor", "Biscuit"]
OTHER = ["lamp", "garden", "window", "copper", "meadow", "pencil", "silver", "ticket", "basket", "candle"]


def _held(text: str, words: list[str]) -> int:
    tokens = {t.strip(".,").lower() for t in text.split()}
    return sum(1 for w in words if any(t[:STEM] == w.lower()[:STEM] for t in tokens))


def _lexical_arms(memory: Any, query: str) -> dict[str, list[str]]:
    trace = memory.recall(agent_id=A, query=query, trace=True)["trace"]
    return {name: [hit["ref"] for hit in trace["arms"].get(name, [])] for name in ("memory_keyword", "memory_words")}


@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), rows=st.integers(15, 60), asked=st.integers(2, 5))
def test_a_row_holding_more_of_the_question_never_ranks_below_one_holding_fewer(
    tmp_path_factory: Any, seed: int, rows: int, asked: int
) -> None:
    rng = random.Random(seed)
    words = QUERY_WORDS[:asked]
    query = "what about the " + " and the ".join(words)
    texts: dict[str, str] = {}
    path = tmp_path_factory.mktemp("coverage") / "m.db"
    with open_memory(path, settings=make_settings(**ON)) as on:
        for i in range(rows):
            held = rng.sample(words, rng.randint(1, len(words)))
            filler = rng.sample(OTHER, rng.randint(0, 6))  # longer rows: BM25's length norm works against them
            text = " ".join(rng.sample(held + filler, len(held) + len(filler))) + f" note {i}"
            texts[on.store(agent_id=A, content=text)["ref"]] = text
        with_coverage = _lexical_arms(on, query)
    with open_memory(path, settings=make_settings(**OFF)) as off:
        without = _lexical_arms(off, query)
    moved = 0
    for name, refs in with_coverage.items():
        assert sorted(refs) == sorted(without[name])  # reordered, never added to or cut
        counts = [_held(texts[ref], words) for ref in refs]
        assert counts == sorted(counts, reverse=True), (name, counts)
        moved += refs != without[name]
    assert moved  # the rule fired: BM25 alone ordered some arm otherwise


def test_a_question_of_one_content_word_keeps_the_arms_order(tmp_path: Any) -> None:
    with open_memory(tmp_path / "m.db", settings=make_settings(**ON)) as memory:
        for i in range(12):
            memory.store(agent_id=A, content=f"violin {' '.join(OTHER[: i % 5])} note {i}")
        on = _lexical_arms(memory, "the violin?")
    with open_memory(tmp_path / "m.db", settings=make_settings(**OFF)) as memory:
        assert _lexical_arms(memory, "the violin?") == on
