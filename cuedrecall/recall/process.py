"""The recall process: the single pass, then what a time cue may do after the count (docs/recall-process.md).

Without a cue this is the single pass. With one (cued-v0.3), the cue arm searches the
period (widened once if it holds nothing; recall/stopping.py), rows it found move up
at most L places among those already returned, and up to L seats hold rows it found
that the answer lacks and the gate and autocut did not refuse. The rows the gate
passes and the count returns are never changed. The variants named in policy.process
(recall/policy.py) add to this: relief-v1 lets the seats the cue left empty take
period rows one step under the gate, each marked ``relieved``; stages-v1 runs more
stages; propagated-v1 proposes a strong hit's day as a cue when the caller gave none.
The propagation seat, when on, is appended last, after the cue's seats.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cuedrecall.clock import iso
from cuedrecall.recall.arm_registry import cue_stage
from cuedrecall.recall.candidates import Candidate
from cuedrecall.recall.context import RecallContext
from cuedrecall.recall.cue_arm import search_period
from cuedrecall.recall.cue_policy import BOUND, CUE_RANK_K, SEATS, WIDER, Confidence
from cuedrecall.recall.cue_propagation import BOUND as PROPAGATION_BOUND
from cuedrecall.recall.cue_propagation import POLICY as PROPAGATED
from cuedrecall.recall.cue_propagation import SEAT as PROPAGATED_SEAT
from cuedrecall.recall.cue_propagation import SEATS as PROPAGATION_SEATS
from cuedrecall.recall.cue_propagation import hit_period, neighbours, strong_hit
from cuedrecall.recall.pipeline import PassResult, single_pass
from cuedrecall.recall.policy import process_policy
from cuedrecall.recall.propagation import propagation_seat
from cuedrecall.recall.relief import record as record_relief
from cuedrecall.recall.stopping import FOUND, NOTHING_WIDER, STAGE_LIMIT, TIME_LIMIT, Verdict, after_stage
from cuedrecall.recall.timecue import TimeCue, base_period, is_recent_only, period
from cuedrecall.recall.trace_schema import Stage
from cuedrecall.store.base import Hit


@dataclass(frozen=True)
class Outcome:
    rows: list[Candidate]  # best first: the answer, then the held seats (block, keyword, far, cue, propagation)
    gate_fallback: bool
    time_cue: dict[str, Any] | None


def recall_process(ctx: RecallContext) -> Outcome:
    """The single pass, then what the request's time cue may do after the count."""
    cue = ctx.request.cue
    result = single_pass(ctx)
    if cue is None:
        ctx.recorder.stage({"searched": "all arms", "next": _next_after_pass(ctx, result)})
        record_relief(ctx, result.relief, [])
        answer, proposed = _cue_propagated(ctx, result) if ctx.params.cue_propagation else (result.answer, [])
        return Outcome(_propagated(ctx, result, answer + result.held + proposed), result.gate_fallback, None)
    span = _span(ctx)
    if is_recent_only(cue, ctx.now, span):
        return _ignored(ctx, cue, span, result)
    found, confidence, searched, revised = _search(ctx, cue, span, result)
    bound = BOUND[confidence]
    answer, moves = bounded_move(result.answer, found, bound)
    cue_rank = {hit.ref: hit.rank for hit in found}
    for row in (
        result.held
    ):  # held places never move, but a row the cue arm ranked says so (docs/recall-process.md#what-the-response-says)
        row.cue_rank = cue_rank.get(row.ref)
    seated = seats(found, answer + result.held, result, SEATS[confidence])
    for row in seated:
        ctx.recorder.reservation(row.ref, "cue", relieved=row.relieved is not None)
    if ctx.recorder.enabled:
        ctx.recorder.cue(
            {"bound": bound, "confidence": confidence, "lifted": moves, "seated": [row.ref for row in seated]}
        )
    ctx.recorder.mark("cue_move_and_seats")
    record_relief(ctx, result.relief, [row for row in seated if row.relieved is not None])
    summary = {
        "policy": process_policy(ctx.params, True),
        "period": _iso_period(searched),
        "confidence": confidence,
        "revised": revised,
        "moved": len(moves),
        "seated": len(seated),
    }
    return Outcome(_propagated(ctx, result, answer + result.held + seated), result.gate_fallback, summary)


