"""The recall process, policy cued-v0.3: the single pass, then what a time cue may do after the count.

Without a cue this is the single pass and nothing else. With one, the cue arm
searches the period (widened once if it holds nothing), rows it found move up at
most L places among those already returned, and up to L seats hold rows it found
that the answer lacks (with gate relief, the seats left empty may take the period's
rows one step under the gate). The rows the gate passes and the count returns are
never changed (spec §2.6). The propagation seat, when on, is appended last, after
the cue's seats.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from cuedrecall.clock import iso
from cuedrecall.recall.candidates import Candidate
from cuedrecall.recall.context import RecallContext
from cuedrecall.recall.cue_arm import search_period
from cuedrecall.recall.cue_propagation import BOUND as PROPAGATION_BOUND
from cuedrecall.recall.cue_propagation import POLICY as PROPAGATION
from cuedrecall.recall.cue_propagation import hit_day, strong_hit
from cuedrecall.recall.cued_v0_3 import BOUND, CUE_RANK_K, MAX_CUE_STAGES, POLICY, SEATS, WIDER
from cuedrecall.recall.pipeline import PassResult, single_pass
from cuedrecall.recall.propagation import propagation_seat
from cuedrecall.recall.relief import record as record_relief
from cuedrecall.recall.timecue import TimeCue, base_period, is_recent_only, period
from cuedrecall.store.base import Hit


@dataclass(frozen=True)
class Outcome:
    rows: list[Candidate]  # best first: the answer, then the held seats (block, keyword, far, cue, propagation)
    gate_fallback: bool
    time_cue: dict[str, Any] | None


def recall_process(ctx: RecallContext, cue: TimeCue | None) -> Outcome:
    result = single_pass(ctx)
    if cue is None:
        ctx.recorder.stage({"stage": 0, "searched": "all arms", "next": None})
        record_relief(ctx, result.relief, [], 1)
        answer = _cue_propagated(ctx, result.answer) if ctx.params.cue_propagation else result.answer
        return Outcome(_propagated(ctx, result, answer + result.held), result.gate_fallback, None)
    span = _span(ctx)
    if is_recent_only(cue, ctx.now, span):
        return _ignored(ctx, cue, span, result)
    found, confidence, searched, revised = _search(ctx, cue, span, ctx.params.cue_time_limit_ms)
    bound = BOUND[confidence]
    answer, moves = bounded_move(result.answer, found, bound)
    seated = seats(found, answer + result.held, result, SEATS[confidence])
    for row in seated:
        ctx.recorder.reservation(row.ref, "cue")
    if ctx.recorder.enabled:
        ctx.recorder.cue({"bound": bound, "confidence": confidence, "lifted": moves,
                          "seated": [row.ref for row in seated]})
    under = {row.ref for row in result.relief.under}
    record_relief(ctx, result.relief, [row for row in seated if row.ref in under], 2 if revised else 1)
    summary = {"policy": POLICY, "period": _iso_period(searched), "confidence": confidence, "revised": revised,
               "moved": len(moves), "seated": len(seated)}
    return Outcome(_propagated(ctx, result, answer + result.held + seated), result.gate_fallback, summary)


def _cue_propagated(ctx: RecallContext, answer: list[Candidate]) -> list[Candidate]:
    """The answer after cue propagation (recall/cue_propagation.py): a strong hit's day searched, its rows moved
    up at most one place; traced as stage 1."""
    hit = strong_hit(answer)
    day = hit_day(ctx, hit) if hit is not None else None
    if hit is None or day is None:
        return answer
    found = search_period(ctx, day, "propagated_cue")
    moved, moves = bounded_move(answer, found, PROPAGATION_BOUND)
    for row in moved:
        row.cue_rank = None  # the caller gave no cue: match_reason says nothing of one
    if ctx.recorder.enabled:
        ctx.recorder.stage({"stage": 1, "searched": f"the cue arm over the strong hit's day ({PROPAGATION})",
                            "source": hit.ref, "period": _iso_period(day), "found": len(found), "lifted": moves,
                            "next": None})
    return moved


def _propagated(ctx: RecallContext, result: PassResult, rows: list[Candidate]) -> list[Candidate]:
    """The rows with the propagation seat (off by default) appended last; its anchor is the uncued answer's."""
    return rows + propagation_seat(ctx, result.answer, rows, result.gate_fallback)


def _span(ctx: RecallContext) -> tuple[datetime | None, datetime | None] | None:
    span = ctx.span()
    if span is None:
        return None
    return tuple(datetime.fromtimestamp(t, timezone.utc) for t in span)  # type: ignore[return-value]


