"""The single pass: arms -> fusion -> scoring -> gate -> autocut -> prior -> count cut -> gate relief -> held seats.

Each stage is a small function over the candidate list; this module only calls
them in order, the way one reads the recall out loud. The held seats after the
count are appended in CPersona's order: block, keyword, far (the cue's seats and
the propagation seat follow in ``process``). Gate relief (``relief``) fills the
answer's empty places with rows just under the gate; it comes before the held
seats but is decided after them, so the seats are those a recall without it holds.
"""

from __future__ import annotations

from dataclasses import dataclass

from cuedrecall.recall import arms as arm_stage
from cuedrecall.recall.arm_registry import ARMS, NEWEST, Arms
from cuedrecall.recall.autocut import autocut
from cuedrecall.recall.block_arm import block_seats
from cuedrecall.recall.candidates import PROFILE_REF, Candidate
from cuedrecall.recall.context import RecallContext
from cuedrecall.recall.episode_context import lend_context
from cuedrecall.recall.far_seats import far_seats
from cuedrecall.recall.fusion import fuse
from cuedrecall.recall.gate import gate
from cuedrecall.recall.keyword_seats import keyword_seats
from cuedrecall.recall.order import count_cut
from cuedrecall.recall.prior import apply_prior
from cuedrecall.recall.relief import NONE as NO_RELIEF
from cuedrecall.recall.relief import Relief, just_under, relieve
from cuedrecall.recall.scoring import penalise
from cuedrecall.recall.time_context import lend_neighbours


@dataclass(frozen=True)
class PassResult:
    """What the single pass decided, and what the recall process after it may read."""

    answer: list[Candidate]  # the rows the count returned, best first
    admitted: frozenset[str]  # refs that passed the gate and autocut (before the count)
    reached: frozenset[str]  # refs any ordinary arm produced
    gate_fallback: bool
    held: list[Candidate]  # relieved rows, then block, keyword and far seats after the answer (never moved by a cue)
    relief: Relief = NO_RELIEF  # the rows one step under the gate (a cue seat may take them), those relief admitted


@dataclass(frozen=True)
class Ranking:
    """The single pass up to the count: what the seats after it read."""

    scored: list[Candidate]  # every candidate in fused order after scoring: the order before the gate
    admitted: list[Candidate]  # what the gate and autocut kept (the gate's fallback rows when it fired)
    ordered: list[Candidate]  # the admitted rows after the prior: the order the count cuts
    reached: frozenset[str]
    gate_fallback: bool
    under: Relief  # the rows refused by less than one step (gate relief on only), nothing admitted yet


def rank(ctx: RecallContext) -> Ranking:
    """Arms, fusion, scoring, gate, autocut and prior: the order before the count cut."""
    arms = arm_stage.newest(ctx) if ctx.blank else arm_stage.retrieve(ctx)
    ctx.recorder.mark("arms")
    rows = [Candidate(hit.ref) for hit in arms[NEWEST.name]] if ctx.blank else _fused(ctx, arms)
    reached = frozenset(hit.ref for hits in arms.values() for hit in hits)
    rows = penalise(ctx, _with_profile(ctx, rows))
    ctx.recorder.mark("fusion_and_scoring")
    gated = gate(ctx, rows)
    admitted = gated.admitted if gated.fallback else autocut(ctx, gated.admitted)
    ordered = apply_prior(ctx, admitted)
    ctx.recorder.mark("gate")
    under = NO_RELIEF if gated.fallback else just_under(ctx, rows, gated.decisions)
    return Ranking(rows, admitted, ordered, reached, gated.fallback, under)


def single_pass(ctx: RecallContext) -> PassResult:
    ranking = rank(ctx)
    admitted = frozenset(row.ref for row in ranking.admitted)
    answer = count_cut(ctx, ranking.ordered)
    ctx.recorder.mark("count")
    held = block_seats(ctx, answer)
    held += keyword_seats(ctx, ranking.scored, ranking.admitted, ranking.gate_fallback, answer + held)
    held += far_seats(ctx, answer + held, ranking.reached, admitted)
    ctx.recorder.mark("held_seats")
    relief = relieve(ctx, ranking.under, answer, held)
    if ctx.params.gate_relief:
        ctx.recorder.mark("relief")
    return PassResult(answer, admitted, ranking.reached, ranking.gate_fallback, relief.admitted + held, relief)


def _fused(ctx: RecallContext, arms: Arms) -> list[Candidate]:
    """Fusion, then the episodes' context votes (recall/episode_context.py), then the neighbours' (time_context.py)."""
    answered = sum(1 for name in ARMS.fused_names if arms.get(name))
    return lend_neighbours(ctx, lend_context(ctx, fuse(ctx, arms), answered), answered)


def _with_profile(ctx: RecallContext, rows: list[Candidate]) -> list[Candidate]:
    """The agent's profile rides along as the last row; the gate admits it only in a pool of 50 or more."""
    if ctx.profile() is None:
        return rows
    return [*rows, Candidate(PROFILE_REF)]
