"""Locks and waits: another process's long write is waited for within a bound and never surfaces as the driver's
"database is locked"; a long import commits in batches; snapshot readers of one server run at once while a write
waits for them (store/sqlite/store.py, store/index/locks.py, handlers/portability/importer.py)."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cuedrecall.api import Memory
from cuedrecall.handlers.portability.importer import COMMIT_BATCH
from cuedrecall.store.index.locks import SnapshotLock
from cuedrecall.store.sqlite.store import READER_POOL
from tests.conftest import helpers_waited_for, open_memory

HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("INSERT INTO profiles(agent_id, user_id, content, updated_at) VALUES ('holder', '', 'held', '')")
print("held", flush=True)
sys.stdin.readline()
conn.execute("COMMIT")
print("committed", flush=True)
"""


@pytest.fixture
def holder(db_path: Path, memory: Memory) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the database's write lock (one open transaction) until told to commit."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=30)


def _release(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("go\n")
    proc.stdin.flush()
    assert proc.stdout.readline().strip() == "committed"


def test_a_store_waits_for_another_processs_write_and_then_succeeds(
    memory: Memory, holder: subprocess.Popen[str]
) -> None:
    answers: list[dict[str, Any]] = []
    storing = threading.Thread(
        target=lambda: answers.append(
            memory.store(agent_id="a", message={"content": "stored while another process wrote"})
        )
    )
    storing.start()
    threading.Event().wait(0.3)  # let the store reach the lock (it succeeds whether or not it got there first)
    _release(holder)
    storing.join(timeout=60)
    assert answers and answers[0]["ok"] is True and answers[0]["result"] == "stored"
    assert memory.get_profile(agent_id="holder")["profile"] == "held"  # the other process's write is kept too
    assert memory.list_memories(agent_id="a")["count"] == 1


def test_a_store_past_the_wait_bound_answers_busy_never_the_drivers_error_and_writes_nothing(
    memory: Memory, holder: subprocess.Popen[str]
) -> None:
    memory.store_.write_wait_s = 0.3
    answer = memory.store(agent_id="a", message={"content": "refused while another process wrote"})
    assert answer["ok"] is False and answer["result"] == "rejected"
    assert "busy" in answer["error"] and "nothing was written" in answer["error"]
    assert "database is locked" not in answer["error"]
    _release(holder)
    assert memory.list_memories(agent_id="a")["count"] == 0
    assert memory.store(agent_id="a", message={"content": "after the other write"})["ok"] is True


def _export(tmp_path: Path, count: int) -> Path:
    """A JSONL export of ``count`` memories of agent "imp"."""
    path = tmp_path / "big.jsonl"
    with open_memory(tmp_path / "source.db") as source:
        with source.store_.write() as conn:
            for i in range(count):
                source.store_.insert_memory(
                    conn,
                    {
                        "agent_id": "imp",
                        "content": f"imported memory number {i}",
                        "timestamp": "2025-01-01T00:00:00+00:00",
                        "created_at": "2025-01-01T00:00:00+00:00",
                    },
                )
        assert source.call("export_memories", {"agent_id": "imp", "output_path": str(path)}, anywhere=True)["ok"]
    return path


def _held(memory: Memory, agent: str) -> int:
    """How many memories the agent has, as this connection sees them now."""
    return memory.store_.pool_counts(memory.scope(agent, None, "", ""))[0]


def test_a_long_import_commits_in_batches_so_another_process_writes_between_them(
    tmp_path: Path, db_path: Path, memory: Memory
) -> None:
    count = COMMIT_BATCH * 2 + 10
    path = _export(tmp_path, count)
    seen: list[int] = []
    with open_memory(db_path) as other:
        other.store_.write_wait_s = 0.5  # less than the whole import would take to commit in one transaction

        def progress(_: int) -> None:  # called between the batches: what another connection sees and can do then
            seen.append(_held(other, "imp"))
            assert other.store(agent_id="other", message={"content": f"between batches {len(seen)}"})["ok"]

        result = memory.call(
            "import_memories", {"input_path": str(path), "target_agent_id": ""}, anywhere=True, progress=progress
        )
    assert result["ok"] is True and result["imported_memories"] == count
    assert any(0 < n < count for n in seen)  # batches were committed while the import still ran
    assert _held(memory, "imp") == count
    again = memory.call("import_memories", {"input_path": str(path), "target_agent_id": ""}, anywhere=True)
    assert (again["imported_memories"], again["skipped_memories"]) == (0, count)  # each record once


def test_snapshot_readers_of_one_store_run_at_once(memory: Memory) -> None:
    store = memory.store_
    inside, other_inside = threading.Event(), threading.Event()

    def first() -> None:
        with store.snapshot():
            inside.set()
            other_inside.wait(timeout=30)  # held open until the second reader is inside too

    reader = threading.Thread(target=first)
    reader.start()
    assert inside.wait(timeout=30)
    with store.snapshot():
        other_inside.set()
    reader.join(timeout=30)
    assert other_inside.is_set() and not reader.is_alive()


def test_a_write_waits_for_open_snapshots_and_a_snapshot_reads_one_state(memory: Memory) -> None:
    store = memory.store_
    memory.store(agent_id="a", message={"content": "first"})
    written = threading.Event()
    counts: list[int] = []

    def write() -> None:
        memory.store(agent_id="a", message={"content": "second"})
        written.set()

    with store.snapshot():
        counts.append(store.pool_counts(memory.scope("a", None, "", ""))[0])
        writer = threading.Thread(target=write)
        writer.start()
        threading.Event().wait(0.2)
        counts.append(store.pool_counts(memory.scope("a", None, "", ""))[0])
        assert not written.is_set()  # the write waits for the snapshot
    writer.join(timeout=30)
    assert counts == [1, 1] and written.is_set()
    assert store.pool_counts(memory.scope("a", None, "", ""))[0] == 2


def test_a_snapshot_sees_what_another_connection_committed_before_it_began(db_path: Path, memory: Memory) -> None:
    memory.recall(agent_id="a", query="ferry")  # this thread's reader connection is open and has read once
    with open_memory(db_path) as other:
        stored = other.store(agent_id="a", message={"content": "the ferry leaves at seven"})
    found = memory.recall(agent_id="a", query="the ferry leaves at seven")
    assert [m["ref"] for m in found["messages"] if "ref" in m][-1] == stored["ref"]


def test_recalls_on_many_threads_stay_whole_while_another_connection_writes(db_path: Path, memory: Memory) -> None:
    stop = threading.Event()
    answers: list[dict[str, Any]] = []

    def recall_loop(number: int) -> None:
        while not stop.is_set() and len(answers) < 2000:
            answers.append(memory.recall(agent_id="a", query=f"harbour crane number {number}", limit=5))

    readers = [threading.Thread(target=recall_loop, args=(n,)) for n in range(4)]
    for thread in readers:
        thread.start()
    with open_memory(db_path) as other:  # another connection, as another process would be
        refs = {
            other.store(agent_id="a", message={"content": f"harbour crane number {i} was painted"})["ref"]: i
            for i in range(40)
        }
    stop.set()
    for thread in readers:
        thread.join(timeout=60)
    assert answers and all(a.get("ok") is not False and isinstance(a["messages"], list) for a in answers)
    for ref, i in list(refs.items())[::8]:  # every write is seen, the index and the rows agreeing
        found = memory.recall(agent_id="a", query=f"harbour crane number {i} was painted", limit=3)
        assert found["messages"][-1]["ref"] == ref


def test_snapshots_run_one_after_another_on_many_threads_share_one_reader_connection(memory: Memory) -> None:
    store = memory.store_
    store.beside = lambda work: work  # type: ignore[attr-defined]  # the snapshots alone (their helpers: below)
    try:
        memory.recall(agent_id="a", query="anything")
        before = set(store._readers)  # type: ignore[attr-defined]
        threads = [threading.Thread(target=lambda: memory.recall(agent_id="a", query="anything")) for _ in range(5)]
        for thread in threads:
            thread.start()
            thread.join(timeout=30)
        assert store._readers == before and len(before) == 1  # type: ignore[attr-defined]  # a server's workers
    finally:
        del store.beside  # type: ignore[attr-defined]


def test_recalls_one_after_another_with_their_helpers_keep_two_reader_connections(memory: Memory) -> None:
    """A helper reads beside its recall on a connection of its own (docs/storage.md#arms-beside-each-other); one
    recall after another reuses the same two."""
    store = memory.store_
    with helpers_waited_for(store) as read:
        threads = [threading.Thread(target=memory.recall, kwargs={"agent_id": "a", "query": "else"}) for _ in range(8)]
        for thread in threads:
            thread.start()
            thread.join(timeout=30)
    assert len(read) == 8  # every recall's helper read
    assert len(store._readers) == 2  # type: ignore[attr-defined]


def test_a_burst_of_concurrent_snapshots_leaves_at_most_the_pool_of_idle_connections(memory: Memory) -> None:
    store = memory.store_
    started, go = threading.Barrier(READER_POOL + 3), threading.Event()

    def hold() -> None:
        with store.snapshot():
            started.wait(timeout=30)
            go.wait(timeout=30)

    threads = [threading.Thread(target=hold) for _ in range(READER_POOL + 3)]
    for thread in threads:
        thread.start()
    go.set()
    for thread in threads:
        thread.join(timeout=30)
    assert len(store._readers) == READER_POOL  # type: ignore[attr-defined]  # the rest were closed


def test_a_write_inside_a_snapshot_is_refused(memory: Memory) -> None:
    store = memory.store_
    with store.snapshot(), pytest.raises(Exception, match="snapshot"), store.write():
        pass


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["read", "write", "nested"]), min_size=1, max_size=6), min_size=2, max_size=5))
def test_the_lock_never_lets_a_writer_in_beside_anyone(plans: list[list[str]]) -> None:
    lock = SnapshotLock()
    state = {"readers": 0, "writers": 0}
    guard = threading.Lock()
    broken: list[str] = []

    def hold(kind: str) -> None:
        with guard:
            state[kind] += 1
            if state["writers"] > 1 or (state["writers"] and state["readers"]):
                broken.append(f"{state}")
        threading.Event().wait(0.001)
        with guard:
            state[kind] -= 1

    def run(plan: list[str]) -> None:
        for step in plan:
            if step == "write":
                with lock:
                    hold("writers")
            else:
                with lock.shared():
                    hold("readers")
                    if step == "nested":
                        with lock.shared(), lock:  # a nested snapshot and a read inside it never wait
                            pass

    threads = [threading.Thread(target=run, args=(plan,)) for plan in plans]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not broken and not any(thread.is_alive() for thread in threads)
