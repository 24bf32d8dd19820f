"""The in-process block index: every record's blocks as contiguous numpy arrays, what the block arm searches.

One table of rows per embedding model (a record's blocks are all of one model;
rows of two models cannot be compared with one query). A row holds a block's
sign bits as uint64 words, its int8 code, a sort key that encodes (kind, record
id, block index), and the record's isolation axes (``ScopeColumns``, the same
numpy form of the scope rule the vector index uses).

A record's blocks are replaced whole: the old rows are marked dead and the new
ones appended, and the table is compacted once dead rows outnumber live ones, so
catching up with a write costs one vectorised pass, not a copy of the table.

The search (``search``) is the exact scan: every row's cosine between its int8
code and the query, the best ``rerank`` rows of the scope collapsed to one per
record; it never reads every row. Rows point into a table of distinct codes
(``block_scan.DistinctCodes``); a bounded int8 pass scores the table, slots are
taken in that order and scored exactly, and only the rows of the slots taken are
tested against the scope, until no untaken slot can reach the best rows found
(``block_scan``'s module docstring has the bound). A model with a row that has no
code falls back to the sign bits: popcount of XOR ranks the examined rows by
Hamming distance, the best few re-ranked by cosine when they all have a code.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cuedrecall.store.base import Scope
from cuedrecall.store.index.block_scan import DistinctCodes, query_codes
from cuedrecall.store.index.mapped import copy_rows, mapped_zeros, release
from cuedrecall.store.index.scope_columns import ScopeColumns
from cuedrecall.store.rows import BLOCK_BITS, MAX_BLOCK

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
class BlockRows:
    """Many records' blocks as a load reads them (``BlockIndex.load``): row by row, each record's rows together and
    in block order, as the blocks table lists them; a record's model, width and scope are its first row's."""

    kinds: list[str]
    record_ids: list[int]
    blocks: list[int]
    models: list[str]
    bits: list[bytes]  # packed sign bits, MSB first
    codes: list[bytes | None]  # int8 code, None when the block has none
    scopes: list[tuple[str, str, str, str]]  # (agent_id, project_id, channel, source_id)


@dataclass(frozen=True)
class Found:
    """One record the search reached, by its best block."""

    kind: int  # KIND_CODES value
    record_id: int
    block: int
    distance: int
    cosine: float | None


_ROWS = ("words", "key", "alive", "slot")  # the per-row arrays, in step
_FIRST_TAKE = 256  # slots the exact scan takes first (at least 4 x rerank); 4 times more each round after


class _ModelRows:
    """The rows of one model: bits, keys and code slots in arrays that double as they fill."""

    def __init__(self, nbytes: int, capacity: int = 64, spill: str | None = None) -> None:
        self.nbytes = nbytes
        self.spill = spill  # where the codes' and bits' files are made (store/index/mapped.py); None: in memory
        self.width = (nbytes + 7) // 8
        self.dim: int | None = None  # the int8 codes' width, from the first code seen
        self.n = 0
        self.dead = 0
        self.codeless = 0  # live rows without a full-width code: the search falls back to the sign bits
        self.words = mapped_zeros((capacity, self.width), np.uint64, spill)  # read in full only by the fallback
        self.table: DistinctCodes | None = None  # the distinct codes, once a code is seen
        self.slot = np.full(capacity, -1, dtype=np.int32)  # the row's code in the table; -1: none
        self.key = np.zeros(capacity, dtype=np.int64)  # kind << 60 | id << 16 | block: sorts as (kind, id, block)
        self.alive = np.zeros(capacity, dtype=bool)
        self.axes = ScopeColumns(capacity)
        self._by_slot: tuple[np.ndarray, np.ndarray, int] | None = None  # rows by slot: (order, starts, rows sorted)

    @property
    def live(self) -> int:
        return self.n - self.dead

    def _reserve(self, extra: int) -> None:
        capacity = self.key.shape[0]
        if self.n + extra <= capacity:
            return
        while capacity < self.n + extra:
            capacity *= 2
        for name in _ROWS:
            old = getattr(self, name)
            new = self._zeros(name, (capacity, *old.shape[1:]), old.dtype)
            copy_rows(new, old, self.n)
            setattr(self, name, new)
        self.axes.resize(capacity, self.n)

    def _zeros(self, name: str, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """A fresh column: the sign bits mapped from a file (read in full by the fallback only), the rest in memory;
        a row without a code points at slot -1."""
        if name == "words":
            return mapped_zeros(shape, dtype, self.spill)
        return np.full(shape, -1, dtype=dtype) if name == "slot" else np.zeros(shape, dtype=dtype)

    def add_rows(self, rows: BlockRows, first: int, stop: int, starts: list[int]) -> None:
        """Rows ``first:stop`` of a load's batch, whole records of this model and width (``starts``: where each
        record's rows begin), in one pass."""
        k = stop - first
        self._reserve(k)
        start = self.n
        packed = np.frombuffer(b"".join(rows.bits[first:stop]), dtype=np.uint8).reshape(k, self.nbytes)
        self.words[start : start + k] = words(packed, self.width)
        self._set_codes(
            start, [None if code is None else np.frombuffer(code, np.int8) for code in rows.codes[first:stop]]
        )
        keys = np.fromiter(
            (record_key(kind, row_id) for kind, row_id in zip(rows.kinds[first:stop], rows.record_ids[first:stop])),
            dtype=np.int64,
            count=k,
        )
        self.key[start : start + k] = (keys << _BLOCK_BITS) | np.asarray(rows.blocks[first:stop], dtype=np.int64)
        self.alive[start : start + k] = True
        run = first  # records in a row with one scope have their axes set at once
        for j in [*starts[1:], stop]:
            if j == stop or rows.scopes[j] != rows.scopes[run]:
                self.axes.set_rows(start + run - first, j - run, *rows.scopes[run])
                run = j
        self.n = start + k
        if self.table is not None and self.table.wants_fold():
            self.fold()

    def _set_codes(self, start: int, codes: list[np.ndarray | None]) -> None:
        """Each full-width, non-zero code gets a slot in the table; the others leave their row without one."""
        if self.dim is None:
            first = next((code for code in codes if code is not None and code.size), None)
            if first is not None:
                self.dim = int(first.shape[0])
                # in memory, not mapped: every search reads the whole table, and a file mapping's 4 KiB pages made
                # that pass slower than an anonymous array's huge pages (benchmarks/results/design-figures.md)
                self.table = DistinctCodes(self.dim, None)
        self.slot[start : start + len(codes)] = -1
        if self.table is None:
            self.codeless += len(codes)
            return
        if all(code is not None and code.shape[0] == self.dim for code in codes):  # the usual record: one stack
            stacked = np.asarray(codes, dtype=np.int8)
            have = np.flatnonzero(stacked.any(axis=1))
            stacked = stacked if have.shape[0] == len(codes) else stacked[have]
        else:
            have = np.asarray(
                [i for i, code in enumerate(codes) if code is not None and code.shape[0] == self.dim and code.any()],
                dtype=np.int64,
            )
            stacked = np.asarray([codes[i] for i in have], dtype=np.int8).reshape(-1, self.table.dim)
        self.codeless += len(codes) - int(have.shape[0])
        if have.shape[0]:
            self.slot[have + start] = self.table.append(stacked)

    def fold(self) -> None:
        """Fold the table's equal codes into one slot each (``DistinctCodes.fold``); the rows follow."""
        if self.table is None:
            return
        remap = self.table.fold()
        self.slot[: self.n] = remap[self.slot[: self.n]]
        self._by_slot = None

    def remove(self, record_keys: np.ndarray) -> None:
        """Mark the rows of these records dead; compact once dead rows outnumber live ones."""
        n = self.n
        doomed = self.alive[:n] & np.isin(self.key[:n] >> _BLOCK_BITS, record_keys)
        count = int(doomed.sum())
        if not count:
            return
        self.alive[:n] &= ~doomed
        self.dead += count
        slots = self.slot[:n][doomed]
        self.codeless -= int(np.count_nonzero(slots < 0))
        if self.table is not None:
            self.table.drop(slots[slots >= 0])
        if self.dead > max(1024, self.live):
            self._compact()

    def _compact(self) -> None:
        kept = self.alive[: self.n].copy()
        count = int(kept.sum())
        capacity = max(64, self.key.shape[0])
        for name in _ROWS:
            old = getattr(self, name)
            new = self._zeros(name, (capacity, *old.shape[1:]), old.dtype)
            copy_rows(new, old, self.n, kept)
            setattr(self, name, new)
        self.axes.keep(kept, capacity)
        self.n, self.dead = count, 0
        self.fold()  # the dead rows' slots go with them

    def search(
        self, scope: Scope, query: np.ndarray, *, examine: int, rerank: int, per_record: int
    ) -> tuple[list[Found], str]:
        if self.table is not None and self.codeless == 0 and self.dim == query.shape[0]:
            return self._exact(scope, query, examine=examine, rerank=rerank, per_record=per_record), "vector"
        return self._by_bits(scope, query, examine=examine, rerank=rerank, per_record=per_record)

    def _examined(self, scope: Scope, examine: int, per_record: int) -> np.ndarray:
        """The rows the arm examines: the scope's (memories through the source rule, episodes while the scope shows
        them), blocks below ``per_record``, the first ``examine`` of them in key order."""
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
        return rows

    def _admits(self, scope: Scope, rows: np.ndarray, per_record: int) -> np.ndarray:
        """``_examined``'s rule (less the examine cap) over these rows only."""
        keys = self.key[rows]
        kinds = keys >> (_ID_BITS + _BLOCK_BITS)
        ok = self.alive[rows] & ((keys & MAX_BLOCK) < per_record) & self.axes.mask(scope, 0, by_source=False, rows=rows)
        memories = kinds == KIND_CODES["mem"]
        if scope.source_id:
            memories &= self.axes.source_mask(scope, 0, rows=rows)
        return ok & (memories | ((kinds == KIND_CODES["ep"]) if scope.episodes_visible else False))

    def _rows_of(self, slots: np.ndarray) -> np.ndarray:
        """Every row (live or dead) pointing at one of these slots: through the rows sorted by slot, and the rows
        added since that sort. The sort is redone once the rows added since outnumber an eighth of it."""
        n = self.n
        if self._by_slot is None or n - self._by_slot[2] > max(4096, self._by_slot[2] // 8):
            order = np.argsort(self.slot[:n], kind="stable").astype(np.int32)  # held between searches: 4 bytes a row
            assert self.table is not None
            starts = np.searchsorted(self.slot[:n][order], np.arange(self.table.n + 1))
            self._by_slot = (order, starts, n)
        order, starts, sorted_n = self._by_slot
        known = slots[slots < starts.shape[0] - 1]  # a slot made after the sort has rows in the tail only
        low, high = starts[known], starts[known + 1]
        lengths = high - low
        offsets = np.repeat(low - (np.cumsum(lengths) - lengths), lengths)
        rows = order[offsets + np.arange(int(lengths.sum()))]
        if sorted_n < n:
            tail = np.arange(sorted_n, n)
            rows = np.concatenate([rows, tail[np.isin(self.slot[sorted_n:n], slots)]])
        return rows

    def _enough(self, slots: np.ndarray, need: int) -> int:
        """How many of ``slots`` (in order) hold ``need`` rows, live or dead, by the last sort by slot; a slot made
        since counts one."""
        if self._by_slot is None:
            return slots.shape[0]
        starts = self._by_slot[1]
        sorted_slots = slots < starts.shape[0] - 1
        counts = np.ones(slots.shape[0], dtype=np.int64)
        known = slots[sorted_slots]
        counts[sorted_slots] = np.maximum(1, starts[known + 1] - starts[known])
        return min(slots.shape[0], int(np.searchsorted(np.cumsum(counts), need)) + 1)

    def _exact(self, scope: Scope, query: np.ndarray, *, examine: int, rerank: int, per_record: int) -> list[Found]:
        """The exact scan's records (see the module docstring): slots taken by their approximate cosine, four
        times more each round, until the rerank-th best admitted row is above every untaken slot's upper bound."""
        table = self.table
        assert table is not None
        unit, q8, scale, band = query_codes(query)
        approx = table.approximate(q8, scale)
        live_slots = int(np.count_nonzero(approx > -np.inf))
        if live_slots == 0:
            return []
        allowed = None
        if examine < self.live:  # the cap needs every examined row: the mask over all rows, once
            allowed = np.zeros(self.n, dtype=bool)
            allowed[self._examined(scope, examine, per_record)] = True
        need = max(_FIRST_TAKE, 4 * rerank)  # rows to reach before the bound is checked; four times more a round
        while True:
            take = min(live_slots, need)  # a slot has a row at least: ``need`` slots always hold ``need`` rows
            top = np.argpartition(approx, approx.shape[0] - take)[approx.shape[0] - take :]
            top = top[np.argsort(-approx[top], kind="stable")]
            top = top[: self._enough(top, need)]  # a repeated code's rows count: the fewest slots that hold them
            rows = self._rows_of(top)
            rows = rows[self._admits(scope, rows, per_record)]
            if allowed is not None:
                rows = rows[allowed[rows]]
            by_slot = np.argsort(top)
            scored = table.exact(top, unit)
            cosine = scored[by_slot][np.searchsorted(top[by_slot], self.slot[rows])]
            if top.shape[0] >= live_slots:
                break
            floor = float(approx[top[-1]]) + band  # no untaken slot's cosine is above this
            if rows.size >= rerank and np.partition(cosine, rows.size - rerank)[rows.size - rerank] > floor:
                break
            need *= 4
        keys = self.key[rows]
        order = np.lexsort((keys, -cosine))[:rerank]
        picked = _first_per_record(keys[order], order)
        query_words = words(np.packbits(query > 0), self.width)[0]
        distance = np.bitwise_count(self.words[rows[picked]] ^ query_words).sum(axis=1, dtype=np.int64)
        release(self.words)  # a few hundred rows read at random: none kept resident
        return [self._found(rows[i], int(d), float(cosine[i])) for i, d in zip(picked, distance)]

    def _by_bits(
        self, scope: Scope, query: np.ndarray, *, examine: int, rerank: int, per_record: int
    ) -> tuple[list[Found], str]:
        """The fallback while a row has no code of the query's width: Hamming distance over the examined rows, the
        best ``rerank`` re-ranked by cosine when each has a code ("vector"), else in Hamming order ("hamming")."""
        rows = self._examined(scope, examine, per_record)
        if rows.size == 0:
            return [], "vector"
        query_words = words(np.packbits(query > 0), self.width)[0]
        distance = np.bitwise_count(self.words[rows] ^ query_words).sum(axis=1, dtype=np.int64)
        keys = self.key[rows]
        best = _best(distance, keys, rerank)
        chosen = rows[best]
        slots = self.slot[chosen]
        if self.table is not None and self.dim == query.shape[0] and bool(np.all(slots >= 0)):
            unit = query.astype(np.float64) / (float(np.linalg.norm(query)) or 1.0)
            cosine = self.table.exact(slots, unit)
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
        """Index one record's blocks (after ``remove`` of its old ones), as a load of that record alone; False when
        the load leaves it out (a width that does not fit the model's rows, a block index past MAX_BLOCK)."""
        k = len(record.blocks)
        if not k:
            return True
        bits = np.atleast_2d(np.asarray(record.bits, dtype=np.uint8))
        one = BlockRows(
            kinds=[record.kind] * k,
            record_ids=[record.record_id] * k,
            blocks=[int(block) for block in record.blocks],
            models=[record.model] * k,
            bits=[row.tobytes() for row in bits],
            codes=[None if code is None else np.asarray(code, dtype=np.int8).tobytes() for code in record.codes],
            scopes=[(record.agent_id, record.project_id, record.channel, record.source_id)] * k,
        )
        return self.load(one) == 0

    def load(self, rows: BlockRows) -> int:
        """Index a batch of records (after ``remove`` of their old blocks), the records of one model and width in a
        row added in one pass (``_ModelRows.add_rows``): a store's open pays per batch, not per record. A record
        whose blocks' widths differ, or do not fit its model's rows, or with a block index past MAX_BLOCK is left
        out; how many were."""
        total = len(rows.blocks)
        starts = [
            j
            for j in range(total)
            if j == 0 or rows.record_ids[j] != rows.record_ids[j - 1] or rows.kinds[j] != rows.kinds[j - 1]
        ]
        left_out = 0
        target: _ModelRows | None = None  # the rows the pending run of records goes to
        first, run = 0, list[int]()  # the pending run: its first row and where each of its records begins
        for begin, end in zip(starts, [*starts[1:], total]):
            model, nbytes = rows.models[begin], len(rows.bits[begin])
            if max(rows.blocks[begin:end]) > MAX_BLOCK or any(len(b) != nbytes for b in rows.bits[begin:end]):
                chosen, left_out = None, left_out + 1
            else:
                chosen = self._models.get(model)
                pending = begin - first if chosen is not None and chosen is target else 0
                if chosen is None or (chosen.live + pending == 0 and chosen.nbytes != nbytes):
                    chosen = self._models[model] = _ModelRows(nbytes, spill=self._spill)
                elif chosen.nbytes != nbytes:
                    chosen, left_out = None, left_out + 1
            if chosen is not target or chosen is None:
                if target is not None and run:
                    target.add_rows(rows, first, begin, run)
                target, first, run = chosen, begin, []
            if chosen is not None:
                run.append(begin)
        if target is not None and run:
            target.add_rows(rows, first, total, run)
        return left_out

    def fold(self) -> None:
        """After a bulk load: each model's equal codes folded into one slot (``DistinctCodes.fold``)."""
        for rows in self._models.values():
            rows.fold()

    def settle(self) -> None:
        """After a bulk load: the codes' pages it touched stop being resident (searches bring back what they read)."""
        for rows in self._models.values():
            release(rows.words)

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
