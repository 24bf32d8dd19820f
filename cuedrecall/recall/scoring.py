"""Stage 3, scoring before the gate: the episode boundary penalty (off by default)."""

from __future__ import annotations

import math

from cuedrecall.recall.candidates import Candidate
from cuedrecall.recall.context import RecallContext
from cuedrecall.recall.timecue import to_epoch
from cuedrecall.store.base import EPISODE


def penalise(ctx: RecallContext, rows: list[Candidate]) -> list[Candidate]:
    """Rows older than the newest episode lose weight with the hours between; episodes are exempt.

    The factor multiplies the row's cosine and fused score, and the list is re-sorted by fused score.
    """
    p = ctx.params
    if not p.episode_penalty or not rows:
        return rows
    boundary = to_epoch(ctx.store.newest_episode_time(ctx.scope) or "")
    if boundary is None:
        return rows
    times = ctx.store.record_times([row.ref for row in rows if not row.is_profile])
    factors = {}
    for row in rows:
        if row.is_profile or row.ref.startswith(EPISODE + ":"):
            continue
        when = times.get(row.ref)
        if when is None or when >= boundary:
            continue
        hours = (boundary - when) / 3600.0
        row.penalty = max(p.episode_decay_floor, math.exp(-p.episode_decay_rate * hours))
        row.cosine = None if row.cosine is None else row.cosine * row.penalty
        row.fused = None if row.fused is None else row.fused * row.penalty
        factors[row.ref] = row.penalty
    ctx.recorder.scoring("episode_penalty", {row.ref: row.penalty for row in rows if not row.ref.startswith(EPISODE + ":")})
    if factors:
        rows = sorted(rows, key=lambda row: (row.is_profile, -(row.fused or 0.0)))
    return rows
