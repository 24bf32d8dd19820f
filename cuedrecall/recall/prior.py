"""Stage 6, the prior: an age weight on the fused score that reorders admitted rows, never admits or removes one.

Off by default (rate 0). Applied after the gate and autocut and before the count cut.
"""

from __future__ import annotations

from cuedrecall.recall.candidates import Candidate
from cuedrecall.recall.context import RecallContext


def age_weight(age_hours: float, rate: float, floor: float) -> float:
    return max(floor, 1.0 / (1.0 + max(0.0, age_hours) * rate))


def apply_prior(ctx: RecallContext, rows: list[Candidate]) -> list[Candidate]:
    p = ctx.params
    scored = [row for row in rows if not row.is_profile]
    if p.age_rate <= 0 or not scored or any(row.fused is None for row in scored):
        return rows
    span = ctx.span()
    if span is None:
        return rows
    oldest, newest = span
    width_h = max(0.0, newest - oldest) / 3600.0
    anchor = newest if p.age_anchor == "newest" else ctx.now.timestamp()
    # an undated row is taken to be from the middle of the span
    undated = width_h / 2 + (max(0.0, anchor - newest) / 3600.0 if p.age_anchor == "now" else 0.0)
    for row in scored:
        when = ctx.facts.time(row.ref)
        age = undated if when is None else (anchor - when) / 3600.0
        row.prior = age_weight(age, p.age_rate, p.age_floor)
    ctx.recorder.scoring("prior", scored, "prior")
    return sorted(rows, key=_weighted_order)


def _weighted_order(row: Candidate) -> tuple[bool, float]:
    """Profile last; then the fused score times the prior, highest first (every weighted row has a fused score:
    ``apply_prior`` weights none otherwise); a row left unweighted sorts as 0.0."""
    if row.prior is None or row.fused is None:
        return row.is_profile, 0.0
    return row.is_profile, -(row.fused * row.prior)
