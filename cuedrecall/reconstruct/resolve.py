"""How many items, and how many characters of quotes: the count and the budget a call gets, and why.

Each is the operator's forced value, else the caller's, else the server default;
the count is lowered to the maximum, the budget lowered to its maximum and raised
to one head quote. The policy object says which source won and whether the value
was moved, so no clamp is silent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cuedrecall.config import Settings


@dataclass(frozen=True)
class Resolved:
    requested: int | None
    effective: int
    policy: dict[str, Any]

    @property
    def clamped(self) -> bool:
        return bool(self.policy["clamped"])

    @property
    def forced(self) -> bool:
        return self.policy["source"] == "operator_forced"


def resolve_count(s: Settings, requested: int | None) -> Resolved:
    if s.reconstruct_forced_count is not None:
        base, source, reason = s.reconstruct_forced_count, "operator_forced", "forced_count_set"
    elif requested is not None:
        base, source, reason = requested, "caller", "count_requested"
    else:
        base, source, reason = s.reconstruct_default_count, "server_default", "count_omitted"
    base = max(0, base)
    effective = min(base, s.reconstruct_max_count)
    return Resolved(requested, effective, {"source": source, "clamped": effective < base, "reason": reason})


def head_quote_chars(s: Settings) -> int:
    """One head quote: the filled quote's size, or one passage when filled quotes are off."""
    return s.reconstruct_quote_chars or s.recall_preview_chars


def resolve_budget(s: Settings, requested: int | None, count: int) -> Resolved:
    """The characters of quotes allowed; a defaulted budget holds at least one head quote per item of ``count``."""
    floor = head_quote_chars(s)
    if s.reconstruct_forced_budget is not None:
        base, source, reason = s.reconstruct_forced_budget, "operator_forced", "forced_budget_set"
    elif requested is not None:
        base, source, reason = requested, "caller", "budget_requested"
    else:
        window = count * floor
        base, source = max(s.reconstruct_default_budget, window), "server_default"
        reason = "default_fits_the_window" if window > s.reconstruct_default_budget else "budget_omitted"
    budget = min(base, s.reconstruct_max_budget)
    if budget < floor:
        budget, reason = floor, "raised_to_one_excerpt"
    return Resolved(requested, budget, {"source": source, "clamped": budget != base, "reason": reason})