def _next_after_pass(ctx: RecallContext, result: PassResult) -> str | None:
    """What the trace's first stage says started the next one: gate relief, when it admitted rows."""
    if result.relief.admitted:
        return "relieve the gate one step (FILTER_DROP suspected)"
    return None


def _cue_propagated(ctx: RecallContext, result: PassResult) -> tuple[list[Candidate], list[Candidate]]:
    """propagated-v1 (recall/cue_propagation.py): the answer after a strong hit's period moved its rows at most
    one place, and the one seat it held; one stage of the trace."""
    hit = strong_hit(result.answer)
    proposed = hit_period(ctx, hit) if hit is not None else None
    if hit is None or proposed is None:
        return result.answer, []
    entry: Stage = {
        "searched": f"the cue arm over the strong hit's period ({PROPAGATED})",
        "source": hit.ref,
        "period": _iso_period(proposed),
        "next": None,
    }
    if (time.perf_counter() - ctx.started) * 1000 > ctx.params.cue_time_limit_ms:
        ctx.recorder.stage({**entry, "found": 0, "stopped": TIME_LIMIT})
        return result.answer, []
    found = neighbours(search_period(ctx, proposed, PROPAGATED_SEAT), hit.ref)
    ctx.recorder.arms({PROPAGATED_SEAT: found})  # the arm as the move and the seat read it: the hit left out
    rest, moves = bounded_move(result.answer[1:], found, PROPAGATION_BOUND)  # the hit keeps first place
    moved = result.answer[:1] + rest
    moves = [{**move, "from": move["from"] + 1, "to": move["to"] + 1} for move in moves]
    for row in moved:
        row.cue_rank = None  # the caller gave no cue: an answer row's match_reason says nothing of one
    seated = seats(found, moved + result.held, result, PROPAGATION_SEATS, kind=PROPAGATED_SEAT, relief=False)
    for row in seated:
        ctx.recorder.reservation(row.ref, PROPAGATED_SEAT)
    if ctx.recorder.enabled:
        ctx.recorder.stage(
            {
                **entry,
                "found": len(found),
                "lifted": moves,
                "seated": [row.ref for row in seated],
                "stopped": FOUND if found else "a proposed cue is not revised",
            }
        )
    ctx.recorder.mark("cue_propagation")
    return moved, seated


def _propagated(ctx: RecallContext, result: PassResult, rows: list[Candidate]) -> list[Candidate]:
    """The rows with the propagation seat (off by default) appended last; its anchor is the uncued answer's."""
    seat = propagation_seat(ctx, result.answer, rows, result.gate_fallback)
    if ctx.params.propagation_seat:
        ctx.recorder.mark("propagation")
    return rows + seat


def _span(ctx: RecallContext) -> tuple[datetime | None, datetime | None] | None:
    span = ctx.span()
    if span is None:
        return None
    return tuple(datetime.fromtimestamp(t, UTC) for t in span)  # type: ignore[return-value]


def _iso_period(p: tuple[datetime, datetime] | None) -> list[str] | None:
    return None if p is None else [iso(p[0]), iso(p[1])]


def _ignored(ctx: RecallContext, cue: TimeCue, span: Any, result: PassResult) -> Outcome:
    """A cue for today or the future is not used (cued-v0.1): the rows are the uncued recall's."""
    own = _iso_period(base_period(cue, ctx.now, span))
    ctx.recorder.cue_ignored({"reason": "recent_only", "period": own})
    ctx.recorder.stage({"searched": "all arms", "next": _next_after_pass(ctx, result)})
    record_relief(ctx, result.relief, [])
    return Outcome(
        _propagated(ctx, result, result.answer + result.held),
        result.gate_fallback,
        {"policy": process_policy(ctx.params, True), "ignored": "recent_only", "period": own},
    )


