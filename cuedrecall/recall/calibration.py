"""Calibrated gate thresholds, one per signal, kept in the sidecar ``<db>.calibration.json``.

Labels come from time alone: two records written within 30 minutes of each other
are taken to belong together (a positive), any other pair is null. The threshold
maximises TPR + beta x (1 - FPR) over 256 candidates (``separation``), or is a
quantile (``percentile``) or mean + z sd (``zscore``) of the null scores.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

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


@dataclass
class Calibration:
    """Thresholds per agent and signal, the betas, and the fingerprint they were made under."""

    path: Path | None
    embedding_model: str
    scoring: str
    agents: dict[str, dict[str, float]] = field(default_factory=dict)
    betas: dict[str, float] = field(default_factory=dict)
    stale: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def load(cls, db_path: str, embedding_model: str, scoring: str) -> "Calibration":
        """Read the sidecar; one made under another model or scoring version is marked stale."""
        path = None if db_path == ":memory:" else Path(db_path + ".calibration.json")
        found = cls(path, embedding_model, scoring)
        if path is None or not path.exists():
            return found
        data = json.loads(path.read_text(encoding="utf-8"))
        found.agents = {a: dict(t) for a, t in data.get("agents", {}).items()}
        found.betas = dict(data.get("betas", {}))
        found.stale = data.get("embedding_model") != embedding_model or data.get("scoring_version") != scoring
        return found

    def save(self) -> bool:
        """Write the sidecar atomically (temp file renamed into place); False for an in-memory store."""
        if self.path is None:
            return False
        data = {"embedding_model": self.embedding_model, "scoring_version": self.scoring,
                "agents": self.agents, "betas": self.betas}
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=self.path.name, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=1, sort_keys=True)
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.path)
        return True

    def thresholds(self, agent_id: str) -> dict[str, float]:
        """Calibrated gate thresholds for the agent (its own, else the global ones made with agent "")."""
        if self.stale:
            return {}
        return dict(self.agents.get(agent_id) or self.agents.get("", {}))

    def vector_threshold(self, agent_id: str, default: float) -> float:
        return self.thresholds(agent_id).get("cosine", default)

    def beta(self, agent_id: str, default_precision: str) -> float:
        return self.betas.get(agent_id, PRECISION_BETA[default_precision])

    def set(self, agent_id: str, signal: str, value: float) -> None:
        with self._lock:
            self.agents.setdefault(agent_id, {})[signal] = value
