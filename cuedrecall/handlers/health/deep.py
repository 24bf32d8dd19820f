"""deep_check's checks, in run order, and ``DEEP_CHECKS``: name -> (check, repair or None).

The slower checks of one agent's memory. The content repairs come before the
checks of vectors, so a rewritten memory's fresh vector is what they look at.
CPersona 2.6 has one more check, ``stale_profile``; a client may name it, and is
told it was not run (``NOT_IMPLEMENTED``) rather than refused.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from typing import TypedDict

import numpy as np

from cuedrecall.clock import to_epoch
from cuedrecall.handlers.health.run import (
    KINDS,
    NOTHING,
    Check,
    Finding,
    Repair,
    Run,
    finding,
    reembed,
    ref_items,
    rewrite,
)
from cuedrecall.handlers.rows import json_object
from cuedrecall.store.base import EPISODE, MEMORY, make_ref, memory_vectors

SHORT_CONTENT = 10  # characters
NEAR_DUPLICATE_COSINE = 0.97
NEAR_DUPLICATE_ROWS = 5000  # the agent's newest embedded memories compared pairwise
PAIRS_SHOWN = 20
NORM_TOLERANCE = 1e-3

# CPersona 2.6's deep_check names these too; naming one is answered under "not_run", not refused.
NOT_IMPLEMENTED = {"stale_profile": "not implemented in cuedrecall"}


def _anonymous_source(run: Run) -> Finding:
    """Memories stored without any source."""
    ids = [i for i, text in run.rt.store.scan_memories(run.agent_id, "source") if not json_object(text)]
    return finding(len(ids), f"{len(ids)} memories have no source", ref_items(MEMORY, ids[: run.limit]))


def _short_content(run: Run) -> Finding:
    """Memories holding fewer than SHORT_CONTENT characters (after trimming)."""
    ids = [i for i, text in run.rt.store.scan_memories(run.agent_id, "content") if len(text.strip()) < SHORT_CONTENT]
    return finding(
        len(ids), f"{len(ids)} memories hold fewer than {SHORT_CONTENT} characters", ref_items(MEMORY, ids[: run.limit])
    )


_INNER_RUN = re.compile(r"(?<=\S)(?:[ \t]{2,}|\t)")
_BLANK_LINES = re.compile(r"\n{3,}")


def normalized(text: str) -> str:
    """Whitespace made regular: the ends trimmed, no spaces at a line's end, a run of spaces or tabs (or one
    tab) inside a line made one space (a line's indentation is kept), at most one blank line in a row."""
    lines = [_INNER_RUN.sub(" ", line.rstrip()) for line in text.strip().split("\n")]
    return _BLANK_LINES.sub("\n\n", "\n".join(lines))


def _unnormalized_content(run: Run) -> Finding:
    """Memories with whitespace at their ends or runs of it inside."""
    ids = [i for i, text in run.rt.store.scan_memories(run.agent_id, "content") if normalized(text) != text]
    detail = f"{len(ids)} memories carry extra whitespace (fix: normalised; locked memories are kept)"
    return finding(len(ids), detail, ref_items(MEMORY, ids[: run.limit]))


def _normalize_content(run: Run, found: Finding) -> int:
    """Rewrite the memories with extra whitespace as ``normalized`` makes them, locked ones kept."""
    ids = [i for i, text in run.rt.store.scan_memories(run.agent_id, "content") if normalized(text) != text]
    return rewrite(run, [make_ref(MEMORY, i) for i in ids], normalized)


def _norm_outliers(run: Run) -> list[str]:
    """The refs of the agent's vectors whose L2 norm is off 1 by more than NORM_TOLERANCE."""
    return [
        make_ref(kind, i)
        for kind in KINDS
        for i, vector in run.rt.store.embedded_vectors(kind, run.agent_id)
        if abs(float(np.linalg.norm(vector.astype(np.float64))) - 1.0) > NORM_TOLERANCE
    ]


def _embedding_norm(run: Run) -> Finding:
    """Vectors whose L2 norm is not 1 (within NORM_TOLERANCE): their cosine scores are off."""
    refs = _norm_outliers(run)
    return finding(
        len(refs),
        f"{len(refs)} vectors are not of unit length (fix: embedded again)",
        [{"ref": r} for r in refs[: run.limit]],
    )


def _reembed_norm_outliers(run: Run, found: Finding) -> int:
    """Embed the rows whose vector is not of unit length again, while the embedder can."""
    return reembed(run, _norm_outliers(run)) if run.rt.embedder.available else 0


def close_pairs(vectors: np.ndarray, floor: float, keep: int) -> tuple[int, list[tuple[int, int, float]]]:
    """How many pairs (i < j) of rows have cosine >= floor, and the ``keep`` closest as (i, j, cosine)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = (vectors / np.where(norms == 0, 1, norms)).astype(np.float32)
    count, best = 0, []
    for start in range(0, len(unit), 1000):
        block = unit[start : start + 1000] @ unit.T
        rows = np.arange(start, start + len(block))[:, None]
        mask = (block >= floor) & (np.arange(len(unit))[None, :] > rows)
        r, c = np.nonzero(mask)
        count += len(r)
        scores = block[r, c]
        top = np.argsort(-scores, kind="stable")[:keep]
        best += [(int(start + r[k]), int(c[k]), float(scores[k])) for k in top]
    best.sort(key=lambda pair: (-pair[2], pair[0], pair[1]))
    return count, best[:keep]


class _Pair(TypedDict):
    refs: list[str]  # the two memories
    cosine: float  # rounded to 4 places


def _near_duplicate(run: Run) -> Finding:
    """Pairs of the agent's memories (its newest NEAR_DUPLICATE_ROWS embedded) with cosine >= 0.97."""
    ids, _ = run.rt.store.embedded_memory_ids(run.agent_id)
    ids, vectors = memory_vectors(run.rt.store, ids[-NEAR_DUPLICATE_ROWS:])
    count, best = close_pairs(vectors, NEAR_DUPLICATE_COSINE, PAIRS_SHOWN)
    if not count:
        return NOTHING
    pairs: list[_Pair] = [
        {"refs": [make_ref(MEMORY, int(ids[i])), make_ref(MEMORY, int(ids[j]))], "cosine": round(s, 4)}
        for i, j, s in best
    ]
    items = [{"ref": p["refs"][0], "detail": f"cosine {p['cosine']} with {p['refs'][1]}"} for p in pairs]
    detail = f"{count} pairs of memories are near duplicates (cosine >= {NEAR_DUPLICATE_COSINE}); report only"
    return finding(count, detail, items[: run.limit], {"pairs": pairs})


def _calibration_staleness(run: Run) -> Finding:
    """The agent's calibrated thresholds were measured under another embedding model or scoring version."""
    if run.agent_id not in run.rt.calibration.stale_agents():
        return NOTHING
    return finding(
        1,
        "the agent's thresholds were measured under another embedding model or scoring version and "
        "are not applied; calibrate_threshold measures them again",
        [{"detail": f"agent {run.agent_id!r}: stale calibration"}],
    )


def _empty_span(times: list[float], start: str | None, end: str | None) -> bool:
    """Whether no time lies in the episode's span [start, end] (end defaults to start); False when it has none."""
    low = to_epoch(start)
    if low is None:
        return False
    high = to_epoch(end) if end else None
    low, high = sorted((low, low if high is None else high))
    at = bisect_left(times, low)
    return at == len(times) or times[at] > high


def _orphaned_episodes(run: Run) -> Finding:
    """Episodes whose time span holds none of the agent's memories (episodes without a start are not judged)."""
    times = run.rt.store.memory_epochs(run.agent_id)
    ids = [i for i, start, end in run.rt.store.episode_spans(run.agent_id) if _empty_span(times, start, end)]
    return finding(
        len(ids),
        f"{len(ids)} episodes span a time that holds none of the agent's memories",
        ref_items(EPISODE, ids[: run.limit]),
    )


DEEP_CHECKS: dict[str, tuple[Check, Repair | None]] = {
    "anonymous_source": (_anonymous_source, None),
    "short_content": (_short_content, None),
    "unnormalized_content": (_unnormalized_content, _normalize_content),
    "embedding_norm": (_embedding_norm, _reembed_norm_outliers),
    "near_duplicate": (_near_duplicate, None),
    "calibration_staleness": (_calibration_staleness, None),
    "orphaned_episodes": (_orphaned_episodes, None),
}