def _search(
    ctx: RecallContext, cue: TimeCue, span: Any, result: PassResult
) -> tuple[list[Hit], Confidence, tuple[datetime, datetime] | None, bool]:
    """The cue's stages: the period at the cue's confidence, then one step wider a stage while recall/stopping.py
    says so (cued-v0.3: once, when the period held nothing); each stage's time is a mark of its own."""
    confidence = cue.confidence
    stages = ctx.params.cue_stages
    for stage in range(stages):
        searched = period(cue, confidence, ctx.now, span)
        found = search_period(ctx, searched, cue_stage(stage)) if searched else []
        wider = WIDER[confidence]
        over_time = (time.perf_counter() - ctx.started) * 1000 > ctx.params.cue_time_limit_ms
        verdict = after_stage(
            len(found), _usable(found, result), stage=stage, stages=stages, wider=wider is not None, over_time=over_time
        )
        step = _next_step(verdict, wider)
        number = ctx.recorder.stage(
            {
                "searched": "all arms and the cue period" if stage == 0 else "the cue period only",
                "confidence": confidence,
                "period": _iso_period(searched),
                "found": len(found),
                "next": step,
                **({"stopped": verdict.stop} if verdict.stop is not None else {}),
            }
        )
        ctx.recorder.mark("cue_search" if stage == 0 else f"cue_stage_{stage}")
        if verdict.suspected is not None:
            action = f"widened to the {wider} margin" if verdict.stop is None else step or f"stop: {verdict.stop}"
            ctx.recorder.suspect(number, verdict.suspected, verdict.reason, action)
        if verdict.stop is not None:
            return found, confidence, searched, stage > 0
        assert wider is not None  # after_stage widens only where a wider step exists
        confidence = wider
    raise AssertionError("unreachable: after_stage stops at the stage limit")


def _usable(found: list[Hit], result: PassResult) -> int:
    """How many of a stage's rows the cue could use: rows the count returned (to move) or a seat may take."""
    returned = {row.ref for row in result.answer}
    under = {row.ref for row in result.relief.under}
    return sum(
        1
        for hit in found
        if hit.ref in returned or hit.ref in under or not (hit.ref in result.reached and hit.ref not in result.admitted)
    )


def _next_step(verdict: Verdict, wider: str | None) -> str | None:
    """What the process does after a stage, as the trace's ``next`` says it (None after a stage that found)."""
    if verdict.stop == FOUND or (verdict.stop == STAGE_LIMIT and verdict.suspected is not None):
        return None
    if verdict.stop == NOTHING_WIDER:
        return "stop: no wider period (a vague cue widens to no period)"
    if verdict.stop == TIME_LIMIT:
        return "stop: time limit"
    return f"widen to the {wider} margin"


def bounded_move(answer: list[Candidate], found: list[Hit], bound: int) -> tuple[list[Candidate], list[dict[str, Any]]]:
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
    moves = [
        {"ref": row.ref, "from": before, "to": after} for after, (before, row) in enumerate(ordered) if before != after
    ]
    return [row for _, row in ordered], moves


def seats(
    found: list[Hit], answer: list[Candidate], result: PassResult, count: int, *, kind: str = "cue", relief: bool = True
) -> list[Candidate]:
    """Up to ``count`` cue rows the answer lacks that the gate and autocut did not refuse, in cue order; with gate
    relief (and ``relief``), the seats left empty then take the period's rows one step under the gate."""
    present = {row.ref for row in answer}
    under = {row.ref for row in result.relief.under}
    out: list[Candidate] = []
    for relieved in (False, True) if relief else (False,):  # not refused first; then just under it (relief-v1)
        for hit in found:
            if len(out) == count:
                return out
            refused = hit.ref in result.reached and hit.ref not in result.admitted
            eligible = hit.ref in under if relieved else not refused
            if eligible and hit.ref not in present:
                present.add(hit.ref)
                closeness = result.relief.closeness[hit.ref] if relieved else None
                out.append(Candidate(hit.ref, cue_rank=hit.rank, seat=kind, relieved=closeness))
    return out
