"""The calibration tools: measure an agent's score distributions and set its gate, per signal.

A calibration is measured first and written after, thresholds and precision
together in one transaction: a measurement that fails changes nothing.

Calibration also runs by itself, in the background (``calibrate_on_growth``): a
write that brings an agent's memories to the next of ``AUTO_MILESTONES`` (50, 200,
1,000) queues a ``calibrate {agent_id}`` task on the persisted queue, and a start
that finds thresholds of another model or scoring version queues one per stale
agent; the queue's runner (``handlers/blocks.BlockBuilder``) measures and writes
it. Either kind is recorded with the thresholds: ``@auto``, ``@memories_at``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np

from cuedrecall.recall.arms import retrieve
from cuedrecall.recall.calibration import (
    COSINE_FLOOR,
    MIN_SAMPLES,
    PRECISION_BETA,
    TEMPORAL_WINDOW_S,
    CalibrationError,
    cosine_samples,
    due_milestone,
    next_milestone,
    separation,
    threshold_from,
)
from cuedrecall.recall.context import RecallContext
from cuedrecall.recall.fusion import fuse
from cuedrecall.recall.params import resolve_params
from cuedrecall.recall.request import RecallRequest
from cuedrecall.runtime import Runtime
from cuedrecall.store.base import MEMORY, Scope, Task, Threshold, make_ref, memory_vectors

PSEUDO_QUERIES = 40
PSEUDO_DEPTH = 20
DRAWS = 3
MIN_LEXICAL_POSITIVES = 5
TASK = "calibrate"  # the queue's task kind: {agent_id}
REEMBED = "reembed_vectors"  # handlers/reembed.py's task kind (that module imports this one)


def measure(
    rt: Runtime,
    agent_id: str,
    beta: float,
    sample_size: int = 200,
    method: str = "separation",
    percentile: float = 0.95,
    z_factor: float = 1.0,
    seed: int = 0,
) -> tuple[dict[str, Any], list[Threshold]]:
    """The report and the thresholds it found; nothing is written. CalibrationError when data is lacking."""
    ids, times = rt.store.embedded_memory_ids(agent_id)
    if len(ids) < MIN_SAMPLES:
        raise CalibrationError(f"Need at least {MIN_SAMPLES} embedded memories to calibrate, found {len(ids)}")
    rng = random.Random(seed)
    pick = sorted(rng.sample(range(len(ids)), min(sample_size, len(ids))))
    read, vectors = memory_vectors(rt.store, ids[pick])  # the sample's vectors only, not the agent's every one
    present = set(read.tolist())  # a row deleted since its id was listed has no vector to read
    pick = [p for p in pick if int(ids[p]) in present]
    positives, nulls = cosine_samples(vectors, times[pick])
    cosine = threshold_from(method, positives, nulls, beta, percentile, z_factor, COSINE_FLOOR)
    found = [rt.calibration.threshold(agent_id, "cosine", cosine)]
    report: dict[str, Any] = {
        "ok": True,
        "agent_id": agent_id,
        "scope": "per_agent" if agent_id else "global",
        "method": method,
        "beta": beta,
        "sampled_embeddings": len(pick),
        "embedded_memories": len(ids),
        "num_pairs": int(nulls.size),
        "embedding_dim": int(vectors.shape[1]),
        "embedding_model": rt.embedder.model,
        "distribution": {
            "null_mean": round(float(nulls.mean()), 4),
            "null_std": round(float(nulls.std()), 4),
            "positive_mean": round(float(positives.mean()), 4),
        },
        "null_admit_rate": round(float((nulls >= cosine).mean()), 4),
        "old_thresholds": rt.calibration.thresholds(agent_id),
        "new_thresholds": {"cosine": cosine},
    }
    if agent_id:
        # the pseudo-recalls run under the new cosine threshold, as the gate will
        calibrated = {**rt.calibration.agents().get(agent_id, {}), "cosine": cosine}
        lexical = _lexical_threshold(rt, agent_id, calibrated, ids, times, beta, rng)
        report["lexical"] = lexical
        if "threshold" in lexical:
            mode = rt.settings.recall_mode
            found.append(rt.calibration.threshold(agent_id, mode, lexical["threshold"]))
            report["new_thresholds"][mode] = lexical["threshold"]
    return report, found


def calibrate_threshold(
    rt: Runtime, agent_id: str, sample_size: int, method: str, percentile: float, z_factor: float
) -> dict[str, Any]:
    """The tool: measure with the agent's precision, then write the thresholds.

    As CPersona reads them (``settings_read``). The answer carries CPersona's keys too:
    ``old_threshold`` and ``new_threshold`` (the cosine gate's; the old one is the setting's while uncalibrated),
    ``percentile``, ``z_factor``.
    """
    sample_size, percentile, z_factor = settings_read(sample_size, percentile, z_factor)
    beta = rt.calibration.beta(agent_id, rt.settings.recall_precision)
    try:
        report, found = measure(rt, agent_id, beta, sample_size, method, percentile, z_factor)
    except CalibrationError as exc:
        return {"ok": False, "error": str(exc), "agent_id": agent_id}
    with rt.store.write() as conn:
        rt.store.set_thresholds(conn, found + _stamp(rt, agent_id, report, auto=False))
    return {
        **report,
        "percentile": percentile,
        "z_factor": z_factor,
        "old_threshold": report["old_thresholds"].get("cosine", rt.settings.vector_min_similarity),
        "new_threshold": report["new_thresholds"]["cosine"],
        "sidecar_persisted": True,  # CPersona's name: persisted, in the database with the data
    }


def settings_read(sample_size: int, percentile: float, z_factor: float) -> tuple[int, float, float]:
    """calibrate_threshold's numbers as CPersona reads them: 0 means the default (200 samples, the 0.95 quantile,
    1.0 deviations), a percentile above 1 is a percent, and a sample under 10 is 10."""
    percentile = percentile or 0.95
    return max(MIN_SAMPLES, sample_size or 200), percentile / 100 if percentile > 1 else percentile, z_factor or 1.0


def paused_calibration(rt: Runtime, bound: dict[str, Any]) -> dict[str, Any]:
    """calibrate_threshold's answer while paused: its real keys, with what was asked and nothing measured."""
    _, percentile, z_factor = settings_read(bound["sample_size"], bound["percentile"], bound["z_factor"])
    agent_id = bound["agent_id"]
    measured = dict.fromkeys(("embedding_dim", "distribution", "null_admit_rate", "new_threshold"))
    old = rt.calibration.thresholds(agent_id).get("cosine", rt.settings.vector_min_similarity)
    return {
        "agent_id": agent_id,
        "scope": "per_agent" if agent_id else "global",
        "method": bound["method"],
        "percentile": percentile,
        "z_factor": z_factor,
        "sampled_embeddings": 0,
        "num_pairs": 0,
        "embedding_model": rt.embedder.model,
        **measured,
        "old_threshold": old,  # the gate in force, as the real answer gives it
        "sidecar_persisted": False,
    }


