"""What the gate decided: one decision per row, and the result the later stages and the trace read."""

from __future__ import annotations

from dataclasses import dataclass

from cuedrecall.recall.candidates import Candidate


@dataclass(frozen=True)
class Decision:
    ref: str
    signal: str | None
    score: float | None
    threshold: float | None
    origin: str | None  # "calibrated" | "heuristic" | "outlier" | "repeats" | None (profile and unscored rows)
    passed: bool
    reason: str | None = None  # below_gate, common_words_only, profile_small_pool, unscored_volume
    lexical: bool = False  # judged on its lexical arms' votes, not its cosine (a row a vector arm also reached)
    closeness: float | None = None  # a row refused below_gate: score / threshold on its signal nearest to passing


@dataclass(frozen=True)
class GateResult:
    """The rows admitted, every decision, and the gate's inputs as it read them (for the trace)."""

    admitted: list[Candidate]
    decisions: list[Decision]
    fallback: bool
    rescued: list[str]  # refs the identifier fallback admitted; empty unless ``fallback``
    calibrated: dict[str, float]
    heuristic_min: float
    pool: int
    bar: dict[str, tuple[float, str]] | None = None  # per signal (cosine, and rrf or rsf): (threshold, origin)
