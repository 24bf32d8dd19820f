"""Stage 2, fusion: the arms' lists become one candidate list, by reciprocal rank (rrf) or relative score (rsf)."""

from __future__ import annotations

from cuedrecall.recall.arm_registry import ARMS, Arms, Kind
from cuedrecall.recall.candidates import Candidate
from cuedrecall.recall.context import RecallContext


def fuse(ctx: RecallContext, arms: Arms) -> list[Candidate]:
    """Candidates in fused order, best first; ties keep the order rows first appeared in."""
    p = ctx.params
    candidates: dict[str, Candidate] = {}
    for arm in ARMS.fused:  # in their declared order (recall/arm_registry.py)
        hits = arms.get(arm.name, [])
        weight = arm.weight(p)  # the far arm's: the prior's far weight
        if p.mode == "rrf":
            contributions = _rrf(hits, p.rrf_k, weight)
        else:
            # vector arms report cosine (higher is better); FTS5's bm25 is better when more negative
            contributions = _rsf(hits, weight, negate=arm.kind is Kind.LEXICAL)
        for hit, vote in zip(hits, contributions):
            row = candidates.setdefault(hit.ref, Candidate(hit.ref))
            row.ranks[arm.name] = hit.rank
            row.votes[arm.name] = vote
            if arm.kind is Kind.VECTOR and row.cosine is None:
                row.cosine = hit.raw
    rows = list(candidates.values())
    if p.mode == "rsf":
        active = max(1, sum(1 for name in ARMS.fused_names if arms.get(name)))
        for row in rows:
            row.votes = {arm: vote / active for arm, vote in row.votes.items()}
    fused = {row.ref: sum(row.votes.values()) for row in rows}
    for row in rows:
        row.fused = fused[row.ref]
    rows.sort(key=lambda row: -fused[row.ref])  # stable: ties keep first appearance
    ctx.recorder.fusion(rows)
    return rows


def _rrf(hits: list, k: int, weight: float) -> list[float]:
    """1/(k + rank + 1) per row; ranks were counted before exclusion, so an excluded row still used its place."""
    return [weight / (k + hit.rank + 1) for hit in hits]


def _rsf(hits: list, weight: float, negate: bool) -> list[float]:
    """Min-max of the arm's raw scores; a flat or unscored arm gives every row 1.0, an unscored row 0.0."""
    values = [None if hit.raw is None else (-hit.raw if negate else hit.raw) for hit in hits]
    present = [v for v in values if v is not None]
    if not present:
        return [weight] * len(hits)
    low, high = min(present), max(present)
    if high <= low:
        return [weight] * len(hits)
    return [weight * (0.0 if v is None else (v - low) / (high - low)) for v in values]