def set_recall_precision(rt: Runtime, agent_id: str, precision: str, beta: float) -> dict[str, Any]:
    """Recalibrate at a precision: a positive ``beta`` of the caller's own, else the named one; neither clears the
    override. The precision and its thresholds are written together, or neither."""
    cleared = beta <= 0 and not precision
    override = None if cleared else (beta if beta > 0 else PRECISION_BETA[precision])
    effective = PRECISION_BETA[rt.settings.recall_precision] if override is None else override
    try:
        report, found = measure(rt, agent_id, effective)
    except CalibrationError as exc:  # nothing changes when the new gate cannot be measured
        result: dict[str, Any] = {"ok": False, "error": str(exc), "agent_id": agent_id}
    else:
        with rt.store.write() as conn:
            rt.store.set_beta(conn, agent_id, override)
            rt.store.set_thresholds(conn, found + _stamp(rt, agent_id, report, auto=False))
        result = {**report, "sidecar_persisted": True}
    answer = {
        "ok": result["ok"],
        "agent_id": agent_id,
        "precision": _named(effective),
        "beta": effective,
        "cleared": cleared,
        "fused_gate": result.get("lexical"),  # CPersona's key: our second gate, the word scores' (docs/tools.md)
        "calibrate": result,
    }
    return answer if result["ok"] else {**answer, "error": f"nothing changed: {result['error']}"}


def paused_precision(rt: Runtime, bound: dict[str, Any]) -> dict[str, Any]:
    """set_recall_precision's answer while paused: the precision it would set, nothing measured or written."""
    precision, beta = bound["precision"], bound["beta"]
    cleared = beta <= 0 and not precision
    effective = (
        PRECISION_BETA[rt.settings.recall_precision] if cleared else beta if beta > 0 else PRECISION_BETA[precision]
    )
    return {
        "agent_id": bound["agent_id"],
        "precision": _named(effective),
        "beta": effective,
        "cleared": cleared,
        "fused_gate": None,
        "calibrate": None,
    }


