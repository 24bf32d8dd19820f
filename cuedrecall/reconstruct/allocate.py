"""Allocation, breadth before depth: which quotes the budget carries.

One sequence: every item's head quote in item order, then each item's first
excerpt in item order, then each item's second, and so on. The first head is
always carried; the sequence stops at the first quote that does not fit. An item
whose head is not carried is dropped; an excerpt not carried is omitted (its claim
stays). Since the budget only ever cuts the sequence's tail, raising it never
removes anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Allocation:
    items: int  # the items carried: a prefix of the items given
    excerpts: list[int]  # per carried item, how many of its excerpts (a prefix of them)
    used: int  # characters carried
    head_cut: bool  # an item's head did not fit


def allocate(heads: Sequence[int], excerpts: Sequence[Sequence[int]], budget: int) -> Allocation:
    """``heads``: each item's head quote length; ``excerpts``: each item's excerpt lengths, in the order offered."""
    used = 0
    for position, size in enumerate(heads):
        if position > 0 and used + size > budget:
            return Allocation(position, [0] * position, used, True)
        used += size
    taken = [0] * len(heads)
    for depth in range(max((len(e) for e in excerpts), default=0)):
        for position, sizes in enumerate(excerpts):
            if depth >= len(sizes):
                continue
            if used + sizes[depth] > budget:
                return Allocation(len(heads), taken, used, False)
            used += sizes[depth]
            taken[position] += 1
    return Allocation(len(heads), taken, used, False)
