"""When the cue's loop starts another stage, and why it stops (docs/recall-process.md, "Stages and stopping").

cued-v0.3 (two stages): a stage whose period holds no candidate suspects
CANDIDATE_MISS and widens once by one confidence step. stages-v1 (three or four
stages, ``recall_cue_stages``) goes on widening, one step a stage, also when the
period held candidates but none the cue could use (none among the returned rows,
none a seat may take: the gate refused them all), which it records as FILTER_DROP.
Either way the loop stops at the first stage that found something usable, when
there is no wider period, at the stage limit, or at the time limit; the reason is
recorded on the last stage. Each wider step has a smaller L, so whatever the number
of stages, the move and the seats stay within the L of the caller's confidence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

FOUND: Final = "found"
NOTHING_WIDER: Final = "no wider period"
STAGE_LIMIT: Final = "stage limit"
TIME_LIMIT: Final = "time limit"


@dataclass(frozen=True)
class Verdict:
    """What one stage decided: stop (with the reason), or widen (with the failure it suspected)."""

    stop: str | None  # one of the reasons above, or None to widen
    suspected: str | None  # CANDIDATE_MISS (nothing found) or FILTER_DROP (nothing usable), or None
    reason: str  # the suspicion in words, for the trace


def after_stage(found: int, usable: int, *, stage: int, stages: int, wider: bool, over_time: bool) -> Verdict:
    """The verdict on a stage that found ``found`` rows, ``usable`` of them usable by the cue.

    Under cued-v0.3 (``stages == 2``) only an empty period is a failure; beyond it, so is a period whose rows
    the cue could not use.
    """
    if found and (usable or stages <= 2):
        return Verdict(FOUND, None, "")
    if found:
        suspected, reason = "FILTER_DROP", f"the cue period's {found} candidates are all refused or already placed"
    else:
        suspected, reason = "CANDIDATE_MISS", "the cue period holds no candidate"
    if stage + 1 >= stages:
        return Verdict(STAGE_LIMIT, suspected, reason)
    if not wider:
        return Verdict(NOTHING_WIDER, suspected, reason)
    if over_time:
        return Verdict(TIME_LIMIT, suspected, reason)
    return Verdict(None, suspected, reason)
