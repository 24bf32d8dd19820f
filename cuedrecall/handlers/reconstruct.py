"""The reconstruct tool: stage 1 (the query's entity names), the candidate recall, then the item stages.

The recall is the recall tool's own, at ``limit = top_k`` with full content, the
call's ``time_cue`` and ``deep``, and the entity names found in the query (stage 1)
as extra terms for its lexical arms only. With no entity named, the recall is
called exactly as without the associative layer. Everything runs on one snapshot
of the store.
"""

from __future__ import annotations

from typing import Any

from cuedrecall.config import Settings
from cuedrecall.errors import ToolArgumentError
from cuedrecall.graph.cues import Cues, query_cues
from cuedrecall.handlers import trace_log
from cuedrecall.handlers.recall import RecallRun, recall_run
from cuedrecall.recall.coverage import build_ledger
from cuedrecall.recall.request import RecallRequest
from cuedrecall.recall.timecue import parse_time_cue
from cuedrecall.reconstruct.envelope import Candidates, envelope
from cuedrecall.reconstruct.policy import MAX_EVIDENCE, MAX_HOPS
from cuedrecall.reconstruct.process import Built, Request, reconstruct_items
from cuedrecall.reconstruct.quotes import Query
from cuedrecall.reconstruct.resolve import resolve_budget, resolve_count
from cuedrecall.reconstruct.rows import Row
from cuedrecall.runtime import Runtime
from cuedrecall.store.base import Scope
from cuedrecall.text.fts import MIN_TERM

_FORWARDED = ("advisory", "time_cue", "gate_fallback")
LITE_BUDGET = 2800  # characters of quotes in mode lite: a question one or two records answer
PRO_COUNT = 15  # items mode pro asks for (lowered to the server's maximum, and count_policy says so)
_SIZED_OUT = frozenset(("bounds", "requested_budget", "effective_budget", "used_budget", "budget_policy"))


def reconstruct(
    rt: Runtime,
    *,
    agent_id: str,
    query: str,
    count: int | None,
    top_k: int | None,
    max_hops: int | None,
    max_evidence: int | None,
    deep: bool,
    channel: str,
    project_id: str | None,
    source_id: str,
    trace: bool,
    budget: int | None,
    time_cue: Any,
    mode: str | None = None,
    lite: bool | None = None,
) -> dict[str, Any]:
    s = rt.settings
    cue = parse_time_cue(time_cue)  # an unreadable cue is refused before anything runs
    if mode is not None and lite is not None:
        raise ToolArgumentError("arguments 'mode' and 'lite' name the same thing: give mode only")
    preset = mode or ("lite" if lite else None)
    if preset is not None:
        count, budget = _preset_defaults(s, preset, count, budget)
    scope = Scope(agent_id, project_id, channel, source_id)
    wanted = resolve_count(s, count)
    depth = min(top_k or s.reconstruct_top_k, s.recall_library_max_limit)
    logged = trace_log.enabled(rt)  # traced for the log whether or not asked; the response stays the same
    with rt.store.snapshot():
        cues = query_cues(rt.store, scope, query)
        recall = RecallRequest(
            scope, query, depth, deep=deep, full_content=True, trace=trace, cue=cue, lexical_terms=_lexical_terms(cues)
        )
        run = recall_run(rt, recall)
        rows, excluded = _rows(run)
        model = rt.embedder.model if s.block_retrieval_enabled and rt.embedder.available else ""
        request = Request(
            scope,
            Query(query, run.ctx.query_vector),
            wanted,
            resolve_budget(s, budget, wanted.effective),
            min(s.reconstruct_max_hops if max_hops is None else max_hops, MAX_HOPS),
            min(s.reconstruct_max_evidence if max_evidence is None else max_evidence, MAX_EVIDENCE),
            model,
        )
        built = reconstruct_items(rt.store, s, request, rows)
    answered = len(run.outcome.rows) - sum(row.seat is not None for row in run.outcome.rows)
    found = Candidates(len(rows), excluded, depth, answered >= depth, run.outcome.gate_fallback)
    forwarded = {key: run.response[key] for key in _FORWARDED if key in run.response}
    out = envelope(built, request, found, trace=trace, forwarded=forwarded)
    full = _trace(run, rows, built, cues.report()) if trace or logged else None
    if logged:
        cited = dict.fromkeys(row.ref for item in built.returned for row in item.retained)
        trace_log.record(rt, "reconstruct", scope, query, full, list(cited))
    if trace:
        out["trace"] = full
    elif preset is not None:
        out = _sized(out)
    return out


def _preset_defaults(s: Settings, preset: str, count: int | None, budget: int | None) -> tuple[int | None, int]:
    """A named size fills what the call left out: lite a small budget, pro more items and the largest budget."""
    if preset == "lite":
        return count, budget or LITE_BUDGET
    return count if count is not None else PRO_COUNT, budget or s.reconstruct_max_budget


def _sized(out: dict[str, Any]) -> dict[str, Any]:
    """A named size's answer: no ranges, bounds or budget fields; an item whose only claim is its head carries
    that claim's as_of instead of the claims list."""
    out = {key: value for key, value in out.items() if key not in _SIZED_OUT}
    items = []
    for item in out["items"]:
        item = {key: value for key, value in item.items() if key != "ranges"}
        claims = item["claims"]
        if len(claims) == 1 and claims[0]["ref"] == item["head_ref"]:
            del item["claims"]
            item["as_of"] = claims[0]["as_of"]
        items.append(item)
    out["items"] = items
    return out


def _lexical_terms(cues: Cues) -> tuple[str, ...]:
    """The matched entities' other names, and any matched name too short for the trigram index (東京): the query
    holds it, but only a substring match finds it in a record."""
    return (*cues.terms, *(name for name in cues.entities if len(name.strip()) < MIN_TERM))


def _rows(run: RecallRun) -> tuple[list[Row], int]:
    """The recall's rows with provenance, most relevant first; the profile row has none and is counted."""
    facts = run.ctx.facts
    facts.load(row.ref for row in run.outcome.rows if not row.is_profile)
    rows: list[Row] = []
    excluded = 0
    for row in run.outcome.rows:
        record = None if row.is_profile else facts.get(row.ref)
        if record is None:
            excluded += row.is_profile  # a record deleted since the arms read it is simply gone
            continue
        rows.append(Row(record, len(rows), reserved=row.seat is not None))
    return rows, excluded


def _trace(run: RecallRun, rows: list[Row], built: Built, cues: dict[str, Any] | None) -> dict[str, Any]:
    """Refs, cluster membership, the cues, the recall's own trace and the coverage of the cited records; no text."""
    cited: dict[str, str] = {}
    for item in built.returned:
        for row in item.retained:
            cited.setdefault(row.ref, row.record.text)
    out: dict[str, Any] = {
        "candidate_refs": [row.ref for row in rows],
        "clusters": [
            {"refs": [row.ref for row in cluster], "why": [row.why for row in cluster]} for cluster in built.clusters
        ],
    }
    if cues is not None:
        out["cues"] = cues
    out["recall"] = run.response.get("trace")
    out["coverage"] = build_ledger(run.ctx.query, list(cited.items()))
    return out
