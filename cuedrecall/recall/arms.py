"""Stage 1, the retrieval arms: each a ranked list of (ref, rank, raw) from the store, isolation inside.

Then the facts step: every record an arm reached is hydrated once, and the rows
whose text the caller already holds leave (``exclude_contents``).
"""

from __future__ import annotations

from cuedrecall.recall import bounds
from cuedrecall.recall.context import RecallContext
from cuedrecall.store.base import MEMORY, Hit
from cuedrecall.text import is_excluded

Arms = dict[str, list[Hit]]


def retrieve(ctx: RecallContext) -> Arms:
    """Run the ordinary arms to the recall depth, then the facts step; excluded rows keep their ranks consumed."""
    p = ctx.params
    if ctx.recorder.enabled:
        ctx.recorder.bounds(bounds.record(ctx))
    arms: Arms = {"vector_near": [], "vector_far": [], "episode_fts": [], "memory_keyword": []}
    if ctx.query_vector is not None:
        arms["vector_near"] = ctx.store.vector_near(
            ctx.scope, ctx.query_vector, floor=p.vector_floor, depth=p.depth, window=p.window
        )
        if p.far_enabled:
            far = ctx.store.vector_far(
                ctx.scope,
                ctx.query_vector,
                floor=p.vector_floor,
                limit=min(p.depth, p.far_limit or p.depth),
                window=p.window,
                reach=p.reach,
            )
            near = {hit.ref for hit in arms["vector_near"]}
            arms["vector_far"] = [hit for hit in far if hit.ref not in near]
    if p.fts_enabled:
        if p.word_arm:  # the stemmed word arm, listed only when on (a trace without it is as before)
            arms["memory_words"] = ctx.store.memory_words(ctx.scope, ctx.words, depth=p.depth)
        arms["episode_fts"] = ctx.store.episode_fts(ctx.scope, ctx.terms, depth=p.depth)
        arms["memory_keyword"] = ctx.store.memory_keyword(
            ctx.scope, ctx.terms, ctx.query, depth=p.depth, phrases=ctx.short_terms
        )
    ctx.recorder.arms(arms)
    return facts(ctx, arms)


def newest(ctx: RecallContext) -> Arms:
    """A blank query: the scope's newest memories, unranked by relevance."""
    arms = {"newest": ctx.store.newest(ctx.scope, MEMORY, ctx.params.limit)}
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
