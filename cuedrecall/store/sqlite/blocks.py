"""Blocks and the task queue in the SQLite store: the rows, the queue's claims, the block arm over the index.

``SqliteBlocks`` is a mixin of ``SqliteStore`` (as ``SqliteMaintenance`` is): it
uses that class's connection, lock, transactions and its ``BlockIndex``, and
holds no state of its own.

A record's block set is current while its text is the text the set divides:
``write_blocks`` writes a set only while the record's text hashes to the set's
``text_hash``, and the triggers of migration 4 delete a record's blocks when its
text changes or it is deleted, so a set that exists is current. A record that
divides into fewer than two blocks is marked done by one row without vectors
(block 0, ``bits`` NULL): nothing to search, nothing left to build.
"""

from __future__ import annotations

import itertools
import json
import logging
import sqlite3
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from cuedrecall.store.base import EPISODE, MEMORY, TASK_ATTEMPTS, BlockHit, BlockSet, Scope, Task, make_ref, split_ref
from cuedrecall.store.rows import TEXT_COLUMNS, after_plan, task_payload, text_hash
from cuedrecall.store.sqlite.block_index import KIND_CODES, BlockIndex, RecordBlocks

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from cuedrecall.store.sqlite.locks import SnapshotLock

log = logging.getLogger("cuedrecall.store")


_KIND_NAMES = {code: kind for kind, code in KIND_CODES.items()}
_CHUNK = 500
_SETTLE_RECORDS = 1024  # records a load adds between releases of the codes' pages


