"""Cue propagation (policy propagated-v1, off by default): a strong hit's period proposed as a cue of its own.

The rule (docs/recall-process.md, "Cue propagation"): with no time cue from the
caller, when the answer's best row is a strong hit (first on a vector arm and among
the first three of a lexical arm: both kinds of evidence agree), the hit's period is
searched by the cue arm: its day (12 hours either side of its time), widened to an
episode's own span when the hit is an episode. What the arm finds there, the hit
itself left out (it proposed the cue; its neighbours in time and the period's
episodes, ranked again from 0), is a vague cue: the rows it found
among the answer below the hit (which keeps first place) rise at most BOUND places, and SEATS held place takes its best
row the answer lacks that the gate and autocut did not refuse. One stage, never
revised; it does not run once the cue time limit has passed. So the count's rows
are always returned, none rises more than BOUND places, and at most SEATS row is added.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

from cuedrecall.clock import to_epoch
from cuedrecall.recall.arm_registry import ARMS, PROPAGATED_CUE
from cuedrecall.recall.candidates import Candidate
from cuedrecall.recall.context import RecallContext
from cuedrecall.store.base import EPISODE, Hit

POLICY: Final = "propagated-v1"
SEAT: Final = PROPAGATED_CUE.name  # the arm's name, the seat's signal in match_reason and its reservation kind
BOUND: Final = 1  # places a row of the hit's period may rise: a vague cue's L
SEATS: Final = 1  # held places for the period's rows the answer lacks: a vague cue's seats
HALF_WINDOW_S: Final = 12 * 3600  # the hit's day: 12 hours either side of its time
LEXICAL_TOP: Final = 3  # a lexical arm's first places that count as agreement


def strong_hit(answer: list[Candidate]) -> Candidate | None:
    """The answer's best row when the vector and lexical arms agree on it, else None."""
    if not answer:
        return None
    best = answer[0]
    vector_first = any(best.ranks.get(arm) == 0 for arm in ARMS.vector_names)
    lexical_top = any(best.ranks.get(arm, LEXICAL_TOP) < LEXICAL_TOP for arm in ARMS.lexical_names)
    return best if vector_first and lexical_top else None


def hit_period(ctx: RecallContext, row: Candidate) -> tuple[datetime, datetime] | None:
    """The period the hit proposes: its day, widened to its own span when it is an episode (None if undated)."""
    moment = ctx.facts.time(row.ref)
    if moment is None:
        return None
    start, end = moment - HALF_WINDOW_S, moment + HALF_WINDOW_S
    record = ctx.facts.get(row.ref)
    if record is not None and record.kind == EPISODE:
        first, last = to_epoch(record.start_time), to_epoch(record.end_time)
        start = min(start, first) if first is not None else start
        end = max(end, last + 1) if last is not None else end
    return datetime.fromtimestamp(start, UTC), datetime.fromtimestamp(end, UTC)


def neighbours(found: list[Hit], source: str) -> list[Hit]:
    """The cue arm's rows without the hit that proposed the period, ranked again from 0."""
    return [Hit(hit.ref, rank, hit.raw) for rank, hit in enumerate(h for h in found if h.ref != source)]
