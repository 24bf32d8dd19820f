"""Calibrated gate thresholds, one per signal, kept by the store beside the data.

Labels come from time alone: two records written within 30 minutes of each other
are taken to belong together (a positive), any other pair is null. The threshold
maximises TPR + beta x (1 - FPR) over 256 candidates (``separation``), or is a
quantile (``percentile``) or mean + z sd (``zscore``) of the null scores.
"""

from __future__ import annotations

import numpy as np

from cuedrecall.store.base import Store, Threshold

PRECISION_BETA = {"strict": 2.0, "balanced": 1.0, "lenient": 0.5}
METHODS = ("separation", "percentile", "zscore")
TEMPORAL_WINDOW_S = 30 * 60
CANDIDATES = 256
COSINE_FLOOR = 0.05
MIN_SAMPLES = 10


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


def threshold_from(method: str, positives: np.ndarray, nulls: np.ndarray, beta: float, percentile: float,
                   z_factor: float, floor: float) -> float:
    if method == "separation":
        return separation(positives, nulls, beta, floor)
    if method == "percentile":
        return round(max(float(np.quantile(nulls, percentile)), floor), 4)
    return round(max(float(nulls.mean() + z_factor * nulls.std()), floor), 4)


def cosine_samples(vectors: np.ndarray, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(positives, nulls): consecutive records within 30 minutes vs every pair of the sample."""
    sims = vectors @ vectors.T
    upper = np.triu_indices(len(vectors), k=1)
    nulls = sims[upper]
    order = np.argsort(times, kind="stable")
    close = [(a, b) for a, b in zip(order[:-1], order[1:]) if abs(times[b] - times[a]) <= TEMPORAL_WINDOW_S]
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

    def __init__(self, store: Store, embedding_model: str, scoring: str) -> None:
        self.store = store
        self.embedding_model = embedding_model
        self.scoring = scoring

    def _current(self, row: Threshold) -> bool:
        return (row.embedding_model, row.scoring_version) == (self.embedding_model, self.scoring)

    @property
    def stale(self) -> bool:
        return any(not self._current(row) for row in self.store.thresholds())

    def stale_agents(self) -> list[str]:
        return sorted({row.agent_id for row in self.store.thresholds() if not self._current(row)})

    def agents(self) -> dict[str, dict[str, float]]:
        """agent -> signal -> threshold, current fingerprint only."""
        out: dict[str, dict[str, float]] = {}
        for row in self.store.thresholds():
            if self._current(row):
                out.setdefault(row.agent_id, {})[row.signal] = row.value
        return out

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
