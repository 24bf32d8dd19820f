"""The in-process block index: every record's blocks as contiguous numpy arrays, what the block arm searches.

One table of rows per embedding model (a record's blocks are all of one model;
rows of two models cannot be compared with one query). A row holds a block's
sign bits as uint64 words, its int8 code, a sort key that encodes (kind, record
id, block index), and the record's isolation axes (``ScopeColumns``, the same
numpy form of the scope rule the vector index uses).

A record's blocks are replaced whole: the old rows are marked dead and the new
ones appended, and the table is compacted once dead rows outnumber live ones, so
catching up with a write costs one vectorised pass, not a copy of the table.

The search (``search``) has no loop over rows: a mask picks the scope's rows,
popcount of XOR ranks them by Hamming distance, the best few are re-ranked by the
cosine of their int8 code, and ``np.unique`` collapses them to one per record.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cuedrecall.store.base import Scope
from cuedrecall.store.rows import BLOCK_BITS, MAX_BLOCK
from cuedrecall.store.sqlite.mapped import copy_rows, mapped_zeros, release
from cuedrecall.store.sqlite.scope_columns import ScopeColumns

KIND_CODES = {"mem": 0, "ep": 1}
_BLOCK_BITS = BLOCK_BITS  # the sort key's low bits hold the block index, at most MAX_BLOCK
_ID_BITS = 44  # record ids below 2**44; the kind sits above them
_ID_MASK = (1 << _ID_BITS) - 1


def record_key(kind: str, record_id: int) -> int:
    """One integer per record: kind and id."""
    return (KIND_CODES[kind] << _ID_BITS) | record_id


def words(packed: np.ndarray, width: int) -> np.ndarray:
    """Packed bits (rows, bytes) as rows of ``width`` uint64 words, zero-padded: XOR and popcount work on these."""
    packed = np.atleast_2d(np.asarray(packed, dtype=np.uint8))
    padded = np.zeros((packed.shape[0], width * 8), dtype=np.uint8)
    padded[:, : packed.shape[1]] = packed
    return padded.view(np.uint64)


@dataclass(frozen=True)
class RecordBlocks:
    """One record's blocks as the index takes them (only blocks with sign bits; index order)."""

    kind: str
    record_id: int
    model: str
    blocks: np.ndarray  # (k,) block indexes
    bits: np.ndarray  # (k, bytes) uint8, MSB first
    codes: list[np.ndarray | None]  # int8 code per block, None when the block has none
    agent_id: str
    project_id: str
    channel: str
    source_id: str


@dataclass(frozen=True)
class Found:
    """One record the search reached, by its best block."""

    kind: int  # KIND_CODES value
    record_id: int
    block: int
    distance: int
    cosine: float | None


