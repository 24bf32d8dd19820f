"""Gate relief (policy relief-v1, docs/recall-process.md): one bounded step under the gate, when rows sit just under it.

The rule: when at least RELIEF_SUSPECT rows the gate refused sit within one step
under their own threshold (score >= RELIEF_STEP x threshold, on the signal nearest
to passing) while the answer has an empty place, the loop suspects FILTER_DROP and
up to RELIEF_ROWS of them, in the order before the gate, fill the empty places
after the answer's last row; with a time cue, the cue's seats left empty may take
its period's rows just under the gate.

So relief only adds: a row the unrelieved recall returned is never removed or
reordered (relieved rows come after the answer, before the held seats; cue seats
it fills are ones the cue left empty), only rows one step under their threshold
enter, at most RELIEF_ROWS of them and never past the limit (plus at most L cue
seats, as before), and a full answer is left as it is. Every row relief let in says so
(``relieved``: its closeness, in match_reason and the trace). It is a policy of its own:
policy.process reads ``...+relief-v1`` wherever it is on (recall/policy.py), so
``cued-v0.3`` alone never seats a row the gate refused. gate-v0 has none.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from cuedrecall.recall.candidates import Candidate
from cuedrecall.recall.context import RecallContext
from cuedrecall.recall.gate_policy import RELIEF_ROWS, RELIEF_STEP, RELIEF_SUSPECT
from cuedrecall.recall.verdicts import Decision


@dataclass(frozen=True)
class Relief:
    under: list[Candidate]  # rows one step under the gate, in the order before the gate
    admitted: list[Candidate]  # those relief appended after the answer
    room: int  # the answer's empty places when relief looked
    closeness: dict[str, float] = field(default_factory=dict)  # ref -> score / threshold, for each row under


NONE = Relief([], [], 0)


def just_under(ctx: RecallContext, scored: list[Candidate], decisions: list[Decision]) -> Relief:
    """The rows the gate refused by less than one step (none when relief is off), in the order before the gate."""
    if not ctx.params.gate_relief:
        return NONE
    near = {
        d.ref: d.closeness
        for d in decisions
        if d.reason == "below_gate" and d.closeness is not None and d.closeness >= RELIEF_STEP
    }
    under = [row for row in scored if row.ref in near and ctx.facts.get(row.ref) is not None]
    return Relief(under, [], 0, {row.ref: near[row.ref] for row in under})


def relieve(ctx: RecallContext, found: Relief, answer: list[Candidate], held: list[Candidate]) -> Relief:
    """FILTER_DROP suspected: up to RELIEF_ROWS rows just under the gate fill the answer's empty places."""
    under = found.under
    room = ctx.params.limit - len(answer)
    present = {row.ref for row in answer + held}
    eligible = [row for row in under if row.ref not in present]
    if room <= 0 or len(eligible) < RELIEF_SUSPECT:
        return replace(found, room=max(room, 0))
    admitted = eligible[: min(room, RELIEF_ROWS)]
    for row in admitted:
        row.relieved = found.closeness[row.ref]
        ctx.recorder.reservation(row.ref, "relief")
    ctx.recorder.suspect(
        0,
        "FILTER_DROP",
        f"{len(eligible)} rows sit one step under the gate and the answer has {room} empty places",
        f"relieved the gate one step: admitted {len(admitted)}",
    )
    return replace(found, admitted=admitted, room=room)


def record(ctx: RecallContext, relief: Relief, seated: list[Candidate]) -> None:
    """The relief's stage in the trace, when it admitted a row or a cue seat took one of its rows."""
    if not ctx.recorder.enabled or not (relief.admitted or seated):
        return
    reason = (
        f"FILTER_DROP suspected: {len(relief.under)} rows one step under the gate, {relief.room} empty places"
        if relief.admitted
        else "a cue seat the cue left empty, for a period row one step under the gate"
    )
    ctx.recorder.stage(
        {
            "searched": f"the rows within {RELIEF_STEP:g} of their gate threshold",
            "reason": reason,
            "found": len(relief.under),
            "admitted": [row.ref for row in relief.admitted],
            "seated": [row.ref for row in seated],
            "next": None,
        }
    )
