"""The recall tool: validated arguments in, the response out (messages worst to best, the last is best).

The process runs on one snapshot of the store; an in-process embedder embeds the
query inside it, on the recall's own thread, once the full-text arms have started
beside it (they do not read the vector). An embedder over HTTP embeds it before the
snapshot begins: a slow answer from it must not hold the snapshot (and the writers
waiting on it). The response is built from the records the facts step hydrated.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from cuedrecall.clock import to_epoch
from cuedrecall.handlers import trace_log
from cuedrecall.recall.context import RecallContext
from cuedrecall.recall.coverage import record_coverage
from cuedrecall.recall.params import resolve_params
from cuedrecall.recall.policy import process_policy
from cuedrecall.recall.process import Outcome, recall_process
from cuedrecall.recall.request import RecallRequest
from cuedrecall.recall.response import FULL_CONTENT_BUDGET, build_messages
from cuedrecall.recall.scoring_version import SCORING_VERSION
from cuedrecall.recall.stale import report as stale_conflicts
from cuedrecall.recall.timecue import parse_time_cue
from cuedrecall.recall.trace import Recorder, TraceRecorder
from cuedrecall.runtime import Runtime
from cuedrecall.store.base import Scope
from cuedrecall.version import __version__


@dataclass(frozen=True)
class RecallRun:
    """One recall as reconstruct reads it: the context (its facts), what the process decided, the response."""

    ctx: RecallContext
    outcome: Outcome
    response: dict[str, Any]


def run_recall(
    rt: Runtime,
    *,
    agent_id: str,
    query: str,
    limit: int,
    deep: bool,
    channel: str,
    project_id: str | None,
    source_id: str,
    exclude_contents: list[str],
    full_content: bool,
    trace: bool,
    time_cue: Any,
) -> dict[str, Any]:
    """The recall tool: its arguments read once into a request (an unreadable time cue refused here)."""
    request = RecallRequest(
        Scope(agent_id, project_id, channel, source_id),
        query,
        limit,
        deep=deep,
        exclude_contents=tuple(exclude_contents),
        full_content=full_content,
        trace=trace,
        cue=parse_time_cue(time_cue),
    )
    return recall_answer(rt, request)


def recall_answer(rt: Runtime, request: RecallRequest) -> dict[str, Any]:
    """One recall's response. With the trace log on, the recall is traced for the log whether or not the caller
    asked, and the caller's response is the one it would have had (``handlers/trace_log.py``)."""
    run = recall_run(rt, request)
    if not trace_log.enabled(rt):
        return run.response
    trace_log.record(
        rt,
        "recall",
        request.scope,
        request.query,
        run.response.get("trace"),
        [m["ref"] for m in run.response["messages"] if "ref" in m],
    )
    return run.response if request.trace else {k: v for k, v in run.response.items() if k != "trace"}


def recall_run(rt: Runtime, request: RecallRequest) -> RecallRun:
    """One recall, kept whole; traced when the caller asked or the trace log is on."""
    started = time.perf_counter()  # the cue's time limit counts from here, the query's embedding included
    embed = _query_vector(rt, request.query)
    recorder = TraceRecorder() if request.trace or trace_log.enabled(rt) else Recorder()
    agent_id = request.scope.agent_id
    with rt.store.snapshot():
        params = resolve_params(
            rt.settings,
            rt.calibration.thresholds(agent_id),
            request,
            embedding_model=_block_model(rt),
            calibration=rt.calibration.record(agent_id)["origin"],
        )
        ctx = RecallContext(rt.store, request, embed, params, rt.clock(), recorder, started=started)
        if recorder.enabled:
            _trace_header(rt, ctx)
        outcome = recall_process(ctx)
        return RecallRun(ctx, outcome, _response(rt, ctx, outcome))


