"""vector-codes-v2: the index holds each vector as int8 codes, and every arm stays exact.

A row v is held as codes c = round(v / s), s = max|v| / 127 (int8, a quarter of
float32's memory: 37 MiB instead of 147 MiB for 100,000 vectors of 384), with
its band b = ||v - s*c|| + EPS * ||v|| and its reach r = ||s*c||, both rounded
up. The query is rounded the same way, q ~ t*q8 with residual e = q - t*q8, so a
row's approximation s*t*(c.q8) is one int8 dot product (numkong's SIMD pass, a
quarter of float32's bytes read, no conversion). Cauchy-Schwarz on both
residuals: |v.q - s*t*(c.q8)| <= b*||q|| + r*||e||, EPS covering float32
arithmetic.

An arm ranks its rows by the approximation, keeps every row whose upper bound
reaches both the floor and the depth-th best lower bound of the rows sure to
pass the floor, and scores those from the stored float32 vectors
(``select``). A row the exact scan would return has a true score at or above
both, so its upper bound does too: the rows, scores and order are the exact
scan's, and the stored vectors read are the few near the cut.
docs/storage.md#sqlite-the-default says the same in prose.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Final

import numpy as np

from cuedrecall.pools import SharedPool

_nk: ModuleType | None
try:  # numkong: int8 dot products in SIMD (a wheel on Linux, macOS and Windows); numpy computes the same values
    import numkong as _nk
except ImportError:  # pragma: no cover - the dependency is declared; this keeps a broken install answering
    _nk = None

VERSION: Final = "vector-codes-v2"
EPS: Final = 1e-4  # in units of ||v|| * ||q||; float32 rounding of a 384-wide product is under 3e-5 of that
CHUNK: Final = 1024  # rows the numpy fallback converts to float32 at once: a 1.5 MiB passing copy
LEVELS: Final = 127
SPLIT_ROWS: Final = 1 << 17  # from this many rows the int8 pass runs in two halves at once (numkong frees the GIL)
SHORTLIST_ROWS: Final = 1 << 16  # from this many rows ``pick`` first keeps the rows whose approximation is near the top
_SAMPLE: Final = 8192  # rows of a slice the shortlist's threshold is estimated from


def quantize(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(codes int8, scale float32, band float32, reach float32) of each row. A row with a non-finite value gets
    codes 0, reach 0 and an infinite band: it is always scored exactly (and its NaN score then passes no floor).

    In float32, in place, for a load's batches to stay small: the float32 error of the residual's norm is under
    1e-6 of ||v||, well inside EPS * ||v||."""
    v = np.array(np.atleast_2d(vectors), dtype=np.float32)
    finite = np.isfinite(v).all(axis=1)
    v[~finite] = 0.0
    peak = np.abs(v).max(axis=1)
    scale = np.where(peak > 0, peak / LEVELS, 1.0).astype(np.float32)
    work = v / scale[:, None]
    np.clip(np.rint(work, out=work), -LEVELS, LEVELS, out=work)
    codes = work.astype(np.int8)
    work *= scale[:, None]
    reach = _up(np.linalg.norm(work, axis=1) * np.float32(1 + EPS))  # ||s*c||
    np.subtract(v, work, out=work)  # the residual v - s*c
    band = _up(np.linalg.norm(work, axis=1) + np.float32(EPS) * np.linalg.norm(v, axis=1))
    band[~finite] = np.inf
    return codes, scale, band, reach


def _up(values: np.ndarray) -> np.ndarray:
    """float32, each rounded up one step: a bound stays a bound after its own rounding."""
    return np.nextafter(values.astype(np.float32), np.float32(np.inf))


@dataclass(frozen=True)
class QueryCodes:
    """A query rounded to int8: q ~ scale * codes, ``residual`` >= ||q - scale * codes||, ``norm`` = ||q||."""

    codes: np.ndarray
    scale: float
    residual: float
    norm: float


def round_query(query: np.ndarray) -> QueryCodes:
    """The query's int8 codes, scale and residual bound (computed in float64, with slack for float32 products)."""
    wide = np.asarray(query, dtype=np.float64)
    peak = float(np.abs(wide).max()) if wide.size else 0.0
    scale = peak / LEVELS if np.isfinite(peak) and peak > 0 else 1.0
    codes = np.clip(np.rint(wide / scale), -LEVELS, LEVELS).astype(np.int8)
    residual = float(np.linalg.norm(wide - scale * codes.astype(np.float64)))
    return QueryCodes(codes, scale, residual * (1 + 1e-6) + 1e-12, float(np.linalg.norm(wide)))


def int8_dots(codes: np.ndarray, query: np.ndarray) -> np.ndarray:
    """codes (rows, dim int8) . query (dim int8), as float32: the int32 sums are exact (|sum| < 2**24 for 384 wide).

    From SPLIT_ROWS rows the pass runs in two halves at once, one on a helper thread: the values are the same,
    and a recall whose other lane is idle gets its second core."""
    if codes.shape[0] == 0:
        return np.zeros(0, dtype=np.float32)
    out = np.empty(codes.shape[0], dtype=np.float32)
    if _nk is None:
        q = query.astype(np.float32)
        for start in range(0, codes.shape[0], CHUNK):
            np.matmul(codes[start : start + CHUNK].astype(np.float32), q, out=out[start : start + CHUNK])
        return out
    if codes.shape[0] < SPLIT_ROWS:
        _nk_dots(codes, query, out)
        return out
    half = codes.shape[0] // 2
    other = _HELPER.get().submit(_nk_dots, codes[:half], query, out[:half])
    _nk_dots(codes[half:], query, out[half:])
    other.result()
    return out


