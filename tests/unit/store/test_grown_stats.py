"""stats-growth-v1 (store/sqlite/grown_stats.py): the pool counts, spans and row counts a store keeps across
writes always equal a fresh read of the rows, whatever mix of stores, episodes, deletes and other connections'
writes came between; a write that only adds records is folded in by reading the new ids alone."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuedrecall.store.base import MEMORY, Scope
from cuedrecall.store.predicates import scope_where
from cuedrecall.store.rows import pool_growth
from cuedrecall.store.sqlite.grown_stats import GrownStats
from tests.conftest import open_memory

pytestmark = pytest.mark.sqlite_only  # the kept statistics are the SQLite store's (PostgreSQL counts each time)

AGENTS = ("ann", "bo")
SCOPES = [
    Scope("ann"),
    Scope("bo"),
    Scope("ann", project_id="p1"),
    Scope("bo", channel="c1"),
    Scope("ann", source_id="s1"),
]

step = st.one_of(
    st.tuples(
        st.just("store"),
        st.sampled_from(AGENTS),
        st.sampled_from(["", "p1", "p2"]),
        st.sampled_from(["", "c1"]),
        st.integers(1, 28),
    ),
    st.tuples(st.just("episode"), st.sampled_from(AGENTS)),
    st.tuples(st.just("delete"), st.integers(0, 30)),
    st.tuples(st.just("other"), st.sampled_from(AGENTS)),  # a second connection stores
    st.tuples(st.just("look"), st.integers(0, len(SCOPES) - 1)),
)


def _fresh_span(store, scope: Scope) -> tuple[float, float] | None:  # type: ignore[no-untyped-def]
    where, params = scope_where(scope, "t", MEMORY)
    low, high = store._read(f"SELECT MIN(t.ts_epoch), MAX(t.ts_epoch) FROM memories t WHERE {where}", params)[0]
    return None if low is None else (low, high)


def _agree(memory) -> None:  # type: ignore[no-untyped-def]
    store = memory.store_
    for scope in SCOPES:
        assert store.pool_counts(scope) == pool_growth(store._read, scope, "?", {})[0]  # a fresh read of every row
        assert store.span(scope) == _fresh_span(store, scope)
    for table in ("memories", "episodes"):
        assert store.row_count(table) == store._read(f"SELECT COUNT(*) FROM {table}")[0][0]


def _store(memory, agent: str, project: str = "", channel: str = "", day: int = 1) -> dict:  # type: ignore[no-untyped-def]
    return memory.store(
        agent_id=agent,
        project_id=project,
        channel=channel,
        source_id="s1" if day % 2 else "s2",
        message={"content": f"a note of day {day} for {agent}", "timestamp": f"2025-03-{day:02d}T10:00:00+00:00"},
    )


@settings(max_examples=40, deadline=None)
@given(st.lists(step, min_size=1, max_size=25))
def test_kept_statistics_always_equal_a_fresh_read(steps: list[tuple]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "grown.db"
        memory, other = open_memory(path), open_memory(path)
        stored: list[int] = []
        try:
            for action, *args in steps:
                if action == "store":
                    answer = _store(memory, *args)
                    stored.append(answer.get("id") or answer.get("memory_id") or 0)
                elif action == "episode":
                    memory.archive_episode(agent_id=args[0], summary="a session", keywords="session")
                elif action == "delete":
                    if stored:
                        row_id = stored.pop(args[0] % len(stored))
                        for agent in AGENTS:
                            memory.call("delete_memory", {"memory_id": row_id, "agent_id": agent})
                elif action == "other":
                    _store(other, args[0], day=9)
                else:
                    scope = SCOPES[args[0]]
                    memory.store_.pool_counts(scope), memory.store_.span(scope)  # kept from here on
                _agree(memory)
        finally:
            memory.close()
            other.close()


def test_a_change_at_or_below_a_kept_id_drops_it_and_a_newer_one_only_marks_it_behind() -> None:
    stats = GrownStats()
    reads: list[str] = []

    def full() -> tuple[int, dict[str, int]]:
        reads.append("full")
        return 10, {"mem": 100}

    def grow(kept: int, upto: dict[str, int]) -> tuple[int, dict[str, int]]:
        reads.append(f"grow>{upto['mem']}")
        return kept + 1, {"mem": upto["mem"] + 1}

    assert stats.get("pool", full, grow) == 10
    stats.follow([("ep", 5)])  # a kind the statistic does not read: nothing to do
    assert stats.get("pool", full, grow) == 10 and reads == ["full"]
    stats.follow([("mem", 101)])
    assert stats.get("pool", full, grow) == 11 and reads == ["full", "grow>100"]
    stats.follow([("mem", 101), ("mem", 102)])  # 101 is at or below the kept 101: an update or a delete
    assert stats.get("pool", full, grow) == 10 and reads[-1] == "full"
