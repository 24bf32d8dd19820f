"""Reads beside a snapshot: a recall's lexical arms run on a helper thread while its vector arms run on its own.

The rule (docs/storage.md#arms-beside-each-other): the helper reads through a
connection of its own, and its read transaction must see the change-log entry the
snapshot sees. Every change an arm can read is logged (schema step 10), so the same
entry means the same rows; and the index stays at that entry while the snapshot holds
the lock shared, which the helper borrows (``SnapshotLock.lend``) without waiting
behind a writer. When it cannot (another process committed in between, the snapshot
already ended, one connection only), the work runs in the snapshot's own thread when
its result is asked for: the answer never depends on which thread read it.

``SqliteBeside`` is a mixin of ``SqliteStore`` and holds only its helper threads.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from cuedrecall.store.sqlite.locks import SnapshotLock

T = TypeVar("T")
HELPERS = 4  # helper threads at most: one per recall in flight; a recall whose helper has not started runs it itself
_MISSED = object()  # the helper could not read the snapshot's state: the caller reads it itself


class SqliteBeside:
    """``beside``: a read started on a helper thread inside the calling thread's snapshot."""

    if TYPE_CHECKING:  # provided by SqliteStore
        _lock: SnapshotLock
        _local: threading.local
        _watermark: int
        _concurrent: bool

        def _take_reader(self) -> sqlite3.Connection: ...
        def _give_back(self, conn: sqlite3.Connection) -> None: ...

    _helpers: ThreadPoolExecutor | None = None
    _helpers_guard = threading.Lock()

    def beside(self, work: Callable[[], T]) -> Callable[[], T]:
        """Start ``work`` (reads only) beside this thread; the callable returned waits for its result and gives it
        (or raises what it raised). Outside a snapshot of its own connection it runs when asked for."""
        if not (self._concurrent and self._lock.holds_shared() and getattr(self._local, "conn", None) is not None):
            return work
        pool = self._helper_pool()
        if pool is None:
            return work
        try:
            future: Future[Any] = pool.submit(self._helped, work, self._watermark)
        except RuntimeError:  # the store is closing: its helpers take nothing new
            return work

        def result() -> T:
            if future.cancel():  # not started: every helper is busy with other recalls
                return work()
            out = future.result()
            return work() if out is _MISSED else out

        return result

    def _helped(self, work: Callable[[], T], watermark: int) -> Any:
        """``work`` on this helper thread, on a reader connection at the snapshot's change-log entry; _MISSED when
        that entry cannot be read here."""
        if not self._lock.lend():
            return _MISSED
        try:
            conn = self._take_reader()
            try:
                return self._read_at(conn, work, watermark)
            finally:
                self._give_back(conn)
        except sqlite3.Error:  # no reader to be had here (or the read failed): the snapshot's own thread reads it
            return _MISSED
        finally:
            self._lock.release()

    def _read_at(self, conn: sqlite3.Connection, work: Callable[[], T], watermark: int) -> Any:
        conn.execute("BEGIN")
        try:
            at = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM change_log").fetchone()[0]
            if at != watermark or self._watermark != watermark:
                return _MISSED
            self._local.conn, self._local.vectors = conn, {}
            try:
                return work()
            finally:
                self._local.conn = self._local.vectors = None
        finally:
            conn.execute("COMMIT")

    def _helper_pool(self) -> ThreadPoolExecutor | None:
        """The helper threads, started on first use; None on a single CPU, where a helper only adds a switch."""
        if self._helpers is None and (os.cpu_count() or 1) > 1:
            with self._helpers_guard:
                if self._helpers is None:
                    self._helpers = ThreadPoolExecutor(HELPERS, thread_name_prefix="cuedrecall-beside")
        return self._helpers

    def _stop_helpers(self) -> None:
        """Let the helper threads end (close): what is in flight finishes, nothing new starts."""
        if self._helpers is not None:
            self._helpers.shutdown(wait=False, cancel_futures=True)
