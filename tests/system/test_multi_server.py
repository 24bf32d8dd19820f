"""The multi-server run's CI size (benchmarks/multi_server.py, issue 30): two HTTP servers over one private
PostgreSQL, four clients of mixed store / update / delete / recall / reconstruct over four agents, one server
SIGKILLed and started again, PostgreSQL restarted once. The outcomes asserted are the invariants, never timings:
every acknowledged write there exactly once and whole, no row or answer crossing agents, every queue task
finished once, and writes acknowledged again after each fault. Skipped only without pgserver (a test
dependency)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks import multi_server

pytest.importorskip("pgserver")


@pytest.fixture(scope="module")
def private_pg() -> Iterator[multi_server.PrivatePostgres]:
    pg = multi_server.PrivatePostgres()
    try:
        yield pg
    finally:
        pg.close()


def test_two_servers_over_postgresql_lose_nothing_through_a_kill_and_a_database_restart(
    private_pg: multi_server.PrivatePostgres, tmp_path: Path
) -> None:
    run = multi_server.run_one("postgres", 2, 4, 4.0, tmp_path, pg=private_pg, prefill_rows=20, outage=1.0, seed=3001)
    assert run.failures == []
    checks = run.checks
    # the faults happened, and writes were acknowledged after each
    assert run.kill_back_s > 0 and run.pg_down_s > 0
    assert run.acked_after_kill > 0 and run.acked_after_pg > 0
    # every acknowledged store there once, whole, under its ref (updates and deletes included)
    assert checks["acknowledged stores present"] > 0
    assert checks["acknowledged stores present, whole"] == checks["acknowledged stores present"]
    assert checks["prefilled rows present once"] == 4 * 20 and checks["prefilled rows missing"] == 0
    # nothing crossed agents
    assert checks["refs answered by reads, checked"] > 0 and checks["refs of another agent answered"] == 0
    assert checks.get("rows under another agent", 0) == 0
    assert checks["cross-agent probes refused"] == checks["cross-agent probes sent"]
    assert checks["of them found"] == checks["recalls of an own row's token"]
    # every task finished once: builds and the re-embedding by the servers, the queue empty at the end, every
    # prefilled row re-embedded and every row's block set the division of its text
    assert run.tasks["build_blocks"] > 0 and run.tasks["reembed_vectors"] + run.settled["reembed_vectors"] >= 1
    assert checks["rows re-embedded and current"] == checks["block sets checked"] > 4 * 20
