"""Reads beside a snapshot (docs/storage.md#arms-beside-each-other): a helper thread reads exactly the snapshot
it was started in, or the snapshot's own thread reads it instead; never a newer or an older state."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cuedrecall.api import Memory
from cuedrecall.store.base import Scope
from cuedrecall.store.sqlite.locks import SnapshotLock
from cuedrecall.store.sqlite.store import SqliteStore
from tests.conftest import open_memory

A = "agent-a"
SCOPE = Scope(A)
WAIT_S = 10


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    memory = open_memory(tmp_path / "beside.db")
    for i in range(20):
        memory.store(agent_id=A, content=f"the lighthouse keeper wrote letter {i}")
    yield memory
    memory.close()


def keyword_refs(store: SqliteStore) -> tuple[str, list[str]]:
    """(the thread that read, the lexical arm's rows for "lighthouse")."""
    hits = store.memory_keyword(SCOPE, ["lighthouse"], "lighthouse", depth=100)
    return threading.current_thread().name, [hit.ref for hit in hits]


def started_beside(store: SqliteStore, work: Callable[[], Any]) -> Callable[[], Any]:
    """``store.beside(work)``, its result asked for once the helper has finished with it (read or missed), so
    that the helper is never skipped for having not started yet."""
    finished = threading.Event()
    read_at = store._read_at

    def watched(*args: Any) -> Any:
        try:
            return read_at(*args)
        finally:
            finished.set()

    store._read_at = watched  # type: ignore[method-assign]
    try:
        pending = store.beside(work)
        assert finished.wait(WAIT_S), "the helper never ran"
    finally:
        del store._read_at
    return pending


def test_a_helper_reads_the_snapshot_its_recall_holds(memory: Memory) -> None:
    store: SqliteStore = memory.store_  # type: ignore[attr-defined]
    with store.snapshot():
        here = keyword_refs(store)[1]
        thread, beside = started_beside(store, lambda: keyword_refs(store))()
    assert thread.startswith("cuedrecall-beside")  # the rule fired: another thread read it
    assert beside == here and len(here) == 20


def test_a_write_committed_after_the_snapshot_began_is_read_by_neither(memory: Memory, tmp_path: Path) -> None:
    store: SqliteStore = memory.store_  # type: ignore[attr-defined]
    other = open_memory(tmp_path / "beside.db")  # another process's store: its own connections and lock
    try:
        with store.snapshot():
            here = keyword_refs(store)[1]
            assert other.store(agent_id=A, content="the lighthouse keeper wrote the last letter")["ok"]
            thread, beside = started_beside(store, lambda: keyword_refs(store))()
        assert thread == threading.current_thread().name  # the helper saw a newer entry and read nothing
        assert beside == here and len(here) == 20
        with store.snapshot():
            assert len(keyword_refs(store)[1]) == 21  # the next snapshot sees it
    finally:
        other.close()


def test_outside_a_snapshot_the_work_runs_when_asked_for(memory: Memory) -> None:
    store: SqliteStore = memory.store_  # type: ignore[attr-defined]
    ran: list[str] = []
    pending = store.beside(lambda: ran.append(threading.current_thread().name))
    assert ran == []
    pending()
    assert ran == [threading.current_thread().name]


def test_what_the_helper_raises_the_caller_raises(memory: Memory) -> None:
    store: SqliteStore = memory.store_  # type: ignore[attr-defined]

    def fails() -> None:
        raise ValueError("from the helper")

    with store.snapshot(), pytest.raises(ValueError, match="from the helper"):
        started_beside(store, fails)()


def test_a_change_to_what_the_full_text_arms_read_is_logged(memory: Memory) -> None:
    """Schema step 10: a content (summary, keywords) update alone moves the change log, so one entry names the
    rows every arm reads."""
    memory.archive_episode(agent_id=A, summary="a walk to the lighthouse", keywords="walk")
    store: SqliteStore = memory.store_  # type: ignore[attr-defined]
    conn = sqlite3.connect(store.path)
    try:
        for update in (
            "UPDATE memories SET content = 'the keeper moved away' WHERE id = 1",
            "UPDATE episodes SET summary = 'a walk by the sea' WHERE id = 1",
            "UPDATE episodes SET keywords = 'sea' WHERE id = 1",
        ):
            before = conn.execute("SELECT MAX(seq) FROM change_log").fetchone()[0]
            with conn:
                conn.execute(update)
            assert conn.execute("SELECT MAX(seq) FROM change_log").fetchone()[0] > before, update
    finally:
        conn.close()


def test_a_lent_hold_does_not_wait_behind_a_waiting_writer() -> None:
    lock = SnapshotLock()
    lock.acquire_shared()  # the recall's snapshot
    writer = threading.Thread(target=lambda: (lock.acquire(), lock.release()))
    writer.start()
    while lock._writers_waiting == 0:  # the writer now waits on the snapshot
        threading.Event().wait(0.001)
    lent: list[bool] = []
    helper = threading.Thread(target=lambda: (lent.append(lock.lend()), lock.release()))
    helper.start()
    helper.join(WAIT_S)
    assert lent == [True]  # a new snapshot would wait here; the helper does not
    lock.release()
    writer.join(WAIT_S)
    assert not writer.is_alive()


def test_nothing_is_lent_once_no_snapshot_holds_the_lock() -> None:
    lock = SnapshotLock()
    outcome: list[bool] = []
    helper = threading.Thread(target=lambda: outcome.append(lock.lend()))
    helper.start()
    helper.join(WAIT_S)
    with lock:  # a writer holds it: nothing lent either
        helper = threading.Thread(target=lambda: outcome.append(lock.lend()))
        helper.start()
        helper.join(WAIT_S)
    assert outcome == [False, False]
