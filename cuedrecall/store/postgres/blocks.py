"""The block arm in the PostgreSQL store; the queue and the block rows are the shared SQL's (``store/sql/blocks.py``).

The block arm is the in-process index's search (``BlockIndex.search``) as SQL plus a
small numpy re-rank: the examined rows are the scope's blocks of the model (block
index below ``per_record``, at most ``examine`` in (kind, id, block) order,
memories first), ranked by Hamming distance (``bit_count(bits # query)``). A claim of
the queue is ``SELECT ... FOR UPDATE SKIP LOCKED`` of the oldest due task, so two
processes never claim one task.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cuedrecall.store.base import EPISODE, MEMORY, BlockHit, Scope, make_ref
from cuedrecall.store.postgres.dialect import bit_text
from cuedrecall.store.rows import MAX_BLOCK
from cuedrecall.store.sql.blocks import SqlBlocks

_KIND_ORDER = "CASE b.kind WHEN 'mem' THEN 0 ELSE 1 END"  # memories before episodes, as the index's keys


class PgBlocks(SqlBlocks):
    """The block arm (the queue and the block rows: ``SqlBlocks``)."""

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
        target = bit_text(np.packbits(query > 0))
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
        memories, mparams = self.dialect.scope_where(scope, "b", MEMORY)
        kinds = f"(b.kind = 'mem' AND {memories})"
        params: list[Any] = [model, nbits, per_record, *mparams]
        if scope.episodes_visible:
            episodes, eparams = self.dialect.scope_where(
                Scope(scope.agent_id, scope.project_id, scope.channel), "b", EPISODE
            )
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
