"""The block arm in the SQLite store: the in-process ``BlockIndex`` over the blocks table, following every commit.

``SqliteBlocks`` is a mixin of ``SqliteStore``: it uses that class's connection,
lock and its ``BlockIndex``, and holds no state of its own. The queue and the block
rows are the shared SQL's (``store/sql/blocks.py``).
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from cuedrecall import heap
from cuedrecall.store.base import BlockHit, Scope, make_ref
from cuedrecall.store.index.block_index import KIND_CODES, BlockIndex, BlockRows
from cuedrecall.store.sql.blocks import SqlBlocks

if TYPE_CHECKING:
    from cuedrecall.store.index.locks import SnapshotLock

_KIND_NAMES = {code: kind for kind, code in KIND_CODES.items()}
_CHUNK = 500
_SETTLE_RECORDS = 1024  # a batch of changes to a quarter as many records or more releases the codes' pages after
# block rows an open reads and indexes at a time: larger batches raised the open's peak, not its speed
_LOAD_ROWS = 1024
# what the index takes of a block row, in the order ``_batch`` reads it
_BLOCK_COLUMNS = "kind, record_id, block, model, bits, codes, agent_id, project_id, channel, source_id"
EVERY_ROW = 1 << 62  # the block arm's default examine here: no cap (PostgreSQL's arm keeps the protocol's 250,000)


class SqliteBlocks(SqlBlocks):
    """The block arm and its index (the queue and the block rows: ``SqlBlocks``)."""

    if TYPE_CHECKING:  # provided by SqliteStore

        @property
        def _conn(self) -> sqlite3.Connection: ...

        _lock: SnapshotLock
        _blocks: BlockIndex

        def _catch_up(self, force: bool = False) -> None: ...
        def _spill_dir(self) -> str | None: ...

    # -- the block arm and its index ---------------------------------------------------------------

    def block_arm(
        self,
        scope: Scope,
        query: np.ndarray,
        model: str,
        *,
        examine: int = EVERY_ROW,
        rerank: int = 200,
        per_record: int = 64,
    ) -> tuple[list[BlockHit], str]:
        """Records of the scope reached through their blocks, best first, and the order used ("vector" or
        "hamming"); see ``BlockIndex.search``. Reads the in-process index, caught up with every commit. Every row
        is examined unless ``examine`` says fewer: the exact scan does not read every row to cover them all."""
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
        for batch in self._block_batches("1 = 1", ()):
            index.load(batch)
            index.settle()  # the load's peak stays near what searches keep resident
        index.fold()  # rows of equal codes share one slot: the arm scores each distinct code once
        index.settle()
        self._blocks = index
        heap.trim()  # the load's buffers (the code table's growth and folds) go back, not kept as free heap

    def _apply_block_changes(self, records: list[tuple[str, int]]) -> None:
        """The index follows the blocks of records whose set was written, deleted or moved."""
        self._blocks.remove(records)
        for kind, group in itertools.groupby(sorted(records), key=lambda key: key[0]):
            ids = [row_id for _, row_id in group]
            for start in range(0, len(ids), _CHUNK):
                chunk = ids[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                for batch in self._block_batches(f"kind = ? AND record_id IN ({marks})", [kind, *chunk]):
                    self._blocks.load(batch)
        if len(records) >= _SETTLE_RECORDS // 4:
            self._blocks.settle()  # a builder's batch wrote codes all over the file: searches bring back theirs

    def _block_batches(self, where: str, params: Sequence[Any]) -> Iterator[BlockRows]:
        """The blocks with vectors that match ``where``, about ``_LOAD_ROWS`` rows at a time, each record's rows in
        one batch."""
        cursor = self._conn.execute(
            f"SELECT {_BLOCK_COLUMNS} FROM blocks WHERE bits IS NOT NULL AND {where} ORDER BY kind, record_id, block",
            params,
        )
        carried: list[tuple] = []
        while chunk := cursor.fetchmany(_LOAD_ROWS):
            rows = carried + chunk
            last = len(rows) - 1  # the last record may go on in the next chunk: it waits for it
            while last > 0 and rows[last - 1][:2] == rows[-1][:2]:
                last -= 1
            carried = rows[last:]
            if last:
                yield _batch(rows[:last])
        if carried:
            yield _batch(carried)


def _batch(rows: list[tuple]) -> BlockRows:
    """Rows of the blocks table (as ``_block_batches`` selects them) as the index's load takes them."""
    return BlockRows(
        kinds=[row[0] for row in rows],
        record_ids=[row[1] for row in rows],
        blocks=[row[2] for row in rows],
        models=[row[3] for row in rows],
        bits=[row[4] for row in rows],
        codes=[row[5] for row in rows],
        scopes=[(row[6], row[7], row[8], row[9]) for row in rows],
    )
