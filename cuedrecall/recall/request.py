"""The recall tool: validated arguments in, the response out (messages worst to best, the last is best)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from cuedrecall import __version__
from cuedrecall.embed import EmbeddingError
from cuedrecall.recall.context import RecallContext, RecallParams
from cuedrecall.recall.coverage import coverage_ledger
from cuedrecall.recall.cued_v0_3 import POLICY, SINGLE_PASS_POLICY
from cuedrecall.recall.process import recall_process
from cuedrecall.recall.response import build_messages
from cuedrecall.recall.scoring_version import SCORING_VERSION
from cuedrecall.recall.timecue import parse_time_cue
from cuedrecall.recall.trace import Recorder, TraceRecorder
from cuedrecall.text import normalise_exclusions

if TYPE_CHECKING:
    from cuedrecall.api import Memory


def recall_params(memory: "Memory", agent_id: str, query: str, limit: int, deep: bool,
                  exclude_contents: list[str]) -> RecallParams:
    s = memory.settings
    limit = min(limit, s.recall_library_max_limit)
    blank = not query.strip()
    depth = limit if blank else min(max(limit, s.recall_depth_floor), s.recall_library_max_limit)
    thresholds = memory.calibration.thresholds(agent_id) if s.fused_gate_enabled else {}
    vector_threshold = memory.calibration.vector_threshold(agent_id, s.vector_min_similarity)
    return RecallParams(
        limit=limit, depth=depth, deep=deep, mode=s.recall_mode, rrf_k=s.rrf_k,
        vector_floor=vector_threshold * s.rrf_threshold_factor, window=s.max_memories, reach=s.vector_reach,
        far_limit=s.vector_far_limit, far_weight=s.prior_far_weight, fts_enabled=s.fts_enabled,
        episode_penalty=s.episode_penalty_enabled, episode_decay_rate=s.episode_decay_rate,
        episode_decay_floor=s.episode_decay_floor, age_rate=s.prior_age_rate, age_floor=s.prior_age_floor,
        age_anchor=s.prior_age_anchor, autocut_enabled=s.autocut_enabled, autocut_ratio=s.autocut_min_gap_ratio,
        autocut_min=s.autocut_min_results, thresholds=thresholds,
        exclusions=normalise_exclusions(exclude_contents), confidence_enabled=s.confidence_enabled,
    )


def _query_vector(memory: "Memory", query: str) -> Any:
    if not query.strip() or not memory.embedder.available:
        return None
    try:
        return memory.queries.embed_query(query)
    except EmbeddingError:
        return None  # the lexical arms still answer; the vector arms stay empty


def run_recall(
    memory: "Memory", *, agent_id: str, query: str, limit: int, deep: bool, channel: str, project_id: str | None,
    source_id: str, exclude_contents: list[str], full_content: bool, trace: bool, time_cue: Any,
) -> dict[str, Any]:
    started = time.perf_counter()  # the cue's time limit counts from here, the query's embedding included
    cue = parse_time_cue(time_cue)  # an unreadable cue is refused here, before anything runs
    params = recall_params(memory, agent_id, query, limit, deep, exclude_contents)
    recorder = TraceRecorder() if trace else Recorder()
    scope = memory.scope(agent_id, project_id, channel, source_id)
    ctx = RecallContext(memory.store_, scope, query, _query_vector(memory, query), params, memory.clock(), recorder,
                        started=started)
    if recorder.enabled:
        _trace_header(memory, ctx, cue, limit, full_content)
    outcome = recall_process(ctx, cue, memory.settings.recall_cue_time_limit_ms)
    records = memory.store_.records([row.ref for row in outcome.rows if not row.is_profile])
    messages = build_messages(ctx, outcome.rows, records, ctx.profile(),
                              memory.settings.recall_preview_chars, full_content)
    response: dict[str, Any] = {"messages": messages}
    if params.depth != params.limit:
        response["depth"] = params.depth
    if outcome.gate_fallback:
        response["gate_fallback"] = True
    if outcome.time_cue is not None:
        response["time_cue"] = outcome.time_cue
    if not memory.embedder.available and not ctx.blank:
        response["advisory"] = {"degraded": True, "reason": "embedding mode is none: vector arms are off"}
    if full_content:
        response["full_content_budget_chars"] = 200_000
    if recorder.enabled:
        returned = [(m["ref"], records[m["ref"]].text) for m in messages if "ref" in m]
        recorder.set("coverage", coverage_ledger(query, returned, recorder))
        response["trace"] = recorder.result()
    return response


def _trace_header(memory: "Memory", ctx: RecallContext, cue: Any, limit: int, full_content: bool) -> None:
    s, p, r = memory.settings, ctx.params, ctx.recorder
    r.set("policy", {"scoring": SCORING_VERSION, "process": POLICY if cue is not None else SINGLE_PASS_POLICY})
    r.set("server_version", __version__)
    r.set("scope", ctx.scope.as_dict())
    request = {
        "limit": limit, "depth": p.depth, "deep": p.deep, "mode": p.mode,
        "confidence_enabled": p.confidence_enabled, "confidence_ordering": "fusion",
        "prior": {"far_weight": p.far_weight, "age_rate": p.age_rate, "age_floor": p.age_floor,
                  "age_anchor": p.age_anchor},
        "episode_penalty": p.episode_penalty, "full_content": full_content,
    }
    if cue is not None:
        request["time_cue"] = cue.echo()
    r.set("request", request)
    r.set("config", {
        "embedding_mode": memory.embedder.mode, "embedding_model": memory.embedder.model, "scan_window": p.window,
        "vector_reach": p.reach, "vector_far_limit": s.vector_far_limit, "fused_gate_enabled": s.fused_gate_enabled,
        "autocut_enabled": p.autocut_enabled,
    })
