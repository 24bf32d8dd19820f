"""reconstruct's stages after the recall, in order: bundle, choose, walk, structure, quote, allocate.

The recall's rows arrive most relevant first. Clusters are ordered by their best
row; the window is the first ``count`` clusters holding a row the recall's count
admitted, and clusters of held rows (a seat's) follow it. The walk adds claims,
never items; quotes are read only once the items are fixed, so nothing read for a
quote changes which items return or their order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cuedrecall.config import Settings
from cuedrecall.graph.relations import RecordRelation, record_relations
from cuedrecall.graph.walk import walk
from cuedrecall.recall.stale import anchored
from cuedrecall.reconstruct.allocate import Allocation, allocate
from cuedrecall.reconstruct.bundle import bundle
from cuedrecall.reconstruct.quotes import Blocks, Query, head_quote, passage_quote
from cuedrecall.reconstruct.resolve import Resolved, head_quote_chars, resolve_budget
from cuedrecall.reconstruct.rows import Row
from cuedrecall.reconstruct.structure import (
    Item,
    build_item,
    claims,
    conflicts,
    independence_reason,
    spanning_conflicts,
)
from cuedrecall.store.base import Relation, Scope, Store
from cuedrecall.text.blocks import Span, divide
from cuedrecall.text.excerpts import partitions


@dataclass(frozen=True)
class Request:
    scope: Scope
    query: Query
    count: Resolved
    budget: Resolved
    max_hops: int
    max_evidence: int
    stored_blocks: str  # the model whose stored block sets quotes may read ("" = divide every record now)


@dataclass
class Built:
    items: list[dict[str, Any]]
    returned: list[Item]  # the items carried, in order
    clusters: list[list[Row]]
    budget: Resolved  # as applied (a defaulted budget grows with held items)
    allocation: Allocation
    window: int  # items of the window before allocation
    held: int  # held items before allocation
    evidence_reached: bool
    quote_bases: set[str] = field(default_factory=set)
    conflicts: list[dict[str, Any]] = field(default_factory=list)  # stale-v1's that span two returned items

    @property
    def reserved_count(self) -> int:
        return sum(item.held for item in self.returned)


def reconstruct_items(store: Store, s: Settings, request: Request, rows: list[Row]) -> Built:
    relations = record_relations(store, request.scope, [row.ref for row in rows]) if rows else []
    clusters = bundle(rows, relations, s.reconstruct_adjacency_seconds, s.reconstruct_episode_span_seconds)
    window, held = _choose(clusters, request.count.effective)
    budget = request.budget
    if held and budget.policy["source"] == "server_default":
        budget = resolve_budget(s, None, request.count.effective + len(held))
    chosen = [*window, *held]
    walked = walk(
        store,
        request.scope,
        [[row.ref for row in cluster] for cluster in chosen],
        max_hops=request.max_hops,
        max_evidence=request.max_evidence,
        pool={row.ref for row in rows},
    )
    walked_rows = _walked_rows(store, walked.rows, len(rows))
    items = [
        build_item(cluster, walked_rows[i], request.max_evidence, held=i >= len(window), hop_bound=walked.hop_bound[i])
        for i, cluster in enumerate(chosen)
    ]
    every_relation = relations + (
        record_relations(store, request.scope, _walked_refs(walked_rows)) if any(walked_rows) else []
    )
    attributes = anchored(store, request.scope, [row.ref for row in rows] + _walked_refs(walked_rows))
    quoted, bases = _quotes(store, s, request, items)
    allocation = allocate(
        [len(q[0]["content"]) for q in quoted], [[len(e["content"]) for e in q[1]] for q in quoted], budget.effective
    )
    shown = [
        _item(item, quoted[i], allocation.excerpts[i], every_relation, attributes)
        for i, item in enumerate(items[: allocation.items])
    ]
    returned = items[: allocation.items]
    return Built(
        shown,
        returned,
        clusters,
        budget,
        allocation,
        len(window),
        len(held),
        walked.evidence_reached,
        bases,
        spanning_conflicts(returned, every_relation, attributes),
    )


def _choose(clusters: list[list[Row]], count: int) -> tuple[list[list[Row]], list[list[Row]]]:
    """The window (the first ``count`` clusters with an admitted row) and the held clusters after it."""
    window: list[list[Row]] = []
    rest: list[list[Row]] = []
    for cluster in clusters:
        if len(window) < count and any(not row.reserved for row in cluster):
            window.append(cluster)
        else:
            rest.append(cluster)
    held = [cluster for cluster in rest if any(row.reserved for row in cluster)] if count > 0 else []
    return window, held


def _walked_rows(store: Store, walked: Sequence[Sequence[Any]], after: int) -> list[list[Row]]:
    refs = [w.ref for rows in walked for w in rows]
    records = store.records(refs) if refs else {}
    out: list[list[Row]] = []
    rank = after
    for rows in walked:
        item = []
        for w in rows:
            record = records.get(w.ref)
            if record is not None:
                item.append(Row(record, rank, why=f"relation:{w.predicate}", hops=w.hops))
                rank += 1
        out.append(item)
    return out


def _walked_refs(walked_rows: list[list[Row]]) -> list[str]:
    return [row.ref for rows in walked_rows for row in rows]


def _quotes(
    store: Store, s: Settings, request: Request, items: list[Item]
) -> tuple[list[tuple[dict[str, Any], list[dict[str, Any]]]], set[str]]:
    """Each item's head quote and its other claims' passages (most relevant first)."""
    refs = [row.ref for item in items for row in item.retained]
    stored = store.block_spans(refs) if request.stored_blocks and refs else {}
    cap, preview = s.reconstruct_quote_chars, s.recall_preview_chars
    bases: set[str] = set()
    out = []
    for item in items:
        head = item.head
        blocks = _blocks(store, request.stored_blocks, head, stored.get(head.ref))
        quote = (
            head_quote(head.ref, head.record.text, blocks, request.query, cap)
            if cap > 0
            else passage_quote(head.ref, head.record.text, blocks, request.query, head_quote_chars(s))
        )
        passages = []
        for row in item.retained[1:]:
            row_blocks = _blocks(store, request.stored_blocks, row, stored.get(row.ref))
            passages.append(
                {"ref": row.ref, **passage_quote(row.ref, row.record.text, row_blocks, request.query, preview)}
            )
        bases.update(q["quote_basis"] for q in (quote, *passages) if "quote_basis" in q)
        out.append((quote, passages))
    return out, bases


def _blocks(store: Store, model: str, row: Row, stored: list[tuple[int, int, bool]] | None) -> Blocks:
    """The record's stored set when it still partitions its text (with its codes of ``model``), else divided now."""
    text = row.record.text
    spans = [Span(start, end, forced) for start, end, forced in stored or ()]
    if model and spans and partitions(text, spans):
        codes = store.block_codes(row.ref, model) if len(spans) > 1 else None
        return Blocks(spans, "blocks", codes)
    return Blocks(divide(text), "lexical")


def _item(
    item: Item,
    quoted: tuple[dict[str, Any], list[dict[str, Any]]],
    carried: int,
    relations: list[RecordRelation],
    attributes: list[Relation],
) -> dict[str, Any]:
    head, passages = quoted
    out: dict[str, Any] = {
        "content": head["content"],
        "head_ref": item.head.ref,
        "claims": claims(item, relations, attributes),
    }
    reason = independence_reason(item)
    if reason != "singleton":  # an item of one record needs no reason
        out["independence_reason"] = reason
    found = conflicts(item, relations, attributes)
    if found:
        out["conflicts"] = found
    if item.claims_omitted:
        out["claims_omitted"] = item.claims_omitted
    if item.held:
        out["admission"] = "reservation"
    if carried:
        out["excerpts"] = passages[:carried]
    if len(passages) > carried:
        out["excerpts_omitted"] = len(passages) - carried
    out.update({key: value for key, value in head.items() if key != "content"})
    return out
