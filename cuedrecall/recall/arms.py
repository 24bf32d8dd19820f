"""Stage 1, the retrieval arms (declared in recall/arm_registry.py): each a ranked list of (ref, rank, raw).

Then the facts step: every record an arm reached is hydrated once, and the rows
whose text the caller already holds leave (``exclude_contents``).
"""

from __future__ import annotations

import threading

from cuedrecall.recall import bounds
from cuedrecall.recall.arm_registry import ARMS, NEWEST, Arm, Arms, Run
from cuedrecall.recall.context import RecallContext
from cuedrecall.recall.lexical_coverage import count_held, order_by_coverage
from cuedrecall.store.base import MEMORY
from cuedrecall.text import is_excluded


def retrieve(ctx: RecallContext) -> Arms:
    """Run the ordinary arms to the recall depth, then the facts step; excluded rows keep their ranks consumed.

    The arms that read no other arm's list run on a helper thread beside the others, inside the recall's
    snapshot (``Store.beside``), and lexical coverage counts their rows there; meanwhile this thread embeds
    the query (the vector arms read it first), searches the vector arms and the blocks, then runs the beside
    arms the helper has not taken yet. Each arm's list is what it would be run alone, and the lists keep their
    declared order (docs/recall-process.md#the-arms).
    """
    if ctx.recorder.enabled:
        ctx.recorder.bounds(bounds.record(ctx))
    shared = Beside(ARMS.fused_beside)
    side = ctx.store.beside(lambda: _helper(ctx, shared))
    found = _run(ctx, ARMS.fused_here)
    ctx.blocks()
    found.update(shared.run(ctx, first=False))  # what the helper has not taken yet
    helped, counted = side()
    found.update(helped)
    arms: Arms = {arm.name: [] for arm in ARMS.fused if arm.listed}  # listed even when it does not run
    for arm in ARMS.fused:  # in their declared order (recall/arm_registry.py)
        if arm.name in found:
            arms[arm.name] = found[arm.name]
    arms = order_by_coverage(ctx, arms, counted)
    ctx.recorder.arms(arms)
    return facts(ctx, arms)


class Beside:
    """The arms declared beside, each taken once: by the helper thread from the front, and by the recall's own
    thread from the back once its own arms are done, so the two lanes even out whichever backend is slower at
    what. An arm that failed goes back for the thread that reads instead (store/beside.py)."""

    def __init__(self, arms: tuple[Arm, ...]) -> None:
        self._left = list(arms)
        self._guard = threading.Lock()

    def run(self, ctx: RecallContext, *, first: bool) -> Arms:
        """Take and run arms until none is left: from the front (``first``) or from the back."""
        found: Arms = {}
        while (arm := self._take(first)) is not None:
            try:
                hits = arm.run(ctx, Run(ctx.params.depth, found))
            except BaseException:
                with self._guard:
                    self._left.insert(0, arm)
                raise
            if hits is not None:
                found[arm.name] = hits
        return found

    def _take(self, first: bool) -> Arm | None:
        with self._guard:
            return self._left.pop(0 if first else -1) if self._left else None


def _helper(ctx: RecallContext, shared: Beside) -> tuple[Arms, dict[str, int]]:
    """The helper thread's share: the beside arms it takes, then lexical coverage's count of their rows."""
    found = shared.run(ctx, first=True)
    return found, count_held(ctx, found)


def _run(ctx: RecallContext, arms: tuple[Arm, ...]) -> Arms:
    """The lists of the arms that run, each to the recall depth, in order (an arm may read those before it)."""
    found: Arms = {}
    for arm in arms:
        hits = arm.run(ctx, Run(ctx.params.depth, found))
        if hits is not None:
            found[arm.name] = hits
    return found


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
