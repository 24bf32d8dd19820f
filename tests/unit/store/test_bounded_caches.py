"""Every per-key cache of the process is bounded (docs/caches.md): a flood of distinct scopes, agents or
queries leaves at most the bound, and what the caches answer after eviction is what a fresh read answers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cuedrecall.api import Memory
from cuedrecall.handlers.calibrate import note_growth
from cuedrecall.recall.calibration import GROWTH_MAX
from cuedrecall.store.base import Scope
from cuedrecall.store.bounded import Lru
from cuedrecall.store.sqlite.grown_stats import GrownStats
from cuedrecall.store.sqlite.store import STATS_CACHE_MAX
from tests.conftest import make_settings, open_memory

ON_POSTGRES = os.environ.get("CUEDRECALL_TEST_BACKEND", "") == "postgres"
A = "agent-a"


def test_an_lru_keeps_its_bound_and_the_most_recently_used() -> None:
    lru: Lru[int] = Lru(3)
    for key in range(10):
        lru.put(key, key * 10)
    assert len(lru) == 3 and lru.get(9) == 90 and lru.get(0) is None
    lru.get(7)  # used: 8 is now the oldest
    lru.put(10, 100)
    assert 8 not in lru and lru.get(7) == 70
    with pytest.raises(ValueError):
        Lru(0)


def test_grown_stats_keep_their_bound_and_read_an_evicted_value_again() -> None:
    stats, reads = GrownStats(limit=8), []

    def full_of(key: int):  # type: ignore[no-untyped-def]
        def full() -> tuple[int, dict[str, int]]:
            reads.append(key)
            return key * 2, {"mem": 1}

        return full

    for key in range(100):
        assert stats.get(key, full_of(key), lambda value, upto: (value, upto)) == key * 2
    assert len(stats) == 8
    assert stats.get(0, full_of(0), lambda value, upto: (value, upto)) == 0 and reads.count(0) == 2
    stats.follow([("mem", 5)])  # a change above every kept id: kept, marked behind
    assert stats.get(99, full_of(99), lambda value, upto: (value + 1, upto)) == 99 * 2 + 1
    assert len(stats) == 8


@pytest.mark.skipif(ON_POSTGRES, reason="PostgreSQL keeps no per-process scope statistics")
def test_a_flood_of_distinct_scopes_stays_within_the_bound_and_counts_stay_right(memory: Memory) -> None:
    for source in ("s1", "s2"):
        assert memory.store(agent_id=A, content=f"the kettle from {source}", source={"id": source})["ok"]
    store = memory.store_
    limit = GrownStats.MAX_KEPT
    first = Scope(A, None, "", "s1")
    assert store.pool_counts(first) == (1, 0)
    for i in range(limit + 500):  # every scope a recall could name: each one a statistic
        store.pool_counts(Scope(A, None, "", f"src-{i}"))
    assert len(store._grown) <= limit
    assert store.pool_counts(first) == (1, 0)  # evicted, read again: the same answer
    memory.store(agent_id=A, content="one more from s1", source={"id": "s1"})
    assert store.pool_counts(first) == (2, 0) and store.pool_counts(Scope(A, None, "", "")) == (3, 0)
    assert len(store._grown) <= limit


@pytest.mark.skipif(ON_POSTGRES, reason="PostgreSQL keeps no per-process read cache")
def test_recalls_naming_many_sources_and_agents_stay_within_the_bounds(tmp_path: Path) -> None:
    with open_memory(tmp_path / "m.db", settings=make_settings()) as memory:
        memory.store(agent_id=A, content="the kettle is on the stove", source={"id": "s1"})
        memory.store_._grown = GrownStats(limit=16)  # a small bound, so a few hundred recalls pass it
        expected = memory.recall(agent_id=A, query="kettle", source_id="s1")["messages"]
        for i in range(200):
            memory.recall(agent_id=f"agent-{i}", query="kettle", source_id=f"src-{i}")
        assert len(memory.store_._grown) <= 16
        assert len(memory.store_._stats_cache) <= STATS_CACHE_MAX
        assert memory.recall(agent_id=A, query="kettle", source_id="s1")["messages"] == expected
        assert memory.recall(agent_id=A, query="kettle", source_id="s1")["messages"]


def test_growth_estimates_keep_their_bound(memory: Memory) -> None:
    rt = memory.runtime
    for i in range(GROWTH_MAX + 50):
        rt.calibration.growth.put(f"agent-{i}", (1, 50))
    assert len(rt.calibration.growth) == GROWTH_MAX
    note_growth(rt, "agent-new", 1)  # an agent that left (or never came) is counted again, not assumed
    assert len(rt.calibration.growth) <= GROWTH_MAX


def test_the_query_vector_cache_keeps_its_bound(memory: Memory) -> None:
    for i in range(memory.settings.embedding_cache_size + 40):
        memory.queries.embed_query(f"query {i}")
    assert len(memory.queries) == memory.settings.embedding_cache_size
