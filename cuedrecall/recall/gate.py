"""Stage 4, the quality gate, judged per signal: each row on its own score, against that signal's threshold.

A row a vector arm reached is judged on its cosine; a lexical-only row on its fused
score; the profile row on the pool size. The threshold is the calibrated one for
that signal where one exists, else the heuristic minimum on that signal's scale.
"""

from __future__ import annotations

import math
import re

from cuedrecall.recall.candidates import Candidate
from cuedrecall.recall.context import RecallContext
from cuedrecall.recall.verdicts import Decision, GateResult
from cuedrecall.text import identifier_like_parts, normalize

PROFILE_MIN_POOL = 50
UNSCORED_MIN_POOL = 100


def heuristic_minimum(pool: int) -> float:
    """0.5 for a tiny pool, falling to 0.2 from about 500 rows: bigger pools hold more near-misses."""
    if pool <= 0:
        return 0.5
    return round(0.5 - 0.3 * min(1.0, math.log(pool + 1) / math.log(500)), 4)


def minimum(ctx: RecallContext) -> float:
    """The heuristic minimum of this recall's pool, ``deep`` halving it."""
    return heuristic_minimum(ctx.pool()) * (0.5 if ctx.params.deep else 1.0)


def threshold_for(ctx: RecallContext, signal: str, heuristic: float) -> tuple[float, str]:
    """(threshold, origin) for a scored signal; ``deep`` halves either."""
    p = ctx.params
    if signal in p.thresholds:
        return p.thresholds[signal] * (0.5 if p.deep else 1.0), "calibrated"
    return heuristic * best_possible(ctx, signal), "heuristic"


def best_possible(ctx: RecallContext, signal: str) -> float:
    """The scale of the heuristic for a signal: the score a row judged on it can reach.

    A row judged on rrf is lexical-only, and a memory or an episode sits on one lexical
    arm at most: first place there, 1/(k+1), is its ceiling. Measured against three
    first places, an exact keyword match could never pass in a small store. rsf keeps
    the whole 0..1 scale: per arm it already normalises, and on LoCoMo with the local
    embedder its 1/active-arms ceiling admitted weak rows that pushed evidence out
    (recall_any@10 0.593 -> 0.580).
    """
    return 1 / (ctx.params.rrf_k + 1) if signal == "rrf" else 1.0


def decide(ctx: RecallContext, row: Candidate, heuristic: float) -> Decision:
    signal = row.signal(ctx.params.mode)
    if signal == "profile":
        passed = ctx.pool() >= PROFILE_MIN_POOL
        return Decision(row.ref, signal, None, PROFILE_MIN_POOL, None, passed, None if passed else "profile_small_pool")
    if signal is None:
        passed = ctx.blank or ctx.pool() >= UNSCORED_MIN_POOL
        return Decision(row.ref, None, None, None, None, passed, None if passed else "unscored_volume")
    score = row.score(ctx.params.mode)
    threshold, origin = threshold_for(ctx, signal, heuristic)
    passed = score is not None and score >= threshold
    return Decision(row.ref, signal, score, threshold, origin, passed, None if passed else "below_gate")


def gate(ctx: RecallContext, rows: list[Candidate]) -> GateResult:
    """Admit the rows that clear their own threshold; order is kept."""
    heuristic = minimum(ctx)
    decisions = [decide(ctx, row, heuristic) for row in rows]
    admitted = [row for row, d in zip(rows, decisions) if d.passed]
    fallback = False
    if not any(not row.is_profile for row in admitted):
        rescued = _identifier_matches(ctx, rows)
        if rescued:  # a profile row that passed stays: the rescue adds rows, it never removes one
            admitted = rescued + [row for row in admitted if row.is_profile]
            fallback = True
    rescued = [row.ref for row in admitted] if fallback else []
    result = GateResult(admitted, decisions, fallback, rescued, ctx.params.thresholds, heuristic, ctx.pool())
    ctx.recorder.gate(result)
    return result


def _identifier_matches(ctx: RecallContext, rows: list[Candidate]) -> list[Candidate]:
    """When nothing passed: the lexical rows whose text holds an identifier of the query (bug-218, 2.5.5a1)."""
    parts = identifier_like_parts(ctx.query)
    lexical = [row for row in rows if not row.is_profile and ("memory_keyword" in row.ranks or "episode_fts" in row.ranks)]
    if not parts or not lexical:
        return []
    exact = [_whole(part) for part in parts]
    return [row for row in lexical if any(p.search(_text(ctx, row.ref)) for p in exact)]


def _text(ctx: RecallContext, ref: str) -> str:
    record = ctx.facts.get(ref)
    return "" if record is None else normalize(record.text + " " + record.keywords)


def _whole(part: str) -> re.Pattern[str]:
    """The part as a whole identifier: bug-21 is not in bug-218, nor v2.4 in v2.4.1; a path may sit under another
    path (src/app.py in /work/src/app.py) and a sentence may end right after it."""
    return re.compile(rf"(?<![0-9a-z._#-]){re.escape(part)}(?![0-9a-z_#-]|\.[0-9a-z])")
