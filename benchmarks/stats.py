"""The statistics the benchmarks share, written once: the mean, a percentile, the Jaccard agreement of two answers,
and the paired comparisons the studies judge by (per question, did x rise over y or fall below it, the exact
sign tests on those counts, and how a comparison is printed).

Used by the time-cue study (benchmarks/time_cue.py), gate relief (relief.py), cue propagation
(cue_propagation.py) and the seats comparison (seats.py); tests/benchmarks/test_bench_stats.py holds the known cases.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

ALPHA = 0.05  # a claim needs a one-sided sign test under this


def mean(values: Iterable[float]) -> float:
    """The plain mean; NaN for no values."""
    items = list(values)
    return sum(items) / len(items) if items else float("nan")


def percentile(values: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) by linear interpolation between order statistics (numpy's default); NaN for none."""
    if not values:
        return math.nan
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def jaccard(a: set[str] | Sequence[str], b: set[str] | Sequence[str]) -> float:
    """|a & b| / |a | b|; two empty answers agree completely."""
    a, b = set(a), set(b)
    return 1.0 if not a and not b else len(a & b) / len(a | b)


def sign_test(rose: int, fell: int) -> float:
    """One-sided exact sign test: P(X >= rose) for X ~ Binomial(rose + fell, 1/2); 1.0 when n = 0."""
    if rose < 0 or fell < 0:
        raise ValueError("counts must not be negative")
    n = rose + fell
    if n == 0:
        return 1.0
    return sum(math.comb(n, k) for k in range(rose, n + 1)) / 2**n


def two_sided_sign_test(rose: int, fell: int) -> float:
    """Two-sided exact binomial p for rose vs fell (ties left out)."""
    n = rose + fell
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(0, min(rose, fell) + 1)) / 2**n
    return min(1.0, 2 * tail)


def rose_fell(after: Sequence[float], before: Sequence[float], eps: float = 1e-12) -> tuple[int, int, int]:
    """(rose, fell, tied): per pair, whether ``after`` is above, below or equal to ``before``."""
    rose = sum(1 for a, b in zip(after, before) if a > b + eps)
    fell = sum(1 for a, b in zip(after, before) if a < b - eps)
    return rose, fell, len(after) - rose - fell


def compare(xs: Sequence[float], ys: Sequence[float]) -> dict[str, Any]:
    """Paired scores x and y: how often x rose over y and fell below it, the one-sided sign tests both ways
    (``p``: x above y, ``p_fell``: x below y) and the means ``mx`` and ``my``."""
    rose, fell, tied = rose_fell(xs, ys)
    return {
        "rose": rose,
        "fell": fell,
        "tied": tied,
        "p": sign_test(rose, fell),
        "p_fell": sign_test(fell, rose),
        "mx": mean(xs),
        "my": mean(ys),
    }


def compare_rows(
    rows: Sequence[Mapping[str, Any]], x: str, y: str, key: Callable[[str], str], score: Callable[[Any], float] = float
) -> dict[str, Any]:
    """``compare`` of two variants' scores over ``rows``: variant v's score of a row is ``score(row[key(v)])``."""
    return compare([score(r[key(x)]) for r in rows], [score(r[key(y)]) for r in rows])


def compare_on(rows: Sequence[Mapping[str, Any]], x: str, y: str, metric: str) -> dict[str, Any]:
    """``compare`` of variants x and y on ``metric``, each row holding its scores under ``metric:variant``."""
    return compare_rows(rows, x, y, lambda variant: f"{metric}:{variant}")


def beats(t: Mapping[str, Any]) -> bool:
    """x above y: one-sided sign test p < ALPHA and the higher mean."""
    return t["p"] < ALPHA and t["mx"] > t["my"]


def beaten(t: Mapping[str, Any]) -> bool:
    """y above x, by the same test the other way."""
    return t["p_fell"] < ALPHA and t["mx"] < t["my"]


def p_text(p: float) -> str:
    """A p value as the reports print it: 2 significant digits under 0.001, else 3 decimals."""
    return f"{p:.2g}" if p < 0.001 else f"{p:.3f}"


def rose_fell_text(t: Mapping[str, Any], fell_p: bool = False) -> str:
    """``rose / fell (p P)``, and ``; p fell P`` inside the brackets when ``fell_p``."""
    tail = f"; p fell {p_text(t['p_fell'])}" if fell_p else ""
    return f"{t['rose']} / {t['fell']} (p {p_text(t['p'])}{tail})"
