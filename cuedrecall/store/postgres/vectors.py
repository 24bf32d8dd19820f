"""The PostgreSQL store's in-process vector index: each server process keeps the int8 codes of every comparable
vector (store/index/vector_index.py, as SQLite's store does) and follows the database's change log, so a vector
arm is one product in the process instead of a scan of every vector in SQL. Rows, scores and order stay the exact
scan's: the index re-scores its candidates from the stored vectors, read in the caller's snapshot.

The rule (docs/storage.md#postgresql-with-pgvector): a snapshot reads the index only when the index has applied
exactly the change-log entries that snapshot sees. Every writer holds the advisory write lock until it commits,
so the entries become visible in their order: a snapshot that sees entry n sees every entry before it. A
snapshot's first vector arm reads its newest entry; when the index is behind, the entries in between are applied
(their rows read in that snapshot) under the index lock held exclusively; the snapshot then holds the lock
shared until it ends, so no thread moves the index under it. When the index is ahead of the snapshot (another
thread applied newer entries), that snapshot's vector arms scan in SQL instead, as they do with the index off
(``CUEDRECALL_PG_VECTOR_INDEX=false``), inside a write, or outside a snapshot.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from cuedrecall.store.base import EPISODE, MEMORY
from cuedrecall.store.index.locks import SnapshotLock
from cuedrecall.store.index.vector_index import IndexRow, VectorIndex
from cuedrecall.store.postgres.dialect import stored_vector
from cuedrecall.store.rows import TABLES

REBUILD_CHANGES = 50_000  # past this many entries to apply, the index is read again whole
_BATCH = 2_000  # rows a load reads at a time (a named cursor: the whole table is never held at once)
_SOURCE = {MEMORY: "t.source_id", EPISODE: "''"}


class PgVectors:
    """The index, its change-log entry and its lock; ``_indexed`` says whether this thread's snapshot reads it."""

    if TYPE_CHECKING:  # provided by PgConnection and PgRecords
        _local: threading.local
        _writer: int | None

        def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]: ...
        def _model_filter(self, alias: str) -> tuple[str, list[Any]]: ...
        def _snapshot_connection(self) -> Any: ...
        def _main_read(self, sql: str) -> list[tuple]: ...

    def _init_vectors(self, enabled: bool) -> None:
        self.vector_index = enabled
        self._vector_lock = SnapshotLock()
        self._vector_indexes: dict[str, VectorIndex] = {}  # empty until a snapshot first reads it
        self._vector_seq = -1  # the change-log entry the index has applied (-1: not built)

    def _indexed(self) -> dict[str, VectorIndex] | None:
        """The index, when this thread's snapshot may read it (the lock then held shared until the snapshot
        ends); None: scan in SQL."""
        local = self._local
        if not self.vector_index or getattr(local, "conn", None) is None or self._writer == threading.get_ident():
            return None
        if getattr(local, "helper", False):  # a helper of a snapshot that may hold the lock: it never waits on it
            return None
        decided = getattr(local, "vector_hold", None)
        if decided is not None:
            return self._vector_indexes if decided else None
        seq = int(self._read("SELECT COALESCE(MAX(seq), 0) FROM change_log")[0][0])
        if seq > self._vector_seq:
            with self._vector_lock:  # exclusive: no snapshot reads the index while it moves
                if seq > self._vector_seq:
                    self._follow(seq)
        self._vector_lock.acquire_shared()
        if seq != self._vector_seq:  # another thread moved it past this snapshot meanwhile
            self._vector_lock.release()
            local.vector_hold = False
            self._forget_if_rewound()
            return None
        local.vector_hold = True
        return self._vector_indexes

    def _forget_if_rewound(self) -> None:
        """A log whose newest committed entry is now below the index's (the database restored or made anew under
        a running server) has the index read again whole by the next snapshot; an older snapshot alone does not."""
        newest = int(self._main_read("SELECT COALESCE(MAX(seq), 0) FROM change_log")[0][0])
        if newest < self._vector_seq:
            with self._vector_lock:
                if newest < self._vector_seq:
                    self._vector_seq = -1

    def _snapshot_ended(self) -> None:
        """Give back the shared hold this thread's snapshot took (``_indexed``)."""
        if getattr(self._local, "vector_hold", None):
            self._vector_lock.release()
        self._local.vector_hold = None

    def _follow(self, seq: int) -> None:
        """Bring the index to entry ``seq``, as this snapshot sees the rows (the lock held exclusive); when that
        fails part way, the next snapshot reads the index again whole."""
        try:
            self._apply_log(seq)
        except BaseException:
            self._vector_seq = -1
            raise

    def _apply_log(self, seq: int) -> None:
        changes = (
            []
            if self._vector_seq < 0
            else self._read("SELECT kind, row_id FROM change_log WHERE seq > %s", [self._vector_seq])
        )
        if self._vector_seq < 0 or len(changes) > REBUILD_CHANGES:
            for kind in (MEMORY, EPISODE):
                self._vector_indexes.pop(kind, None)  # the old index's memory goes before the new one's
                index = self._new_vector_index(kind)
                index.extend(self._vector_rows(kind, None))
                self._vector_indexes[kind] = index
        else:
            for kind in (MEMORY, EPISODE):
                ids = sorted({row_id for k, row_id in changes if k == kind})
                if ids:
                    self._apply_vector_changes(kind, ids)
        self._vector_seq = seq

    def _apply_vector_changes(self, kind: str, ids: list[int]) -> None:
        """Rows changed since the index's entry: each removed, replaced in place, or merged in by id."""
        self._vector_indexes[kind].follow(ids, {row.row_id: row for row in self._vector_rows(kind, ids)})

    def _new_vector_index(self, kind: str) -> VectorIndex:
        return VectorIndex(exact=lambda ids: self._stored_vectors(kind, ids))

    def _vector_rows(self, kind: str, ids: list[int] | None) -> Iterator[IndexRow]:
        """The comparable rows of a kind (the vector model's), in id order: every one, or those of ``ids``."""
        model, params = self._model_filter("t")
        only = "" if ids is None else " AND t.id = ANY(%s)"
        sql = (
            f"SELECT t.id, t.embedding, t.agent_id, t.project_id, t.channel, {_SOURCE[kind]}, t.ts_epoch "
            f"FROM {TABLES[kind]} t WHERE t.embedding IS NOT NULL{model}{only} ORDER BY t.id"
        )
        conn = self._snapshot_connection()
        # a whole load streams through a named cursor (never the whole table at once); a follow's few rows, in
        # one round trip
        cursor = conn.cursor(binary=True) if ids is not None else conn.cursor(name="cuedrecall_vectors", binary=True)
        with cursor:
            if ids is None:
                cursor.itersize = _BATCH
            cursor.execute(sql, [*params, *([] if ids is None else [ids])])
            for row_id, vector, agent, project, channel, source_id, ts in cursor:
                yield IndexRow(
                    int(row_id),
                    stored_vector(vector),
                    agent,
                    project,
                    channel,
                    source_id,
                    np.nan if ts is None else float(ts),
                )

    def _stored_vectors(self, kind: str, ids: list[int]) -> dict[int, np.ndarray]:
        """The float32 vectors stored for the ids, in this thread's snapshot (the index's exact scores)."""
        if not ids:
            return {}
        conn = self._snapshot_connection()
        with conn.cursor(binary=True) as cursor:
            # one row back: the ids, widths and the vectors' binary forms end to end (pgvector's send format: a
            # 2-byte width, 2 unused bytes, big-endian float32s), so no row is parsed one by one in Python
            cursor.execute(
                "SELECT array_agg(id ORDER BY id), array_agg(vector_dims(embedding) ORDER BY id), "
                f"string_agg(vector_send(embedding), ''::bytea ORDER BY id) FROM {TABLES[kind]} "
                "WHERE id = ANY(%s) AND embedding IS NOT NULL",
                [ids],
            )
            found, widths, blob = cursor.fetchone()
        return unpack_vectors(found or [], widths or [], blob or b"")


def unpack_vectors(ids: list[int], widths: list[int], blob: bytes) -> dict[int, np.ndarray]:
    """The vectors of ``vector_send`` forms laid end to end, by id (each: 2-byte width, 2 unused bytes, the
    big-endian float32 values)."""
    if not ids:
        return {}
    if len(set(widths)) == 1:  # one width (the usual case): one view of the whole blob
        width = widths[0]
        rows = np.frombuffer(blob, dtype=np.uint8).reshape(len(ids), 4 + 4 * width)[:, 4:]
        values = np.ascontiguousarray(rows).view(">f4").astype(np.float32)
        return {int(row_id): values[i] for i, row_id in enumerate(ids)}
    out, offset = {}, 0
    for row_id, width in zip(ids, widths):
        out[int(row_id)] = np.frombuffer(blob, dtype=">f4", count=width, offset=offset + 4).astype(np.float32)
        offset += 4 + 4 * width
    return out
