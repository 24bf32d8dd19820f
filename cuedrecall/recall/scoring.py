"""Stage 3, scoring before the gate: the episode boundary penalty (off by default)."""

from __future__ import annotations

import math

from cuedrecall.clock import to_epoch
from cuedrecall.recall.candidates import Candidate
from cuedrecall.recall.context import RecallContext
from cuedrecall.store.base import EPISODE


def penalise(ctx: RecallContext, rows: list[Candidate]) -> list[Candidate]:
    """Rows older than the newest episode lose weight with the hours between; episodes are exempt.

    The factor multiplies the row's cosine and fused score, and the list is re-sorted by fused score.
    """
    p = ctx.params
    if not p.episode_penalty or not rows:
        return rows
    boundary = to_epoch(ctx.newest_episode_time() or "")
    if boundary is None:
        return rows
    penalised = False
    for row in rows:
        if row.is_profile or row.ref.startswith(EPISODE + ":"):
            continue
        when = ctx.facts.time(row.ref)
        if when is None or when >= boundary:
            continue
        hours = (boundary - when) / 3600.0
        row.penalty = max(p.episode_decay_floor, math.exp(-p.episode_decay_rate * hours))
        row.cosine = None if row.cosine is None else row.cosine * row.penalty
        row.fused = None if row.fused is None else row.fused * row.penalty
        penalised = True
    ctx.recorder.scoring("episode_penalty", [row for row in rows if not row.ref.startswith(EPISODE + ":")], "penalty")
    if penalised:
        rows = sorted(rows, key=lambda row: (row.is_profile, -(row.fused or 0.0)))
    return rows