def _nk_dots(codes: np.ndarray, query: np.ndarray, out: np.ndarray) -> None:
    """numkong's int8 dot products of the rows with the query, written into ``out`` (float32, one per row)."""
    assert _nk is not None
    _nk.cdist(query[None, :], codes, metric="dot", out_dtype="float32", out=out[None, :])


_HELPER = SharedPool(1, "cuedrecall-int8")  # the thread that takes the first half of a split int8 pass


def approximate(codes: np.ndarray, scale: np.ndarray, query: QueryCodes) -> np.ndarray:
    """s*t*(c.q8) for each row: one int8 pass."""
    out = int8_dots(codes, query.codes)
    out *= scale
    out *= np.float32(query.scale)
    return out


def error_bound(band: np.ndarray, reach: np.ndarray, query: QueryCodes) -> np.ndarray:
    """Each row's bound on |v.q - approximation|: b*||q|| + r*||e||."""
    return band * np.float32(query.norm * (1 + 1e-6)) + reach * np.float32(query.residual)


def candidates(approx: np.ndarray, slack: np.ndarray, floor: float, depth: int) -> np.ndarray:
    """Indexes of the rows whose exact score may reach the floor and the depth best: every row the exact scan
    keeps is among them."""
    return _candidates(approx, slack, floor, depth)[0]


def _candidates(approx: np.ndarray, slack: np.ndarray, floor: float, depth: int) -> tuple[np.ndarray, float | None]:
    """``candidates`` and its bar: the depth-th best lower bound of the rows sure to pass the floor (None when
    fewer than ``depth`` rows are sure to)."""
    if depth <= 0:
        return np.zeros(0, dtype=np.intp), None
    upper = approx + slack
    eligible = np.flatnonzero(upper >= floor)
    if eligible.size < depth:
        return eligible, None
    lower = approx[eligible] - slack[eligible]
    sure = lower[lower >= floor]
    if sure.size < depth:
        return eligible, None
    bar = float(-np.partition(-sure, depth - 1)[depth - 1])  # the depth-th exact score is at least this
    return eligible[upper[eligible] >= bar], bar


def pick(
    approx: np.ndarray, slack_of: Callable[[np.ndarray], np.ndarray], widest: float, floor: float, depth: int
) -> np.ndarray:
    """``candidates`` of a slice whose slacks are read only where needed: ``slack_of(indexes)`` gives those rows'
    slacks, ``widest`` bounds every row's.

    From SHORTLIST_ROWS rows it first keeps the shortlist of rows whose approximation reaches a threshold T
    estimated from a sample, and applies the rule there. A row left out has an upper bound under T + widest;
    when that is at or under the shortlist's bar (which is at most the whole slice's), no row left out could be a
    candidate, and the shortlist's candidates hold every one of the whole slice's. Otherwise (a threshold
    estimated too high, too few rows sure to pass) the rule runs over every row."""
    n = approx.shape[0]
    if n >= SHORTLIST_ROWS and depth > 0 and np.isfinite(widest):
        step = max(1, n // _SAMPLE)
        sample = approx[::step]
        rank = min(sample.shape[0], -(-depth // step))
        estimate = float(-np.partition(-sample, rank - 1)[rank - 1])
        threshold = estimate - 3 * widest
        shortlist = np.flatnonzero(approx >= threshold)
        found, bar = _candidates(approx[shortlist], slack_of(shortlist), floor, depth)
        if bar is not None and threshold + widest <= bar:
            return shortlist[found]
    every = np.arange(n)
    return _candidates(approx, slack_of(every), floor, depth)[0]


def exact_scores(vectors: list[np.ndarray | None], query: np.ndarray) -> np.ndarray:
    """Dot products of stored vectors with the query; NaN where a vector is missing (deleted meanwhile).

    Each row's product is summed in float64 by one fixed loop (einsum, no BLAS) and then rounded to float32: a
    BLAS product's last bit depends on how many rows it is given, so two rows of the same text could tie or not,
    and an answer change with the number of candidates near the cut. Here a row's score is the same whatever
    else is scored."""
    out = np.full(len(vectors), np.nan, dtype=np.float32)
    present = [(i, vector) for i, vector in enumerate(vectors) if vector is not None and vector.shape == query.shape]
    if present:
        out[[i for i, _ in present]] = exact_rows(np.stack([vector for _, vector in present]), query)
    return out


def exact_rows(vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``exact_scores`` of a (rows, dim) matrix with every row present: the same fixed float64 loop."""
    scores = np.einsum("ij,j->i", vectors.astype(np.float64), query.astype(np.float64), optimize=False)
    return scores.astype(np.float32)
