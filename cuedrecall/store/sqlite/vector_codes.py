"""vector-codes-v1: the index holds each vector as int8 codes, and every arm stays exact.

A row v is held as codes c = round(v / s), s = max|v| / 127 (int8, a quarter of
float32's memory: 37 MiB instead of 147 MiB for 100,000 vectors of 384), with
its band b = ||v - s*c|| + EPS * ||v||, rounded up. For any query q,
|v.q - s*(c.q)| <= b * ||q||: Cauchy-Schwarz on the rounding residual, EPS
covering float32 arithmetic in both products.

An arm ranks its rows by the approximation, keeps every row whose upper bound
reaches both the floor and the depth-th best lower bound of the rows sure to
pass the floor, and scores those from the stored float32 vectors
(``select``). A row the exact scan would return has a true score at or above
both, so its upper bound does too: the rows, scores and order are the exact
scan's, and the stored vectors read are the few near the cut.
"""

from __future__ import annotations

from typing import Final

import numpy as np

VERSION: Final = "vector-codes-v1"
EPS: Final = 1e-4  # in units of ||v|| * ||q||; float32 rounding of a 384-wide product is under 3e-5 of that
CHUNK: Final = 1024  # rows converted to float32 at once: a 1.5 MiB passing copy (faster than larger ones here)
LEVELS: Final = 127


def quantize(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(codes int8, scale float32, band float32) of each row. A row with a non-finite value gets codes 0 and an
    infinite band: it is always scored exactly (and its NaN score then passes no floor, as before).

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
    np.subtract(v, work, out=work)  # the residual v - s*c
    band = np.linalg.norm(work, axis=1) + np.float32(EPS) * np.linalg.norm(v, axis=1)
    band = np.nextafter(band.astype(np.float32), np.float32(np.inf))
    band[~finite] = np.inf
    return codes, scale, band


def approximate(codes: np.ndarray, scale: np.ndarray, query: np.ndarray) -> np.ndarray:
    """s*(c.q) for each row, CHUNK rows converted to float32 at a time."""
    out = np.empty(codes.shape[0], dtype=np.float32)
    for start in range(0, codes.shape[0], CHUNK):
        block = codes[start : start + CHUNK]
        np.matmul(block.astype(np.float32), query, out=out[start : start + block.shape[0]])
    out *= scale
    return out


def candidates(approx: np.ndarray, band: np.ndarray, query_norm: float, floor: float, depth: int) -> np.ndarray:
    """Indexes of the rows whose exact score may reach the floor and the depth best: every row the exact scan
    keeps is among them."""
    slack = band * np.float32(query_norm * (1 + 1e-6))
    upper = approx + slack
    eligible = np.flatnonzero(upper >= floor)
    if eligible.size <= depth:
        return eligible
    lower = approx[eligible] - slack[eligible]
    sure = lower[lower >= floor]
    if sure.size < depth:
        return eligible
    bar = -np.partition(-sure, depth - 1)[depth - 1]  # the depth-th exact score is at least this
    return eligible[upper[eligible] >= bar]


def exact_scores(vectors: list[np.ndarray | None], query: np.ndarray) -> np.ndarray:
    """Dot products of stored vectors with the query; NaN where a vector is missing (deleted meanwhile)."""
    out = np.full(len(vectors), np.nan, dtype=np.float32)
    present = [(i, vector) for i, vector in enumerate(vectors) if vector is not None and vector.shape == query.shape]
    if present:
        out[[i for i, _ in present]] = np.stack([vector for _, vector in present]) @ query
    return out
