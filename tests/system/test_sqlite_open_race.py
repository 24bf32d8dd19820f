"""Opening a SQLite file another process holds locked waits for the lock, past SQLite's own busy timeout, up to
the write bound: the switch to WAL and the schema's migrations never answer "database is locked" to a server
starting beside another (docs/storage.md, store/sqlite/busy.py)."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from cuedrecall.errors import StoreError
from cuedrecall.store.sqlite import busy
from cuedrecall.store.sqlite.store import SqliteStore

HELD_S = 0.6


def _hold_exclusive(path: Path, held_s: float) -> threading.Event:
    """Another connection (as another process would) takes the file's exclusive lock for ``held_s``."""
    taken = threading.Event()

    def hold() -> None:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.execute("BEGIN EXCLUSIVE")
        taken.set()
        time.sleep(held_s)
        conn.execute("COMMIT")
        conn.close()

    threading.Thread(target=hold, daemon=True).start()
    assert taken.wait(10)
    return taken


def test_opening_a_file_locked_past_one_busy_timeout_waits_and_opens(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(busy, "BUSY_TIMEOUT_MS", 50)  # one SQLite wait far shorter than the lock is held
    path = tmp_path / "locked.db"
    sqlite3.connect(path).close()  # an empty file in rollback mode: the switch to WAL needs the exclusive lock
    _hold_exclusive(path, HELD_S)
    started = time.monotonic()
    store = SqliteStore(path)
    waited = time.monotonic() - started
    try:
        # one SQLite wait is 50 ms: only the retries cover the lock's time (the rule fired), and then it opened
        assert waited >= HELD_S / 2
        assert store.schema_version > 0
    finally:
        store.close()


def test_opening_a_file_locked_past_the_bound_says_busy_and_creates_nothing(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(busy, "BUSY_TIMEOUT_MS", 50)
    monkeypatch.setattr(busy, "WRITE_WAIT_S", 0.2)
    path = tmp_path / "locked.db"
    sqlite3.connect(path).close()
    _hold_exclusive(path, 1.5)
    with pytest.raises(StoreError, match=r"locked|busy"):
        SqliteStore(path)
    time.sleep(1.6)
    tables = sqlite3.connect(path).execute("SELECT name FROM sqlite_master").fetchall()
    assert tables == []