def _iso_period(p: tuple[datetime, datetime] | None) -> list[str] | None:
    return None if p is None else [iso(p[0]), iso(p[1])]


def _ignored(ctx: RecallContext, cue: TimeCue, span: Any, result: PassResult) -> Outcome:
    """A cue for today or the future is not used (cued-v0.1): the rows are the uncued recall's."""
    own = _iso_period(base_period(cue, ctx.now, span))
    ctx.recorder.cue_ignored({"reason": "recent_only", "period": own})
    ctx.recorder.stage({"stage": 0, "searched": "all arms", "next": None})
    record_relief(ctx, result.relief, [], 1)
    return Outcome(_propagated(ctx, result, result.answer + result.held), result.gate_fallback,
                   {"policy": POLICY, "ignored": "recent_only", "period": own})


def _search(
    ctx: RecallContext, cue: TimeCue, span: Any, time_limit_ms: int
) -> tuple[list[Hit], str, tuple[datetime, datetime] | None, bool]:
    """Stage 0 at the cue's confidence; one revision, one step wider, when the period held nothing."""
    confidence = cue.confidence
    for stage in range(MAX_CUE_STAGES):
        searched = period(cue, confidence, ctx.now, span)
        found = search_period(ctx, searched, "cue" if stage == 0 else f"cue_stage_{stage}") if searched else []
        last = bool(found) or stage + 1 >= MAX_CUE_STAGES
        wider = None if last else WIDER[confidence]
        over_time = not last and (time.perf_counter() - ctx.started) * 1000 > time_limit_ms
        step = None if last else _next_step(wider, over_time)
        if ctx.recorder.enabled:
            ctx.recorder.stage({
                "stage": stage, "searched": "all arms and the cue period" if stage == 0 else "the cue period only",
                "confidence": confidence, "period": _iso_period(searched), "found": len(found), "next": step})
        if last:
            return found, confidence, searched, stage > 0
        action = step if wider is None or over_time else f"widened to the {wider} margin"
        ctx.recorder.suspect(stage, "CANDIDATE_MISS", "the cue period holds no candidate", action)
        if wider is None or over_time:
            return found, confidence, searched, stage > 0
        confidence = wider
    raise AssertionError("unreachable: the loop returns within MAX_CUE_STAGES")


def _next_step(wider: str | None, over_time: bool) -> str:
    """What the process does after a stage that found nothing, as the trace's ``next`` says it."""
    if wider is None:
        return "stop: no wider period (a vague cue widens to no period)"
    if over_time:
        return "stop: time limit"
    return f"widen to the {wider} margin"


def bounded_move(
    answer: list[Candidate], found: list[Hit], bound: int
) -> tuple[list[Candidate], list[dict[str, Any]]]:
    """Reorder the returned rows by ``p - L * 61 / (61 + c)``: no row rises more than L places.

    A row the cue found wins a tie against one it did not; any other tie keeps the
    original order.
    """
    cue_rank = {hit.ref: hit.rank for hit in found}

    def key(item: tuple[int, Candidate]) -> tuple[float, int, int]:
        position, row = item
        c = cue_rank.get(row.ref)
        if c is None:
            return (position, 1, position)
        return (position - bound * CUE_RANK_K / (CUE_RANK_K + c), 0, position)

    for row in answer:
        row.cue_rank = cue_rank.get(row.ref)
    ordered = sorted(enumerate(answer), key=key)
    moves = [{"ref": row.ref, "from": before, "to": after}
             for after, (before, row) in enumerate(ordered) if before != after]
    return [row for _, row in ordered], moves


def seats(found: list[Hit], answer: list[Candidate], result: PassResult, count: int) -> list[Candidate]:
    """Up to ``count`` cue rows the answer lacks that the gate and autocut did not refuse, in cue order; with gate
    relief, the seats left empty then take the period's rows one step under the gate, in cue order."""
    present = {row.ref for row in answer}
    under = {row.ref for row in result.relief.under}
    out: list[Candidate] = []
    for relieved in (False, True):  # the rows the gate did not refuse first; then those just under it
        for hit in found:
            if len(out) == count:
                return out
            refused = hit.ref in result.reached and hit.ref not in result.admitted
            eligible = hit.ref in under if relieved else not refused
            if eligible and hit.ref not in present:
                present.add(hit.ref)
                out.append(Candidate(hit.ref, cue_rank=hit.rank, seat="cue"))
    return out