class SqliteBlocks:
    """The queue, the blocks table and the block arm."""

    if TYPE_CHECKING:  # provided by SqliteStore

        @property
        def _conn(self) -> sqlite3.Connection: ...

        _lock: SnapshotLock
        _blocks: BlockIndex

        def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]: ...
        def _catch_up(self, force: bool = False) -> None: ...
        def _spill_dir(self) -> str | None: ...
        def snapshot(self) -> AbstractContextManager[None]: ...
        def write(self) -> AbstractContextManager[sqlite3.Connection]: ...

    # -- the task queue ------------------------------------------------------------------------

    def enqueue(self, conn: sqlite3.Connection, kind: str, payload: dict[str, Any], not_before: float = 0.0) -> int:
        """Queue a task inside an open write(): it commits or rolls back with the write that needs it."""
        cursor = conn.execute(
            "INSERT INTO tasks(kind, payload, not_before) VALUES (?, ?, ?)",
            (kind, json.dumps(payload, sort_keys=True), not_before),
        )
        assert cursor.lastrowid is not None  # sqlite3 sets it on every INSERT
        return cursor.lastrowid

    def claim_task(self, now: float, lease_s: float) -> Task | None:
        """The oldest due task nobody holds (never claimed, or its claim ran out), claimed until now + lease_s."""
        due = "not_before <= ? AND claimed_until <= ?"
        if not self._read(f"SELECT 1 FROM tasks WHERE {due} LIMIT 1", (now, now)):
            return None  # the common idle case answers without taking the write lock
        with self.write() as conn:
            row = conn.execute(
                f"SELECT id, kind, payload, attempts FROM tasks WHERE {due} ORDER BY id LIMIT 1", (now, now)
            ).fetchone()
            if row is None:
                return None
            conn.execute("UPDATE tasks SET claimed_until = ? WHERE id = ?", (now + lease_s, row[0]))
        return Task(int(row[0]), row[1], task_payload(row[2]), int(row[3]))

    def finish_task(self, conn: sqlite3.Connection, task_id: int) -> None:
        """Remove a done task, inside the write that did its work."""
        conn.execute("DELETE FROM tasks WHERE id = ?", (task_id,))

    def retry_task(self, task_id: int, error: str, not_before: float) -> bool:
        """Count a failed attempt and release the claim; due again at not_before. After TASK_ATTEMPTS failures
        the task is dropped (and logged): False then, or when the task is gone."""
        with self.write() as conn:
            row = conn.execute("SELECT kind, payload, attempts FROM tasks WHERE id = ?", (task_id,)).fetchone()
            if row is None:
                return False
            attempts = int(row[2]) + 1
            if attempts >= TASK_ATTEMPTS:
                conn.execute("DELETE FROM tasks WHERE id = ?", (task_id,))
                log.warning(
                    "task %d (%s %s) dropped after %d failed attempts, the last: %s",
                    task_id,
                    row[0],
                    row[1],
                    attempts,
                    error,
                )
                return False
            conn.execute(
                "UPDATE tasks SET attempts = ?, last_error = ?, not_before = ?, claimed_until = 0 WHERE id = ?",
                (attempts, error[:1000], not_before, task_id),
            )
        return True

    def pending_tasks(self, kind: str = "") -> int:
        """Tasks queued and not finished (claimed ones included); of one kind, or all for ""."""
        where, params = ("WHERE kind = ?", (kind,)) if kind else ("", ())
        return int(self._read(f"SELECT COUNT(*) FROM tasks {where}", params)[0][0])

    def pending_by_kind(self) -> dict[str, int]:
        """Tasks queued and not finished, by kind (kinds with none are absent)."""
        return {
            kind: int(count)
            for kind, count in self._read("SELECT kind, COUNT(*) FROM tasks GROUP BY kind ORDER BY kind")
        }

    # -- block rows ------------------------------------------------------------------------------

    def record_text(self, ref: str) -> tuple[str, str] | None:
        """A record's text (a memory's content, an episode's summary) and its text_hash; None when it is gone."""
        kind, row_id = split_ref(ref)
        table, column, _ = TEXT_COLUMNS[kind]
        rows = self._read(f"SELECT {column} FROM {table} WHERE id = ?", (row_id,))
        return (rows[0][0], text_hash(rows[0][0])) if rows else None

    def has_block_set(self, ref: str, model: str) -> bool:
        """Whether the record has a current block set made by this model (a done-marker counts)."""
        kind, row_id = split_ref(ref)
        return bool(
            self._read(
                "SELECT 1 FROM blocks WHERE kind = ? AND record_id = ? AND block = 0 AND model = ?",
                (kind, row_id, model),
            )
        )

    def write_blocks(self, conn: sqlite3.Connection, block_set: BlockSet) -> bool:
        """Replace a record's blocks, inside an open write(), while its text is the one the set divides.

        False, writing nothing, when the record is gone or its text no longer hashes to
        ``block_set.text_hash``. A set without vectors (``bits`` of no rows) marks a
        record that divides into fewer than two blocks as done. The blocks take the
        record's axes as they are now.
        """
        kind, row_id = split_ref(block_set.ref)
        table, column, source = TEXT_COLUMNS[kind]
        row = conn.execute(
            f"SELECT {column}, agent_id, project_id, channel, {source} FROM {table} WHERE id = ?", (row_id,)
        ).fetchone()
        if row is None or text_hash(row[0]) != block_set.text_hash:
            return False
        text, axes = row[0], tuple(row[1:])
        bits = np.asarray(block_set.bits, dtype=np.uint8)
        codes = np.asarray(block_set.codes)
        spans = list(block_set.spans)
        conn.execute("DELETE FROM blocks WHERE kind = ? AND record_id = ?", (kind, row_id))
        head = (kind, row_id)
        tail = (block_set.text_hash, block_set.model)
        if not bits.size:
            start, end, _ = spans[0] if spans else (0, len(text), False)
            conn.execute(
                "INSERT INTO blocks VALUES (?, ?, 0, ?, ?, 0, ?, ?, NULL, NULL, ?, ?, ?, ?)",
                (*head, start, end, *tail, *axes),
            )
            return True
        if not (bits.ndim == 2 and bits.shape[0] == len(spans) and codes.shape[:1] == (len(spans),)):
            raise ValueError(
                f"block set of {block_set.ref}: {len(spans)} spans, bits {bits.shape}, "
                f"codes {codes.shape}: one row of each per span"
            )
        codes = codes.astype(np.int8, copy=False)
        conn.executemany(
            "INSERT INTO blocks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    *head,
                    i,
                    int(start),
                    int(end),
                    int(bool(forced)),
                    *tail,
                    bits[i].tobytes(),
                    codes[i].tobytes() if codes.shape[1:] and codes.shape[1] else None,
                    *axes,
                )
                for i, (start, end, forced) in enumerate(spans)
            ],
        )
        return True

    def records_lacking_blocks(
        self, after: str | None, limit: int, model: str, *, agent_id: str = ""
    ) -> list[tuple[str, str, str]]:
        """(ref, text, text_hash) of the records with no block set of this model, memories then episodes, by
        id, after the ``after`` ref (None: from the start); one agent's or every agent's ("")."""
        out: list[tuple[str, str, str]] = []
        for kind, after_id in after_plan(after):
            if len(out) >= limit:
                break
            table, column, _ = TEXT_COLUMNS[kind]
            agent = " AND t.agent_id = ?" if agent_id else ""
            rows = self._read(
                f"SELECT t.id, t.{column} FROM {table} t WHERE t.id > ?{agent} AND NOT EXISTS ("
                "SELECT 1 FROM blocks b WHERE b.kind = ? AND b.record_id = t.id AND b.block = 0 AND b.model = ?) "
                "ORDER BY t.id LIMIT ?",
                [after_id, *([agent_id] if agent_id else []), kind, model, limit - len(out)],
            )
            out += [(make_ref(kind, row_id), text, text_hash(text)) for row_id, text in rows]
        return out

    def block_counts(self, agent_id: str, model: str = "") -> dict[str, int]:
        """Records with a current block set (of this model; of any for ""): divided into blocks with vectors
        or marked done as one block; records lacking a set; block rows with vectors; one agent's or every
        agent's (""). records_with_blocks counts both kinds of set, so it may exceed what block_rows shows."""
        records = done = divided = 0
        model_where = " AND b.model = ?" if model else ""
        for kind in (MEMORY, EPISODE):
            table = TEXT_COLUMNS[kind][0]
            where, params = ("t.agent_id = ?", [agent_id]) if agent_id else ("1 = 1", [])
            total, built, split = self._read(
                f"SELECT COUNT(*), COUNT(b.record_id), COUNT(b.bits) FROM {table} t LEFT JOIN blocks b ON "
                f"b.kind = ? AND b.record_id = t.id AND b.block = 0{model_where} WHERE {where}",
                [kind, *([model] if model else []), *params],
            )[0]
            records, done, divided = records + total, done + built, divided + split
        where = " AND agent_id = ?" if agent_id else ""
        rows = self._read(
            f"SELECT COUNT(*) FROM blocks b WHERE bits IS NOT NULL{where}{model_where}",
            [*([agent_id] if agent_id else []), *([model] if model else [])],
        )[0][0]
        return {
            "records_with_blocks": done,
            "records_divided": divided,
            "records_lacking_blocks": records - done,
            "block_rows": rows,
        }

    def block_spans(self, refs: Sequence[str]) -> dict[str, list[tuple[int, int, bool]]]:
        """(start, end, forced) of each block of the records' current sets, in order (a done-marker: one span
        over the whole text); records without a set are absent."""
        out: dict[str, list[tuple[int, int, bool]]] = {}
        keys = sorted({split_ref(ref) for ref in refs})
        for kind, group in itertools.groupby(keys, key=lambda key: key[0]):
            ids = [row_id for _, row_id in group]
            for start in range(0, len(ids), _CHUNK):
                chunk = ids[start : start + _CHUNK]
                rows = self._read(
                    f"SELECT record_id, start_char, end_char, forced FROM blocks WHERE kind = ? AND record_id IN "
                    f"({','.join('?' * len(chunk))}) ORDER BY record_id, block",
                    [kind, *chunk],
                )
                for row_id, begin, end, forced in rows:
                    out.setdefault(make_ref(kind, row_id), []).append((begin, end, bool(forced)))
        return out

    def block_codes(self, ref: str, model: str) -> np.ndarray | None:
        """The int8 codes of the record's current blocks, one row a block in order, when every block of its set
        has one from ``model``; else None (no set, a done-marker, another model, a block without a code)."""
        kind, row_id = split_ref(ref)
        rows = self._read(
            "SELECT model, codes FROM blocks WHERE kind = ? AND record_id = ? ORDER BY block", [kind, row_id]
        )
        if not rows or any(found != model or codes is None for found, codes in rows):
            return None
        return np.stack([np.frombuffer(codes, dtype=np.int8) for _, codes in rows])

    # -- the block arm and its index ---------------------------------------------------------------

    def block_arm(
        self,
        scope: Scope,
        query: np.ndarray,
        model: str,
        *,
        examine: int = 250_000,
        rerank: int = 200,
        per_record: int = 64,
    ) -> tuple[list[BlockHit], str]:
        """Records of the scope reached through their blocks, best first, and the order used ("vector" or
        "hamming"); see ``BlockIndex.search``. Reads the in-process index, caught up with every commit."""
        with self._lock:
            self._catch_up()
            found, order = self._blocks.search(
                scope, query, model, examine=examine, rerank=rerank, per_record=per_record
            )
        return [
            BlockHit(make_ref(_KIND_NAMES[f.kind], f.record_id), f.block, f.distance, f.cosine) for f in found
        ], order

    def _rebuild_block_index(self) -> None:
        index = BlockIndex(spill=self._spill_dir())
        for count, record in enumerate(self._block_records("1 = 1", ()), 1):
            index.add(record)
            if count % _SETTLE_RECORDS == 0:
                index.settle()  # the load's peak stays near what searches keep resident
        index.settle()
        self._blocks = index

    def _apply_block_changes(self, records: list[tuple[str, int]]) -> None:
        """The index follows the blocks of records whose set was written, deleted or moved."""
        self._blocks.remove(records)
        for kind, group in itertools.groupby(sorted(records), key=lambda key: key[0]):
            ids = [row_id for _, row_id in group]
            for start in range(0, len(ids), _CHUNK):
                chunk = ids[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                for record in self._block_records(f"kind = ? AND record_id IN ({marks})", [kind, *chunk]):
                    self._blocks.add(record)
        if len(records) >= _SETTLE_RECORDS // 4:
            self._blocks.settle()  # a builder's batch wrote codes all over the file: searches bring back theirs

    def _block_records(self, where: str, params: Sequence[Any]) -> Iterator[RecordBlocks]:
        """The blocks with vectors that match ``where``, one record at a time."""
        cursor = self._conn.execute(
            "SELECT kind, record_id, block, model, bits, codes, agent_id, project_id, channel, source_id "
            f"FROM blocks WHERE bits IS NOT NULL AND {where} ORDER BY kind, record_id, block",
            params,
        )
        for (kind, row_id), group in itertools.groupby(cursor, key=lambda row: (row[0], row[1])):
            rows = list(group)
            first = rows[0]
            yield RecordBlocks(
                kind=kind,
                record_id=row_id,
                model=first[3],
                blocks=np.fromiter((row[2] for row in rows), dtype=np.int64, count=len(rows)),
                bits=np.frombuffer(b"".join(row[4] for row in rows), dtype=np.uint8).reshape(len(rows), -1),
                codes=[None if row[5] is None else np.frombuffer(row[5], dtype=np.int8) for row in rows],
                agent_id=first[6],
                project_id=first[7],
                channel=first[8],
                source_id=first[9],
            )
