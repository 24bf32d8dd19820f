"""The time cue's policy: the constants of the cued recall process; its version is POLICY
(docs/recall-process.md#the-time-cue-cued-v03).

Every number here is part of that version: changing one is a new version, recorded
in the trace's policy.process, not a tuning knob.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from types import MappingProxyType
from typing import Final, Literal

Confidence = Literal["sure", "likely", "vague"]

# policy.process (docs/recall-process.md#policy-names): the policy a call with a cue runs under, and the one without.
POLICY: Final = "cued-v0.3"
SINGLE_PASS_POLICY: Final = "single-pass-v0"

# docs/recall-process.md#reading-a-cue: a three-valued word, not a number, so no caller has to calibrate a weight.
CONFIDENCES: Final[tuple[Confidence, ...]] = ("sure", "likely", "vague")

# docs/recall-process.md#the-bounded-move: L, the most places a row the cue arm found may rise: key = p − L·61/(61 + c).
BOUND: Final[Mapping[Confidence, int]] = MappingProxyType({"sure": 3, "likely": 2, "vague": 1})

# docs/recall-process.md#the-seats: seats held for cue-arm records the answer lacks, as many as L for the step searched.
SEATS: Final[Mapping[Confidence, int]] = MappingProxyType({"sure": 3, "likely": 2, "vague": 1})

# docs/recall-process.md#periods: widening on each side, as a fraction of the period's own length.
MARGIN: Final[Mapping[Confidence, float]] = MappingProxyType({"sure": 0.0, "likely": 0.5, "vague": 1.0})

# docs/recall-process.md#one-revision: the one revision widens by one confidence step; a vague cue has nowhere to go.
WIDER: Final[Mapping[Confidence, Confidence | None]] = MappingProxyType(
    {"sure": "likely", "likely": "vague", "vague": None}
)

# docs/recall-process.md#the-cue-arm: the cue arm searches this deep per half (vector, keyword), whatever the count.
CUE_DEPTH: Final = 50

# docs/recall-process.md#the-bounded-move: the rank constant of the bounded move and of the cue arm's merge
# (rrf k = 60, plus 1).
CUE_RANK_K: Final = 61

# docs/recall-process.md#a-cue-for-today-is-not-used (cued-v0.1): a cue whose unwidened period starts within this
# of now is not used.
RECENT_ONLY: Final = timedelta(hours=24)

# docs/recall-process.md#one-revision: the first stage and at most one revision.
MAX_CUE_STAGES: Final = 2

# docs/recall-process.md#periods: the units of a relative cue; a month is 30 days.
DAY: Final = timedelta(days=1)
WEEK: Final = timedelta(days=7)
MONTH: Final = timedelta(days=30)
UNIT_LENGTH: Final[Mapping[str, timedelta]] = MappingProxyType({"days": DAY, "weeks": WEEK, "months": MONTH})
