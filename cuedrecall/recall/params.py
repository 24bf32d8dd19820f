"""Every knob of one recall, resolved once from the settings, the agent's calibration and the arguments.

No stage reads the settings: what a recall may vary lives here, fixed before the
first stage runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from cuedrecall.config import Settings
from cuedrecall.recall.request import RecallRequest
from cuedrecall.text import normalize_exclusions


@dataclass(frozen=True)
class RecallParams:
    limit: int
    depth: int
    deep: bool
    mode: str  # "rrf" | "rsf"
    rrf_k: int
    vector_floor: float
    window: int
    reach: int
    far_limit: int
    far_weight: float
    fts_enabled: bool
    episode_penalty: bool
    episode_decay_rate: float
    episode_decay_floor: float
    age_rate: float
    age_floor: float
    age_anchor: str
    autocut_enabled: bool
    autocut_ratio: float
    autocut_min: int
    thresholds: dict[str, float]  # calibrated gate threshold per signal, for this agent
    exclusions: tuple[str, ...] = ()
    confidence_enabled: bool = False
    fused_gate_enabled: bool = True
    preview_chars: int = 500
    excerpt_chars: int = 800
    cue_time_limit_ms: int = 1000
    cue_stages: int = 2  # most stages a time cue may run: 2 is cued-v0.3; more is stages-v1 (recall/stopping.py)
    block_retrieval: bool = False
    embedding_model: str = ""  # the model whose blocks the block arm may compare with the query
    keyword_seats: int = 0  # held places for lexical-only rows (0 = off)
    far_seats: bool = False  # held places for memories beyond the scan window, by sign bits
    propagation_seat: bool = False  # one held place for the row a deeper search ranks closest to the best row
    gate_policy: str = "gate-v2"  # "gate-v1": no repeat rule; "gate-v0": a vector-reached row on its cosine alone
    gate_relief: bool = True  # one bounded step under the gate when rows sit just under it (recall/relief.py)
    calibration: str = "none"  # where the thresholds came from: "auto" (on growth), "explicit" or "none"
    word_arm: bool = True  # the stemmed word arm beside the trigram arm (text/words.py)
    short_word_arm: bool = True  # two-character CJK words as substrings (docs/recall-process.md#short-words)
    lexical_coverage: bool = True  # lexical arms' rows by the question's words they hold (recall/lexical_coverage.py)
    episode_context: bool = True  # an episode lends its fused place to its span's memories (recall/episode_context.py)
    time_context: bool = True  # a memory lends part of its place to those recorded around it (recall/time_context.py)
    cue_propagation: bool = False  # a strong hit's day as a vague cue for one more stage (recall/cue_propagation.py)

    @property
    def far_enabled(self) -> bool:
        return self.reach > self.window and self.far_weight > 0


def resolve_params(
    s: Settings,
    calibrated: dict[str, float],
    request: RecallRequest,
    *,
    embedding_model: str = "",
    calibration: str = "none",
) -> RecallParams:
    """The recall's parameters; ``calibrated`` is the agent's thresholds per signal (cosine sets the floor), and
    ``calibration`` where they came from (auto, explicit, none)."""
    limit = min(request.limit, s.recall_library_max_limit)
    blank = not request.query.strip()
    depth = limit if blank else min(max(limit, s.recall_depth_floor), s.recall_library_max_limit)
    vector_threshold = calibrated.get("cosine", s.vector_min_similarity)
    return RecallParams(
        limit=limit,
        depth=depth,
        deep=request.deep,
        mode=s.recall_mode,
        rrf_k=s.rrf_k,
        vector_floor=vector_threshold * s.rrf_threshold_factor,
        window=s.max_memories,
        reach=s.vector_reach,
        far_limit=s.vector_far_limit,
        far_weight=s.prior_far_weight,
        fts_enabled=s.fts_enabled,
        episode_penalty=s.episode_penalty_enabled,
        episode_decay_rate=s.episode_decay_rate,
        episode_decay_floor=s.episode_decay_floor,
        age_rate=s.prior_age_rate,
        age_floor=s.prior_age_floor,
        age_anchor=s.prior_age_anchor,
        autocut_enabled=s.autocut_enabled,
        autocut_ratio=s.autocut_min_gap_ratio,
        autocut_min=s.autocut_min_results,
        thresholds=calibrated if s.fused_gate_enabled else {},
        exclusions=normalize_exclusions(request.exclude_contents),
        confidence_enabled=s.confidence_enabled,
        fused_gate_enabled=s.fused_gate_enabled,
        preview_chars=s.recall_preview_chars,
        excerpt_chars=s.recall_excerpt_chars,
        cue_time_limit_ms=s.recall_cue_time_limit_ms,
        cue_stages=s.recall_cue_stages,
        block_retrieval=s.block_retrieval_enabled and bool(embedding_model),
        embedding_model=embedding_model,
        keyword_seats=s.keyword_seats,
        far_seats=s.far_seats_enabled,
        propagation_seat=s.recall_propagation_seat and request.propagation,
        gate_policy=s.recall_gate,
        gate_relief=s.gate_relief and s.recall_gate != "gate-v0",
        calibration=calibration if calibrated else "none",
        word_arm=s.word_arm_enabled,
        short_word_arm=s.short_word_arm_enabled,
        episode_context=s.episode_context_enabled,
        time_context=s.time_context_enabled,
        lexical_coverage=s.lexical_coverage_enabled,
        cue_propagation=s.cue_propagation,
    )
