"""Calibrated gate thresholds, one per signal, kept by the store beside the data.

Labels come from time alone: two records written within 30 minutes of each other
are taken to belong together (a positive), any other pair is null. The threshold
maximises TPR + beta x (1 - FPR) over 256 candidates (``separation``), or is a
quantile (``percentile``) or mean + z sd (``zscore``) of the null scores.

Beside its thresholds, an agent's calibration keeps its record in the same table,
under signals that start with ``@`` (never applied as thresholds): how many memories
the agent held when it was measured (``@memories_at``) and whether it was automatic
(``@auto`` 1) or asked for (0). Automatic calibration runs as an agent's memories
reach each of ``AUTO_MILESTONES`` (``handlers/calibrate.py``).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from cuedrecall.store.base import CalibrationStore, Threshold
from cuedrecall.store.bounded import Lru

PRECISION_BETA = {"strict": 2.0, "balanced": 1.0, "lenient": 0.5}
TEMPORAL_WINDOW_S = 30 * 60
CANDIDATES = 256
COSINE_FLOOR = 0.05
MIN_SAMPLES = 10
AUTO_MILESTONES = (50, 200, 1000)  # an agent's gate is calibrated anew as its memories reach each of these
RECORD = "@"  # a calibration row whose signal starts with this is the calibration's record, not a threshold
MEMORIES_AT = "@memories_at"
GROWTH_MAX = 4096  # agents whose growth toward the next milestone is estimated in memory (docs/caches.md)
AUTO = "@auto"


class CalibrationError(ValueError):
    """Not enough data to calibrate; the message says what is missing."""


def separation(positives: np.ndarray, nulls: np.ndarray, beta: float, floor: float) -> float:
    """The candidate threshold with the best TPR + beta * (1 - FPR); the first one on ties."""
    low = float(min(positives.min(), nulls.min()))
    high = float(max(positives.max(), nulls.max()))
    candidates = np.linspace(low, high, CANDIDATES)
    tpr = (positives[None, :] >= candidates[:, None]).mean(axis=1)
    fpr = (nulls[None, :] >= candidates[:, None]).mean(axis=1)
    best = int(np.argmax(tpr + beta * (1 - fpr)))
    return round(max(float(candidates[best]), floor), 4)


def threshold_from(
    method: str, positives: np.ndarray, nulls: np.ndarray, beta: float, percentile: float, z_factor: float, floor: float
) -> float:
    if method == "separation":
        return separation(positives, nulls, beta, floor)
    if method == "percentile":
        return round(max(float(np.quantile(nulls, percentile)), floor), 4)
    return round(max(float(nulls.mean() + z_factor * nulls.std()), floor), 4)


def due_milestone(memories: int, measured_at: int | None) -> int | None:
    """The highest milestone the agent has reached since it was last measured (at ``measured_at`` memories, None:
    never); None when none is due."""
    reached = [m for m in AUTO_MILESTONES if m <= memories and (measured_at is None or m > measured_at)]
    return reached[-1] if reached else None


def next_milestone(measured_at: int | None) -> int | None:
    """The first milestone above ``measured_at`` (the first of all when never measured); None after the last."""
    return next((m for m in AUTO_MILESTONES if measured_at is None or m > measured_at), None)


def cosine_samples(vectors: np.ndarray, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(positives, nulls): consecutive records within 30 minutes vs every pair of the sample."""
    sims = vectors @ vectors.T
    upper = np.triu_indices(len(vectors), k=1)
    nulls = sims[upper]
    order = np.argsort(times, kind="stable")
    close = [(a, b) for a, b in itertools.pairwise(order) if abs(times[b] - times[a]) <= TEMPORAL_WINDOW_S]
    if len(close) >= MIN_SAMPLES:
        positives = np.array([sims[a, b] for a, b in close])
    else:  # too few neighbours in time: each record's best partner stands in
        masked = sims - 2 * np.eye(len(vectors))
        positives = masked.max(axis=1)
    return positives, nulls


