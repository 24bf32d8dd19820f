"""Far seats: up to two held places for memories beyond the scan window, found by sign bits (off by default).

The rule (CPersona 2.6's far seats, docs/recall-process.md#far-seats): for a non-blank
query with a query vector, the 256 memories of the scope at scan positions from
max(window, reach) on whose sign bits are nearest the query's (Hamming distance,
ties by position) are re-read as float vectors; those whose cosine reaches the
vector floor, ordered by (-cosine, position), are the ``far`` arm. Up to
``FAR_SEATS`` of them that the answer does not hold, and that no ordinary arm
reached unless the gate and autocut admitted them, take a seat after the count.
Each says ``signal: far``, ``admission: reservation`` and its cosine. Episodes are
never searched; rows whose text the caller holds are never seated.
"""

from __future__ import annotations

from cuedrecall.recall.arm_registry import FAR
from cuedrecall.recall.arms import held_by_caller
from cuedrecall.recall.candidates import Candidate
from cuedrecall.recall.context import RecallContext
from cuedrecall.store.base import Hit

FAR_SEATS = 2  # CPersona 2.6's SEATS
CANDIDATES = 256  # rows the sign bits choose before their float vectors are read


def far_hits(ctx: RecallContext) -> list[Hit]:
    """The far arm, best first (raw = cosine), rows the caller holds left out; recorded as ``arms.far``."""
    p = ctx.params
    if not p.far_seats or ctx.blank or ctx.query_vector is None:
        return []
    found = ctx.store.far_candidates(ctx.scope, ctx.query_vector, start=max(p.window, p.reach), count=CANDIDATES)
    kept = sorted((c for c in found if c.cosine >= p.vector_floor), key=lambda c: (-c.cosine, c.position))
    hits = [Hit(c.ref, rank, c.cosine) for rank, c in enumerate(kept)]
    ctx.facts.load(hit.ref for hit in hits)
    ctx.recorder.arms({FAR.name: hits})
    return [hit for hit in hits if not held_by_caller(ctx, hit.ref)]


def far_seats(
    ctx: RecallContext, present: list[Candidate], reached: frozenset[str], admitted: frozenset[str]
) -> list[Candidate]:
    """Up to FAR_SEATS far-arm memories the answer lacks that the gate did not refuse; kind ``far``."""
    held = {row.ref for row in present}
    seated: list[Candidate] = []
    for hit in far_hits(ctx):
        if len(seated) == FAR_SEATS:
            break
        if hit.ref in held or (hit.ref in reached and hit.ref not in admitted) or ctx.facts.get(hit.ref) is None:
            continue
        seated.append(Candidate(hit.ref, cosine=hit.raw, seat="far", seat_detail={"cosine": hit.raw}))
        ctx.recorder.reservation(hit.ref, "far")
    return seated
