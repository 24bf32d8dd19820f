"""Stage 1, the retrieval arms (declared in recall/arm_registry.py): each a ranked list of (ref, rank, raw).

Then the facts step: every record an arm reached is hydrated once, and the rows
whose text the caller already holds leave (``exclude_contents``).
"""

from __future__ import annotations

from cuedrecall.recall import bounds
from cuedrecall.recall.arm_registry import ARMS, NEWEST, Arms, Run
from cuedrecall.recall.context import RecallContext
from cuedrecall.recall.lexical_coverage import order_by_coverage
from cuedrecall.store.base import MEMORY
from cuedrecall.text import is_excluded


def retrieve(ctx: RecallContext) -> Arms:
    """Run the ordinary arms to the recall depth, then the facts step; excluded rows keep their ranks consumed."""
    p = ctx.params
    if ctx.recorder.enabled:
        ctx.recorder.bounds(bounds.record(ctx))
    arms: Arms = {arm.name: [] for arm in ARMS.fused if arm.listed}  # listed even when it does not run
    for arm in ARMS.fused:  # in their declared order (recall/arm_registry.py), each to the recall depth
        hits = arm.run(ctx, Run(p.depth, arms))
        if hits is not None:
            arms[arm.name] = hits
    arms = order_by_coverage(ctx, arms)
    ctx.recorder.arms(arms)
    return facts(ctx, arms)


def newest(ctx: RecallContext) -> Arms:
    """A blank query: the scope's newest memories, unranked by relevance."""
    arms = {NEWEST.name: NEWEST.run(ctx, Run(ctx.params.limit, {}, records=MEMORY)) or []}
    ctx.recorder.arms(arms)
    return facts(ctx, arms)


def facts(ctx: RecallContext, arms: Arms) -> Arms:
    """Hydrate every record the arms reached (once), then drop those the caller already holds."""
    ctx.facts.load(hit.ref for hits in arms.values() for hit in hits)
    return exclude(ctx, arms)


def exclude(ctx: RecallContext, arms: Arms) -> Arms:
    """Drop rows whose text the caller already holds (``exclude_contents``); reads hydrated records only."""
    if not ctx.params.exclusions:
        return arms
    refs = sorted({hit.ref for hits in arms.values() for hit in hits})
    excluded = {ref for ref in refs if held_by_caller(ctx, ref)}
    if excluded:
        ctx.recorder.excluded(sorted(excluded))
    return {name: [hit for hit in hits if hit.ref not in excluded] for name, hits in arms.items()}


def held_by_caller(ctx: RecallContext, ref: str) -> bool:
    """Whether the record's text is one the caller already holds (``exclude_contents``); hydrated records only."""
    record = ctx.facts.get(ref)
    return (
        bool(ctx.params.exclusions)
        and record is not None
        and is_excluded(record.display_content, ctx.params.exclusions)
    )
