"""The single pass: arms -> fusion -> scoring -> gate -> autocut -> prior -> count cut -> block seats.

Each stage is a small function over the candidate list; this module only calls
them in order, the way one reads the recall out loud.
"""

from __future__ import annotations

from dataclasses import dataclass

from cuedrecall.recall import arms as arm_stage
from cuedrecall.recall.autocut import autocut
from cuedrecall.recall.block_arm import block_seats
from cuedrecall.recall.candidates import Candidate, PROFILE_REF
from cuedrecall.recall.context import RecallContext
from cuedrecall.recall.fusion import fuse
from cuedrecall.recall.gate import gate
from cuedrecall.recall.order import count_cut
from cuedrecall.recall.prior import apply_prior
from cuedrecall.recall.scoring import penalise


@dataclass(frozen=True)
class PassResult:
    """What the single pass decided, and what the recall process after it may read."""

    answer: list[Candidate]  # the rows the count returned, best first
    admitted: frozenset[str]  # refs that passed the gate and autocut (before the count)
    reached: frozenset[str]  # refs any ordinary arm produced
    gate_fallback: bool
    held: list[Candidate]  # block seats appended after the answer (never moved by a cue)


def single_pass(ctx: RecallContext) -> PassResult:
    if ctx.blank:
        arms = arm_stage.newest(ctx)
        rows = [Candidate(hit.ref) for hit in arms["newest"]]
    else:
        arms = arm_stage.retrieve(ctx)
        rows = fuse(ctx, arms)
    reached = frozenset(hit.ref for hits in arms.values() for hit in hits)
    rows = penalise(ctx, _with_profile(ctx, rows))
    ctx.recorder.mark("retrieve_and_score")
    gated = gate(ctx, rows)
    rows = gated.admitted if gated.fallback else autocut(ctx, gated.admitted)
    admitted = frozenset(row.ref for row in rows)
    rows = apply_prior(ctx, rows)
    ctx.recorder.mark("gate")
    answer = count_cut(ctx, rows)
    return PassResult(answer, admitted, reached, gated.fallback, block_seats(ctx, answer))


def _with_profile(ctx: RecallContext, rows: list[Candidate]) -> list[Candidate]:
    """The agent's profile rides along as the last row; the gate admits it only in a pool of 50 or more."""
    if ctx.profile() is None:
        return rows
    return [*rows, Candidate(PROFILE_REF)]
