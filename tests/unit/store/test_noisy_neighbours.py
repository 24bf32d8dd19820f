"""No noisy neighbours: what other agents store neither hides a scope's rows nor makes its keyword arms read theirs.

The full-text arms check a matching row's scope in a narrow index of the isolation
columns (migration 8), and rank on the terms keyword-budget-v2 lets through; a small
scope is scanned for the terms the budget left out. The cost is counted in SQLite's
virtual-machine steps (a progress handler), not in time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cuedrecall.store import term_counts
from cuedrecall.store.base import EPISODE, MEMORY, Scope
from cuedrecall.store.sqlite import SqliteStore, schema
from cuedrecall.store.sqlite.arms import fts_arm_sql, words_arm_sql
from tests.conftest import database_at

ALICE = Scope("alice")
NOW = "2025-06-01T00:00:00+00:00"


def _store_rows(store: SqliteStore, agent: str, texts: list[str]) -> None:
    with store.write() as conn:
        for text in texts:
            store.insert_memory(
                conn, {"agent_id": agent, "content": text, "timestamp": NOW, "ts_epoch": 0.0, "created_at": NOW}
            )


def _steps(store: SqliteStore, run) -> int:  # type: ignore[no-untyped-def]
    """SQLite virtual-machine steps (in hundreds) the call takes on the store's connection."""
    ticks = [0]

    def tick() -> int:
        ticks[0] += 1
        return 0

    conn = store._main  # type: ignore[attr-defined]
    conn.set_progress_handler(tick, 100)
    try:
        run()
    finally:
        conn.set_progress_handler(None, 0)
    return ticks[0]


@pytest.mark.parametrize(
    "sql",
    [fts_arm_sql(MEMORY, ALICE, None)[0], fts_arm_sql(EPISODE, ALICE, None)[0], words_arm_sql(ALICE, (0.0, 1.0))[0]],
)
def test_every_full_text_arm_checks_the_scope_in_the_narrow_index(tmp_path: Path, sql: str) -> None:
    store = SqliteStore(tmp_path / "m.db")
    try:
        params = ["x"] + ["alice"] * sql.count("?")
        plan = " ".join(row[-1] for row in store._main.execute("EXPLAIN QUERY PLAN " + sql, params[: sql.count("?")]))
        assert "COVERING INDEX idx_memories_scope" in plan or "COVERING INDEX idx_episodes_scope" in plan, plan
    finally:
        store.close()


def test_migration_8_adds_the_scope_indexes_to_a_database_of_version_7(tmp_path: Path) -> None:
    path = tmp_path / "v7.db"
    database_at(path, 7, "Caroline went to the pottery class.", NOW)
    store = SqliteStore(path)
    try:
        assert store.schema_version == schema.LATEST_VERSION >= 8
        names = {row[0] for row in store._main.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert {"idx_memories_scope", "idx_episodes_scope"} <= names
        assert [hit.ref for hit in store.memory_keyword(Scope("a"), ["pottery"], "pottery", depth=5)] == ["mem:1"]
    finally:
        store.close()


@pytest.fixture
def small_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """The budget rule at a size a test can fill: 20 rows a first pass, 80 a fallback, scope scans to 50."""
    monkeypatch.setattr(term_counts, "FIRST_PASS_ROWS", 20)
    monkeypatch.setattr(term_counts, "FALLBACK_ROWS", 80)
    monkeypatch.setattr(term_counts, "SCOPE_SCAN_ROWS", 50)


def _alice_and_others(path: Path, others: int) -> SqliteStore:
    store = SqliteStore(path)
    _store_rows(store, "alice", [f"alice's pottery note {i}" for i in range(5)])
    _store_rows(store, "bob", [f"bob's pottery class number {i}" for i in range(others)])
    return store


@pytest.mark.usefixtures("small_budget")
def test_a_small_scope_finds_its_rows_whatever_other_agents_store(tmp_path: Path) -> None:
    alone = _alice_and_others(tmp_path / "alone.db", 0)
    crowded = _alice_and_others(tmp_path / "crowded.db", 400)
    try:

        def found(store: SqliteStore) -> set[str]:
            return {hit.ref for hit in store.memory_keyword(ALICE, ["pottery"], "pottery", depth=10)}

        assert found(alone) == found(crowded) == {f"mem:{i}" for i in range(1, 6)}
    finally:
        alone.close()
        crowded.close()


@pytest.mark.usefixtures("small_budget")
def test_a_small_scope_s_keyword_cost_stops_growing_with_other_agents_rows(tmp_path: Path) -> None:
    costs = {}
    for others in (100, 400, 1600):
        store = _alice_and_others(tmp_path / f"{others}.db", others)
        try:
            store.memory_keyword(ALICE, ["pottery"], "pottery", depth=10)  # the term counts, cached once
            costs[others] = _steps(
                store, lambda store=store: store.memory_keyword(ALICE, ["pottery"], "pottery", depth=10)
            )
        finally:
            store.close()
    assert costs[1600] <= costs[100] + 2, costs  # sixteen times the others' rows, the same work


@pytest.mark.usefixtures("small_budget")
def test_the_trace_plan_says_which_terms_the_budget_left_out(tmp_path: Path) -> None:
    store = _alice_and_others(tmp_path / "m.db", 400)
    try:
        hits = store.memory_keyword(ALICE, ["pottery", "note"], "pottery note", depth=10)
        record = hits.plan.record(hits.ranked_on)  # type: ignore[attr-defined]
        assert record["left_out"] == [0] and record["fallback"] == [1]  # "pottery" left out, "note" ranked
        assert record["term_rows"][0] >= 400
    finally:
        store.close()
