"""The block arm and its held seats: records reached by one of their blocks, admitted only by reservation.

A long record has one vector for its whole text; its blocks reach what that
vector cannot. The arm is never fused: up to ``BLOCK_SEATS`` records it found that
the answer lacks are appended after the count cut, best block first. Like
CPersona's block reservation it does not ask the gate (a block can be close where
the whole record is not), but it never seats a row whose text the caller holds
(``exclude_contents``), and isolation is applied inside the store's arm.
"""

from __future__ import annotations

from cuedrecall.recall.arm_registry import BLOCK
from cuedrecall.recall.arms import held_by_caller
from cuedrecall.recall.candidates import Candidate
from cuedrecall.recall.context import RecallContext
from cuedrecall.store.base import BlockHit, Hit

BLOCK_SEATS = 2  # CPersona 2.6's BLOCK_RESERVATION
HYDRATED = 200  # hits kept at most: the seats come from the head of the list
SEAT_BATCH = 8  # hits read back at a time while seats are open (a traced recall reads back all it records)


def block_hits(ctx: RecallContext) -> list[BlockHit]:
    """The arm's records, best first; recorded as ``arms.block`` (then read back, every one)."""
    found = ctx.blocks()
    if found is None:
        return []
    hits, order = found[0][:HYDRATED], found[1]
    if ctx.recorder.enabled:
        ctx.facts.load(hit.ref for hit in hits)
        ctx.recorder.arms({BLOCK.name: [Hit(hit.ref, rank, hit.distance) for rank, hit in enumerate(hits)]})
        ctx.recorder.block(order)
    return hits


def block_seats(ctx: RecallContext, answer: list[Candidate]) -> list[Candidate]:
    """Up to BLOCK_SEATS block-arm records the answer does not hold and the caller does not hold either, in the
    arm's order; the hits are read back SEAT_BATCH at a time, only as far as the seats need."""
    present = {row.ref for row in answer}
    seated: list[Candidate] = []
    hits = block_hits(ctx)
    for start in range(0, len(hits), SEAT_BATCH):
        batch = [hit for hit in hits[start : start + SEAT_BATCH] if hit.ref not in present]
        ctx.facts.load(hit.ref for hit in batch)
        for hit in batch:
            if ctx.facts.get(hit.ref) is None or held_by_caller(ctx, hit.ref):
                continue
            seated.append(Candidate(hit.ref, seat="block", block=hit))
            ctx.recorder.reservation(hit.ref, "block")
            if len(seated) == BLOCK_SEATS:
                return seated
    return seated