class _ModelRows:
    """The rows of one model: bits, codes and keys in arrays that double as they fill."""

    def __init__(self, nbytes: int, capacity: int = 64, spill: str | None = None) -> None:
        self.nbytes = nbytes
        self.spill = spill  # where the codes' file is made (store/sqlite/mapped.py); None: in memory
        self.width = (nbytes + 7) // 8
        self.dim: int | None = None  # the int8 codes' width, from the first code seen
        self.n = 0
        self.dead = 0
        self.words = np.zeros((capacity, self.width), dtype=np.uint64)
        self.codes = mapped_zeros((capacity, 1), np.int8, spill)
        self.norms = np.zeros(capacity, dtype=np.float64)  # the code's length; 0 = no full-width code
        self.key = np.zeros(capacity, dtype=np.int64)  # kind << 60 | id << 16 | block: sorts as (kind, id, block)
        self.alive = np.zeros(capacity, dtype=bool)
        self.axes = ScopeColumns(capacity)

    @property
    def live(self) -> int:
        return self.n - self.dead

    def _reserve(self, extra: int) -> None:
        capacity = self.key.shape[0]
        if self.n + extra <= capacity:
            return
        while capacity < self.n + extra:
            capacity *= 2
        for name in ("words", "codes", "norms", "key", "alive"):
            old = getattr(self, name)
            new = self._zeros(name, (capacity, *old.shape[1:]), old.dtype)
            copy_rows(new, old, self.n)
            setattr(self, name, new)
        self.axes.resize(capacity, self.n)

    def _zeros(self, name: str, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """A fresh column: the codes mapped from a file (the largest), the rest in memory."""
        return mapped_zeros(shape, dtype, self.spill) if name == "codes" else np.zeros(shape, dtype=dtype)

    def add(self, record: RecordBlocks) -> None:
        k = len(record.blocks)
        self._reserve(k)
        start, stop = self.n, self.n + k
        self.words[start:stop] = words(record.bits, self.width)
        for offset, code in enumerate(record.codes):
            self._set_code(start + offset, code)
        base = np.int64(record_key(record.kind, record.record_id)) << _BLOCK_BITS
        self.key[start:stop] = base | np.asarray(record.blocks, dtype=np.int64)
        self.alive[start:stop] = True
        self.axes.set_rows(start, k, record.agent_id, record.project_id, record.channel, record.source_id)
        self.n = stop

    def _set_code(self, i: int, code: np.ndarray | None) -> None:
        if code is None or not code.size:
            return
        if self.dim is None:
            self.dim = int(code.shape[0])
            self.codes = mapped_zeros((self.key.shape[0], self.dim), np.int8, self.spill)
        if code.shape[0] != self.dim:
            return  # a code of another width cannot re-rank against this model's queries
        self.codes[i] = code
        self.norms[i] = float(np.sqrt(np.dot(code.astype(np.float64), code.astype(np.float64))))

    def remove(self, record_keys: np.ndarray) -> None:
        """Mark the rows of these records dead; compact once dead rows outnumber live ones."""
        n = self.n
        doomed = self.alive[:n] & np.isin(self.key[:n] >> _BLOCK_BITS, record_keys)
        count = int(doomed.sum())
        if not count:
            return
        self.alive[:n] &= ~doomed
        self.dead += count
        if self.dead > max(1024, self.live):
            self._compact()

    def _compact(self) -> None:
        kept = self.alive[: self.n].copy()
        count = int(kept.sum())
        capacity = max(64, self.key.shape[0])
        for name in ("words", "codes", "norms", "key", "alive"):
            old = getattr(self, name)
            new = self._zeros(name, (capacity, *old.shape[1:]), old.dtype)
            copy_rows(new, old, self.n, kept)
            setattr(self, name, new)
        self.axes.keep(kept, capacity)
        self.n, self.dead = count, 0

    def search(
        self, scope: Scope, query: np.ndarray, *, examine: int, rerank: int, per_record: int
    ) -> tuple[list[Found], str]:
        n = self.n
        kinds = self.key[:n] >> (_ID_BITS + _BLOCK_BITS)
        blocks = self.key[:n] & MAX_BLOCK
        mask = self.alive[:n] & (blocks < per_record) & self.axes.mask(scope, n, by_source=False)
        memories = kinds == KIND_CODES["mem"]
        if scope.source_id:  # the source rule filters memories; a visible episode carries no source
            memories &= self.axes.source_mask(scope, n)
        mask &= memories | ((kinds == KIND_CODES["ep"]) if scope.episodes_visible else False)
        rows = np.flatnonzero(mask)
        if rows.size > examine:  # the first ``examine`` rows in key order (kind, id, block)
            rows = rows[np.argpartition(self.key[rows], examine - 1)[:examine]]
        if rows.size == 0:
            return [], "vector"
        query_words = words(np.packbits(query > 0), self.width)[0]
        distance = np.bitwise_count(self.words[rows] ^ query_words).sum(axis=1, dtype=np.int64)
        keys = self.key[rows]
        best = _best(distance, keys, rerank)
        chosen = rows[best]
        if self.dim == query.shape[0] and bool(np.all(self.norms[chosen] > 0)):
            unit = query.astype(np.float64) / (float(np.linalg.norm(query)) or 1.0)
            cosine = (self.codes[chosen].astype(np.float64) @ unit) / self.norms[chosen]
            release(self.codes)  # rows read at random, a few hundred a search: none kept resident after it
            order = np.lexsort((keys[best], -cosine))
            return [
                self._found(chosen[i], int(distance[best[i]]), float(cosine[i]))
                for i in _first_per_record(keys[best][order], order)
            ], "vector"
        order = np.lexsort((keys, distance))  # every examined row, by (distance, kind, id, block)
        picked = _first_per_record(keys[order], order)[:rerank]
        return [self._found(rows[i], int(distance[i]), None) for i in picked], "hamming"

    def _found(self, row: int, distance: int, cosine: float | None) -> Found:
        key = int(self.key[row])
        return Found(
            key >> (_ID_BITS + _BLOCK_BITS), (key >> _BLOCK_BITS) & _ID_MASK, key & MAX_BLOCK, distance, cosine
        )


def _best(distance: np.ndarray, keys: np.ndarray, count: int) -> np.ndarray:
    """Positions of the ``count`` best rows by (distance, key), in that order."""
    candidates = np.arange(distance.shape[0])
    if distance.shape[0] > count:
        kth = np.partition(distance, count - 1)[count - 1]
        candidates = np.flatnonzero(distance <= kth)  # every row tied with the count-th stays for the key tie-break
    order = np.lexsort((keys[candidates], distance[candidates]))[:count]
    return candidates[order]


def _first_per_record(sorted_keys: np.ndarray, order: np.ndarray) -> np.ndarray:
    """``order``'s entries that are the first of their record in it, in order."""
    _, first = np.unique(sorted_keys >> _BLOCK_BITS, return_index=True)
    return order[np.sort(first)]


class BlockIndex:
    """Every record's blocks, by model."""

    def __init__(self, spill: str | None = None) -> None:
        """``spill``: the directory of the files the codes are mapped from (``mapped.py``; None: in memory)."""
        self._models: dict[str, _ModelRows] = {}
        self._spill = spill

    def __len__(self) -> int:
        return sum(rows.live for rows in self._models.values())

    def add(self, record: RecordBlocks) -> bool:
        """Index one record's blocks (after ``remove`` of its old ones); False when their width does not fit
        the model's rows, or a block index is past MAX_BLOCK."""
        if not len(record.blocks):
            return True
        if int(np.max(record.blocks)) > MAX_BLOCK:
            return False
        rows = self._models.get(record.model)
        nbytes = int(np.asarray(record.bits).shape[1])
        if rows is None or (rows.live == 0 and rows.nbytes != nbytes):
            rows = self._models[record.model] = _ModelRows(nbytes, spill=self._spill)
        if rows.nbytes != nbytes:
            return False
        rows.add(record)
        return True

    def settle(self) -> None:
        """After a bulk load: the codes' pages it touched stop being resident (searches bring back what they read)."""
        for rows in self._models.values():
            release(rows.codes)

    def remove(self, records: list[tuple[str, int]]) -> None:
        """Drop every block of these records, whatever their model."""
        if not records:
            return
        keys = np.fromiter((record_key(kind, row_id) for kind, row_id in records), dtype=np.int64, count=len(records))
        for rows in self._models.values():
            rows.remove(keys)

    def search(
        self, scope: Scope, query: np.ndarray, model: str, *, examine: int, rerank: int, per_record: int
    ) -> tuple[list[Found], str]:
        """The scope's records of this model nearest the query by their best block; and the order used.

        Examined: the scope's rows of ``model`` (memories through the source rule,
        episodes only while the scope shows them), blocks with index below
        ``per_record``, at most ``examine`` rows (the first in key order: memories
        before episodes, by id, by block). The best ``rerank`` of them by (Hamming
        distance, kind, id, block) are re-ranked by the cosine of their int8 code with
        the query and collapsed to each record's best block (ties: lower block), in
        (-cosine, kind, id, block) order: "vector". When one of those rows has no
        code of the query's width, every examined row is collapsed by (distance,
        block) instead, in (distance, kind, id, block) order, the first ``rerank``
        records: "hamming".
        """
        rows = self._models.get(model)
        query = np.asarray(query, dtype=np.float32)
        if (
            rows is None
            or rows.live == 0
            or examine <= 0
            or rerank <= 0
            or per_record <= 0
            or (query.shape[0] + 7) // 8 != rows.nbytes
        ):
            return [], "vector"
        return rows.search(scope, query, examine=examine, rerank=rerank, per_record=min(per_record, MAX_BLOCK + 1))