def _named(beta: float) -> str:
    return next((name for name, value in PRECISION_BETA.items() if value == beta), "custom")


def get_recall_precision(rt: Runtime, agent_id: str) -> dict[str, Any]:
    beta = rt.calibration.beta(agent_id, rt.settings.recall_precision)
    default = rt.settings.recall_precision
    return {
        "ok": True,
        "agent_id": agent_id,
        "precision": _named(beta),
        "beta": beta,
        "overridden": rt.calibration.overridden(agent_id),
        "default_precision": default,
        "global_precision": default,
        "global_beta": PRECISION_BETA[default],
        "thresholds": rt.calibration.thresholds(agent_id),
    }


def recalibrate_stale(rt: Runtime) -> None:
    """Thresholds made under another model or scoring version mean nothing: measure anew, else drop them."""
    fresh: list[Threshold] = []
    agents = rt.calibration.stale_agents()
    for agent in agents:
        try:
            report, found = measure(rt, agent, rt.calibration.beta(agent, rt.settings.recall_precision))
        except CalibrationError:
            continue  # too little data now; the heuristic gate applies until the next calibration
        fresh += found + _stamp(rt, agent, report, auto=True)
    with rt.store.write() as conn:
        rt.store.drop_thresholds(conn, agents)
        rt.store.set_thresholds(conn, fresh)


def _stamp(rt: Runtime, agent_id: str, report: dict[str, Any], *, auto: bool) -> list[Threshold]:
    """The calibration's record: automatic or asked for, at how many memories (the global one: embedded ones)."""
    return rt.calibration.stamp(
        agent_id, auto=auto, memories=_memories(rt, agent_id) if agent_id else int(report.get("embedded_memories", 0))
    )


def _memories(rt: Runtime, agent_id: str) -> int:
    return rt.store.pool_counts(Scope(agent_id))[0]


def calibrating_on_growth(rt: Runtime) -> bool:
    """Whether gates calibrate themselves (the setting is on and the embedder makes vectors)."""
    return rt.settings.calibrate_on_growth and rt.embedder.available


# Writes that add memories to an agent: the tool and the argument naming the agent (None: 1 memory per "stored").
_GROWING = {"store": "agent_id", "import_memories": "target_agent_id", "merge_memories": "target_agent_id"}


def after_write(rt: Runtime, tool: str, arguments: dict[str, Any], answer: dict[str, Any]) -> bool:
    """Called after every tool: when it added memories to an agent, queue the agent's calibration if a milestone
    is due. Whether one was queued."""
    name = _GROWING.get(tool)
    if name is None or answer.get("ok") is False or not calibrating_on_growth(rt):
        return False
    if tool == "store":
        return answer.get("result") == "stored" and note_growth(rt, str(arguments.get(name) or ""), 1)
    return bool(arguments.get(name)) and not arguments.get("dry_run") and note_growth(rt, str(arguments[name]), None)


def note_growth(rt: Runtime, agent_id: str, added: int | None) -> bool:
    """``added`` memories (None: some) reached the agent: queue its calibration when it holds as many as the next
    milestone. Whether a task was queued.

    The count is this process's estimate, counted exactly at the agent's first write
    and again only when the estimate reaches the next milestone, so a write pays a
    dictionary lookup, not a count that grows with the store.
    """
    if not agent_id:
        return False
    known = rt.calibration.growth.get(agent_id)
    if known is not None and added is not None:
        estimate, upcoming = known[0] + added, known[1]
        if upcoming is None or estimate < upcoming:
            rt.calibration.growth.put(agent_id, (estimate, upcoming))
            return False
    count = _memories(rt, agent_id)
    measured = rt.calibration.measured_at(agent_id)
    due = due_milestone(count, measured)
    rt.calibration.growth.put(agent_id, (count, next_milestone(count if due else measured)))
    if due is None:
        return False
    with rt.store.write() as conn:
        rt.store.enqueue(conn, TASK, {"agent_id": agent_id})
    return True


def queue_stale(rt: Runtime) -> int:
    """At a start that finds thresholds of another model or scoring version: one task per stale agent."""
    agents = rt.calibration.stale_agents()
    with rt.store.write() as conn:
        for agent in agents:
            rt.store.enqueue(conn, TASK, {"agent_id": agent})
    return len(agents)