class Calibration:
    """The calibrated gate as the store holds it, read under one fingerprint (embedding model, scoring version).

    A threshold measured under another fingerprint is stale: it is never applied,
    and the server recalibrates at start when allowed. Reads are cached by the store
    until any connection changes the calibration.
    """

    def __init__(self, store: CalibrationStore, embedding_model: str, scoring: str) -> None:
        self.store = store
        self.embedding_model = embedding_model
        self.scoring = scoring
        # this process's estimate of each agent's memories and its next milestone (handlers/calibrate.py), so a
        # write checks for a milestone without counting the agent's memories
        self.growth: Lru[tuple[int, int | None]] = Lru(GROWTH_MAX)  # an agent that left is counted again
        # the current rows split by agent (thresholds, records), kept while the store hands back the same cached
        # list: every recall reads them, and they change only when some connection writes the table
        self._split: tuple[list[Threshold], dict[str, dict[str, float]], dict[str, dict[str, float]]] | None = None

    def _current(self, row: Threshold) -> bool:
        return (row.embedding_model, row.scoring_version) == (self.embedding_model, self.scoring)

    @property
    def stale(self) -> bool:
        return any(not self._current(row) for row in self.store.thresholds())

    def stale_agents(self) -> list[str]:
        return sorted({row.agent_id for row in self.store.thresholds() if not self._current(row)})

    def agents(self) -> dict[str, dict[str, float]]:
        """agent -> signal -> threshold, current fingerprint only (the calibrations' records left out)."""
        return self._current_rows()[0]

    def _records(self) -> dict[str, dict[str, float]]:
        return self._current_rows()[1]

    def _current_rows(self) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
        rows = self.store.thresholds()
        if self._split is None or self._split[0] is not rows:
            thresholds: dict[str, dict[str, float]] = {}
            records: dict[str, dict[str, float]] = {}
            for row in rows:
                if self._current(row):
                    into = records if row.signal.startswith(RECORD) else thresholds
                    into.setdefault(row.agent_id, {})[row.signal] = row.value
            self._split = (rows, thresholds, records)
        return self._split[1], self._split[2]

    def measured_at(self, agent_id: str) -> int | None:
        """How many memories the agent held when its current calibration was measured (or tried); None: never."""
        value = self._records().get(agent_id, {}).get(MEMORIES_AT)
        return None if value is None else int(value)

    def record(self, agent_id: str) -> dict[str, Any]:
        """Which calibration this agent's recall applies, for the trace: {origin: auto | explicit | none,
        memories_at}. The agent's own, else the global one (agent ""), as ``thresholds`` reads them."""
        agents = self.agents()
        owner = agent_id if agents.get(agent_id) else "" if agents.get("") else None
        if owner is None:
            return {"origin": "none", "memories_at": None}
        record = self._records().get(owner, {})
        memories = record.get(MEMORIES_AT)
        return {
            "origin": "auto" if record.get(AUTO) == 1.0 else "explicit",
            "memories_at": None if memories is None else int(memories),
        }

    def stamp(self, agent_id: str, *, auto: bool, memories: int) -> list[Threshold]:
        """The calibration's record, ready to write with its thresholds (or alone, for a measurement that failed)."""
        return [
            self.threshold(agent_id, AUTO, 1.0 if auto else 0.0),
            self.threshold(agent_id, MEMORIES_AT, float(memories)),
        ]

    def thresholds(self, agent_id: str) -> dict[str, float]:
        """Calibrated gate thresholds for the agent (its own, else the global ones made with agent "")."""
        agents = self.agents()
        return dict(agents.get(agent_id) or agents.get("", {}))

    def beta(self, agent_id: str, default_precision: str) -> float:
        return self.store.betas().get(agent_id, PRECISION_BETA[default_precision])

    def overridden(self, agent_id: str) -> bool:
        return agent_id in self.store.betas()

    def threshold(self, agent_id: str, signal: str, value: float) -> Threshold:
        """A threshold stamped with this fingerprint, ready to write."""
        return Threshold(agent_id, signal, value, self.embedding_model, self.scoring)

    def set(self, agent_id: str, signal: str, value: float) -> None:
        """Write one threshold in a transaction of its own."""
        with self.store.write() as conn:
            self.store.set_thresholds(conn, [self.threshold(agent_id, signal, value)])
