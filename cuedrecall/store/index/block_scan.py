"""The block arm's exact scan: each distinct int8 code scored once, a bounded int8 pass, exact cosines at the cut.

A block row's score is the cosine between its int8 code and the query. Many rows
share a code (a sentence repeated across records, a greeting, quoted text), so
the codes live in a table of distinct codes (``DistinctCodes``) and each row
points at its slot: a search scores the table, not every row.

The pass over the table is numkong's int8 dot product (SIMD, a quarter of
float32's bytes read) with the query rounded to int8: q8 = round(u / s) for the
unit query u. For a code c, |c.u - s(c.q8)| <= ||c|| ||u - s q8|| (Cauchy-Schwarz),
so every slot's cosine lies within ``band`` = ||u - s q8|| of its approximation.
The caller (``block_index``) takes slots in the order of the approximation and
scores them exactly (float64) until the depth-th best exact score among the rows it
admits is above every untaken slot's upper bound: the rows, scores and order are
those of the exact scan over every row, which never runs.

Rows get a fresh slot as they arrive (no lookup per row); ``dedup`` folds slots of
equal codes into one (a 64-bit hash of each code, sorted, then the bytes compared),
after a load and whenever the table has doubled since the last fold.
"""

from __future__ import annotations

import numpy as np

from cuedrecall.store.index.mapped import copy_rows, mapped_zeros, release
from cuedrecall.store.index.vector_codes import int8_dots, round_query

FOLD_CHUNK = 4096  # codes a fold hashes or compares at once: its copies stay near 1.5 MiB each
_PRIME = np.uint64(0x100000001B3)
_SEED = np.uint64(0xCBF29CE484222325)
_SHIFT = np.uint64(29)


def query_codes(query: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float]:
    """(unit query float64, its int8 rounding q8, the scale s with u ~ s q8, the band ||u - s q8|| with slack)."""
    unit = np.asarray(query, dtype=np.float64)
    unit = unit / (float(np.linalg.norm(unit)) or 1.0)
    rounded = round_query(unit)
    # the slack covers float32 rounding of s*(c.q8)/||c||
    return unit, rounded.codes, rounded.scale, rounded.residual + 1e-6


