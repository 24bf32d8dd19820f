"""The candidate: one row travelling through the single pass, with every score a stage gave it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cuedrecall.recall.arm_registry import ARMS
from cuedrecall.store.base import BlockHit

PROFILE_REF = "profile"


@dataclass
class Candidate:
    """A row and what the stages learned about it. Scores after the episode penalty, where it ran."""

    ref: str
    ranks: dict[str, int] = field(default_factory=dict)  # arm -> 0-based rank on that arm
    votes: dict[str, float] = field(default_factory=dict)  # arm -> contribution to the fused score
    cosine: float | None = None  # similarity from a vector arm (near or far)
    fused: float | None = None  # rrf or rsf score; None for unscored rows (blank-query listing, profile)
    penalty: float = 1.0  # episode boundary penalty factor
    prior: float | None = None  # age weight, where the prior ran
    cue_rank: int | None = None  # rank on the cue arm, where it ranked the row
    seat: str | None = None  # the held seat that admitted the row: block, keyword, far, cue or propagation
    on_votes: bool = False  # the gate admitted it on its lexical votes though a vector arm reached it too
    block: BlockHit | None = None  # the block that reached it, for a block seat
    seat_detail: dict[str, Any] = field(default_factory=dict)  # what its seat says of it (match_reason)
    relieved: float | None = None  # gate relief let it in: its closeness to the gate it failed (recall/relief.py)
    context: str | None = None  # the episode that lent it a context vote (recall/episode_context.py)
    neighbour: str | None = None  # the memory that lent it a time-context vote (recall/time_context.py)

    @property
    def is_profile(self) -> bool:
        return self.ref == PROFILE_REF

    @property
    def vector_reached(self) -> bool:
        return any(arm in self.ranks for arm in ARMS.vector_names)

    @property
    def lexical_only(self) -> bool:
        return not self.vector_reached and not self.is_profile

    def signal(self, mode: str) -> str | None:
        """The score this row is judged on: its own, never one borrowed from another row's arm."""
        if self.is_profile:
            return "profile"
        if self.cosine is not None:
            return "cosine"
        if self.fused is not None:
            return mode
        return None

    def score(self, mode: str) -> float | None:
        signal = self.signal(mode)
        if signal == "cosine":
            return self.cosine
        return self.fused if signal == mode else None
