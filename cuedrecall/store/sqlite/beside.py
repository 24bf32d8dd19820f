"""Reads beside a snapshot in SQLite: the recall's full-text arms on a helper thread, at its snapshot exactly.

The rule (docs/storage.md#arms-beside-each-other): the helper reads through a
connection of its own, and its read transaction must see the change-log entry the
snapshot sees. Every change an arm can read is logged (schema step 10), so the same
entry means the same rows; and the index stays at that entry while the snapshot holds
the lock shared, which the helper borrows (``SnapshotLock.lend``) without waiting
behind a writer. When it cannot (another process committed in between, the snapshot
already ended), it reads nothing and the snapshot's own thread reads it
(``store/beside.py``).

``SqliteBeside`` is a mixin of ``SqliteStore``; its only state is the helper threads.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from cuedrecall.store.beside import MISSED, Helpers

if TYPE_CHECKING:
    from cuedrecall.store.index.locks import SnapshotLock

T = TypeVar("T")


class SqliteBeside:
    """``beside``: a read started on a helper thread inside the calling thread's snapshot."""

    if TYPE_CHECKING:  # provided by SqliteStore
        _lock: SnapshotLock
        _local: threading.local
        _watermark: int
        _concurrent: bool
        _helpers: Helpers

        def _take_reader(self) -> sqlite3.Connection: ...
        def _give_back(self, conn: sqlite3.Connection) -> None: ...

    def beside(self, work: Callable[[], T]) -> Callable[[], T]:
        """Start ``work`` (reads only) beside this thread; the callable returned gives its result (or raises what
        it raised). Outside a snapshot of its own connection it runs in this thread when asked for."""
        if not (self._concurrent and self._lock.holds_shared() and getattr(self._local, "conn", None) is not None):
            return work
        watermark = self._watermark
        return self._helpers.start(lambda: self._helped(work, watermark), work)

    def _helped(self, work: Callable[[], T], watermark: int) -> Any:
        """``work`` on this helper thread, on a reader connection at the snapshot's change-log entry; MISSED when
        that entry cannot be read here."""
        if not self._lock.lend():
            return MISSED
        try:
            conn = self._take_reader()
            try:
                return self._read_at(conn, work, watermark)
            finally:
                self._give_back(conn)
        except sqlite3.Error:  # no reader to be had here (or the read failed): the snapshot's own thread reads it
            return MISSED
        finally:
            self._lock.release()

    def _read_at(self, conn: sqlite3.Connection, work: Callable[[], T], watermark: int) -> Any:
        conn.execute("BEGIN")
        try:
            at = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM change_log").fetchone()[0]
            if at != watermark or self._watermark != watermark:
                return MISSED
            self._local.conn, self._local.vectors = conn, {}
            try:
                return work()
            finally:
                self._local.conn = self._local.vectors = None
        finally:
            conn.execute("COMMIT")
