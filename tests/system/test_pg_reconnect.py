"""PostgreSQL restarted under an open store (issue 30): the store's connections are opened again between
transactions, so a server process over PostgreSQL answers again once the database is back, without a restart of
its own. Before, the main connection stayed closed after a restart and every write failed until the process was
restarted (reads went on through new pooled readers).

The private PostgreSQL here is the test's own (benchmarks.multi_server.PrivatePostgres): restarting the tests'
shared server would cut the other tests' sessions. Skipped without pgserver (a test dependency).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.multi_server import PrivatePostgres
from cuedrecall.api import Memory
from cuedrecall.errors import StoreError
from cuedrecall.store.base import MEMORY
from cuedrecall.store.postgres import connection
from tests.conftest import make_settings

pytest.importorskip("pgserver")

AGENT = "reconnect-agent"


@pytest.fixture(scope="module")
def private_pg() -> Iterator[PrivatePostgres]:
    pg = PrivatePostgres()
    try:
        yield pg
    finally:
        pg.close()


@pytest.fixture
def memory(private_pg: PrivatePostgres, tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "unused.db", settings=make_settings(db_url=private_pg.fresh_url()), background=False) as m:
        assert m.store(agent_id=AGENT, content="written before the restart")["ok"]
        with m.store_.snapshot():  # a reader in the pool, there when the server goes
            m.store_.pending_tasks()
        yield m


def _end_every_session(pg: PrivatePostgres) -> None:
    """Every other session of the server ended (as a failover or an idle timeout ends them)."""
    pg.server.psql(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
        "AND backend_type = 'client backend';"
    )


def _queue_one(memory: Memory) -> None:
    with memory.store_.write() as conn:
        memory.store_.enqueue(conn, "probe", {})


def test_after_a_restart_writes_reads_and_snapshots_answer_on_their_first_try(
    private_pg: PrivatePostgres, memory: Memory
) -> None:
    private_pg.restart(0.2)
    _queue_one(memory)  # a write: the main connection opened again
    with memory.store_.snapshot():  # the pooled reader replaced
        assert memory.store_.pending_tasks() == 1
    private_pg.restart(0.2)
    assert memory.store_.pending_tasks() == 1  # a plain read
    private_pg.restart(0.2)
    answer = memory.store(agent_id=AGENT, content="written after the restarts")  # the tool, duplicate check first
    assert answer["ok"] and answer["result"] == "stored"
    texts = [row["content"] for row in memory.store_.export_rows(MEMORY, AGENT)]
    assert texts == ["written before the restart", "written after the restarts"]


def test_a_connection_dropped_without_a_word_is_found_by_its_first_statement(
    private_pg: PrivatePostgres, memory: Memory, monkeypatch: Any
) -> None:
    """The server gone without telling the idle connections (a crash, a cut network): each kind of access still
    answers on its first try, the failed statement having been the first of no transaction."""
    monkeypatch.setattr(connection, "_stale", connection._dropped)  # no look at the idle socket
    _end_every_session(private_pg)
    _queue_one(memory)  # BEGIN fails, begins again on a new connection
    _end_every_session(private_pg)
    assert memory.store_.pending_tasks() == 1  # read again once
    _end_every_session(private_pg)
    with memory.store_.snapshot():  # the reader's BEGIN fails, the pool is replaced
        assert memory.store_.pending_tasks() == 1


def test_a_connection_dropped_inside_a_write_fails_that_write_and_the_next_one_is_written(
    private_pg: PrivatePostgres, memory: Memory
) -> None:
    with pytest.raises(StoreError), memory.store_.write() as conn:
        memory.store_.enqueue(conn, "probe", {})
        _end_every_session(private_pg)
        memory.store_.enqueue(conn, "probe", {})  # the transaction is gone with its connection
    assert memory.store_.pending_tasks() == 0  # nothing of it was written
    _queue_one(memory)
    assert memory.store_.pending_tasks() == 1


def test_a_reader_dropped_inside_a_snapshot_raises_what_happened_and_the_next_snapshot_reads(
    private_pg: PrivatePostgres, memory: Memory
) -> None:
    with pytest.raises(StoreError, match="terminating connection"), memory.store_.snapshot():
        memory.store_.pending_tasks()
        _end_every_session(private_pg)
        memory.store_.pending_tasks()  # not "the connection is closed" from the COMMIT on the way out
    with memory.store_.snapshot():
        assert memory.store_.pending_tasks() == 0
