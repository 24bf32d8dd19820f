"""Re-embedding a store whose vectors another model made, in the background, through the persisted task queue:
a batch a step, newest first, so recall stays correct meanwhile and the scan window is whole again first. The
steps, the recalibration after the last and what recall reads meanwhile:
docs/architecture.md#another-models-vectors.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from cuedrecall.embed import EmbeddingError
from cuedrecall.handlers import calibrate
from cuedrecall.runtime import Runtime
from cuedrecall.store.base import Task, is_ref

log = logging.getLogger("cuedrecall.reembed")

REEMBED = "reembed_vectors"
BATCH_ROWS = 128  # rows one task embeds and writes in one transaction


def stale_rows(rt: Runtime, agent_id: str = "") -> dict[str, int]:
    """Rows of each kind whose vector another model than the embedder's made; none while it makes no vectors."""
    if not rt.embedder.available:
        return {}
    return {kind: count for kind, count in rt.store.stale_embeddings(rt.embedder.model, agent_id).items() if count}


def start(rt: Runtime) -> bool:
    """Queue the re-embedding when rows carry another model's vectors and none is pending; whether one is
    pending now (queued here or before)."""
    if not stale_rows(rt):
        return bool(rt.embedder.available and rt.store.pending_tasks(REEMBED))
    with rt.store.write() as conn:
        if not rt.store.pending_tasks(REEMBED):
            rt.store.enqueue(conn, REEMBED, {"before": None})
    return True


def embedded(rt: Runtime, texts: list[str]) -> np.ndarray:
    """The texts' vectors as stored texts, one call; EmbeddingError when the embedder gives none fit to store."""
    vectors = np.asarray(rt.embedder.embed(texts), dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(texts) or not np.all(np.isfinite(vectors)):
        raise EmbeddingError(
            f"the embedder ({rt.embedder.model}) gave {vectors.shape} for {len(texts)} texts, "
            "not one finite vector each"
        )
    return vectors


def write(rt: Runtime, conn: Any, rows: list[tuple[str, str]], vectors: np.ndarray) -> int:
    """Inside a write: each row's new vector, while the row still holds its text and another model's vector; the
    rows written."""
    model = rt.embedder.model
    return sum(
        rt.store.replace_stale_embedding(conn, ref, text, vector, model) for (ref, text), vector in zip(rows, vectors)
    )


def run_task(rt: Runtime, task: Task) -> int:
    """One step of the walk: re-embed a batch below the task's cursor, queue the next step (or, after the last,
    recalibrate); the rows written. EmbeddingError (retried by the queue) when the embedder fails."""
    before = task.payload.get("before")
    before = before if is_ref(before) else None
    rows = rt.store.stale_records(rt.embedder.model, before, BATCH_ROWS) if rt.embedder.available else []
    vectors = embedded(rt, [text for _, text in rows]) if rows else np.zeros((0, 0), np.float32)
    more = len(rows) >= BATCH_ROWS
    with rt.store.write() as conn:
        written = write(rt, conn, rows, vectors)
        rt.store.finish_task(conn, task.id)
        if more and not rt.store.pending_tasks(REEMBED):  # one chain, whoever else started one
            rt.store.enqueue(conn, REEMBED, {"before": rows[-1][0]})
    if written:
        log.info("re-embedded %d rows with %s (down to %s)", written, rt.embedder.model, rows[-1][0])
    if not more and not rt.store.pending_tasks(REEMBED):
        finished(rt)
    return written


def reembed_now(rt: Runtime, agent_id: str, budget: int) -> int:
    """The repair of check_health: re-embed up to ``budget`` of one agent's stale rows ("" = every agent's) in
    this thread, newest first, a batch a transaction; the rows written. The background walk skips them later."""
    done = taken = 0
    before = None
    while rt.embedder.available and taken < budget:
        rows = rt.store.stale_records(rt.embedder.model, before, min(BATCH_ROWS, budget - taken), agent_id)
        if not rows:
            break
        vectors = embedded(rt, [text for _, text in rows])
        with rt.store.write() as conn:
            done += write(rt, conn, rows, vectors)
        taken, before = taken + len(rows), rows[-1][0]
    return done


def finished(rt: Runtime) -> None:
    """After the last step: the thresholds another model measured are measured anew, when allowed."""
    left = sum(stale_rows(rt).values())
    if left:
        log.info(
            "re-embedding walked the store; %d rows written meanwhile under another model wait for the next start", left
        )
    if rt.embedder.available and rt.settings.calibrate_on_model_change and rt.calibration.stale:
        calibrate.recalibrate_stale(rt)
