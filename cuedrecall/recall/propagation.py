"""The propagation seat (policy propagation-v1): one held place for what a deeper search ranks near the best row.

The rule (CPersona 2.6's propagation seat, docs/recall-process.md#the-propagation-seat, off by default): for a
non-blank query whose gate fallback did not fire, the anchor is the first real
record of the answer (before any cue move). The ordinary arms run again at depth
max(100, depth), then scoring, the gate, autocut and the prior, with the trace
suspended; the rows of that order the recall does not already hold are the
candidates. Each is scored

    0.65 / (60 + fused_rank) + 0.35 / (60 + cosine_rank)

with 1-based ranks among the candidates: fused_rank in the deeper order,
cosine_rank by the cosine of its stored vector with the anchor's (both unit
length; a row without a vector ranks after every row with one, in fused order).
The best (ties: the better fused rank) takes the one seat, appended last. It says
``signal: propagation``, ``admission: reservation`` and both ranks; the trace
records the reservation (kind ``propagation``), the section ``propagation``, the
candidates' scores as the arm ``propagation``, and ``policy.propagation``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from cuedrecall.recall.arm_registry import PROPAGATION
from cuedrecall.recall.candidates import Candidate
from cuedrecall.recall.context import RecallContext
from cuedrecall.recall.pipeline import rank
from cuedrecall.recall.trace import Recorder
from cuedrecall.recall.trace_schema import PropagationSection
from cuedrecall.store.base import Hit

POLICY = "propagation-v1"
DEPTH = 100  # the deeper search goes at least this deep
FUSED_WEIGHT, COSINE_WEIGHT = 0.65, 0.35
OFFSET = 60  # the reciprocal-rank constant of the score
SEATS = 1


def propagation_seat(
    ctx: RecallContext, answer: list[Candidate], present: list[Candidate], gate_fallback: bool
) -> list[Candidate]:
    """The propagation seat, or nothing; ``answer`` is the count's rows before any cue move."""
    p = ctx.params
    if not p.propagation_seat or ctx.blank or gate_fallback:
        return []
    depth = max(DEPTH, p.depth)
    section: PropagationSection = {"policy": POLICY, "depth": depth, "candidates": 0, "seated": []}
    anchor = next((row.ref for row in answer if not row.is_profile and ctx.facts.get(row.ref) is not None), None)
    seated: list[Candidate] = []
    if anchor is not None:
        held = {row.ref for row in present}
        deeper = rank(_suspended(ctx, depth)).ordered
        candidates = [
            row.ref
            for row in deeper
            if not row.is_profile and row.ref not in held and ctx.facts.get(row.ref) is not None
        ]
        ranked = _ranked(ctx, anchor, candidates)
        hits = [Hit(ref, place, score) for place, (score, ref, _, _) in enumerate(ranked)]
        ctx.recorder.arms({PROPAGATION.name: hits})
        for _score, ref, fused_rank, cosine_rank in ranked[:SEATS]:
            detail = {"fused_rank": fused_rank, "cosine_rank": cosine_rank}
            seated.append(Candidate(ref, seat="propagation", seat_detail=detail))
            ctx.recorder.reservation(ref, "propagation")
            section["seated"].append({"ref": ref, "fused_rank": fused_rank, "cosine_rank": cosine_rank})
        section["candidates"] = len(candidates)
        section["anchor"] = anchor
    ctx.recorder.propagation(section)
    return seated


def _suspended(ctx: RecallContext, depth: int) -> RecallContext:
    """The same recall at another depth, recording nothing; it shares the records and statistics already read."""
    deeper = replace(ctx, params=replace(ctx.params, depth=depth), recorder=Recorder())
    deeper.facts = ctx.facts
    deeper._cache = ctx._cache
    return deeper


def _ranked(ctx: RecallContext, anchor: str, candidates: list[str]) -> list[tuple[float, str, int, int]]:
    """(score, ref, fused_rank, cosine_rank) of every candidate, best first (ties: the better fused rank)."""
    if not candidates:
        return []
    vectors = ctx.store.vectors([anchor, *candidates])
    cosines = _cosines(vectors.get(anchor), [vectors.get(ref) for ref in candidates])
    by_cosine = sorted(range(len(candidates)), key=lambda i: (cosines[i] is None, -(cosines[i] or 0.0), i))
    cosine_rank = {i: place + 1 for place, i in enumerate(by_cosine)}
    scored = [
        (FUSED_WEIGHT / (OFFSET + i + 1) + COSINE_WEIGHT / (OFFSET + cosine_rank[i]), ref, i + 1, cosine_rank[i])
        for i, ref in enumerate(candidates)
    ]
    return sorted(scored, key=lambda item: (-item[0], item[2]))


def _cosines(anchor: np.ndarray | None, vectors: list[np.ndarray | None]) -> list[float | None]:
    """Cosine of each vector with the anchor's, both made unit length; None without a comparable vector."""
    if anchor is None:
        return [None] * len(vectors)
    usable = [(i, v) for i, v in enumerate(vectors) if v is not None and v.shape == anchor.shape]
    out: list[float | None] = [None] * len(vectors)
    if not usable:
        return out
    matrix = np.stack([v for _, v in usable]).astype(np.float64)
    norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(anchor) or 1.0)
    values = (matrix @ anchor.astype(np.float64)) / np.where(norms > 0, norms, 1.0)
    for (i, _), value in zip(usable, values):
        out[i] = float(value)
    return out
