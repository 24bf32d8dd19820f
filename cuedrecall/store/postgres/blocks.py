"""Blocks and the task queue in the PostgreSQL store (mirrors ``store/sqlite/blocks.py``).

The queue is shared by every process of the database: a claim is
``SELECT ... FOR UPDATE SKIP LOCKED`` of the oldest due task, so two processes never
claim one task, and a claim expires (claimed_until) so the work of a process that
died resumes. A record's block set is current while its text is the text the set
divides: ``write_blocks`` writes only while the text hashes to the set's hash, and
the triggers delete a record's blocks when its text changes or it is deleted.

The block arm is the in-process index's search (``BlockIndex.search``) as SQL plus a
small numpy re-rank: the examined rows are the scope's blocks of the model (block
index below ``per_record``, at most ``examine`` in (kind, id, block) order,
memories first), ranked by Hamming distance (``bit_count(bits # query)``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from cuedrecall.store.base import EPISODE, MEMORY, TASK_ATTEMPTS, BlockHit, BlockSet, Scope, Task, make_ref, split_ref
from cuedrecall.store.postgres.scope import scope_where
from cuedrecall.store.rows import MAX_BLOCK, TEXT_COLUMNS, after_plan, task_payload, text_hash

if TYPE_CHECKING:
    from contextlib import contextmanager

log = logging.getLogger("cuedrecall.store")

_KIND_ORDER = "CASE b.kind WHEN 'mem' THEN 0 ELSE 1 END"  # memories before episodes, as the index's keys


def _bit_text(row: np.ndarray) -> str:
    """Packed sign bits (uint8, MSB first) as a bit string."""
    return "".join(format(int(byte), "08b") for byte in np.asarray(row, dtype=np.uint8).reshape(-1))


class PgBlocks:
    """The queue, the blocks table and the block arm."""

    if TYPE_CHECKING:  # provided by PgConnection

        def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]: ...
        @contextmanager
        def write(self) -> Iterator[Any]: ...

    # -- the task queue ------------------------------------------------------------------------

    def enqueue(self, conn: Any, kind: str, payload: dict[str, Any], not_before: float = 0.0) -> int:
        """Queue a task inside an open write(): it commits or rolls back with the write that needs it."""
        return int(
            conn.execute(
                "INSERT INTO tasks(kind, payload, not_before) VALUES (%s, %s, %s) RETURNING id",
                (kind, json.dumps(payload, sort_keys=True), not_before),
            ).fetchone()[0]
        )

    def claim_task(self, now: float, lease_s: float) -> Task | None:
        """The oldest due task nobody holds, claimed until now + lease_s; locked rows of other claimers skipped."""
        due = "not_before <= %s AND claimed_until <= %s"
        if not self._read(f"SELECT 1 FROM tasks WHERE {due} LIMIT 1", (now, now)):
            return None  # the common idle case answers without a write
        with self.write() as conn:
            row = conn.execute(
                f"SELECT id, kind, payload, attempts FROM tasks WHERE {due} ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED",
                (now, now),
            ).fetchone()
            if row is None:
                return None
            conn.execute("UPDATE tasks SET claimed_until = %s WHERE id = %s", (now + lease_s, row[0]))
        return Task(int(row[0]), row[1], task_payload(row[2]), int(row[3]))

    def finish_task(self, conn: Any, task_id: int) -> None:
        """Remove a done task, inside the write that did its work."""
        conn.execute("DELETE FROM tasks WHERE id = %s", (task_id,))

    def retry_task(self, task_id: int, error: str, not_before: float) -> bool:
        """Count a failed attempt and release the claim; after TASK_ATTEMPTS failures the task is dropped (and
        logged): False then, or when the task is gone."""
        with self.write() as conn:
            row = conn.execute(
                "SELECT kind, payload, attempts FROM tasks WHERE id = %s FOR UPDATE", (task_id,)
            ).fetchone()
            if row is None:
                return False
            attempts = int(row[2]) + 1
            if attempts >= TASK_ATTEMPTS:
                conn.execute("DELETE FROM tasks WHERE id = %s", (task_id,))
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
                "UPDATE tasks SET attempts = %s, last_error = %s, not_before = %s, claimed_until = 0 WHERE id = %s",
                (attempts, error[:1000], not_before, task_id),
            )
        return True

    def pending_tasks(self, kind: str = "") -> int:
        """Tasks queued and not finished (claimed ones included); of one kind, or all for ""."""
        where, params = ("WHERE kind = %s", (kind,)) if kind else ("", ())
        return int(self._read(f"SELECT COUNT(*) FROM tasks {where}", params)[0][0])

    def pending_by_kind(self) -> dict[str, int]:
        """Tasks queued and not finished, by kind (kinds with none are absent)."""
        return {
            kind: int(count)
            for kind, count in self._read("SELECT kind, COUNT(*) FROM tasks GROUP BY kind ORDER BY kind")
        }

    # -- block rows ------------------------------------------------------------------------------

    def record_text(self, ref: str) -> tuple[str, str] | None:
        """A record's text and its text_hash; None when it is gone."""
        kind, row_id = split_ref(ref)
        table, column, _ = TEXT_COLUMNS[kind]
        rows = self._read(f"SELECT {column} FROM {table} WHERE id = %s", (row_id,))
        return (rows[0][0], text_hash(rows[0][0])) if rows else None

    def has_block_set(self, ref: str, model: str) -> bool:
        """Whether the record has a current block set made by this model (a done-marker counts)."""
        kind, row_id = split_ref(ref)
        return bool(
            self._read(
                "SELECT 1 FROM blocks WHERE kind = %s AND record_id = %s AND block = 0 AND model = %s",
                (kind, row_id, model),
            )
        )

    def write_blocks(self, conn: Any, block_set: BlockSet) -> bool:
        """Replace a record's blocks, inside an open write(), while its text is the one the set divides (False,
        writing nothing, otherwise). A set without vectors marks the record done."""
        kind, row_id = split_ref(block_set.ref)
        table, column, source = TEXT_COLUMNS[kind]
        row = conn.execute(
            f"SELECT {column}, agent_id, project_id, channel, {source} FROM {table} WHERE id = %s FOR UPDATE", (row_id,)
        ).fetchone()
        if row is None or text_hash(row[0]) != block_set.text_hash:
            return False
        text, axes = row[0], tuple(row[1:])
        bits, codes, spans = (
            np.asarray(block_set.bits, dtype=np.uint8),
            np.asarray(block_set.codes),
            list(block_set.spans),
        )
        if bits.size and not (bits.ndim == 2 and bits.shape[0] == len(spans) and codes.shape[:1] == (len(spans),)):
            raise ValueError(
                f"block set of {block_set.ref}: {len(spans)} spans, bits {bits.shape}, "
                f"codes {codes.shape}: one row of each per span"
            )
        conn.execute("DELETE FROM blocks WHERE kind = %s AND record_id = %s", (kind, row_id))
        insert = "INSERT INTO blocks VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s::varbit, %s, %s, %s, %s, %s)"
        head, tail = (kind, row_id), (block_set.text_hash, block_set.model)
        if not bits.size:
            start, end, _ = spans[0] if spans else (0, len(text), False)
            conn.execute(insert, (*head, 0, start, end, 0, *tail, None, None, *axes))
            return True
        codes = codes.astype(np.int8, copy=False)
        with conn.cursor() as cursor:
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
                        _bit_text(bits[i]),
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
        """(ref, text, text_hash) of the records with no block set of this model, memories then episodes, by id,
        after the ``after`` ref; one agent's or every agent's ("")."""
        out: list[tuple[str, str, str]] = []
        for kind, after_id in after_plan(after):
            if len(out) >= limit:
                break
            table, column, _ = TEXT_COLUMNS[kind]
            agent = " AND t.agent_id = %s" if agent_id else ""
            rows = self._read(
                f"SELECT t.id, t.{column} FROM {table} t WHERE t.id > %s{agent} AND NOT EXISTS (SELECT 1 FROM "
                "blocks b WHERE b.kind = %s AND b.record_id = t.id AND b.block = 0 AND b.model = %s) "
                "ORDER BY t.id LIMIT %s",
                [after_id, *([agent_id] if agent_id else []), kind, model, limit - len(out)],
            )
            out += [(make_ref(kind, row_id), text, text_hash(text)) for row_id, text in rows]
        return out

    def block_counts(self, agent_id: str, model: str = "") -> dict[str, int]:
        """Records with a current block set (of this model; any for ""): divided into blocks with vectors or
        marked done as one block; records lacking a set; block rows with vectors; one agent's or every
        agent's ("")."""
        records = done = divided = 0
        model_where = " AND b.model = %s" if model else ""
        for kind in (MEMORY, EPISODE):
            where, params = ("t.agent_id = %s", [agent_id]) if agent_id else ("TRUE", [])
            total, built, split = self._read(
                f"SELECT COUNT(*), COUNT(b.record_id), COUNT(b.bits) FROM {TEXT_COLUMNS[kind][0]} t "
                f"LEFT JOIN blocks b ON b.kind = %s AND b.record_id = t.id AND b.block = 0{model_where} "
                f"WHERE {where}",
                [kind, *([model] if model else []), *params],
            )[0]
            records, done, divided = records + total, done + built, divided + split
        where = " AND b.agent_id = %s" if agent_id else ""
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
        """(start, end, forced) of each block of the records' current sets, in order; no set: absent."""
        out: dict[str, list[tuple[int, int, bool]]] = {}
        for kind in (MEMORY, EPISODE):
            ids = sorted({split_ref(ref)[1] for ref in refs if split_ref(ref)[0] == kind})
            if not ids:
                continue
            for row_id, begin, end, forced in self._read(
                "SELECT record_id, start_char, end_char, forced FROM blocks WHERE kind = %s "
                "AND record_id = ANY(%s) ORDER BY record_id, block",
                [kind, ids],
            ):
                out.setdefault(make_ref(kind, row_id), []).append((begin, end, bool(forced)))
        return out

    def block_codes(self, ref: str, model: str) -> np.ndarray | None:
        """The int8 codes of the record's current blocks when every block has one from ``model``; else None."""
        kind, row_id = split_ref(ref)
        rows = self._read(
            "SELECT model, codes FROM blocks WHERE kind = %s AND record_id = %s ORDER BY block", [kind, row_id]
        )
        if not rows or any(found != model or codes is None for found, codes in rows):
            return None
        return np.stack([np.frombuffer(bytes(codes), dtype=np.int8) for _, codes in rows])

    # -- the block arm ------------------------------------------------------------------------------

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
        "hamming"): the rule of ``BlockIndex.search``."""
        query = np.asarray(query, dtype=np.float32).reshape(-1)
        if examine <= 0 or rerank <= 0 or per_record <= 0 or not query.size:
            return [], "vector"
        target = _bit_text(np.packbits(query > 0))
        examined, params = self._examined_blocks(scope, model, len(target), min(per_record, MAX_BLOCK + 1), examine)
        best = self._read(
            f"SELECT e.kind, e.record_id, e.block, e.distance, e.codes FROM (SELECT x.*, bit_count(x.bits # "
            f"%s::varbit) AS distance FROM ({examined}) x) e ORDER BY e.distance, e.kord, e.record_id, e.block "
            "LIMIT %s",
            [target, *params, rerank],
        )
        if not best:
            return [], "vector"
        if all(codes is not None and len(codes) == query.size and any(codes) for *_, codes in best):
            return _by_cosine(best, query), "vector"  # every chosen row has a non-zero code of the query's width
        rows = self._read(
            f"SELECT kind, record_id, block, distance FROM (SELECT DISTINCT ON (e.kord, e.record_id) e.* FROM "
            f"(SELECT x.*, bit_count(x.bits # %s::varbit) AS distance FROM ({examined}) x) e "
            "ORDER BY e.kord, e.record_id, e.distance, e.block) r ORDER BY distance, kord, record_id, block LIMIT %s",
            [target, *params, rerank],
        )
        return [
            BlockHit(make_ref(kind, row_id), int(block), int(distance), None) for kind, row_id, block, distance in rows
        ], "hamming"

    def _examined_blocks(
        self, scope: Scope, model: str, nbits: int, per_record: int, examine: int
    ) -> tuple[str, list[Any]]:
        """The rows the block arm examines: the scope's blocks of the model and width, in key order."""
        memories, mparams = scope_where(scope, "b", MEMORY)
        kinds = f"(b.kind = 'mem' AND {memories})"
        params: list[Any] = [model, nbits, per_record, *mparams]
        if scope.episodes_visible:
            episodes, eparams = scope_where(Scope(scope.agent_id, scope.project_id, scope.channel), "b", EPISODE)
            kinds = f"({kinds} OR (b.kind = 'ep' AND {episodes}))"
            params += eparams
        return (
            f"SELECT b.kind, {_KIND_ORDER} AS kord, b.record_id, b.block, b.bits, b.codes FROM blocks b "
            f"WHERE b.model = %s AND b.bits IS NOT NULL AND length(b.bits) = %s AND b.block < %s AND {kinds} "
            f"ORDER BY kord, b.record_id, b.block LIMIT %s",
            [*params, examine],
        )


def _by_cosine(best: list[tuple], query: np.ndarray) -> list[BlockHit]:
    """The best rows re-ranked by the cosine of their int8 code, one per record (its best block; ties: lower)."""
    codes = np.stack([np.frombuffer(bytes(row[4]), dtype=np.int8) for row in best]).astype(np.float64)
    norms = np.sqrt(np.einsum("ij,ij->i", codes, codes))
    unit = query.astype(np.float64) / (float(np.linalg.norm(query)) or 1.0)
    cosine = (codes @ unit) / norms
    order = sorted(range(len(best)), key=lambda i: (-cosine[i], best[i][0] != MEMORY, best[i][1], best[i][2]))
    seen: set[tuple[str, int]] = set()
    out = []
    for i in order:
        kind, row_id, block, distance, _ = best[i]
        if (kind, row_id) not in seen:
            seen.add((kind, row_id))
            out.append(BlockHit(make_ref(kind, row_id), int(block), int(distance), float(cosine[i])))
    return out
