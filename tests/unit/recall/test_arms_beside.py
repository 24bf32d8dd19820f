"""The arms that read no other arm's list run on a helper thread beside the others, and the answer is the one
they give run in order (docs/recall-process.md#the-arms): the same rows, scores and trace."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cuedrecall.api import Memory
from cuedrecall.config import Settings
from cuedrecall.recall.arm_registry import ARMS
from tests.conftest import REPLICA_ARMS, helpers_waited_for, make_settings, open_memory

A = "agent-a"
TOPICS = ["lighthouse", "garden", "violin", "harbour", "bakery", "orchard", "museum", "ferry"]
QUERIES = [
    "what did the lighthouse keeper write",
    "who plays the violin at the harbour",
    "bread from the bakery by the ferry",
    "the orchard behind the museum",
]


# the arms as shipped (word arms, lexical coverage, episode context on) and the replica's minimal set
SHIPPED = {name: getattr(Settings.from_env({}), name) for name in REPLICA_ARMS}


@pytest.fixture(params=["shipped", "replica"])
def memory(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Memory]:
    overrides = SHIPPED if request.param == "shipped" else {}
    memory = open_memory(tmp_path / "arms-beside.db", settings=make_settings(**overrides))
    for i in range(160):
        a, b = TOPICS[i % len(TOPICS)], TOPICS[(i * 3 + 1) % len(TOPICS)]
        memory.store(agent_id=A, content=f"note {i}: the {a} and the {b}, day {i % 9}")
    memory.archive_episode(agent_id=A, summary="a week by the harbour and the lighthouse", keywords="harbour")
    yield memory
    memory.close()


def comparable(answer: dict[str, Any]) -> dict[str, Any]:
    trace = dict(answer["trace"])
    trace.pop("timing_ms")
    return {**answer, "trace": trace}


def test_the_beside_arms_are_the_lexical_memory_arms_and_read_no_other_list() -> None:
    assert [arm.name for arm in ARMS.fused_beside] == ["memory_keyword", "memory_words", "memory_short_words"]
    assert "vector_far" in [arm.name for arm in ARMS.fused_here]  # it reads the near arm's list


def test_a_recall_with_its_lexical_arms_beside_answers_as_one_run_in_order(memory: Memory) -> None:
    store = memory.store_  # type: ignore[attr-defined]
    for query in QUERIES:
        store.beside = lambda work: work  # in order, in the recall's thread
        alone = memory.recall(agent_id=A, query=query, trace=True)
        del store.beside
        with helpers_waited_for(store) as threads:
            together = memory.recall(agent_id=A, query=query, trace=True)
        assert comparable(together) == comparable(alone), query
        assert together["trace"]["arms"]["memory_keyword"], query  # the helper's list is in the answer
        assert len(threads) == 1 and threads[0].startswith("cuedrecall-beside")  # the rule fired


def test_the_query_is_embedded_after_the_full_text_arms_start_beside(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The embedding overlaps the full-text search: the helper has its work before the vector is asked for."""
    store, events = memory.store_, []  # type: ignore[attr-defined]
    beside, embed = store.beside, memory.queries.embed_query
    monkeypatch.setattr(store, "beside", lambda work: events.append("beside") or beside(work), raising=False)
    monkeypatch.setattr(memory.queries, "embed_query", lambda text: events.append("embed") or embed(text))
    for query in QUERIES:
        events.clear()
        answer = memory.recall(agent_id=A, query=query, trace=True)
        assert events[:2] == ["beside", "embed"], query
        assert answer["trace"]["arms"]["vector_near"], query  # the vector arms had the vector


def test_the_recalls_thread_takes_the_beside_arms_the_helper_has_not_started(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lanes even out: while the helper is still on its first arm, the recall's own thread runs the others
    (from the back), each arm runs once, and the answer is the one of the arms run in order."""
    import threading
    import time

    from cuedrecall.recall.arm_registry import Arm

    store, ran = memory.store_, []  # type: ignore[attr-defined]
    query = QUERIES[0]
    store.beside = lambda work: work  # in order, in the recall's thread
    alone = memory.recall(agent_id=A, query=query, trace=True)
    del store.beside
    run = Arm.run

    taken = threading.Event()

    def watched(self: Arm, ctx: Any, spec: Any) -> Any:
        helper = threading.current_thread() is not threading.main_thread()
        ran.append((self.name, helper))
        if helper and self.name == "memory_keyword":
            taken.set()
            time.sleep(0.3)  # the helper is still busy when the recall's thread is done with its own arms
        if not helper and self.name == "vector_near":
            taken.wait(10)  # the helper has taken its first arm before the recall's thread needs any
        return run(self, ctx, spec)

    monkeypatch.setattr(Arm, "run", watched)
    together = memory.recall(agent_id=A, query=query, trace=True)
    beside = [(name, helper) for name, helper in ran if name in {arm.name for arm in ARMS.fused_beside}]
    assert ("memory_keyword", True) in beside
    assert [name for name, _ in beside].count("memory_keyword") == 1 and len(beside) == len(ARMS.fused_beside)
    assert all(not helper for name, helper in beside if name != "memory_keyword")  # taken by the recall's thread
    assert comparable(together) == comparable(alone)


@pytest.mark.parametrize("mode", ["hash", "http"])
def test_only_an_in_process_embedder_embeds_the_query_inside_the_snapshot(tmp_path: Path, mode: str) -> None:
    """An embedder over the network may take its whole timeout: the recall asks it before its snapshot begins,
    so a slow answer never holds the snapshot (and the writers waiting on it)."""
    from cuedrecall.embed.hashing import HashEmbedder

    inside: list[bool] = []

    class Watched(HashEmbedder):
        def embed(self, texts: Any) -> Any:
            inside.append(memory.store_._lock.holds_shared())  # type: ignore[attr-defined]
            return super().embed(texts)

    Watched.mode = mode
    memory = open_memory(tmp_path / "m.db", embedder=Watched())
    with memory:
        memory.store(agent_id=A, content="the lighthouse keeper wrote of the harbour")
        inside.clear()
        assert memory.recall(agent_id=A, query="what did the lighthouse keeper write")["messages"]
    assert inside == [mode != "http"]
