"""Stage 1, the retrieval arms: each a ranked list of (ref, rank, raw) from the store, isolation inside."""

from __future__ import annotations

from cuedrecall.recall.context import RecallContext
from cuedrecall.store.base import MEMORY, Hit
from cuedrecall.text import is_excluded
from cuedrecall.text.fts import fts_terms

Arms = dict[str, list[Hit]]


def retrieve(ctx: RecallContext) -> Arms:
    """Run the ordinary arms to the recall depth; excluded rows leave but keep their ranks consumed."""
    p = ctx.params
    arms: Arms = {"vector_near": [], "vector_far": [], "episode_fts": [], "memory_keyword": []}
    if ctx.query_vector is not None:
        arms["vector_near"] = ctx.store.vector_near(
            ctx.scope, ctx.query_vector, floor=p.vector_floor, depth=p.depth, window=p.window
        )
        if p.far_enabled:
            far = ctx.store.vector_far(
                ctx.scope, ctx.query_vector, floor=p.vector_floor, limit=min(p.depth, p.far_limit or p.depth),
                window=p.window, reach=p.reach,
            )
            near = {hit.ref for hit in arms["vector_near"]}
            arms["vector_far"] = [hit for hit in far if hit.ref not in near]
    if p.fts_enabled:
        terms = fts_terms(ctx.query)
        arms["episode_fts"] = ctx.store.episode_fts(ctx.scope, terms, depth=p.depth)
        arms["memory_keyword"] = ctx.store.memory_keyword(ctx.scope, terms, ctx.query, depth=p.depth)
    ctx.recorder.arms(arms)
    return exclude(ctx, arms)


def newest(ctx: RecallContext) -> Arms:
    """A blank query: the scope's newest memories, unranked by relevance."""
    arms = {"newest": ctx.store.newest(ctx.scope, MEMORY, ctx.params.limit)}
    ctx.recorder.arms(arms)
    return exclude(ctx, arms)


def exclude(ctx: RecallContext, arms: Arms) -> Arms:
    """Drop rows whose text the caller already holds (``exclude_contents``)."""
    if not ctx.params.exclusions:
        return arms
    refs = {hit.ref for hits in arms.values() for hit in hits}
    records = ctx.store.records(sorted(refs))
    excluded = {ref for ref, record in records.items() if is_excluded(record.display_content, ctx.params.exclusions)}
    if excluded:
        ctx.recorder.excluded(sorted(excluded))
    return {name: [hit for hit in hits if hit.ref not in excluded] for name, hits in arms.items()}
