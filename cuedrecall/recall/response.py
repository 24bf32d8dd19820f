"""The last stage: rows become the response's messages, worst to best, so the last row is the best (CPersona's order,
which its clients read); each message also carries ``rank``, 1 for the best, so no reader has to know the order
(docs/tools.md#recall-rows-order-and-rank)."""

from __future__ import annotations

from typing import Any

from cuedrecall.clock import to_epoch
from cuedrecall.recall.candidates import Candidate
from cuedrecall.recall.context import RecallContext
from cuedrecall.recall.policy import RELIEF
from cuedrecall.store.base import Record
from cuedrecall.text.blocks import Span
from cuedrecall.text.excerpts import excerpt, partitions

FULL_CONTENT_BUDGET = 200_000


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def match_reason(row: Candidate, mode: str) -> dict[str, Any] | None:
    """Why the row is here: the signal it was admitted on and its scores, or the seat that held it."""
    if row.block is not None:
        block = {
            "signal": "block",
            "admission": "reservation",
            "order": "vector" if row.block.cosine is not None else "hamming",
            "hamming": row.block.distance,
            "block": row.block.block,
        }
        return block if row.cue_rank is None else {**block, "cue_rank": row.cue_rank}
    if row.seat == "cue":
        seat = {"signal": row.seat, "admission": "reservation", "cue_rank": row.cue_rank}
        return seat if row.relieved is None else {**seat, "relieved": _relieved(row.relieved)}
    if row.seat is not None:  # keyword (seat, rrf|rsf), far (cosine), propagation (fused_rank, cosine_rank)
        detail = {key: _round(value) if isinstance(value, float) else value for key, value in row.seat_detail.items()}
        if row.cue_rank is not None:
            detail["cue_rank"] = row.cue_rank
        return {"signal": row.seat, "admission": "reservation", **detail}
    signal = row.signal(mode)
    if signal in (None, "profile"):
        # an unscored row (a blank query's listing) says nothing, unless the cue arm ranked it
        return None if row.cue_rank is None else {"cue_rank": row.cue_rank}
    reason: dict[str, Any] = {"signal": signal, "score": _round(row.score(mode))}
    if row.cosine is not None:
        reason["cosine"] = _round(row.cosine)
    if row.fused is not None:
        reason[mode] = _round(row.fused)
    if row.prior is not None:
        reason["prior"] = round(row.prior, 4)
    if row.cue_rank is not None:
        reason["cue_rank"] = row.cue_rank
    if row.on_votes:  # admitted on its lexical votes, not on the cosine it also has
        reason["admitted_on"] = mode
    if row.relieved is not None:  # the gate refused it; gate relief let it in (recall/relief.py)
        reason["admission"] = "relief"
        reason["relieved"] = _relieved(row.relieved)
    return reason


def _relieved(closeness: float) -> dict[str, Any]:
    """What a relieved row says of its relief: the policy, and how near it came to the gate it failed."""
    return {"policy": RELIEF, "closeness": _round(closeness)}


def confidence(ctx: RecallContext, row: Candidate, record: Record | None) -> dict[str, Any]:
    """A display-only confidence: cosine normalized between 0.20 and 0.75, times a gentle age decay."""
    age = None if record is None else record.ts_epoch if record.ts_epoch is not None else to_epoch(record.timestamp)
    out: dict[str, Any] = {}
    decay = 1.0
    if age is not None:
        hours = max(0.0, (ctx.now.timestamp() - age) / 3600.0)
        out["age_hours"] = round(hours, 1)
        decay = 1.0 if ctx.params.deep else max(0.3, 1.0 / (1.0 + hours * 0.005))
    else:
        out["age_unknown"] = True
    if record is not None and record.resolved:
        out["resolved"] = True
    if row.cosine is not None:
        norm = min(1.0, max(0.0, (row.cosine - 0.20) / (0.75 - 0.20)))
        out["cosine"] = round(row.cosine, 4)
        out["score"] = round((norm * decay) ** 0.5, 4)
    else:
        out["score"] = round(decay**0.5, 4)
    return out


def build_messages(ctx: RecallContext, rows: list[Candidate], full_content: bool) -> list[dict[str, Any]]:
    """Messages for the answer rows (best first in ``rows``, hydrated by the facts step), returned worst to best."""
    messages: list[dict[str, Any]] = []
    for row in rows:
        if row.is_profile:
            messages.append({"content": f"[Profile] {ctx.profile()}", "source": {"System": "profile"}, "timestamp": ""})
            continue
        record = ctx.facts.get(row.ref)
        if record is None:
            continue  # deleted by another writer since the arms read it: nothing left to show
        message: dict[str, Any] = {"content": record.display_content, "ref": row.ref, "source": record.source}
        if record.timestamp:
            message["timestamp"] = record.timestamp
        if record.msg_id:
            message["id"] = record.msg_id
        reason = match_reason(row, ctx.params.mode)
        if reason is not None:
            message["match_reason"] = reason
        if ctx.params.confidence_enabled:
            message["confidence"] = confidence(ctx, row, record)
        messages.append(message)
    messages.reverse()
    for position, message in enumerate(messages):
        message["rank"] = len(messages) - position  # 1 = best, whatever order a reader walks them in
    _cut_previews(messages, ctx.params.preview_chars, full_content)
    if ctx.params.excerpt_chars > 0 and not ctx.blank:
        for message in messages:
            if message.get("content_truncated"):
                _add_excerpt(ctx, message)
    return messages


def _add_excerpt(ctx: RecallContext, message: dict[str, Any]) -> None:
    """A row cut to its preview also shows the passages of the whole record that match the query.

    With block retrieval on and a stored block set for the record, the passages are chosen among the stored
    blocks (basis "blocks"; offsets in the stored text, an episode's summary without its label), the block a
    block seat reached first (as its match_reason names it: the row itself is not at hand here); else the
    record is divided now (basis "lexical", or "start").
    """
    record = ctx.facts.get(message["ref"])
    if record is None:
        return
    budget = ctx.params.excerpt_chars
    stored = ctx.store.block_spans([record.ref]).get(record.ref) if ctx.params.block_retrieval else None
    spans = [Span(start, end, forced) for start, end, forced in stored or ()]
    if spans and partitions(record.text, spans):  # a set that no longer fits the text is never used
        reason = message.get("match_reason") or {}
        reached = reason.get("block") if reason.get("signal") == "block" else None
        first = reached if isinstance(reached, int) and not isinstance(reached, bool) else None
        found = excerpt(record.text, ctx.query, budget, spans=spans, first=first)
    else:
        found = excerpt(record.display_content, ctx.query, budget)
    message["excerpt"], message["excerpt_basis"] = found.text, found.basis


def _cut_previews(messages: list[dict[str, Any]], preview_chars: int, full_content: bool) -> None:
    """Long rows become previews; with full_content, rows stay whole until the budget is spent (best first)."""
    if preview_chars <= 0:
        return
    budget = FULL_CONTENT_BUDGET if full_content else 0
    spent = 0
    for position, message in enumerate(reversed(messages)):
        text = message["content"]
        if full_content and (position == 0 or spent + len(text) <= budget):
            spent += len(text)
            continue
        if "ref" in message and len(text) > preview_chars:
            message["content"] = text[:preview_chars]
            message["content_truncated"] = True
            message["content_len"] = len(text)
