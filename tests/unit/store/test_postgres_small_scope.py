"""Both backends plan a small scope's terms alike (keyword-budget-v2, store/term_counts.py): in a table past the
first budget, a scope of at most SCOPE_SCAN_ROWS memories keeps the first pass's budget for its fallback, so a term
common in other agents' rows is left out of the ranking (the trigram arm scans the scope for it, the word arm goes
without it) on PostgreSQL as on SQLite."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock
from cuedrecall.store.base import Scope
from cuedrecall.store.term_counts import FIRST_PASS_ROWS, SCOPE_SCAN_ROWS
from tests.conftest import NOW, make_settings
from tests.pg_server import postgres_url

pytestmark = pytest.mark.postgres

BIG, SMALL = "big", "small"
COMMON = "apple"  # in more rows than the first budget, nearly all of them another agent's


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Memory]]:
    folder: Path = tmp_path_factory.mktemp("small")
    opened = {
        "sqlite": Memory(folder / "m.db", settings=make_settings(), clock=fixed_clock(NOW), background=False),
        "postgres": Memory(
            settings=make_settings(db_url=postgres_url(), db_path=":memory:"), clock=fixed_clock(NOW), background=False
        ),
    }
    rows = [(BIG, f"{COMMON} crate number {i} shipped") for i in range(FIRST_PASS_ROWS + 100)]
    rows += [(SMALL, f"note {i}: {COMMON} pie with pear" if i % 3 == 0 else f"note {i}: pear tart") for i in range(60)]
    for memory in opened.values():
        store = memory.store_  # type: ignore[attr-defined]
        with store.write() as conn:
            for agent, content in rows:
                store.insert_memory(conn, {"agent_id": agent, "content": content, "timestamp": NOW, "created_at": NOW})
    yield opened
    for memory in opened.values():
        memory.close()


def test_a_small_scope_leaves_a_term_common_elsewhere_out_on_both_backends(stores: dict[str, Memory]) -> None:
    found = {}
    for kind, memory in stores.items():
        store, scope = memory.store_, Scope(SMALL)  # type: ignore[attr-defined]
        assert store.pool_counts(scope)[0] <= SCOPE_SCAN_ROWS < store.row_count("memories")
        keyword = store.memory_keyword(scope, [COMMON], COMMON, depth=10)
        words = store.memory_words(scope, [COMMON], depth=10)
        for hits in (keyword, words):
            assert hits.plan.fallback_rows == FIRST_PASS_ROWS and hits.plan.left_out == (COMMON,), kind
        found[kind] = ([hit.ref for hit in keyword], [hit.ref for hit in words])
    assert found["postgres"] == found["sqlite"]
    keyword, words = found["sqlite"]
    assert len(keyword) == 10 and not words  # the scan finds the scope's rows; the word arm ranks on nothing


def test_a_big_scope_ranks_on_the_term_within_the_fallback_budget_on_both_backends(stores: dict[str, Memory]) -> None:
    found = {}
    for kind, memory in stores.items():
        store = memory.store_  # type: ignore[attr-defined]
        hits = store.memory_words(Scope(BIG), [COMMON], depth=10)
        assert hits.plan.left_out == () and len(hits) == 10, kind
        found[kind] = [hit.ref for hit in hits]
    assert found["postgres"] == found["sqlite"]


def test_a_stores_own_writes_move_the_table_size_the_plan_reads_at_once() -> None:
    """The plan changes where the table passes a budget: PostgreSQL's kept count follows its own writes, as
    SQLite's exact count does (another process's are seen within ROWS_TTL_S)."""
    with Memory(
        settings=make_settings(db_url=postgres_url(), db_path=":memory:"), clock=fixed_clock(NOW), background=False
    ) as memory:
        store = memory.store_  # type: ignore[attr-defined]
        assert store.row_count("memories") == 0
        for i in range(3):
            assert memory.store(agent_id=SMALL, content=f"pear tart number {i}")["ok"]
            assert store.row_count("memories") == i + 1
        memory.delete_memory(agent_id=SMALL, memory_id=1)
        assert store.row_count("memories") == 2
