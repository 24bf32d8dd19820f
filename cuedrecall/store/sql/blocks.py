"""Blocks and the task queue (both backends): the queue's rows and claims, the block rows. The block arm is each
backend's own (SQLite searches an in-process index, PostgreSQL its bit strings in SQL).

The queue is persisted with the data: a task is queued inside the write that needs
it, and a claim expires (claimed_until), so the work of a process that died resumes;
where the database has row locks a claim skips the rows another claimer holds.

A record's block set is current while its text is the text the set divides:
``write_blocks`` writes a set only while the record's text hashes to the set's
``text_hash``, and the triggers delete a record's blocks when its text changes or it
is deleted, so a set that exists is current. A record that divides into fewer than
two blocks is marked done by one row without vectors (block 0, ``bits`` NULL):
nothing to search, nothing left to build.
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from cuedrecall.store.base import EPISODE, MEMORY, TASK_ATTEMPTS, BlockSet, Task, make_ref, split_ref
from cuedrecall.store.rows import TEXT_COLUMNS, after_plan, task_payload, text_hash

if TYPE_CHECKING:
    from collections.abc import Iterator
    from contextlib import contextmanager

    from cuedrecall.store.sql.dialect import Dialect

log = logging.getLogger("cuedrecall.store")


class SqlBlocks:
    """The queue and the blocks table."""

    if TYPE_CHECKING:  # provided by the backend's store
        dialect: Dialect

        def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]: ...
        @contextmanager
        def write(self) -> Iterator[Any]: ...

    # -- the task queue ------------------------------------------------------------------------

    def enqueue(self, conn: Any, kind: str, payload: dict[str, Any], not_before: float = 0.0) -> int:
        """Queue a task inside an open write(): it commits or rolls back with the write that needs it."""
        return self.dialect.insert_id(
            conn,
            f"INSERT INTO tasks(kind, payload, not_before) VALUES ({self.dialect.marks(3)})",
            (kind, json.dumps(payload, sort_keys=True), not_before),
        )

    def claim_task(self, now: float, lease_s: float) -> Task | None:
        """The oldest due task nobody holds (never claimed, or its claim ran out), claimed until now + lease_s."""
        mark = self.dialect.mark
        due = f"not_before <= {mark} AND claimed_until <= {mark}"
        if not self._read(f"SELECT 1 FROM tasks WHERE {due} LIMIT 1", (now, now)):
            return None  # the common idle case answers without a write
        with self.write() as conn:
            row = conn.execute(
                f"SELECT id, kind, payload, attempts FROM tasks WHERE {due} ORDER BY id LIMIT 1"
                + self.dialect.locking(skip_locked=True),
                (now, now),
            ).fetchone()
            if row is None:
                return None
            conn.execute(f"UPDATE tasks SET claimed_until = {mark} WHERE id = {mark}", (now + lease_s, row[0]))
        return Task(int(row[0]), row[1], task_payload(row[2]), int(row[3]))

    def finish_task(self, conn: Any, task_id: int) -> None:
        """Remove a done task, inside the write that did its work."""
        conn.execute(f"DELETE FROM tasks WHERE id = {self.dialect.mark}", (task_id,))

    def retry_task(self, task_id: int, error: str, not_before: float) -> bool:
        """Count a failed attempt and release the claim; due again at not_before. After TASK_ATTEMPTS failures
        the task is dropped (and logged): False then, or when the task is gone."""
        mark = self.dialect.mark
        with self.write() as conn:
            row = conn.execute(
                f"SELECT kind, payload, attempts FROM tasks WHERE id = {mark}" + self.dialect.locking(), (task_id,)
            ).fetchone()
            if row is None:
                return False
            attempts = int(row[2]) + 1
            if attempts >= TASK_ATTEMPTS:
                conn.execute(f"DELETE FROM tasks WHERE id = {mark}", (task_id,))
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
                f"UPDATE tasks SET attempts = {mark}, last_error = {mark}, not_before = {mark}, claimed_until = 0 "
                f"WHERE id = {mark}",
                (attempts, error[:1000], not_before, task_id),
            )
        return True

    def pending_tasks(self, kind: str = "") -> int:
        """Tasks queued and not finished (claimed ones included); of one kind, or all for ""."""
        where, params = (f"WHERE kind = {self.dialect.mark}", (kind,)) if kind else ("", ())
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
        rows = self._read(f"SELECT {column} FROM {table} WHERE id = {self.dialect.mark}", (row_id,))
        return (rows[0][0], text_hash(rows[0][0])) if rows else None

    def has_block_set(self, ref: str, model: str) -> bool:
        """Whether the record has a current block set made by this model (a done-marker counts)."""
        kind, row_id = split_ref(ref)
        mark = self.dialect.mark
        return bool(
            self._read(
                f"SELECT 1 FROM blocks WHERE kind = {mark} AND record_id = {mark} AND block = 0 AND model = {mark}",
                (kind, row_id, model),
            )
        )

    def write_blocks(self, conn: Any, block_set: BlockSet) -> bool:
        """Replace a record's blocks, inside an open write(), while its text is the one the set divides.

        False, writing nothing, when the record is gone or its text no longer hashes to
        ``block_set.text_hash``. A set without vectors (``bits`` of no rows) marks a
        record that divides into fewer than two blocks as done. The blocks take the
        record's axes as they are now.
        """
        kind, row_id = split_ref(block_set.ref)
        table, column, source = TEXT_COLUMNS[kind]
        mark = self.dialect.mark
        row = conn.execute(
            f"SELECT {column}, agent_id, project_id, channel, {source} FROM {table} WHERE id = {mark}"
            + self.dialect.locking(),
            (row_id,),
        ).fetchone()
        if row is None or text_hash(row[0]) != block_set.text_hash:
            return False
        text, axes = row[0], tuple(row[1:])
        bits = np.asarray(block_set.bits, dtype=np.uint8)
        codes = np.asarray(block_set.codes)
        spans = list(block_set.spans)
        if bits.size and not (bits.ndim == 2 and bits.shape[0] == len(spans) and codes.shape[:1] == (len(spans),)):
            raise ValueError(
                f"block set of {block_set.ref}: {len(spans)} spans, bits {bits.shape}, "
                f"codes {codes.shape}: one row of each per span"
            )
        conn.execute(f"DELETE FROM blocks WHERE kind = {mark} AND record_id = {mark}", (kind, row_id))
        bits_mark = mark + self.dialect.bits_cast
        insert = f"INSERT INTO blocks VALUES ({self.dialect.marks(8)}, {bits_mark}, {self.dialect.marks(5)})"
        head, tail = (kind, row_id), (block_set.text_hash, block_set.model)
        if not bits.size:
            start, end, _ = spans[0] if spans else (0, len(text), False)
            conn.execute(insert, (*head, 0, start, end, 0, *tail, None, None, *axes))
            return True
        codes = codes.astype(np.int8, copy=False)
        cursor = conn.cursor()
        try:
            cursor.executemany(
                insert,
                [
                    (
                        *head,
                        i,
                        int(start),
                        int(end),
                        int(bool(forced)),
                        *tail,
                        self.dialect.bits(bits[i]),
                        codes[i].tobytes() if codes.shape[1:] and codes.shape[1] else None,
                        *axes,
                    )
                    for i, (start, end, forced) in enumerate(spans)
                ],
            )
        finally:
            cursor.close()
        return True

    def records_lacking_blocks(
        self, after: str | None, limit: int, model: str, *, agent_id: str = ""
    ) -> list[tuple[str, str, str]]:
        """(ref, text, text_hash) of the records with no block set of this model, memories then episodes, by
        id, after the ``after`` ref (None: from the start); one agent's or every agent's ("")."""
        mark = self.dialect.mark
        out: list[tuple[str, str, str]] = []
        for kind, after_id in after_plan(after):
            if len(out) >= limit:
                break
            table, column, _ = TEXT_COLUMNS[kind]
            agent = f" AND t.agent_id = {mark}" if agent_id else ""
            rows = self._read(
                f"SELECT t.id, t.{column} FROM {table} t WHERE t.id > {mark}{agent} AND NOT EXISTS ("
                f"SELECT 1 FROM blocks b WHERE b.kind = {mark} AND b.record_id = t.id AND b.block = 0 "
                f"AND b.model = {mark}) ORDER BY t.id LIMIT {mark}",
                [after_id, *([agent_id] if agent_id else []), kind, model, limit - len(out)],
            )
            out += [(make_ref(kind, row_id), text, text_hash(text)) for row_id, text in rows]
        return out

    def block_counts(self, agent_id: str, model: str = "") -> dict[str, int]:
        """Records with a current block set (of this model; of any for ""): divided into blocks with vectors
        or marked done as one block; records lacking a set; block rows with vectors; one agent's or every
        agent's (""). records_with_blocks counts both kinds of set, so it may exceed what block_rows shows."""
        mark = self.dialect.mark
        records = done = divided = 0
        model_where = f" AND b.model = {mark}" if model else ""
        for kind in (MEMORY, EPISODE):
            where, params = self.dialect.agent_where(agent_id, "t")
            total, built, split = self._read(
                f"SELECT COUNT(*), COUNT(b.record_id), COUNT(b.bits) FROM {TEXT_COLUMNS[kind][0]} t LEFT JOIN "
                f"blocks b ON b.kind = {mark} AND b.record_id = t.id AND b.block = 0{model_where} WHERE {where}",
                [kind, *([model] if model else []), *params],
            )[0]
            records, done, divided = records + total, done + built, divided + split
        where = f" AND b.agent_id = {mark}" if agent_id else ""
        rows = self._read(
            f"SELECT COUNT(*) FROM blocks b WHERE bits IS NOT NULL{where}{model_where}",
            [*([agent_id] if agent_id else []), *([model] if model else [])],
        )[0][0]
        return {
            "records_with_blocks": int(done),
            "records_divided": int(divided),
            "records_lacking_blocks": int(records - done),
            "block_rows": int(rows),
        }

    def block_spans(self, refs: Sequence[str]) -> dict[str, list[tuple[int, int, bool]]]:
        """(start, end, forced) of each block of the records' current sets, in order (a done-marker: one span
        over the whole text); records without a set are absent."""
        out: dict[str, list[tuple[int, int, bool]]] = {}
        keys = sorted({split_ref(ref) for ref in refs})
        for kind, group in itertools.groupby(keys, key=lambda key: key[0]):
            for among, chunk in self.dialect.within("record_id", [row_id for _, row_id in group]):
                rows = self._read(
                    f"SELECT record_id, start_char, end_char, forced FROM blocks WHERE kind = {self.dialect.mark} "
                    f"AND {among} ORDER BY record_id, block",
                    [kind, *chunk],
                )
                for row_id, begin, end, forced in rows:
                    out.setdefault(make_ref(kind, row_id), []).append((begin, end, bool(forced)))
        return out

    def block_codes(self, ref: str, model: str) -> np.ndarray | None:
        """The int8 codes of the record's current blocks, one row a block in order, when every block of its set
        has one from ``model``; else None (no set, a done-marker, another model, a block without a code)."""
        kind, row_id = split_ref(ref)
        mark = self.dialect.mark
        rows = self._read(
            f"SELECT model, codes FROM blocks WHERE kind = {mark} AND record_id = {mark} ORDER BY block", [kind, row_id]
        )
        if not rows or any(found != model or codes is None for found, codes in rows):
            return None
        return np.stack([np.frombuffer(bytes(codes), dtype=np.int8) for _, codes in rows])
