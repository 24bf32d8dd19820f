"""What one recall works with: its parameters (fixed before the first stage) and its inputs."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from cuedrecall.store.base import Scope

if TYPE_CHECKING:
    from cuedrecall.recall.trace import Recorder
    from cuedrecall.store.sqlite import SqliteStore


@dataclass(frozen=True)
class RecallParams:
    """Every knob of the single pass, resolved from settings and arguments once."""

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

    @property
    def far_enabled(self) -> bool:
        return self.reach > self.window and self.far_weight > 0


@dataclass
class RecallContext:
    """The inputs of one recall, handed to every stage with the recorder."""

    store: "SqliteStore"
    scope: Scope
    query: str
    query_vector: np.ndarray | None
    params: RecallParams
    now: datetime
    recorder: "Recorder"
    started: float = field(default_factory=time.perf_counter)
    cache: dict[str, Any] = field(default_factory=dict)

    @property
    def blank(self) -> bool:
        return not self.query.strip()

    def pool(self) -> int:
        """Memories + episodes in scope: the gate's pool size."""
        if "pool" not in self.cache:
            self.cache["pool"] = sum(self.store.pool_counts(self.scope))
        return self.cache["pool"]

    def profile(self) -> str | None:
        """The agent's profile text, or None without one (read once per recall)."""
        if "profile" not in self.cache:
            found = self.store.profile(self.scope.agent_id)
            self.cache["profile"] = found[0] if found else None
        return self.cache["profile"]

    def minimum(self) -> float:
        """The heuristic gate minimum for this pool, ``deep`` halving it (read once per recall)."""
        if "minimum" not in self.cache:
            self.cache["minimum"] = heuristic_minimum(self.pool()) * (0.5 if self.params.deep else 1.0)
        return self.cache["minimum"]


def heuristic_minimum(pool: int) -> float:
    """0.5 for a tiny pool, falling to 0.2 from about 500 rows: bigger pools hold more near-misses."""
    if pool <= 0:
        return 0.5
    return round(0.5 - 0.3 * min(1.0, math.log(pool + 1) / math.log(500)), 4)
