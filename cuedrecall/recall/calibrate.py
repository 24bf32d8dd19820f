"""The calibrate_threshold tool: measure an agent's score distributions and set its gate, per signal."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

import numpy as np

from cuedrecall.embed import EmbeddingError
from cuedrecall.recall.arms import retrieve
from cuedrecall.recall.calibration import (
    COSINE_FLOOR, MIN_SAMPLES, TEMPORAL_WINDOW_S, CalibrationError, cosine_samples, separation, threshold_from,
)
from cuedrecall.recall.context import RecallContext
from cuedrecall.recall.fusion import fuse
from cuedrecall.recall.trace import Recorder
from cuedrecall.store.base import Scope

if TYPE_CHECKING:
    from cuedrecall.api import Memory

PSEUDO_QUERIES = 40
PSEUDO_DEPTH = 20
DRAWS = 3
MIN_LEXICAL_POSITIVES = 5


def calibrate(memory: "Memory", agent_id: str, sample_size: int, method: str, percentile: float,
              z_factor: float, seed: int = 0) -> dict[str, Any]:
    """Set the agent's cosine threshold (and its lexical threshold where the data allows); report both."""
    ids, vectors, times = memory.store_.embedded_memories(agent_id)
    if len(ids) < MIN_SAMPLES:
        raise CalibrationError(f"Need at least {MIN_SAMPLES} embedded memories to calibrate, found {len(ids)}")
    rng = random.Random(seed)
    pick = sorted(rng.sample(range(len(ids)), min(sample_size, len(ids))))
    beta = memory.calibration.beta(agent_id, memory.settings.recall_precision)
    positives, nulls = cosine_samples(vectors[pick], times[pick])
    old = memory.calibration.thresholds(agent_id)
    cosine = threshold_from(method, positives, nulls, beta, percentile, z_factor, COSINE_FLOOR)
    memory.calibration.set(agent_id, "cosine", cosine)
    report: dict[str, Any] = {
        "ok": True, "agent_id": agent_id, "scope": "per_agent" if agent_id else "global", "method": method,
        "beta": beta, "sampled_embeddings": len(pick), "num_pairs": int(nulls.size),
        "embedding_dim": int(vectors.shape[1]), "embedding_model": memory.embedder.model,
        "distribution": {"null_mean": round(float(nulls.mean()), 4), "null_std": round(float(nulls.std()), 4),
                         "positive_mean": round(float(positives.mean()), 4)},
        "null_admit_rate": round(float((nulls >= cosine).mean()), 4),
        "old_thresholds": old, "new_thresholds": {"cosine": cosine},
    }
    if agent_id:
        lexical = _lexical_threshold(memory, agent_id, ids, times, beta, rng)
        report["lexical"] = lexical
        if "threshold" in lexical:
            memory.calibration.set(agent_id, memory.settings.recall_mode, lexical["threshold"])
            report["new_thresholds"][memory.settings.recall_mode] = lexical["threshold"]
    report["sidecar_persisted"] = memory.calibration.save()
    return report


def _lexical_threshold(memory: "Memory", agent_id: str, ids: np.ndarray, times: np.ndarray, beta: float,
                       rng: random.Random) -> dict[str, Any]:
    """The fused-score threshold for lexical-only rows: pseudo-queries drawn from the agent's own memories."""
    from cuedrecall.recall.request import recall_params

    draws = []
    for _ in range(DRAWS):
        positives, nulls = [], []
        for i in rng.sample(range(len(ids)), min(PSEUDO_QUERIES, len(ids))):
            ref = f"mem:{int(ids[i])}"
            text = memory.store_.records([ref])[ref].text
            params = recall_params(memory, agent_id, text, PSEUDO_DEPTH, False, [])
            try:
                vector = memory.queries.embed_query(text)
            except EmbeddingError:
                vector = None  # the lexical-only rows this measures do not need it
            ctx = RecallContext(memory.store_, Scope(agent_id), text, vector, params, memory.clock(), Recorder())
            rows = [row for row in fuse(ctx, retrieve(ctx)) if row.lexical_only and row.ref != ref]
            when = memory.store_.record_times([row.ref for row in rows])
            for row in rows:
                if row.ref in when:
                    close = abs(when[row.ref] - times[i]) <= TEMPORAL_WINDOW_S
                    (positives if close else nulls).append(row.fused)
        if len(nulls) >= MIN_SAMPLES and len(positives) >= MIN_LEXICAL_POSITIVES:
            draws.append(separation(np.array(positives), np.array(nulls), beta, 0.0))
    if not draws:
        return {"skipped": "too few lexical-only rows with time labels (need 10 null and 5 positive)"}
    return {"threshold": sorted(draws)[len(draws) // 2], "draws": draws}
