"""The store's in-process lock: many snapshot readers at once, or one writer; a waiting writer goes first.

The rule: a thread inside a snapshot (``shared()``) holds the lock shared, and the index
is only changed while it is held exclusive, so every snapshot reads one unchanging index.
``with lock:`` (exclusive, reentrant) is what every other store method takes; taken by a
thread that is inside a snapshot it is a no-op, since that thread only reads and the
shared hold already keeps writers out. Once a writer waits, new snapshots wait behind it,
so a stream of recalls never starves a store.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_EXCLUSIVE, _SHARED, _COVERED = "x", "s", "n"


class SnapshotLock:
    """A reentrant readers-writer lock with writer preference; ``with lock:`` takes it exclusive."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._owner: int | None = None  # the thread holding it exclusive
        self._depth = 0
        self._readers: dict[int, int] = {}  # thread -> shared holds
        self._writers_waiting = 0
        self._held = threading.local()  # this thread's stack of holds, so release undoes the matching kind

    def _stack(self) -> list[str]:
        stack = getattr(self._held, "stack", None)
        if stack is None:
            stack = self._held.stack = []
        return stack

    def holds_shared(self) -> bool:
        """This thread is inside a snapshot (and not the exclusive holder)."""
        return threading.get_ident() in self._readers and self._owner != threading.get_ident()

    def holds_exclusive(self) -> bool:
        return self._owner == threading.get_ident()

    def acquire(self) -> None:
        me = threading.get_ident()
        # fast paths without the condition: only this thread changes its own entry and the owner while it holds
        if self._owner == me:
            self._depth += 1
            self._stack().append(_EXCLUSIVE)
            return
        if me in self._readers:  # a read inside this thread's snapshot: the shared hold covers it
            self._stack().append(_COVERED)
            return
        with self._cond:
            self._writers_waiting += 1
            try:
                self._cond.wait_for(lambda: self._owner is None and not self._readers)
            finally:
                self._writers_waiting -= 1
            self._owner, self._depth = me, 1
            self._stack().append(_EXCLUSIVE)

    def release(self) -> None:
        stack = self._stack()
        if stack[-1] == _COVERED or (stack[-1] == _EXCLUSIVE and self._depth > 1):
            kind = stack.pop()  # nothing another thread waits on changes
            if kind == _EXCLUSIVE:
                self._depth -= 1
            return
        with self._cond:
            kind = stack.pop()
            if kind == _EXCLUSIVE:
                self._depth -= 1
                if self._depth == 0:
                    self._owner = None
                    self._cond.notify_all()
            elif kind == _SHARED:
                me = threading.get_ident()
                self._readers[me] -= 1
                if self._readers[me] == 0:
                    del self._readers[me]
                    self._cond.notify_all()

    def acquire_shared(self) -> None:
        me = threading.get_ident()
        with self._cond:
            if self._owner == me:  # a snapshot inside this thread's write: the exclusive hold covers it
                self._stack().append(_COVERED)
                return
            if me not in self._readers:  # a nested snapshot never waits (a waiting writer would wait on it)
                self._cond.wait_for(lambda: self._owner is None and self._writers_waiting == 0)
            self._readers[me] = self._readers.get(me, 0) + 1
            self._stack().append(_SHARED)

    def lend(self) -> bool:
        """Take the lock shared for a helper thread of a snapshot that holds it: without waiting behind a writer
        (the snapshot waits on the helper, and the writer on the snapshot). False, nothing taken, when no
        snapshot holds it any more or a writer does; then the index may have moved and the helper reads nothing."""
        me = threading.get_ident()
        with self._cond:
            if self._owner is not None or not self._readers or me in self._readers:
                return False
            self._readers[me] = 1
            self._stack().append(_SHARED)
            return True

    @contextmanager
    def shared(self) -> Iterator[None]:
        self.acquire_shared()
        try:
            yield
        finally:
            self.release()

    def __enter__(self) -> SnapshotLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
