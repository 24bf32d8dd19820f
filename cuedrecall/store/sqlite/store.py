"""The embedded default store: one SQLite file in WAL mode plus the in-process indexes.

The SQL both backends share is ``store/sql/``'s mixins (records, the arms' entry points, blocks and the queue,
the graph, folders, maintenance), spelled by ``dialect.py``; what is SQLite's own lives beside this file: the
arms' scoring (``arms.py``), the block arm over its index (``blocks.py``), the explorer's pages (``browse.py``),
the full-text and index checks (``maintenance.py``), each a mixin over this class's connection, lock and
indexes. Snapshots of several threads read at once, each on a connection of its own, while writes and index
updates take the lock exclusive (``locks.py``); a write waits for another process's write lock within a bound
(``busy.py``).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from cuedrecall.errors import StoreError
from cuedrecall.store.base import EPISODE, MEMORY, Scope, make_ref, split_ref
from cuedrecall.store.beside import Helpers
from cuedrecall.store.bounded import Lru
from cuedrecall.store.index.block_index import BlockIndex
from cuedrecall.store.index.locks import SnapshotLock
from cuedrecall.store.index.vector_index import IndexRow, VectorIndex
from cuedrecall.store.predicates import scope_where
from cuedrecall.store.rows import TABLES, pool_growth
from cuedrecall.store.sql.folders import SqlFolders
from cuedrecall.store.sql.graph import SqlGraph
from cuedrecall.store.sql.records import SqlRecords
from cuedrecall.store.sqlite.arms import SqliteArms
from cuedrecall.store.sqlite.beside import SqliteBeside
from cuedrecall.store.sqlite.blocks import SqliteBlocks
from cuedrecall.store.sqlite.browse import SqliteBrowse
from cuedrecall.store.sqlite.busy import (
    WRITE_SLICE_S,
    WRITE_WAIT_S,
    begin_write,
    enter_wal,
    open_reader,
)
from cuedrecall.store.sqlite.dialect import SQLITE
from cuedrecall.store.sqlite.grown_stats import GrownStats, Upto
from cuedrecall.store.sqlite.maintenance import SqliteMaintenance
from cuedrecall.store.sqlite.schema import migrate
from cuedrecall.store.term_counts import TermCounts

SNAPSHOT_TRIES = 3  # catch-ups a concurrent snapshot tries before it reads under the exclusive lock instead
# Idle reader connections kept. A snapshot takes the most recently used one, whatever thread runs it, so one
# client's calls reuse one connection (and its page cache) though a server hands them to different worker
# threads; a burst of concurrent snapshots opens more, and those beyond this many close when given back.
READER_POOL = 4
CLOSE_CHECKPOINT_MS = 1000  # the most a close waits on another process's read to empty the WAL
STATS_CACHE_MAX = 1024  # reads kept until the next change (``_cached``), least recently used leaving first


def _vector(blob: bytes | None) -> np.ndarray | None:
    return None if blob is None else _stored_vector(blob)


def _stored_vector(blob: bytes) -> np.ndarray:
    """A vector column read where the query asked for ``embedding IS NOT NULL``."""
    return np.frombuffer(blob, dtype="<f4")


def _create_private(path: str) -> bool:
    """Create the database file 0600 (whatever the umask) when it does not exist; True when this call made it.

    SQLite creates its -wal and -shm files with the database file's mode. An
    existing file keeps the mode it has.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    except OSError:
        return False  # not a plain path SQLite can open (a URI, a device): sqlite3 reports what is wrong
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    return True


def _private_side_files(path: str) -> None:
    """Make a new database's -wal and -shm files 0600 too (SQLite copies the mode; this is the belt)."""
    for suffix in ("-wal", "-shm"):
        try:
            os.chmod(path + suffix, 0o600)
        except OSError:
            pass  # not there (yet): SQLite creates it later with the database file's mode


