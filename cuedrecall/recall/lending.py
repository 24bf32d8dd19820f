"""What the context stages share (recall/episode_context.py, recall/time_context.py): the vote a place of the fused
order lends, and the list sorted again once the votes are in (docs/recall-process.md#episode-context)."""

from __future__ import annotations

from cuedrecall.recall.candidates import Candidate
from cuedrecall.recall.context import RecallContext


def place_votes(ctx: RecallContext, rows: list[Candidate], answered: int) -> list[float]:
    """The vote each place of the fused order lends: rrf by place, rsf by the fused score scaled like an arm's."""
    p = ctx.params
    if p.mode == "rrf":
        return [1.0 / (p.rrf_k + place + 1) for place in range(len(rows))]
    scores = [row.fused or 0.0 for row in rows]
    low, high = min(scores), max(scores)
    share = 1.0 / max(1, answered)
    if high <= low:
        return [share] * len(rows)
    return [share * (score - low) / (high - low) for score in scores]


def ranked_again(
    ctx: RecallContext, rows: list[Candidate], lent: list[Candidate], vote: str, lender: str
) -> list[Candidate]:
    """The rows by fused score (ties keep their order), recorded with the rows that took ``vote`` and, per row,
    its ``lender`` attribute; the rows as they were when none took it."""
    if not lent:
        return rows
    order = sorted(range(len(rows)), key=lambda i: -(rows[i].fused or 0.0))  # stable: ties keep their order
    ranked = [rows[i] for i in order]
    ctx.recorder.fusion(ranked)
    ctx.recorder.scoring(vote, lent, lender)
    return ranked