def run_task(rt: Runtime, task: Task) -> None:
    """A ``calibrate`` task: measure the agent when its calibration is stale or a milestone is due (else nothing:
    another task got there first), write thresholds and record, and finish the task in the same transaction.

    A measurement that cannot be made (too few embedded memories) still records the
    attempt, so the milestone is not tried again; a stale calibration then goes, and
    the heuristic gate applies.
    """
    agent = task.payload.get("agent_id")
    found: list[Threshold] = []
    stale = False
    if isinstance(agent, str) and rt.embedder.available:
        stale = agent in rt.calibration.stale_agents()
        if stale and rt.store.pending_tasks(REEMBED):
            stale = False  # the vectors are being re-embedded: the re-embedding's last step measures it
        elif stale or (agent and due_milestone(_memories(rt, agent), rt.calibration.measured_at(agent)) is not None):
            report: dict[str, Any] = {}
            try:
                report, found = measure(rt, agent, rt.calibration.beta(agent, rt.settings.recall_precision))
            except CalibrationError:
                found = []
            found += _stamp(rt, agent, report, auto=True)
    with rt.store.write() as conn:
        if stale and isinstance(agent, str):  # stale is only ever set for a str agent
            rt.store.drop_thresholds(conn, [agent])
        rt.store.set_thresholds(conn, found)
        rt.store.finish_task(conn, task.id)


def _lexical_threshold(
    rt: Runtime,
    agent_id: str,
    calibrated: dict[str, float],
    ids: np.ndarray,
    times: np.ndarray,
    beta: float,
    rng: random.Random,
) -> dict[str, Any]:
    """The fused-score threshold for lexical-only rows: pseudo-queries drawn from the agent's own memories."""
    draws = []
    for _ in range(DRAWS):
        positives: list[float] = []
        nulls: list[float] = []
        picks = rng.sample(range(len(ids)), min(PSEUDO_QUERIES, len(ids)))
        with rt.store.snapshot():
            texts = rt.store.records([make_ref(MEMORY, int(ids[i])) for i in picks])
            for i in picks:
                ref = make_ref(MEMORY, int(ids[i]))
                ctx = _pseudo_recall(rt, agent_id, calibrated, texts[ref].text)
                for row in fuse(ctx, retrieve(ctx)):
                    when = ctx.facts.time(row.ref)
                    # fuse scored every row: the fused check only narrows the Optional
                    if row.lexical_only and row.ref != ref and when is not None and row.fused is not None:
                        close = abs(when - times[i]) <= TEMPORAL_WINDOW_S
                        (positives if close else nulls).append(row.fused)
        if len(nulls) >= MIN_SAMPLES and len(positives) >= MIN_LEXICAL_POSITIVES:
            draws.append(separation(np.array(positives), np.array(nulls), beta, 0.0))
    if not draws:
        return {"skipped": "too few lexical-only rows with time labels (need 10 null and 5 positive)"}
    return {"threshold": sorted(draws)[len(draws) // 2], "draws": draws}


def _pseudo_recall(rt: Runtime, agent_id: str, calibrated: dict[str, float], text: str) -> RecallContext:
    request = RecallRequest(Scope(agent_id), text, PSEUDO_DEPTH)
    params = resolve_params(rt.settings, calibrated, request)
    return RecallContext(rt.store, request, lambda: rt.query_vector(text), params, rt.clock())


def adopt_sidecar(rt: Runtime) -> bool:
    """Move a calibration sidecar left by an earlier version (``<db>.calibration.json``) into the database.

    Only into a database that holds no calibration yet; the file is renamed
    ``.imported`` so it is read once. Its thresholds keep the fingerprint they were
    made under, so the usual staleness rule applies to them.
    """
    path = Path(rt.settings.db_path + ".calibration.json")
    # a sidecar sits beside a SQLite file; a PostgreSQL store never reads a file beside the (unused) SQLite path
    if (
        rt.settings.db_url
        or rt.settings.db_path == ":memory:"
        or not path.is_file()
        or rt.store.thresholds()
        or rt.store.betas()
    ):
        return False
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        model, scoring = str(data.get("embedding_model", "")), str(data.get("scoring_version", ""))
        rows = [
            Threshold(str(agent), str(signal), float(value), model, scoring)
            for agent, signals in data.get("agents", {}).items()
            for signal, value in signals.items()
        ]
        betas = {str(agent): float(beta) for agent, beta in data.get("betas", {}).items()}
    except (ValueError, TypeError, AttributeError):
        return False  # unreadable: left where it is; the heuristic gate applies until a calibration
    with rt.store.write() as conn:
        rt.store.set_thresholds(conn, rows)
        for agent, beta in betas.items():
            rt.store.set_beta(conn, agent, beta)
    path.rename(path.with_name(path.name + ".imported"))
    return True