def _query_vector(rt: Runtime, query: str) -> Callable[[], np.ndarray | None]:
    """How the recall gets its query's vector: asked for when its first vector arm needs it (an in-process
    embedder, bounded by the model), or now, before the snapshot (an embedder over the network, bounded only by
    its timeout)."""
    if rt.embedder.mode != "http":
        return lambda: rt.query_vector(query)
    vector = rt.query_vector(query)
    return lambda: vector


def _block_model(rt: Runtime) -> str:
    """The model whose blocks the arm may use: the embedder's, when it can embed (else no block arm)."""
    return rt.embedder.model if rt.embedder.available else ""


def _response(rt: Runtime, ctx: RecallContext, outcome: Outcome) -> dict[str, Any]:
    full_content = ctx.request.full_content
    messages = build_messages(ctx, outcome.rows, full_content)
    response: dict[str, Any] = {"messages": messages}
    conflicts = stale_conflicts(ctx, messages)  # stale-v1: names the rows' roles, never drops or moves one
    if conflicts:
        response["conflicts"] = conflicts
    if ctx.params.depth != ctx.params.limit:
        response["depth"] = ctx.params.depth
    if outcome.gate_fallback:
        response["gate_fallback"] = True
    if outcome.time_cue is not None:
        response["time_cue"] = outcome.time_cue
    if not rt.embedder.available and not ctx.blank:
        response["advisory"] = {"degraded": True, "reason": "embedding mode is none: vector arms are off"}
    if full_content:
        response["full_content_budget_chars"] = FULL_CONTENT_BUDGET
    if ctx.recorder.enabled:
        returned = [
            (m["ref"], record.text) for m in messages if "ref" in m and (record := ctx.facts.get(m["ref"])) is not None
        ]
        record_coverage(ctx.query, returned, ctx.recorder)
        response["trace"] = ctx.recorder.result()
    return response


def _trace_header(rt: Runtime, ctx: RecallContext) -> None:
    p, cue = ctx.params, ctx.request.cue
    request: dict[str, Any] = {
        "limit": ctx.request.limit,
        "depth": p.depth,
        "deep": p.deep,
        "mode": p.mode,
        "confidence_enabled": p.confidence_enabled,
        "confidence_ordering": "fusion",
        "prior": {
            "far_weight": p.far_weight,
            "age_rate": p.age_rate,
            "age_floor": p.age_floor,
            "age_anchor": p.age_anchor,
        },
        "episode_penalty": p.episode_penalty,
        "full_content": ctx.request.full_content,
    }
    # the held seats that are off by default are named only when on, so a default trace is as it was
    if p.keyword_seats:
        request["keyword_seats"] = p.keyword_seats
    if p.far_seats:
        request["far_seats"] = True
    if p.propagation_seat:
        request["propagation_seat"] = True
    if cue is not None:
        request["time_cue"] = cue.echo()
        if p.cue_stages > 2:
            request["cue_stages"] = p.cue_stages
    if ctx.lexical_terms:  # reconstruct's entity names: counted, not written (the trace holds no stored text)
        request["lexical_terms"] = len(ctx.lexical_terms)
    config = {
        "embedding_mode": rt.embedder.mode,
        "embedding_model": rt.embedder.model,
        "scan_window": p.window,
        "vector_reach": p.reach,
        "vector_far_limit": p.far_limit,
        "fused_gate_enabled": p.fused_gate_enabled,
        "autocut_enabled": p.autocut_enabled,
        "gate_relief": p.gate_relief,
        "calibration": rt.calibration.record(ctx.scope.agent_id),  # {origin: auto | explicit | none, memories_at}
    }
    ctx.recorder.header(
        {"scoring": SCORING_VERSION, "process": process_policy(p, cue is not None), "gate": p.gate_policy},
        __version__,
        ctx.scope.as_dict(),
        request,
        config,
    )


_CONTEXT_FIELDS = ("role", "content", "name", "user_id", "timestamp")
# a conversation user's source id in a merged turn, as CPersona's recall_with_context writes it (its chat bridge's
# prefix): a compatibility alias, so either server's answer reads the same, not a platform this server knows
CONTEXT_USER_ID = "discord:{}"
_MERGED_ROLES = ("user", "assistant")
_ROLE_SHOWN = 256  # characters of a role that is not a string, as context_filter_only names it


