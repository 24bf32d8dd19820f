"""Building blocks: every record's text divided (``text.blocks.divide``) and each block embedded, in the background.

The writes that change a record's text (store, archive_episode, update_memory,
import, merge) queue a ``build_blocks`` task in the same transaction as the write
(``queue_build``), so a write that commits has its build queued and one that
rolls back has none. A ``BlockBuilder`` (one daemon thread per open ``Memory``)
claims the queue's tasks and runs them:

- ``build_blocks {ref}``: the record's text is divided; a text of two or more
  blocks has each block embedded (batches of ``BATCH``), kept as sign bits
  (``np.packbits(v > 0)``, MSB first) and an int8 code (``round(v * 127 /
  max|v|)``; an all-zero vector is refused), written only while the record still
  has the text that was divided (else the task just ends: the newer text has its
  own task). A text of one block is marked done.
- ``backfill_blocks {after}``: records stored before blocks existed (or whose
  set went with a change of model): at most ``BACKFILL_RECORDS`` records,
  ``BACKFILL_CHARS`` characters and ``BACKFILL_SECONDS`` a run, walking memories
  then episodes by id, re-queued with its cursor while records may remain.
  Queued when a builder thread starts (a server's start), unless one is pending.
- ``calibrate {agent_id}``: an agent's gate, measured in the background
  (``handlers/calibrate.run_task``), queued as its memories reach a milestone.

The same queue carries ``reembed_vectors`` (``handlers.reembed``): a store whose
vectors another model made is re-embedded by this thread too.

A task that fails (the embedder gives no vector) is retried ``RETRY_DELAY_S``
later, and dropped after TASK_ATTEMPTS failures (the store's rule). A claim lasts
``LEASE_S``: the task of a process killed mid-task is claimed again after that.
Leases and delays are wall-clock seconds (``time.time``): they are between
processes, not record times, so the injected clock does not drive them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cuedrecall import heap
from cuedrecall.embed import EmbeddingError
from cuedrecall.errors import StoreClosedError, StoreError
from cuedrecall.handlers import calibrate, reembed
from cuedrecall.runtime import Runtime
from cuedrecall.store.base import BlockSet, Task, is_ref
from cuedrecall.text.blocks import divide

log = logging.getLogger("cuedrecall.blocks")

BUILD = "build_blocks"
BACKFILL = "backfill_blocks"
BATCH = 64  # block texts per embedding call
BACKFILL_RECORDS = 500  # records one backfill run walks at most
BACKFILL_CHARS = 500_000  # characters one backfill run divides at most
BACKFILL_SECONDS = 60.0  # and the time it may take (well under the lease)
LEASE_S = 300.0  # how long a claim holds a task before another process may take it
RETRY_DELAY_S = 30.0  # a failed task is due again this much later
IDLE_S = 0.5  # how often an idle builder looks for due tasks
QUEUED = {"status": "queued"}


class BuildError(Exception):
    """A block set could not be made (no vector from the embedder, an all-zero vector)."""


def building(rt: Runtime) -> bool:
    """Whether blocks are built: the setting is on and the embedder makes vectors."""
    return rt.settings.block_build_enabled and rt.embedder.available


def queue_build(rt: Runtime, conn: Any, ref: str) -> bool:
    """Queue the record's build inside the write that stored its text; False (nothing queued) when blocks are
    not built."""
    if not building(rt):
        return False
    rt.store.enqueue(conn, BUILD, {"ref": ref})
    return True


def quantise(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sign bits packed MSB first, int8 codes scaled so each row's largest component is ±127)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    peak = np.abs(vectors).max(axis=1) if vectors.size else np.zeros(len(vectors))
    if np.any(peak == 0):
        raise BuildError("an all-zero vector has neither a sign nor an int8 code")
    codes = np.round(vectors * (127.0 / peak[:, None])).astype(np.int8)
    return np.packbits(vectors > 0, axis=1), codes


def _embedded(rt: Runtime, texts: list[str]) -> np.ndarray:
    out: list[np.ndarray] = []
    for start in range(0, len(texts), BATCH):
        batch = rt.embed(texts[start : start + BATCH])
        vectors = [v for v in batch if v is not None]
        if len(vectors) < len(batch):
            raise BuildError(f"the embedder ({rt.embedder.model}) gave no vector for a batch of block texts")
        out += vectors
    return np.stack(out).astype(np.float32)


def block_sets(rt: Runtime, records: Sequence[tuple[str, str, str]]) -> list[BlockSet]:
    """The block sets of (ref, text, text_hash) records, their blocks embedded together in batches of BATCH.

    A record of fewer than two blocks gets a set without vectors (done, nothing to search).
    """
    model = rt.embedder.model
    divided = [(ref, text, digest, divide(text)) for ref, text, digest in records]
    texts = [span.text(text) for _, text, _, spans in divided if len(spans) > 1 for span in spans]
    bits, codes = quantise(_embedded(rt, texts)) if texts else (None, None)
    out, row = [], 0
    for ref, _, digest, spans in divided:
        shape = tuple((span.start, span.end, span.forced) for span in spans)
        if len(spans) < 2:
            out.append(BlockSet(ref, digest, model, shape, np.zeros((0, 0), np.uint8), np.zeros((0, 0), np.int8)))
            continue
        assert bits is not None and codes is not None
        out.append(BlockSet(ref, digest, model, shape, bits[row : row + len(spans)], codes[row : row + len(spans)]))
        row += len(spans)
    return out


def build(rt: Runtime, records: Sequence[tuple[str, str, str]], *, finish: int | None = None) -> int:
    """Make and write the block sets of (ref, text, text_hash) records in one transaction (and finish the task
    ``finish`` in it); the number written (a record whose text changed meanwhile is not)."""
    sets = block_sets(rt, records)
    with rt.store.write() as conn:
        written = sum(rt.store.write_blocks(conn, block_set) for block_set in sets)
        if finish is not None:
            rt.store.finish_task(conn, finish)
    return written


def backfill_step(
    rt: Runtime,
    after: str | None,
    *,
    agent_id: str = "",
    limit: int | None = None,
    stopping: Callable[[], bool] = lambda: False,
) -> tuple[int, str | None, bool]:
    """One bounded run over the records lacking a block set, after the cursor ``after`` (None: from the start).

    At most BACKFILL_RECORDS records (fewer with ``limit``), BACKFILL_CHARS characters
    and BACKFILL_SECONDS, built in groups of about BATCH blocks. Answers (block sets
    written, the new cursor, whether records may remain after it).
    """
    limit = BACKFILL_RECORDS if limit is None else max(0, min(limit, BACKFILL_RECORDS))
    if not limit:
        return 0, after, True
    rows = rt.store.records_lacking_blocks(after, limit, rt.embedder.model, agent_id=agent_id)
    started, chars, done, cursor = time.monotonic(), 0, 0, after
    group: list[tuple[str, str, str]] = []
    blocks = 0
    for position, row in enumerate(rows):
        group.append(row)
        pieces = len(divide(row[1]))
        blocks += pieces if pieces > 1 else 0  # the group is embedded about a batch at a time
        chars += len(row[1])
        last = position == len(rows) - 1
        over = chars >= BACKFILL_CHARS or time.monotonic() - started > BACKFILL_SECONDS
        if blocks < BATCH and not last and not over and not stopping():
            continue
        written = build(rt, group)  # a record whose text changed meanwhile is not written: its own task builds it
        done, cursor, group, blocks = done + written, group[-1][0], [], 0
        if not last and (over or stopping()):
            return done, cursor, True
    return done, cursor, len(rows) >= limit


def build_report(rt: Runtime) -> dict[str, Any]:
    """What ``cuedrecall build-blocks`` reports, under the current embedder's model, every agent.

    ``records`` = ``records_divided`` (text of two or more blocks: each block embedded,
    ``block_rows`` of them in all) + ``records_single_block`` (text of one block: marked
    done, nothing to search beyond the record's own vector, so no block row) +
    ``records_lacking_blocks`` (no set yet: queued or waiting for the backfill).
    ``pending_tasks``: queue tasks still waiting (builds, backfill, re-embedding, calibration).
    """
    model = rt.embedder.model
    counts = rt.store.block_counts("", model)
    with_set, divided = counts["records_with_blocks"], counts["records_divided"]
    lacking = counts["records_lacking_blocks"]
    return {
        "pending_tasks": rt.store.pending_tasks(),
        "model": model,
        "records": with_set + lacking,
        "records_divided": divided,
        "records_single_block": with_set - divided,
        "records_lacking_blocks": lacking,
        "block_rows": counts["block_rows"],
    }


class BlockBuilder:
    """Runs the queue's tasks: a daemon thread (``start``/``stop``), or the calling thread (``drain``).

    ``runtime`` is called for each task, so a swapped embedder is the one used.
    Within one process one task runs at a time, whichever thread runs it.
    """

    def __init__(
        self,
        runtime: Callable[[], Runtime],
        *,
        now: Callable[[], float] = time.time,
        lease_s: float | None = None,
        idle_s: float = IDLE_S,
    ) -> None:
        self._runtime = runtime
        self._now = now
        self._lease = lease_s
        self._idle = idle_s
        self._stop = threading.Event()
        self._turn = threading.Lock()
        self._thread: threading.Thread | None = None
        # failed tasks whose release failed too (the database went down): (task id, error, due, our lease's end),
        # released again on the next step while the lease is ours, so the task waits the retry delay, not the lease
        self._held: list[tuple[int, str, float, float]] = []

    def start(self) -> None:
        """Queue a backfill when blocks are built and none is pending, and start the thread."""
        if building(self._runtime()):
            self.queue_backfill()
        self._thread = threading.Thread(target=self._loop, name="cuedrecall-blocks", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 60.0) -> None:
        """Ask the thread to stop after its current step, and wait for it (at most ``timeout`` seconds)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def queue_backfill(self) -> bool:
        """Queue a backfill from the start unless one is pending; whether one was queued."""
        store = self._runtime().store
        with store.write() as conn:
            if store.pending_tasks(BACKFILL):
                return False
            store.enqueue(conn, BACKFILL, {"after": None})
        return True

    def drain(self, max_tasks: int | None = None) -> int:
        """Run due tasks in the calling thread until none is due (or ``max_tasks`` ran); how many ran."""
        done = 0
        while max_tasks is None or done < max_tasks:
            if not self.run_one():
                break
            done += 1
        return done

    def run_one(self) -> bool:
        """Claim the oldest due task and run it; False when none is due."""
        with self._turn:
            rt = self._runtime()
            lease = LEASE_S if self._lease is None else self._lease
            self._release_held(rt)
            claimed_at = self._now()
            task = rt.store.claim_task(claimed_at, lease)
            if task is None:
                return False
            try:
                self._run(rt, task)
            except (BuildError, EmbeddingError, StoreError) as exc:
                self._release(rt, task.id, f"{type(exc).__name__}: {exc}", claimed_at + lease)
            except Exception as exc:  # a fault in a task must not stop the builder: retried, then dropped
                log.exception("task %d (%s) failed", task.id, task.kind)
                self._release(rt, task.id, f"{type(exc).__name__}: {exc}", claimed_at + lease)
            return True

    def _release(self, rt: Runtime, task_id: int, error: str, lease_end: float) -> None:
        """Count the failed attempt and release the claim; when the database cannot take that now, keep it to
        release on a later step (``_release_held``)."""
        due = self._now() + RETRY_DELAY_S
        try:
            rt.store.retry_task(task_id, error, due)
        except StoreError:
            self._held.append((task_id, error, due, lease_end))

    def _release_held(self, rt: Runtime) -> None:
        """Release the claims a failed release left held, while the lease is still ours (after it, anyone may
        claim the task anyway, and a late release could clear another process's claim)."""
        held, self._held = self._held, []
        now = self._now()
        for task_id, error, due, lease_end in held:
            if now >= lease_end:
                continue
            try:
                rt.store.retry_task(task_id, error, max(due, now))
            except StoreError:
                self._held.append((task_id, error, due, lease_end))

    def _run(self, rt: Runtime, task: Task) -> None:
        if task.kind == BUILD:
            self._build(rt, task)
        elif task.kind == BACKFILL:
            self._backfill(rt, task)
        elif task.kind == reembed.REEMBED:
            reembed.run_task(rt, task)
        elif task.kind == calibrate.TASK:
            calibrate.run_task(rt, task)
        else:  # a kind this version does not know: nothing to do with it
            log.warning("task %d of unknown kind %r dropped", task.id, task.kind)
            with rt.store.write() as conn:
                rt.store.finish_task(conn, task.id)

    def _build(self, rt: Runtime, task: Task) -> None:
        ref = task.payload.get("ref")
        if (
            not is_ref(ref)
            or (found := rt.store.record_text(ref)) is None
            or not building(rt)
            or rt.store.has_block_set(ref, rt.embedder.model)
        ):
            with rt.store.write() as conn:  # gone, not built here, or already current: nothing to do
                rt.store.finish_task(conn, task.id)
            return
        build(rt, [(ref, *found)], finish=task.id)

    def _backfill(self, rt: Runtime, task: Task) -> None:
        after = task.payload.get("after")
        after = after if is_ref(after) else None
        done, cursor, more = (
            (0, after, False) if not building(rt) else backfill_step(rt, after, stopping=self._stop.is_set)
        )
        with rt.store.write() as conn:
            rt.store.finish_task(conn, task.id)
            if more and not rt.store.pending_tasks(BACKFILL):  # one chain, whoever else started one
                rt.store.enqueue(conn, BACKFILL, {"after": cursor})
        if done:
            log.info("backfill built the blocks of %d records (up to %s)", done, cursor)

    def _loop(self) -> None:
        busy = False  # tasks ran since the queue was last found empty
        while not self._stop.is_set():
            try:
                worked = self.run_one()
            except StoreClosedError:
                return  # the store was closed under the thread
            except Exception:
                log.exception("the block builder failed a step")
                worked = False
            if not worked:
                if busy:
                    heap.trim()  # the burst is over: what it freed goes back to the system
                busy = False
                self._stop.wait(self._idle)
            busy = busy or worked
