"""The in-process vector index: contiguous numpy matrices, one per record kind.

Rows are kept in id order (oldest first), so the scan order "newest first" is
the reverse. Every vector arm is one masked matrix product over a slice of
this index, never a loop over blobs. Capacity doubles as rows are added, so a
write costs the same at 100k rows as at 1k.

Rows that arrive below the newest id (vectors written again: a store re-embedded
under another model) are merged in with ``insert``: one pass over the index a
batch, not a rebuild from the rows.

Vectors are held as int8 codes (``vector_codes``, vector-codes-v2): the arms
rank by the codes and score the few rows near the cut from the stored float32
vectors, which ``exact`` (given by the store) reads, so every score and row is
an exact scan's while the index takes a quarter of float32's memory.

Those float32 vectors are also copied, as the index takes each row, into a private file read by position
(``exact_file``): the few rows near the cut cost one read each there, not a database lookup. Without the file
(an in-memory database, a platform or disk that refuses it) ``exact`` reads them from the store, with the
same scores.

Each row's sign bits (dimension > 0 is a 1, packed MSB first into uint64 words)
are kept beside its vector: the far seats' coarse search (``coarse``) ranks the
rows beyond the scan window by Hamming distance to the query's bits, popcount of
XOR over the whole slice at once, and reads the float vectors of the best few only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

import numpy as np

from cuedrecall.store.base import EPISODE, MEMORY, CoarseHit, Hit, Scope, make_ref
from cuedrecall.store.index.block_index import words
from cuedrecall.store.index.exact_file import ExactFile, open_exact_file
from cuedrecall.store.index.mapped import copy_rows, mapped_zeros, release
from cuedrecall.store.index.scope_columns import ScopeColumns, open_gaps
from cuedrecall.store.index.vector_codes import (
    QueryCodes,
    approximate,
    candidates,
    error_bound,
    exact_rows,
    exact_scores,
    pick,
    quantize,
    round_query,
)

# The stored float32 vectors of the given ids (an id deleted meanwhile is absent): the store's rows are the truth.
ExactVectors = Callable[[list[int]], dict[int, np.ndarray]]
SETTLE_ROWS = 256  # a load's batch: 96 KiB of 384-wide codes, a few MiB while they are read and quantized
# The arrays mapped from files (store/index/mapped.py): the codes every arm reads near its window, and the sign bits
# only the far seats (off by default) read; both resident only while read.
_MAPPED = ("_codes", "_bits")
_ROWS = ("_ids", "_codes", "_scale", "_band", "_reach", "_bits", "_ts", "_slot")  # the per-row arrays, in step
_GARBAGE_ROWS = 4096  # slots of rows removed or rewritten the vectors file may hold beyond the live rows' count
_SCOPES_KEPT = 4  # scopes whose rows an index keeps between writes (each an int32 per row of the scope)


def sign_words(vectors: np.ndarray, width: int) -> np.ndarray:
    """Sign bits of each vector (a dimension > 0 is a 1), MSB first, as rows of ``width`` uint64 words."""
    packed = np.packbits(np.atleast_2d(vectors) > 0, axis=1)
    if packed.shape[1] == width * 8:  # a width of whole words (384 dimensions: 6): no padding to copy into
        return packed.view(np.uint64)
    return words(packed, width)


@dataclass(frozen=True)
class IndexRow:
    """What the index keeps of one embedded record."""

    row_id: int
    vector: np.ndarray
    agent_id: str
    project_id: str
    channel: str
    source_id: str
    ts_epoch: float  # the record's time (NaN when unparseable)


class VectorIndex:
    """Vectors of one kind (memories or episodes) with their scope columns."""

    def __init__(
        self, exact: ExactVectors, dim: int | None = None, capacity: int = 16, spill: str | None = None
    ) -> None:
        """``capacity``: rows held before the first doubling (a store loading N rows asks for N exactly).
        ``spill``: the directory of the file the codes are mapped from (``store/index/mapped.py``; None: in memory)."""
        self.dim = dim
        self._exact = exact
        self._spill = spill
        self._n = 0
        capacity = max(1, capacity)
        self._ids = np.zeros(capacity, dtype=np.int64)
        self._codes = mapped_zeros((capacity, dim or 1), np.int8, spill)
        self._scale = np.zeros(capacity, dtype=np.float32)
        self._band = np.zeros(capacity, dtype=np.float32)
        self._reach = np.zeros(capacity, dtype=np.float32)
        self._bits = mapped_zeros((capacity, self._width), np.uint64, spill)
        self._ts = np.zeros(capacity, dtype=np.float64)
        self._slot = np.zeros(capacity, dtype=np.int64)  # each row's slot in the vectors file
        self._file: ExactFile | None = open_exact_file(spill, dim) if dim else None
        self._axes = ScopeColumns(capacity)
        self._writes = 0  # rows rewritten, moved or removed so far (an append is not counted: kept scopes extend)
        self._kept: dict[Scope, tuple[int, int, np.ndarray]] = {}  # scope -> (writes, rows then, its positions)
        self._kept_guard = threading.Lock()
        # every row's band and reach are at most these (a removed row's may stay counted: still bounds)
        self._widest_band = 0.0
        self._widest_reach = 0.0

    @property
    def _width(self) -> int:
        """uint64 words per row of sign bits."""
        return max(1, ((self.dim or 1) + 63) // 64)

    def _grow(self) -> None:
        """Double the capacity, keeping the rows."""
        for name in _ROWS:
            old = getattr(self, name)
            shape = (2 * old.shape[0], *old.shape[1:])
            new = mapped_zeros(shape, old.dtype, self._spill) if name in _MAPPED else np.zeros(shape, old.dtype)
            copy_rows(new, old, self._n)
            setattr(self, name, new)
        self._axes.resize(self._ids.shape[0], self._n)
        self.settle()

    def extend(self, rows: Iterable[IndexRow]) -> None:
        """Append rows in id order (a load), SETTLE_ROWS at a time: each batch is quantized at once, then the codes'
        pages it touched are released, so the load's peak stays near what searches keep resident."""
        batch: list[IndexRow] = []
        for row in rows:
            if self.dim is None:
                self._take_width(row)
            if self.fits(row):
                batch.append(row)
            if len(batch) == SETTLE_ROWS:
                self._append(batch)
                batch = []
        self._append(batch)

    def _append(self, rows: list[IndexRow]) -> None:
        while self._n + len(rows) > len(self._ids):
            self._grow()
        if rows:
            self._put_rows(self._n, rows)
            self._n += len(rows)
        self.settle()

    def settle(self) -> None:
        """After a bulk write (a load, a growth, rows moved): the codes' pages it touched stop being resident."""
        for name in _MAPPED:
            release(getattr(self, name))

    def _put(self, i: int, row: IndexRow) -> None:
        """Write one row's codes, bits and columns at position i."""
        self._put_rows(i, [row])

    def _put_rows(self, start: int, rows: list[IndexRow]) -> None:
        """Write consecutive rows' codes, bits and columns from position ``start``."""
        vectors = np.stack([row.vector for row in rows])
        stop = start + len(rows)
        self._ids[start:stop] = [row.row_id for row in rows]
        codes, scale, band, reach = quantize(vectors)
        for name, values in zip(("_codes", "_scale", "_band", "_reach"), (codes, scale, band, reach)):
            getattr(self, name)[start:stop] = values
        self._widest_band = max(self._widest_band, float(band.max()))
        self._widest_reach = max(self._widest_reach, float(reach.max()))
        self._bits[start:stop] = sign_words(vectors, self._width)
        self._copy_exact(start, stop, vectors)
        for i, row in enumerate(rows, start):
            self._axes.set(i, row.agent_id, row.project_id, row.channel, row.source_id)
        self._ts[start:stop] = [row.ts_epoch for row in rows]

    def _copy_exact(self, start: int, stop: int, vectors: np.ndarray) -> None:
        """Copy rows' float32 vectors to fresh slots of the vectors file; a file the disk refuses is retired
        (the arms then read the store). Writes hold the store's lock exclusive: no search reads the file."""
        if self._file is None:
            return
        try:
            self._slot[start:stop] = self._file.append(vectors)
        except OSError:
            self._retire_file()

    def _retire_file(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def _compact_file(self) -> None:
        """Once the slots of rows removed or rewritten outnumber the live rows (and _GARBAGE_ROWS), copy the live
        rows to a fresh file, in index order."""
        old = self._file
        if old is None or old.slots <= 2 * self._n + _GARBAGE_ROWS:
            return
        fresh = open_exact_file(self._spill, old.dim)
        try:
            if fresh is None:
                raise OSError("no file for the compacted vectors")
            for start in range(0, self._n, SETTLE_ROWS):
                stop = min(start + SETTLE_ROWS, self._n)
                self._slot[start:stop] = fresh.append(old.read(self._slot[start:stop]))
        except OSError:
            if fresh is not None:
                fresh.close()
            self._retire_file()
            return
        old.close()
        self._file = fresh

    def __len__(self) -> int:
        return self._n

    def add(self, row: IndexRow) -> None:
        """Append a row; ids must arrive in increasing order (callers rebuild otherwise)."""
        if self.dim is None:
            self._take_width(row)
        if row.vector.shape[0] != self.dim:
            return  # a vector of another width cannot be compared with the query: not indexed
        if self._n == len(self._ids):
            self._grow()
        self._put(self._n, row)
        self._n += 1

    def _take_width(self, row: IndexRow) -> None:
        """The first row's width becomes the index's."""
        self.dim = int(row.vector.shape[0])
        self._retire_file()
        self._file = open_exact_file(self._spill, self.dim)
        self._codes = mapped_zeros((len(self._ids), self.dim), np.int8, self._spill)
        self._bits = mapped_zeros((len(self._ids), self._width), np.uint64, self._spill)

    def insert(self, rows: list[IndexRow]) -> None:
        """Add rows whose ids are not indexed, wherever their ids fall, keeping id order: the rows after each are
        moved down in place, one block copy per new row, no rebuild.

        A row of another width than the index's is left out, as ``add`` does.
        """
        fresh = sorted((row for row in rows if self.position(row.row_id) is None), key=lambda row: row.row_id)
        if self._n == 0 or not fresh or fresh[0].row_id > self.last_id():
            for row in fresh:
                self.add(row)  # the common case: every row after the newest, appended in order
            return
        fresh = [row for row in fresh if self.fits(row)]
        if not fresh:
            return
        n, total = self._n, self._n + len(fresh)
        while len(self._ids) < total:
            self._grow()
        ids = np.array([row.row_id for row in fresh], dtype=np.int64)
        places = np.searchsorted(self._ids[:n], ids)  # each new row goes before the old row at its place
        for name in _ROWS:
            open_gaps(getattr(self, name), places, n)
        self._axes.open_gaps(places, n)
        self._writes += 1
        landing = places + np.arange(len(fresh))  # the gap each new row fills
        self._n = total
        for i, row in zip(landing.tolist(), fresh):
            self._put(i, row)
        self.settle()

    def fits(self, row: IndexRow) -> bool:
        """Whether the row's vector has the index's width (any width fits an index that holds none)."""
        return self.dim is None or row.vector.shape[0] == self.dim

    def last_id(self) -> int:
        return int(self._ids[self._n - 1]) if self._n else 0

    def position(self, row_id: int) -> int | None:
        i = int(np.searchsorted(self._ids[: self._n], row_id))
        return i if i < self._n and self._ids[i] == row_id else None

    def remove(self, row_id: int) -> None:
        i = self.position(row_id)
        if i is None:
            return
        for name in _ROWS:
            arr = getattr(self, name)
            arr[i : self._n - 1] = arr[i + 1 : self._n]
        self._axes.delete(i, self._n)
        self._n -= 1
        self._writes += 1
        self.settle()
        self._compact_file()
        if self._n == 0:
            self.dim = None  # an empty index takes the width of the next vector it is given

    def follow(self, ids: list[int], current: dict[int, IndexRow]) -> None:
        """Bring changed ids to their rows now (``current``: those still comparable, by id): each removed, replaced
        in place, or merged in by id."""
        new = []
        for row_id in ids:
            changed = current.get(row_id)
            if changed is None or not self.fits(changed):
                self.remove(row_id)  # deleted, unembedded, of another model or width: no longer comparable
            elif not self.replace(changed):
                new.append(changed)
        self.insert(new)
        if len(ids) >= SETTLE_ROWS:
            self.settle()  # many rows rewritten (a re-embedding): searches bring back the codes they read

    def replace(self, row: IndexRow) -> bool:
        """Overwrite a row in place; False when the id is not indexed."""
        i = self.position(row.row_id)
        if i is None or row.vector.shape[0] != self.dim:
            return False
        self._put(i, row)
        self._writes += 1
        self._compact_file()
        return True

    def scope_mask(self, scope: Scope) -> np.ndarray:
        """Boolean mask of the rows inside the scope's isolation axes."""
        return self._axes.mask(scope, self._n)

    def scope_rows(self, scope: Scope) -> np.ndarray:
        """Positions of the scope's rows, oldest first (read-only): kept for the last few scopes, extended by the
        rows appended since (a store), made again after a row is rewritten, moved or removed, so a recall's arms
        and the next recall do not mask every row again. Recalls search at once (a writer waits for them all):
        the kept scopes change under a lock of their own."""
        n = self._n
        with self._kept_guard:
            kept = self._kept.get(scope)
        if kept is not None and kept[0] == self._writes and kept[1] == n:
            return kept[2]
        dtype = np.int32 if n < 2**31 else np.int64
        if kept is not None and kept[0] == self._writes and kept[1] < n:
            new = np.arange(kept[1], n, dtype=dtype)  # only rows appended since: the kept positions still hold
            rows = np.concatenate([kept[2], new[self._axes.mask(scope, 0, rows=new)]])
        else:
            rows = np.flatnonzero(self.scope_mask(scope)).astype(dtype, copy=False)
        rows.flags.writeable = False
        with self._kept_guard:
            self._kept.pop(scope, None)
            while len(self._kept) >= _SCOPES_KEPT:
                del self._kept[next(iter(self._kept))]
            self._kept[scope] = (self._writes, n, rows)
        return rows

    def search(
        self,
        scope: Scope,
        query: np.ndarray,
        *,
        floor: float,
        depth: int,
        positions: tuple[int, int | None] = (0, None),
        period: tuple[float, float] | None = None,
    ) -> list[tuple[int, float, int]]:
        """Best ``depth`` rows by dot product >= floor, as (id, score, scan position).

        ``positions`` slices the scope's scan order (newest first): (0, N) is the
        near window, (N, R) the far list. ``period`` keeps rows whose time lies in
        [start, end) epoch seconds. Ties go to the earlier scan position.
        """
        if self._n == 0 or depth <= 0 or query.shape[0] != self.dim:
            return []
        rows = self.scope_rows(scope)
        if period is not None:
            ts = self._ts[rows]
            rows = rows[(ts >= period[0]) & (ts < period[1])]
        start, stop = positions
        rows = rows[::-1][start:stop]  # newest first: index j is scan position start + j
        if rows.size == 0:
            return []
        query = query.astype(np.float32, copy=False)
        rounded = round_query(query)
        approx = self._approximate(rows, rounded)

        def slack_of(picked: np.ndarray) -> np.ndarray:  # read for the rows ``pick`` looks at only
            return error_bound(self._band[rows[picked]], self._reach[rows[picked]], rounded)

        picked = pick(approx, slack_of, self._widest(rounded), floor, depth)
        if picked.size > depth:
            picked = picked[self._closer(rows[picked], query, rounded, floor, depth)]
        scores = self._scores(rows[picked], query)
        passing = scores >= floor
        picked, scores = picked[passing], scores[passing]
        if picked.size > depth:
            # everything tied with the depth-th score stays, so the position tie-break holds
            kth = -np.partition(-scores, depth - 1)[depth - 1]
            tied = scores >= kth
            picked, scores = picked[tied], scores[tied]
        order = np.lexsort((picked, -scores))[:depth]
        chosen = picked[order]  # tolist() gives Python ints and floats of the same values, a row at a time's cost
        return list(zip(self._ids[rows[chosen]].tolist(), scores[order].tolist(), (start + chosen).tolist()))

    def window_scores(self, scope: Scope, query: np.ndarray, positions: tuple[int, int | None]) -> np.ndarray:
        """Every row's exact score (float32) at these scan positions of the scope, a row gone left out: the
        values ``search`` scores, without a row's id, position or order (the gate's outlier bar reads these)."""
        if self._n == 0 or query.shape[0] != self.dim:
            return np.zeros(0, dtype=np.float32)
        rows = self.scope_rows(scope)[::-1][positions[0] : positions[1]]
        if rows.size == 0:
            return np.zeros(0, dtype=np.float32)
        scores = self._scores(rows, query.astype(np.float32, copy=False))
        return scores[~np.isnan(scores)]

    def coarse(self, scope: Scope, query: np.ndarray, *, start: int, count: int) -> list[tuple[int, int, int, float]]:
        """The ``count`` rows of the scope at scan positions >= ``start`` closest to the query by sign bits.

        As (id, scan position, Hamming distance, dot product with the query), best
        first by (distance, position); the float vectors are read for these rows only.
        """
        if self._n == 0 or count <= 0 or query.shape[0] != self.dim:
            return []
        rows = self.scope_rows(scope)[::-1][start:]
        if rows.size == 0:
            return []
        target = sign_words(query.astype(np.float32, copy=False), self._width)[0]
        distance = np.bitwise_count(self._bits[rows] ^ target).sum(axis=1, dtype=np.int64)
        keep = np.arange(rows.size)
        if rows.size > count:
            # partial selection first; everything tied with the count-th distance stays for the position tie-break
            kth = np.partition(distance, count - 1)[count - 1]
            keep = np.flatnonzero(distance <= kth)
        order = keep[np.lexsort((keep, distance[keep]))][:count]
        chosen = rows[order]
        cosines = self._scores(chosen, query.astype(np.float32, copy=False))
        return [
            (int(self._ids[row]), int(start + i), int(distance[i]), float(cosine))
            for row, i, cosine in zip(chosen, order, cosines)
        ]

    def _approximate(self, rows: np.ndarray, query: QueryCodes) -> np.ndarray:
        """The codes' dot products for the given rows (newest first).

        Rows that are the whole span they cover (one agent's store) are read as one slice, nothing gathered; when
        they fill most of it, the product over the slice (a view, no copy) beats gathering them first.
        """
        low, high = int(rows[-1]), int(rows[0]) + 1
        if high - low == rows.size:
            return approximate(self._codes[low:high], self._scale[low:high], query)[::-1]
        if high - low <= 4 * rows.size:
            return approximate(self._codes[low:high], self._scale[low:high], query)[rows - low]
        return approximate(self._codes[rows], self._scale[rows], query)

    def _widest(self, query: QueryCodes) -> float:
        """A bound on every row's slack for this query: the widest band and reach any row has had."""
        band, reach = np.array([self._widest_band], np.float32), np.array([self._widest_reach], np.float32)
        return float(error_bound(band, reach, query)[0])

    def _closer(self, rows: np.ndarray, query: np.ndarray, rounded: QueryCodes, floor: float, depth: int) -> np.ndarray:
        """Which of these candidates stay once their codes meet the query unrounded: s*(c.q) in float64 is within
        the row's own bound (the query's rounding, its residual, no longer counts), so fewer stored vectors are
        read."""
        approx = (self._codes[rows].astype(np.float64) @ query.astype(np.float64)) * self._scale[rows]
        slack = error_bound(self._band[rows], self._reach[rows], replace(rounded, residual=0.0))
        return candidates(approx, slack, floor, depth)

    def _copies(self, rows: np.ndarray) -> np.ndarray | None:
        """The float32 vectors of rows at these positions from the vectors file; None without one, or when the read
        fails (the store's rows answer then: the file is retired by a write, never by a search)."""
        if self._file is None:
            return None
        try:
            return self._file.read(self._slot[rows])
        except OSError:
            return None

    def _scores(self, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
        """Exact dot products of the given rows with the query, from the stored vectors: their copies in the
        vectors file, else the store's (NaN for a row gone). The index holds the rows the recall's snapshot
        sees, so both give the same scores."""
        copies = self._copies(rows)
        if copies is not None:
            return exact_rows(copies, query)
        ids = self._ids[rows].tolist()
        stored = self._exact(ids)
        return exact_scores([stored.get(row_id) for row_id in ids], query)

    def agent_rows(self, agent_id: str) -> tuple[np.ndarray, np.ndarray]:
        """(ids, times) of one agent's rows, or every row for agent "", oldest first: no vector is read (a
        caller reads the few it samples through ``vectors_of``)."""
        mask = self._axes.agent_mask(agent_id, self._n)
        return self._ids[: self._n][mask].copy(), self._ts[: self._n][mask].copy()

    def vectors_of(self, row_ids: list[int]) -> dict[int, np.ndarray]:
        """Stored vectors of the given ids that are indexed: their copies in the vectors file, else the store's."""
        found = [(row_id, i) for row_id in row_ids if (i := self.position(row_id)) is not None]
        copies = self._copies(np.array([i for _, i in found], dtype=np.int64))
        if copies is not None:
            return {row_id: copies[j] for j, (row_id, _) in enumerate(found)}
        return self._exact([row_id for row_id, _ in found])


def search_kinds(
    indexes: dict[str, VectorIndex],
    scope: Scope,
    query: np.ndarray,
    floor: float,
    depth: int,
    *,
    positions: tuple[int, int | None],
    period: tuple[float, float] | None,
    kinds: tuple[str, ...],
) -> list[Hit]:
    """A vector arm over the indexes of ``kinds``: each kind's best ``depth`` rows at or above ``floor``, merged by
    score; ties: the earlier kind (memories before episodes), then the earlier scan position."""
    found = []
    for order, (kind, kind_scope) in enumerate(_kind_scopes(scope, kinds)):
        rows = indexes[kind].search(kind_scope, query, floor=floor, depth=depth, positions=positions, period=period)
        found += [(-score, order, position, make_ref(kind, row_id), score) for row_id, score, position in rows]
    if len(kinds) > 1:
        found.sort(key=_merge_key)  # one kind's rows come best first already (VectorIndex.search)
    return [Hit(ref, rank, score) for rank, (_, _, _, ref, score) in enumerate(found[:depth])]


def window_cosines(
    indexes: dict[str, VectorIndex], scope: Scope, query: np.ndarray, *, floor: float, depth: int, window: int
) -> np.ndarray:
    """The scores ``search_kinds`` gives for ``vector_near`` (memories and episodes, the newest ``window`` rows of
    each, at or above ``floor``, the best ``depth``), best first, as float64, without its hits: the same values in
    the same order, since equal scores are equal numbers."""
    parts = [np.zeros(0, dtype=np.float32)]
    for kind, kind_scope in _kind_scopes(scope, (MEMORY, EPISODE)):
        parts.append(indexes[kind].window_scores(kind_scope, query, (0, window)))
    scores = np.concatenate(parts)
    scores = scores[scores >= floor]
    return np.sort(scores)[::-1][: max(depth, 0)].astype(np.float64)


def _kind_scopes(scope: Scope, kinds: tuple[str, ...]) -> list[tuple[str, Scope]]:
    """Each kind a vector arm reads with the scope it reads it in: episodes only while the scope shows them, and
    without the source filter (source_id filters memories only: a visible episode carries no source to match)."""
    episodes = Scope(scope.agent_id, scope.project_id, scope.channel)
    return [
        (kind, scope if kind == MEMORY else episodes) for kind in kinds if kind != EPISODE or scope.episodes_visible
    ]


def _merge_key(item: tuple[float, int, int, str, float]) -> tuple[float, int, int]:
    return item[0], item[1], item[2]


def coarse_hits(index: VectorIndex, scope: Scope, query: np.ndarray, *, start: int, count: int) -> list[CoarseHit]:
    """The far seats' candidates from a memory index (``VectorIndex.coarse``) as hits."""
    return [
        CoarseHit(make_ref(MEMORY, row_id), position, distance, cosine)
        for row_id, position, distance, cosine in index.coarse(scope, query, start=start, count=count)
    ]