def recall_with_context(
    rt: Runtime,
    *,
    agent_id: str,
    query: str,
    external_context: list[dict[str, Any]],
    limit: int,
    deep: bool,
    channel: str,
    project_id: str | None,
    source_id: str,
    full_content: bool,
) -> dict[str, Any]:
    """A recall that leaves out what the conversation already holds, merged with that conversation in time order.

    Every context entry's text is an exclusion; user and assistant entries also join
    the messages, and the whole list is ordered by time, undated entries first.
    """
    entries, issues = _context_entries(external_context)
    request = RecallRequest(
        Scope(agent_id, project_id, channel, source_id),
        query,
        limit,
        deep=deep,
        exclude_contents=tuple(e["content"] for e in entries if e.get("content")),
        full_content=full_content,
        propagation=False,  # like CPersona's, it holds no propagation seat
    )
    response = recall_answer(rt, request)
    merged = response["messages"] + [
        _context_message(e) for e in entries if e.get("role") in _MERGED_ROLES and e.get("content")
    ]
    out = {**response, "messages": sorted(merged, key=_chronological)}
    others = sorted({e["role_shown"] for e in entries if e.get("content") and e.get("role") not in _MERGED_ROLES})
    if others:
        out["context_filter_only"] = {
            "roles": others,
            "note": "entries of these roles only kept their text out of the recall; they are not in messages",
        }
    if issues:  # CPersona's shape: the entries by index, each with the fields read as absent, and a note
        out["context_field_issues"] = {"entries": issues, "note": _ISSUES_NOTE}
    return out


_ISSUES_NOTE = (
    "fields that are not strings were read as absent; an entry left without text (or not an object, "
    '"<entry>") was dropped: it is not in messages and kept nothing out of the recall'
)


def _context_entries(external: list[Any]) -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    """Each entry's string fields; a field given as anything but a string is read as absent, an entry that is not
    an object is skipped, and both are reported ({index, fields}, "<entry>" for a whole entry). ``role_shown`` is
    how context_filter_only names the entry's role: "(unset)" when it has none, a role that is not a string as
    its text (docs/tools.md#the-conversation-of-recall_with_context)."""
    entries, issues = [], []
    for index, entry in enumerate(external):
        if not isinstance(entry, dict):
            issues.append({"index": index, "fields": ["<entry>"]})
            continue
        kept = {}
        for name in _CONTEXT_FIELDS:
            value = entry.get(name)
            if isinstance(value, str):
                kept[name] = value.strip() if name == "content" else value  # a turn's text without its edge spaces
        bad = sorted(name for name in _CONTEXT_FIELDS if name in entry and not isinstance(entry[name], str))
        if bad:
            issues.append({"index": index, "fields": bad})
        role = entry.get("role")
        kept["role_shown"] = (role if isinstance(role, str) else _role_text(role)) or "(unset)"
        entries.append(kept)
    return entries, issues


def _role_text(role: Any) -> str:
    """A role that is not a string, as text (7 -> "7", at most _ROLE_SHOWN characters); "" for none."""
    return "" if role is None else str(role)[:_ROLE_SHOWN]


def _context_message(entry: dict[str, str]) -> dict[str, Any]:
    if entry["role"] == "user":
        name = entry.get("name", "User")
        source = {"type": "User", "id": CONTEXT_USER_ID.format(entry.get("user_id") or name), "name": name}
    else:
        source = {"type": "Agent", "id": "self"}
    return {
        "content": entry["content"],
        "source": source,
        "timestamp": entry.get("timestamp", ""),
        "context_type": "conversation",
    }


def _chronological(message: dict[str, Any]) -> tuple[int, float]:
    moment = to_epoch(message.get("timestamp"))
    return (0, 0.0) if moment is None else (1, moment)
