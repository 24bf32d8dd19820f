"""Cue propagation (propagated-v0, off by default): a strong hit's day becomes a vague cue for one more stage.

With no time cue from the caller, when the answer's best row is a strong hit (first
on a vector arm and among the first three of a lexical arm: both kinds of evidence
agree), the day around that row's time is searched by the cue arm, and the rows it
finds among the answer may rise at most BOUND places, the bounded move of a vague
cue. No seat is held and nothing is removed: the answer keeps its rows and its
length, only their order may change, within the bound.
"""

from __future__ import annotations

from datetime import datetime, timezone

from cuedrecall.recall.candidates import LEXICAL_ARMS, VECTOR_ARMS, Candidate
from cuedrecall.recall.context import RecallContext

POLICY = "propagated-v0"
BOUND = 1  # places a row of the hit's day may rise: a vague cue's L
HALF_WINDOW_S = 12 * 3600  # the day around the hit: 12 hours each side
LEXICAL_TOP = 3  # a lexical arm's first places that count as agreement


def strong_hit(answer: list[Candidate]) -> Candidate | None:
    """The answer's best row when the vector and lexical arms agree on it, else None."""
    if not answer:
        return None
    best = answer[0]
    vector_first = any(best.ranks.get(arm) == 0 for arm in VECTOR_ARMS)
    lexical_top = any(best.ranks.get(arm, LEXICAL_TOP) < LEXICAL_TOP for arm in LEXICAL_ARMS)
    return best if vector_first and lexical_top else None


def hit_day(ctx: RecallContext, row: Candidate) -> tuple[datetime, datetime] | None:
    """The period the hit propagates: its time, 12 hours either side (None for an undated row)."""
    moment = ctx.facts.time(row.ref)
    if moment is None:
        return None
    return (datetime.fromtimestamp(moment - HALF_WINDOW_S, timezone.utc),
            datetime.fromtimestamp(moment + HALF_WINDOW_S, timezone.utc))
