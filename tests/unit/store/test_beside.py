"""Reads beside a snapshot in SQLite (docs/storage.md#arms-beside-each-other): the change log names everything the
arms read, the helper borrows the snapshot's hold without queueing behind a writer, and it reads nothing at a
newer change-log entry (the rules on both backends: tests/contract/test_beside.py)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cuedrecall.api import Memory
from cuedrecall.store.beside import MISSED
from cuedrecall.store.index.locks import SnapshotLock
from cuedrecall.store.sqlite.store import SqliteStore
from tests.conftest import open_memory
from tests.contract.test_beside import A, keyword_refs, lighthouse

WAIT_S = 10


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with lighthouse(tmp_path / "beside.db") as memory:
        yield memory


def test_a_helper_at_a_newer_change_log_entry_reads_nothing(memory: Memory, tmp_path: Path) -> None:
    store: SqliteStore = memory.store_  # type: ignore[attr-defined]
    other = open_memory(tmp_path / "beside.db")
    outcomes: list[Any] = []
    read_at = store._read_at
    try:
        with store.snapshot():
            here = keyword_refs(store)[1]
            assert other.store(agent_id=A, content="the lighthouse keeper wrote the last letter")["ok"]
            done = threading.Event()

            def watched(*args: Any) -> Any:
                outcomes.append(read_at(*args))
                done.set()
                return outcomes[-1]

            store._read_at = watched  # type: ignore[method-assign]
            pending = store.beside(lambda: keyword_refs(store))
            assert done.wait(WAIT_S)
            thread, beside = pending()
        assert outcomes == [MISSED]  # the helper saw the other store's entry and read nothing
        assert thread == threading.current_thread().name and beside == here
    finally:
        del store._read_at
        other.close()


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
