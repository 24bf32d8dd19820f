"""The response: the items, what was asked and applied, the bounds met, and why fewer items came back.

With ``trace`` every field is present. Without it the response keeps only what a
caller acts on: the items and their counts always; the count's and budget's
policies only when they were moved or forced; the budget's use only when it cut
something; the bounds only when one was reached or cut something.

``shortfall_reason`` (when fewer items of the window return than the count asks):
``count_zero`` (count 0), ``budget_exhausted`` (a head quote did not fit), else
``below_quality_threshold`` (the recall's gate fell back), else
``no_relevant_evidence`` (no candidate at all) or ``exhausted_candidates``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cuedrecall.reconstruct.policy import POLICY
from cuedrecall.reconstruct.process import Built, Request


@dataclass(frozen=True)
class Candidates:
    """What the recall handed over."""

    count: int  # rows with provenance
    excluded_without_provenance: int  # the profile row
    top_k: int
    top_k_reached: bool
    gate_fallback: bool


def envelope(
    built: Built, request: Request, found: Candidates, *, trace: bool, forwarded: dict[str, Any]
) -> dict[str, Any]:
    count, budget = request.count, built.budget
    returned = len(built.items)
    shortfall = _shortfall(built, count.effective, found)
    bounds = _bounds(built, request, found)
    excerpts_cut = any(item.get("excerpts_omitted") for item in built.items)
    reserved_omitted = built.held - built.reserved_count
    out: dict[str, Any] = {"items": built.items, "effective_count": count.effective, "returned_count": returned}
    if trace or count.clamped or count.forced:
        out.update(requested_count=count.requested, count_policy=count.policy)
    raised = budget.policy["reason"] == "raised_to_one_excerpt"
    if trace or budget.clamped or budget.forced or raised:
        out.update(requested_budget=budget.requested, budget_policy=budget.policy)
    if trace or shortfall == "budget_exhausted" or reserved_omitted or excerpts_cut:
        out.update(effective_budget=budget.effective, used_budget=built.allocation.used)
    if trace or set(bounds) - {"top_k", "max_hops", "max_evidence"}:
        out["bounds"] = bounds
    if trace:
        out["reconstruction"] = {
            "policy": POLICY,
            "candidate_count": found.count,
            "cluster_count": len(built.clusters),
            "selected_count": built.window + built.held,
            "excluded_without_provenance": found.excluded_without_provenance,
        }
    elif found.excluded_without_provenance:
        out["reconstruction"] = {"excluded_without_provenance": found.excluded_without_provenance}
    if built.conflicts:  # stale-v1's conflicts between items (those inside one item are the item's)
        out["conflicts"] = built.conflicts
    if shortfall:
        out["shortfall_reason"] = shortfall
    if built.reserved_count:
        out["reserved_count"] = built.reserved_count
    if reserved_omitted:
        out["reserved_omitted"] = reserved_omitted
    if request.query.vector is None and "blocks" in built.quote_bases:
        out["quote_selection"] = "lexical_only"
    out.update(forwarded)
    return out


def _shortfall(built: Built, count: int, found: Candidates) -> str | None:
    window_returned = sum(not item.held for item in built.returned)
    if window_returned >= count and count > 0:
        return None
    if count == 0:
        return "count_zero"
    if built.allocation.head_cut and built.window > window_returned:
        return "budget_exhausted"
    if found.gate_fallback:
        return "below_quality_threshold"
    return "no_relevant_evidence" if found.count == 0 else "exhausted_candidates"


def _bounds(built: Built, request: Request, found: Candidates) -> dict[str, Any]:
    bounds: dict[str, Any] = {"top_k": found.top_k, "max_hops": request.max_hops, "max_evidence": request.max_evidence}
    reached = [name for name, hit in (("top_k", found.top_k_reached), ("max_evidence", built.evidence_reached)) if hit]
    omitted = [
        name
        for name, hit in (
            ("max_evidence", any(item.claims_omitted for item in built.returned)),
            ("max_hops", any(item.hop_bound for item in built.returned)),
        )
        if hit
    ]
    if reached:
        bounds["reached"] = reached
    if omitted:
        bounds["omitted"] = omitted
    return bounds