class SqliteStore(
    SqlRecords, SqliteArms, SqliteMaintenance, SqliteBlocks, SqlGraph, SqlFolders, SqliteBrowse, SqliteBeside
):
    """All SQL of cuedrecall's embedded backend. One writer at a time; the indexes follow every commit."""

    read_only = False  # set by a read-only opener (the explorer without --write): ``write`` refuses
    dialect = SQLITE  # how the shared SQL (store/sql/) is spelled here

    def __init__(self, path: str | Path, *, common_term_ratio: float = 0.1, vector_model: str | None = None) -> None:
        """``vector_model``: the only ``embedding_model`` whose vectors the vector index holds, so no vector arm
        compares a query with a vector of another model (None: any model, as every width-fitting vector)."""
        self.path = str(path)
        self.vector_model = vector_model
        created = False
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            created = _create_private(self.path)
        self._lock = SnapshotLock()
        self._writing = False  # inside write(): reads see uncommitted rows, so nothing read is cached
        self._closed = False
        self.write_wait_s = WRITE_WAIT_S
        try:
            self._main = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            enter_wal(self._main)
            self._main.execute("PRAGMA synchronous=NORMAL")
            self.schema_version = migrate(self._main)
        except sqlite3.Error as exc:
            raise self._failure(exc) from exc
        # a file (not :memory:, which is one connection's own database) gives each reading thread a connection
        self._concurrent = self.path != ":memory:" and not self.path.startswith("file:")
        self._local = threading.local()  # .conn: this thread's reader connection while it is in a snapshot
        self._idle: list[sqlite3.Connection] = []  # reader connections no snapshot holds, most recent last
        self._readers: set[sqlite3.Connection] = set()  # every open reader connection, for close()
        self._pool_guard = threading.Lock()
        if created:
            _private_side_files(self.path)
        self._indexes = {MEMORY: self._new_index(MEMORY), EPISODE: self._new_index(EPISODE)}
        self._blocks = BlockIndex(spill=self._spill_dir())
        self._helpers = Helpers("cuedrecall-beside")  # threads that read beside a snapshot (beside.py)
        self._watermark = 0
        self._data_version = -1
        # reads kept until the next change (profiles, graph presence, browse buckets per agent): bounded, since a
        # caller may name any agent; docs/caches.md
        self._stats_cache: Lru[Any] = Lru(STATS_CACHE_MAX)
        self._grown = GrownStats()  # counts and spans kept across writes that only add records
        self._vocab = TermCounts(self, common_term_ratio)
        self._rebuild_indexes()

    def _failure(self, exc: sqlite3.Error) -> StoreError:
        """What a driver's error leaves the store as (``Dialect.failure``): StoreError, StoreClosedError once
        closed."""
        return self.dialect.failure(exc, closed=self._closed)

    @property
    def _conn(self) -> sqlite3.Connection:
        """The connection this thread reads through: its own inside a concurrent snapshot, else the shared one."""
        return getattr(self._local, "conn", None) or self._main

    def close(self) -> None:
        """Close every connection, folding the WAL into the database file first (``_checkpoint``); what is asked
        of the store afterwards raises StoreClosedError."""
        with self._lock:
            self._closed = True
            for reader in list(self._readers):
                reader.close()
            self._checkpoint()
            self._main.close()
        self._helpers.stop()

    def _checkpoint(self) -> None:
        """Copy the WAL's pages into the database file and empty it, so the .db alone holds every commit
        (a copy of the file loses nothing). SQLite does this by itself only when the last connection closes;
        another process with the file open (the explorer, a second server) would leave it in the -wal file.
        Best effort: another process's read in progress makes it wait at most CLOSE_CHECKPOINT_MS, and what
        is left is folded in by a later close or checkpoint. A read-only store writes nothing."""
        if self.read_only or not self._concurrent:
            return
        try:
            self._main.execute(f"PRAGMA busy_timeout={CLOSE_CHECKPOINT_MS}")
            self._main.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        except sqlite3.Error:  # closed already, or busy past the bound: nothing lost, the WAL stays valid
            pass

    # -- transactions and the index ------------------------------------------------

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """A consistent read (``_snapshot``); the driver's errors inside it leave as StoreError."""
        try:
            with self._snapshot():
                yield
        except sqlite3.Error as exc:
            raise self._failure(exc) from exc

    @contextmanager
    def _snapshot(self) -> Iterator[None]:
        """A consistent read: one read transaction, caught up once at its start.

        Inside it every read sees the same committed state, the index included, and
        none pays a freshness check of its own. Writers of other connections go on
        (WAL). Snapshots of several threads run at once, each on its own connection,
        holding the lock shared (``store/index/locks.py``): the index only changes under the
        exclusive lock, so it stays at the change-log entry each snapshot's SQL sees.
        """
        if self._lock.holds_exclusive() or self._lock.holds_shared() or not self._concurrent:
            with self._exclusive_snapshot():  # nested, inside a write, or one connection only
                yield
            return
        conn = self._take_reader()
        try:
            yield from self._shared_snapshot(conn)
        finally:
            self._give_back(conn)

    def _shared_snapshot(self, conn: sqlite3.Connection) -> Iterator[None]:
        """``snapshot``'s body on a reader connection this thread holds: the lock shared once the index matches."""
        for _ in range(SNAPSHOT_TRIES):
            if self._begin_shared(conn):
                break
            with self._lock:  # exclusive: the index follows the log (another process, or a write here, committed)
                self._catch_up(force=True)
        else:  # the log moved under every try: read this once as one connection
            with self._exclusive_snapshot():
                yield
            return
        self._local.conn = conn
        self._local.vectors = {}  # stored vectors read in this snapshot: a recall's arms share them
        try:
            yield
        finally:
            self._local.conn = self._local.vectors = None
            self._end_shared(conn)

    def _begin_shared(self, conn: sqlite3.Connection) -> bool:
        """Take the lock shared and open a read transaction on ``conn``; True (both held) when the index is at the
        change-log entry the transaction sees, else False with both given back."""
        self._lock.acquire_shared()
        try:
            conn.execute("BEGIN")
            # this first read fixes the snapshot; the index matches it when it has applied the log to the same entry
            if conn.execute("SELECT COALESCE(MAX(seq), 0) FROM change_log").fetchone()[0] == self._watermark:
                return True
        except BaseException:
            self._end_shared(conn)
            raise
        self._end_shared(conn)
        return False

    def _end_shared(self, conn: sqlite3.Connection) -> None:
        try:
            if conn.in_transaction:
                conn.execute("COMMIT")
        finally:
            self._lock.release()

    @contextmanager
    def _exclusive_snapshot(self) -> Iterator[None]:
        """The one-connection snapshot: the shared connection's read transaction under the exclusive lock."""
        with self._lock:
            if self._conn.in_transaction:  # nested, or inside a write: already consistent
                yield
                return
            self._conn.execute("BEGIN")
            try:
                self._apply_log()  # its first read fixes the snapshot, so the index matches what SQL sees
                yield
            finally:
                self._conn.execute("COMMIT")

    def _reader(self) -> sqlite3.Connection:
        """The reader connection the next snapshot takes (the most recently given back), opened when none is idle."""
        with self._pool_guard:
            if not self._idle:
                self._idle.append(self._open_reader())
            return self._idle[-1]

    def _take_reader(self) -> sqlite3.Connection:
        with self._pool_guard:
            return self._idle.pop() if self._idle else self._open_reader()

    def _give_back(self, conn: sqlite3.Connection) -> None:
        with self._pool_guard:
            if len(self._idle) < READER_POOL:
                self._idle.append(conn)
                return
            self._readers.discard(conn)
        conn.close()

    def _open_reader(self) -> sqlite3.Connection:
        conn = open_reader(self.path)
        self._readers.add(conn)
        return conn

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``_write``); the driver's errors inside it leave as StoreError."""
        try:
            with self._write() as conn:
                yield conn
        except sqlite3.Error as exc:
            raise self._failure(exc) from exc

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction under the writer lock; the index catches up after commit.

        The lock is SQLite's too: another process's long transaction is waited for
        (``busy.begin_write``), within a bound that counts from here, in slices of
        ``WRITE_SLICE_S`` with this process's lock given back between them: the other
        threads' reads, and writes that then wait their own bound beside this one, go on
        (held for the whole wait, each call queued behind it waited that long before its own
        wait began: a server's k-th store in flight answered after k bounds, issue 24)."""
        if self._lock.holds_shared():
            raise StoreError("a write inside a snapshot: a snapshot only reads")
        if self.read_only:
            raise StoreError("this store was opened for reading only: nothing was written")
        deadline = time.monotonic() + self.write_wait_s
        while True:
            with self._lock:
                if self._begin_within(deadline):
                    self._writing = True
                    try:
                        yield self._main
                        self._main.execute("COMMIT")
                    except BaseException:
                        if self._main.in_transaction:  # SQLite rolls back itself on a full disk, I/O errors
                            self._main.execute("ROLLBACK")
                        raise
                    finally:
                        self._writing = False
                    self._catch_up(force=True)
                    return
            time.sleep(0.001)  # the lock given back: this process's other threads take it first

    def _begin_within(self, deadline: float) -> bool:
        """``BEGIN IMMEDIATE`` within one slice of the wait; False when the slice passed, the bound not."""
        end = min(deadline, time.monotonic() + WRITE_SLICE_S)
        try:
            begin_write(self._main, self.write_wait_s, end)
        except StoreError:
            if end >= deadline:
                raise
            return False
        return True

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        with self._lock:
            self._catch_up()
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise self._failure(exc) from exc

    def _rebuild_indexes(self) -> None:
        try:
            self._build_indexes()
        except sqlite3.Error as exc:
            raise self._failure(exc) from exc

    def _build_indexes(self) -> None:
        with self._lock:
            self._watermark = self._conn.execute("SELECT COALESCE(MAX(seq), 0) FROM change_log").fetchone()[0]
            self._data_version = self._conn.execute("PRAGMA data_version").fetchone()[0]
            for kind in (MEMORY, EPISODE):
                self._indexes[kind] = self._new_index(kind)  # the old index's memory goes before the new one's
                index = self._new_index(kind, capacity=self._index_count(kind))
                index.extend(self._index_rows(kind, "embedding IS NOT NULL", ()))
                self._indexes[kind] = index
            self._rebuild_block_index()
            self._stats_cache.clear()
            self._grown.clear()

    def _new_index(self, kind: str, capacity: int = 16) -> VectorIndex:
        return VectorIndex(
            exact=lambda ids: self._stored_vectors(kind, ids), capacity=capacity, spill=self._spill_dir()
        )

    def _spill_dir(self) -> str | None:
        """Where the indexes' codes files are made (store/index/mapped.py): beside the database file; in memory for a
        database that has none."""
        return None if self.path == ":memory:" or self.path.startswith("file:") else str(Path(self.path).parent)

    def _model_filter(self, where: str, params: Sequence[Any]) -> tuple[str, list[Any]]:
        """``where`` narrowed to the rows of the vector model, when one is set."""
        if self.vector_model is None:
            return where, list(params)
        return f"({where}) AND embedding_model = ?", [*params, self.vector_model]

    def _index_count(self, kind: str) -> int:
        """How many rows the index of a kind will hold: it is made that size, not grown by doubling."""
        where, params = self._model_filter("embedding IS NOT NULL", ())
        return self._conn.execute(f"SELECT COUNT(*) FROM {TABLES[kind]} WHERE {where}", params).fetchone()[0]

    def _stored_vectors(self, kind: str, ids: list[int]) -> dict[int, np.ndarray]:
        """The float32 vectors stored for the given ids (the index's exact scores come from these). Inside a
        shared snapshot each is read once: the rows cannot change under it."""
        memo = getattr(self._local, "vectors", None)
        seen = {} if memo is None else memo.setdefault(kind, {})
        missing = [row_id for row_id in ids if row_id not in seen]
        for start in range(0, len(missing), 500):
            chunk = missing[start : start + 500]
            marks = ",".join("?" * len(chunk))
            seen.update((row_id, None) for row_id in chunk)  # an id with no stored vector is not asked again
            for row_id, blob in self._conn.execute(
                f"SELECT id, embedding FROM {TABLES[kind]} WHERE id IN ({marks}) AND embedding IS NOT NULL", chunk
            ):
                seen[row_id] = _vector(blob)
        return {row_id: seen[row_id] for row_id in ids if seen.get(row_id) is not None}

    def _index_rows(self, kind: str, where: str, params: Sequence[Any]) -> Iterator[IndexRow]:
        """The rows matching ``where`` that the index may hold: those of the vector model, when one is set."""
        table = "memories" if kind == MEMORY else "episodes"
        source = "source_id" if kind == MEMORY else "''"
        where, params = self._model_filter(where, params)
        cursor = self._conn.execute(
            f"SELECT id, embedding, agent_id, project_id, channel, {source}, ts_epoch FROM {table} "
            f"WHERE {where} ORDER BY id",
            params,
        )
        for row_id, blob, agent, project, channel, source_id, ts in cursor:
            yield IndexRow(
                row_id, _stored_vector(blob), agent, project, channel, source_id, np.nan if ts is None else ts
            )

    def _catch_up(self, force: bool = False) -> None:
        """Apply writes committed since the index's watermark, by this or any other connection.

        Inside a transaction it does nothing: a write's uncommitted rows may still roll
        back, and a snapshot caught up once when it began.
        """
        try:
            if self._conn.in_transaction:
                return
            version = self._conn.execute("PRAGMA data_version").fetchone()[0]
            if not force and version == self._data_version:
                return
            self._data_version = version
            self._apply_log()
        except sqlite3.Error as exc:
            raise self._failure(exc) from exc

    def _apply_log(self) -> None:
        """Read the change log past the watermark; the indexes follow rows, the caches are dropped.

        A change of blocks alone ('blk:' entries) leaves the scope statistics as they are.
        """
        changes = self._conn.execute(
            "SELECT seq, kind, row_id FROM change_log WHERE seq > ? ORDER BY seq", (self._watermark,)
        ).fetchall()
        if not changes:
            return
        self._watermark = changes[-1][0]
        touched = {(kind, row_id) for _, kind, row_id in changes}
        blocks = sorted((kind[4:], row_id) for kind, row_id in touched if kind.startswith("blk:"))
        if len(blocks) < len(touched):
            self._stats_cache.clear()
            self._grown.follow(touched)
        for kind in (MEMORY, EPISODE):
            ids = sorted(row_id for k, row_id in touched if k == kind)
            if ids and not self._apply_changes(kind, ids):
                self._rebuild_indexes()
                return
        if blocks:
            self._apply_block_changes(blocks)

    def _apply_changes(self, kind: str, ids: list[int]) -> bool:
        """Update the index for changed ids (rows new to it are merged in id order); True, the index is current."""
        index = self._indexes[kind]
        found = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for row in self._index_rows(kind, f"id IN ({marks}) AND embedding IS NOT NULL", chunk):
                found[row.row_id] = row
        index.follow(ids, found)
        return True

    # -- plain reads (the rest of the records' SQL: SqlRecords) -------------------------

    def find_duplicate(
        self, agent_id: str, projects: Sequence[str], channels: Sequence[str], msg_id: str, content: str
    ) -> tuple[str, int] | None:
        """(reason, existing id) when the memory is already stored in the write scope."""
        pmarks = ",".join("?" * len(projects))
        if msg_id:
            rows = self._read(
                # msg_id != '' lets the planner use the partial msg_id index
                f"SELECT id FROM memories WHERE agent_id = ? AND msg_id = ? AND msg_id != '' "
                f"AND project_id IN ({pmarks}) LIMIT 1",
                [agent_id, msg_id, *projects],
            )
            if rows:
                return "duplicate msg_id", rows[0][0]
        cmarks = ",".join("?" * len(channels))
        rows = self._read(
            # without the hint SQLite picks the isolation index and scans the agent's rows: a store
            # would cost more with every row already stored
            f"SELECT id FROM memories INDEXED BY idx_memories_content WHERE agent_id = ? AND content = ? "
            f"AND project_id IN ({pmarks}) AND channel IN ({cmarks}) LIMIT 1",
            [agent_id, content, *projects, *channels],
        )
        return ("duplicate content", rows[0][0]) if rows else None

    def find_episode(self, agent_id: str, project_id: str, channel: str, summary: str) -> int | None:
        rows = self._read(
            "SELECT id FROM episodes WHERE agent_id = ? AND project_id = ? AND channel = ? AND summary = ? LIMIT 1",
            (agent_id, project_id, channel, summary),
        )
        return rows[0][0] if rows else None

    def memory_row(self, memory_id: int) -> dict[str, Any] | None:
        """Every column of one memory, embedding as a vector."""
        names, rows = self._read_named("SELECT * FROM memories WHERE id = ?", (memory_id,))
        if not rows:
            return None
        out = dict(zip(names, rows[0]))
        out["embedding"] = _vector(out["embedding"])
        return out

    def _read_named(self, sql: str, params: Sequence[Any]) -> tuple[list[str], list[tuple]]:
        """(the column names, the rows) of one statement, as ``_read``."""
        with self._lock:
            self._catch_up()
            try:
                cursor = self._conn.execute(sql, params)
                return [d[0] for d in cursor.description], cursor.fetchall()
            except sqlite3.Error as exc:
                raise self._failure(exc) from exc

    def export_rows(self, kind: str, agent_id: str) -> Iterator[dict[str, Any]]:
        """Every column of every row of one kind (one agent, or all for ""), oldest first."""
        table = "memories" if kind == MEMORY else "episodes"
        where, params = ("WHERE agent_id = ?", (agent_id,)) if agent_id else ("", ())
        names, rows = self._read_named(f"SELECT * FROM {table} {where} ORDER BY id", params)
        for row in rows:
            out = dict(zip(names, row))
            out["embedding"] = _vector(out["embedding"])
            yield out

    # -- scope statistics -----------------------------------------------------------------

    def pool_counts(self, scope: Scope) -> tuple[int, int]:
        """(memories, episodes) in the scope: the gate's pool."""

        def grow(kept: tuple[int, int], upto: Upto) -> tuple[tuple[int, int], Upto]:
            (memories, episodes), newest = pool_growth(self._read, scope, "?", upto, by_id=" NOT INDEXED")
            return (kept[0] + memories, kept[1] + episodes), newest

        return self._kept(("pool", scope), lambda: pool_growth(self._read, scope, "?", {}), grow)

    def span(self, scope: Scope) -> tuple[float, float] | None:
        """(oldest, newest) memory time in the scope, epoch seconds; None when nothing is dated."""

        def read(upto: Upto) -> tuple[tuple[float, float] | None, Upto]:
            where, params = scope_where(scope, "t", MEMORY)
            by_id = " NOT INDEXED" if upto else ""  # new rows: the id range, not every row of the scope
            low, high, top = self._read(
                f"SELECT MIN(t.ts_epoch), MAX(t.ts_epoch), (SELECT COALESCE(MAX(id), 0) FROM memories) "
                f"FROM memories t{by_id} WHERE {where} AND t.id > ?",
                [*params, upto.get(MEMORY, 0)],
            )[0]
            return (None if low is None else (low, high)), {MEMORY: top}

        def grow(kept: tuple[float, float] | None, upto: Upto) -> tuple[tuple[float, float] | None, Upto]:
            added, newest = read(upto)
            if kept is None or added is None:
                return kept or added, newest
            return (min(kept[0], added[0]), max(kept[1], added[1])), newest

        return self._kept(("span", scope), lambda: read({}), grow)

    def vectors(self, refs: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors of indexed refs."""
        with self._lock:
            self._catch_up()
            out = {}
            for kind in (MEMORY, EPISODE):
                ids = [split_ref(r)[1] for r in refs if r.startswith(kind + ":")]
                for row_id, vec in self._indexes[kind].vectors_of(ids).items():
                    out[make_ref(kind, row_id)] = vec
            return out

    def embedded_memory_ids(self, agent_id: str) -> tuple[np.ndarray, np.ndarray]:
        """(ids, times) of the agent's embedded memories ("" = every agent), oldest first; ``vectors`` reads
        the vectors of those a caller samples."""
        with self._lock:
            self._catch_up()
            return self._indexes[MEMORY].agent_rows(agent_id)

    def embedding_dim(self) -> int | None:
        with self._lock:
            self._catch_up()
            return self._indexes[MEMORY].dim or self._indexes[EPISODE].dim

    def _kept(self, key: tuple[Any, ...], full: Any, grow: Any) -> Any:
        """A statistic kept across writes that only add records (store/sqlite/grown_stats.py), else as ``_cached``."""
        with self._lock:
            if self._writing:
                return full()[0]
            self._catch_up()
            return self._grown.get(key, full, grow)

    def _cached(self, key: tuple[Any, ...], compute: Any) -> Any:
        """A read kept until the next change any connection makes; inside a write it is read afresh and not kept,
        since the write's own rows are not committed (and may still roll back)."""
        with self._lock:
            if self._writing:
                return compute()
            self._catch_up()
            if key not in self._stats_cache:
                self._stats_cache.put(key, compute())
            return self._stats_cache.get(key)


__all__ = ["SqliteStore", "StoreError", "scope_where"]
