"""Reads beside a snapshot (docs/storage.md#arms-beside-each-other), on both backends: a helper thread reads
exactly the snapshot it was started in, or the snapshot's own thread reads it instead; never another state."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cuedrecall.api import Memory
from cuedrecall.store.base import Scope, Store
from tests.conftest import open_memory

A = "agent-a"
SCOPE = Scope(A)
WAIT_S = 10


def lighthouse(path: Path) -> Memory:
    """A store of 20 memories the keyword "lighthouse" finds."""
    memory = open_memory(path)
    for i in range(20):
        memory.store(agent_id=A, content=f"the lighthouse keeper wrote letter {i}")
    return memory


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with lighthouse(tmp_path / "beside.db") as memory:
        yield memory


def keyword_refs(store: Store) -> tuple[str, list[str]]:
    """(the thread that read, the lexical arm's rows for "lighthouse")."""
    hits = store.memory_keyword(SCOPE, ["lighthouse"], "lighthouse", depth=100)
    return threading.current_thread().name, [hit.ref for hit in hits]


def started_beside(store: Any, work: Callable[[], Any]) -> Callable[[], Any]:
    """``store.beside(work)``, its result asked for once the helper has finished with it (read or missed), so
    that the helper is never skipped for having not started yet."""
    finished = threading.Event()
    helped = store._helped

    def watched(*args: Any) -> Any:
        try:
            return helped(*args)
        finally:
            finished.set()

    store._helped = watched
    try:
        pending = store.beside(work)
        assert finished.wait(WAIT_S), "the helper never ran"
    finally:
        del store._helped
    return pending


def test_a_helper_reads_the_snapshot_its_recall_holds(memory: Memory) -> None:
    store = memory.store_  # type: ignore[attr-defined]
    with store.snapshot():
        here = keyword_refs(store)[1]
        thread, beside = started_beside(store, lambda: keyword_refs(store))()
    assert thread.startswith("cuedrecall-beside")  # the rule fired: another thread read it
    assert beside == here and len(here) == 20


def test_a_write_committed_after_the_snapshot_began_is_read_by_neither(memory: Memory, tmp_path: Path) -> None:
    store = memory.store_  # type: ignore[attr-defined]
    other = open_memory(tmp_path / "beside.db")  # another process's store: its own connections and lock
    try:
        with store.snapshot():
            here = keyword_refs(store)[1]
            assert other.store(agent_id=A, content="the lighthouse keeper wrote the last letter")["ok"]
            beside = started_beside(store, lambda: keyword_refs(store))()[1]
        assert beside == here and len(here) == 20
        with store.snapshot():
            assert len(keyword_refs(store)[1]) == 21  # the next snapshot sees it
    finally:
        other.close()


def test_outside_a_snapshot_the_work_runs_when_asked_for(memory: Memory) -> None:
    store = memory.store_  # type: ignore[attr-defined]
    ran: list[str] = []
    pending = store.beside(lambda: ran.append(threading.current_thread().name))
    assert ran == []
    pending()
    assert ran == [threading.current_thread().name]


def test_what_the_helper_raises_the_caller_raises(memory: Memory) -> None:
    store = memory.store_  # type: ignore[attr-defined]

    def fails() -> None:
        raise ValueError("from the helper")

    with store.snapshot(), pytest.raises(ValueError, match="from the helper"):
        started_beside(store, fails)()