def hash_rows(codes: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row's bytes, FNV-style with a shift after each product (equal rows, equal hashes; a
    collision is caught by the caller: ``fold`` compares the bytes)."""
    rows = np.ascontiguousarray(codes)
    width = rows.shape[1]
    if width % 8:
        padded = np.zeros((rows.shape[0], width + 8 - width % 8), dtype=np.int8)
        padded[:, :width] = rows
        rows = padded
    words = rows.view(np.uint64)
    out = np.full(words.shape[0], _SEED, dtype=np.uint64)
    for column in range(words.shape[1]):
        out ^= words[:, column]
        out *= _PRIME
        out ^= out >> _SHIFT  # the high bits back into the low: a product alone never carries them down
    return out


class DistinctCodes:
    """The table of codes one model's block rows point into: codes (mapped), each code's length and live rows."""

    def __init__(self, dim: int, spill: str | None, capacity: int = 64) -> None:
        self.dim = dim
        self.spill = spill
        self.n = 0  # slots in use
        self.folded = 0  # slots at the last fold
        self.codes = mapped_zeros((capacity, dim), np.int8, spill)
        self.norms = np.zeros(capacity, dtype=np.float64)
        self.refs = np.zeros(capacity, dtype=np.int32)  # live rows pointing here; 0: a dead slot, never scored

    def append(self, codes: np.ndarray) -> np.ndarray:
        """A fresh slot for each code (rows, dim int8); their slot numbers."""
        count = codes.shape[0]
        if self.n + count > self.norms.shape[0]:
            capacity = self.norms.shape[0]
            while capacity < self.n + count:
                capacity *= 2
            codes_new = mapped_zeros((capacity, self.dim), np.int8, self.spill)
            copy_rows(codes_new, self.codes, self.n)
            self.codes = codes_new
            for name in ("norms", "refs"):
                old = getattr(self, name)
                new = np.zeros(capacity, dtype=old.dtype)
                new[: self.n] = old[: self.n]
                setattr(self, name, new)
        start, stop = self.n, self.n + count
        self.codes[start:stop] = codes
        wide = codes.astype(np.float64)
        self.norms[start:stop] = np.sqrt(np.einsum("ij,ij->i", wide, wide))
        self.refs[start:stop] = 1
        self.n = stop
        return np.arange(start, stop, dtype=np.int32)

    def drop(self, slots: np.ndarray) -> None:
        """One live row fewer for each slot listed (a slot may repeat)."""
        np.subtract.at(self.refs, slots, 1)

    @property
    def live(self) -> int:
        return int(np.count_nonzero(self.refs[: self.n]))

    def wants_fold(self) -> bool:
        """Whether the table has doubled since the last fold (folds stay amortised over the appends)."""
        return self.n - self.folded > max(4096, self.folded)

    def fold(self) -> np.ndarray:
        """Fold slots of equal codes into one and drop dead slots; the map old slot -> new slot (-1: dropped).

        Hashes sorted, each hash group's codes compared with its first (a collision keeps its own slot), FOLD_CHUNK
        codes read at a time; the table rewritten in slot order of the survivors."""
        n = self.n
        remap = np.full(n + 1, -1, dtype=np.int64)  # index n: the rows without a slot (-1) stay -1
        alive = np.flatnonzero(self.refs[:n] > 0)
        hashes = np.empty(alive.shape[0], dtype=np.uint64)
        for start in range(0, alive.shape[0], FOLD_CHUNK):
            hashes[start : start + FOLD_CHUNK] = hash_rows(self.codes[alive[start : start + FOLD_CHUNK]])
        order = np.argsort(hashes, kind="stable")
        slots, sorted_hashes = alive[order], hashes[order]
        starts = np.ones(slots.shape[0], dtype=bool)
        starts[1:] = sorted_hashes[1:] != sorted_hashes[:-1]
        leader = slots[np.maximum.accumulate(np.where(starts, np.arange(slots.shape[0]), 0))]
        same = np.zeros(slots.shape[0], dtype=bool)
        for start in range(0, slots.shape[0], FOLD_CHUNK):
            part = slice(start, start + FOLD_CHUNK)
            same[part] = np.all(self.codes[slots[part]] == self.codes[leader[part]], axis=1)
        representative = np.where(same, leader, slots)
        kept = np.unique(representative)  # ascending: the survivors keep their relative order
        remap[kept] = np.arange(kept.shape[0])
        remap[slots] = remap[representative]
        refs = np.bincount(remap[slots], weights=self.refs[slots], minlength=kept.shape[0]).astype(np.int32)
        capacity = max(64, 2 * kept.shape[0])
        codes = mapped_zeros((capacity, self.dim), np.int8, self.spill)
        for start in range(0, kept.shape[0], FOLD_CHUNK):
            moved = kept[start : start + FOLD_CHUNK]
            codes[start : start + moved.shape[0]] = self.codes[moved]
            release(codes)
        norms = np.zeros(capacity, dtype=np.float64)
        norms[: kept.shape[0]] = self.norms[kept]
        self.refs = np.zeros(capacity, dtype=np.int32)
        self.refs[: kept.shape[0]] = refs
        self.codes, self.norms = codes, norms
        self.n = self.folded = int(kept.shape[0])
        return remap

    def approximate(self, q8: np.ndarray, scale: float) -> np.ndarray:
        """Each slot's approximate cosine s(c.q8)/||c|| (float32); a dead slot -inf."""
        n = self.n
        approx = int8_dots(self.codes[:n], q8)
        approx *= np.float32(scale) / np.maximum(self.norms[:n], 1e-300).astype(np.float32)
        approx[self.refs[:n] <= 0] = -np.inf
        return approx

    def exact(self, slots: np.ndarray, unit: np.ndarray) -> np.ndarray:
        """The exact cosine (float64) of these slots' codes with the unit query."""
        return (self.codes[slots].astype(np.float64) @ unit) / self.norms[slots]
