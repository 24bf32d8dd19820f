"""The name of the recall process that ran: the base policy, then each after-v0 variant in force, joined by ``+``.

The rule (docs/recall-process.md, "Policy names"): a recall without a time cue runs
``single-pass-v0``, one with a cue ``cued-v0.3``; each variant that changes what a
recall may return adds its own name, in a fixed order: ``relief-v1`` (gate relief,
recall/relief.py), ``stages-v1`` (more than two cue stages, recall/stopping.py),
``propagated-v1`` (cue propagation, recall/cue_propagation.py).
So ``cued-v0.3`` alone is exactly the specified process, and a trace always names
every rule that could have shaped its answer, whether or not that rule fired.
"""

from __future__ import annotations

from typing import Final

from cuedrecall.recall.cue_policy import POLICY as CUED
from cuedrecall.recall.cue_policy import SINGLE_PASS_POLICY as SINGLE_PASS
from cuedrecall.recall.cue_propagation import POLICY as PROPAGATED
from cuedrecall.recall.params import RecallParams

RELIEF: Final = "relief-v1"
STAGES: Final = "stages-v1"


def process_policy(params: RecallParams, cued: bool) -> str:
    """policy.process for a recall with these parameters, with or without a caller's time cue."""
    parts = [CUED if cued else SINGLE_PASS]
    if params.gate_relief:
        parts.append(RELIEF)
    if cued and params.cue_stages > 2:
        parts.append(STAGES)
    if params.cue_propagation and not cued:  # a caller's cue takes the place of a propagated one
        parts.append(PROPAGATED)
    return "+".join(parts)
