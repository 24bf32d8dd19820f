"""The recall trace (trace_version 1), declared once: every section's shape as the recorder writes it.

The recorder builds these, ``trace_view`` prints them and
``benchmarks/recall_trace_confirm.py`` reads them. The trace holds refs, ranks,
scores and reasons, never stored text. Readers of traces from elsewhere (another
version, CPersona) still read defensively: ``Trace`` is ``total=False``.
"""

from __future__ import annotations

from typing import Any, TypedDict

TRACE_VERSION = 1


class ArmHit(TypedDict):
    ref: str
    rank: int  # 0-based, counted before exclude_contents removed any row
    raw: float | None  # cosine, bm25, or None (LIKE fallback, listings)


class FusionRow(TypedDict):
    ref: str
    score: float | None
    votes: dict[str, float]  # arm -> its contribution to the fused score


class _GateDecisionBase(TypedDict):
    ref: str
    signal: str | None  # "cosine", "rrf", "rsf", "profile", or None for an unscored row
    score: float | None
    threshold: float | None
    origin: str | None  # "calibrated" | "heuristic" | "outlier" (small-pool cosine bar) | "repeats" (gate-v2) | None
    passed: bool


class GateDecision(_GateDecisionBase, total=False):
    reason: str  # below_gate, common_words_only (gate-v1), profile_small_pool, unscored_volume
    lexical: bool  # gate-v1: judged on its lexical arms' votes (score), not on the cosine a vector arm gave it


class _GateBase(TypedDict):
    decisions: list[GateDecision]
    calibrated: dict[str, float]
    heuristic_min: float
    pool: int
    gate_fallback: bool


class Bar(TypedDict):
    threshold: float
    origin: str  # "calibrated" | "heuristic" | "outlier"


class GateSection(_GateBase, total=False):
    fallback_admitted: list[str]
    bar: dict[str, Bar]  # the thresholds this recall applied: cosine, and the fusion's signal (lexical votes)


class AutocutSection(TypedDict, total=False):
    fired: bool
    at: int
    dropped: list[str]


class OrderSection(TypedDict):
    before_cut: list[str]
    limit: int
    cut_by_count: list[str]


class _ReservationBase(TypedDict):
    ref: str
    kind: str  # in append order: "relief" (gate relief's rows), the held seats "block", "keyword", "far", "cue",
    # "propagation"


class Reservation(_ReservationBase, total=False):
    relieved: bool  # relief-v1: a cue seat the cue left empty took this row one step under the gate


class Stage(TypedDict, total=False):
    stage: int
    searched: str
    confidence: str
    period: list[str] | None
    found: int
    next: str | None
    reason: str  # gate relief's stage: why it ran (FILTER_DROP suspected, or a cue seat for a row just under)
    admitted: list[str]  # gate relief: the rows it appended after the answer
    source: str  # cue propagation: the strong hit whose period was searched
    lifted: list[dict[str, Any]]  # cue propagation: the rows it moved, {ref, from, to}
    seated: list[str]  # gate relief: the rows one step under the gate that the cue's empty seats took
    stopped: str  # the cue's last stage: why the loop stopped (recall/stopping.py)


class Suspect(TypedDict):
    stage: int
    code: str  # CANDIDATE_MISS, ...
    reason: str
    action: str


class CueSection(TypedDict):
    bound: int
    confidence: str
    lifted: list[dict[str, Any]]  # {"ref", "from", "to"}: "from" is a keyword, hence a plain dict
    seated: list[str]


class CueIgnored(TypedDict):
    reason: str  # "recent_only"
    period: list[str] | None


class BlockSection(TypedDict):
    order: str  # "vector": the best blocks re-ranked by int8 cosine; "hamming": by sign-bit distance alone


class _PolicyBase(TypedDict):
    scoring: str
    process: str  # "single-pass-v0" | "cued-v0.3", then "+relief-v1", "+stages-v1", "+propagated-v1" (recall/policy.py)
    gate: str  # "gate-v2" (recall/gate_policy.py), or "gate-v1" / "gate-v0" when the setting asks for an earlier gate


class Policy(_PolicyBase, total=False):
    propagation: str  # "propagation-v1", only when the propagation seat ran


class PropagationSeat(TypedDict):
    ref: str
    fused_rank: int  # 1-based, among the candidates in the deeper search's order
    cosine_rank: int  # 1-based, among the candidates by cosine with the anchor


class _PropagationBase(TypedDict):
    policy: str  # "propagation-v1"
    depth: int  # the deeper search's depth, max(100, depth)
    candidates: int  # rows of the deeper search the recall did not already hold
    seated: list[PropagationSeat]


class PropagationSection(_PropagationBase, total=False):
    anchor: str  # the answer's first real record; absent when the answer held none (then nothing ran)


class _StaleConflictBase(TypedDict):
    why: str  # stale-v1's rule: same_msg_id, supersedes, corrects, corrects+supersedes, entity_attribute


class StaleConflict(_StaleConflictBase, total=False):
    current: str
    undecided: list[str]  # the newest, sharing one time: which is current is unknown
    stale: list[str]  # newest first


class Trace(TypedDict, total=False):
    trace_version: int
    policy: Policy
    server_version: str | None
    scope: dict[str, Any]
    request: dict[str, Any]
    config: dict[str, Any]
    arms: dict[str, list[ArmHit]]  # by the declared names (recall/arm_registry.py): the fused arms, then the others
    # where they ran (block, far, cue, cue_stage_1, propagated_cue, propagation); a blank query's newest
    excluded: list[str]
    fusion: list[FusionRow]
    scoring: dict[str, dict[str, float]]  # "episode_penalty" | "prior" -> ref -> factor; *_context -> ref -> lender
    gate: GateSection
    autocut: AutocutSection
    order: OrderSection
    reservation: list[Reservation]
    block: BlockSection
    stages: list[Stage]
    suspected: list[Suspect]
    cue: CueSection
    cue_ignored: CueIgnored
    propagation: PropagationSection
    conflicts: list[StaleConflict]  # recall/stale.py: returned rows that are versions of one thing, refs
    coverage: dict[str, Any]  # recall/coverage.py's ledger
    bounds: dict[str, Any]  # recall/bounds.py: the caps in force and what each left out
    keyword_terms: dict[str, Any]  # arm -> its keyword-budget-v2 plan (store/term_counts.py) and the pass it used
    timing_ms: dict[str, float]


SECTIONS: tuple[str, ...] = tuple(Trace.__annotations__)
