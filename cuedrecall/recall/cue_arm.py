"""The cue arm (cued-v0.3): the period's memories and episodes, by vector and keyword, to a depth of its own.

It reuses the query vector the ordinary vector arm already embedded (no second
embedding) and merges its lists by reciprocal rank. It only ever adds evidence
for rows inside the period: nothing outside it is removed or re-scored.
"""

from __future__ import annotations

from datetime import datetime

from cuedrecall.recall.arm_registry import ARMS, Arms, Kind, Run
from cuedrecall.recall.arms import facts
from cuedrecall.recall.context import RecallContext
from cuedrecall.recall.cue_policy import CUE_DEPTH, CUE_RANK_K
from cuedrecall.store.base import EPISODE, MEMORY, Hit


def cue_lists(ctx: RecallContext, period: tuple[float, float]) -> Arms:
    """Each half's ranked list inside the period (epoch seconds, [start, end)): the arms declared ``period``.

    The merge breaks ties by first appearance, so the lists go memories first, each kind's in declared order
    (docs/recall-process.md#the-cue-arm: memory vector, memory keyword, then episode vector and episode full
    text); a blank query lists the period's newest records instead.
    """
    lists: Arms = {}
    for records in (MEMORY, EPISODE):
        for arm in ARMS.period_lists:
            if records in arm.reads and (arm.kind is Kind.RECENCY) == ctx.blank:
                hits = arm.run(ctx, Run(CUE_DEPTH, lists, period=period, records=records))
                if hits is not None:
                    lists[f"{records}_{arm.name}"] = hits
    return lists


def merge(lists: dict[str, list[Hit]]) -> list[Hit]:
    """One list by reciprocal rank, 1/(61 + rank) a vote; ties keep first appearance; the best 50."""
    totals: dict[str, float] = {}
    for hits in lists.values():
        for hit in hits:
            totals[hit.ref] = totals.get(hit.ref, 0.0) + 1.0 / (CUE_RANK_K + hit.rank)
    ordered = sorted(totals.items(), key=lambda item: -item[1])[:CUE_DEPTH]
    return [Hit(ref, rank, total) for rank, (ref, total) in enumerate(ordered)]


def search_period(ctx: RecallContext, period: tuple[datetime, datetime], arm_name: str) -> list[Hit]:
    """Run the cue arm over one period and record it under ``arm_name`` (cue, cue_stage_1)."""
    bounds = (period[0].timestamp(), period[1].timestamp())
    found = merge(facts(ctx, cue_lists(ctx, bounds)))
    ctx.recorder.arms({arm_name: found})
    return found
