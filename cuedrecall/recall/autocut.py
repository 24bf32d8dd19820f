"""Stage 5, autocut: cut at the largest relative gap, only on a list ordered by one homogeneous score.

Fused scores are never cut on: under rrf, first and thirtieth place differ by a
factor of about 1.5, so a "gap" there says nothing about relevance. A list is
homogeneous when the vector arm alone ordered it (no lexical vote), so its order
is its cosine order.
"""

from __future__ import annotations

from cuedrecall.recall.arm_registry import ARMS
from cuedrecall.recall.candidates import Candidate
from cuedrecall.recall.context import RecallContext


def autocut(ctx: RecallContext, rows: list[Candidate]) -> list[Candidate]:
    p = ctx.params
    scored = [row for row in rows if not row.is_profile]
    scores = _homogeneous_cosines(scored) if p.autocut_enabled and len(scored) >= p.autocut_min else None
    if scores is None:
        ctx.recorder.autocut(False, None, [])
        return rows
    gaps = [scores[i] - scores[i + 1] for i in range(len(scores) - 1)]
    widest = max(range(len(gaps)), key=lambda i: (gaps[i], -i))
    if scores[0] <= 0 or gaps[widest] / scores[0] < p.autocut_ratio:
        ctx.recorder.autocut(False, None, [])
        return rows
    dropped = scored[widest + 1 :]
    ctx.recorder.autocut(True, widest + 1, dropped)
    gone = {row.ref for row in dropped}
    return [row for row in rows if row.ref not in gone]


def _homogeneous_cosines(rows: list[Candidate]) -> list[float] | None:
    """The rows' cosines when the list is homogeneous: every row has a cosine, none a lexical vote, and the
    order is descending cosine; None otherwise."""
    scores = [
        row.cosine for row in rows if row.cosine is not None and not any(arm in row.ranks for arm in ARMS.lexical_names)
    ]
    if len(scores) < len(rows):
        return None
    return scores if all(scores[i] >= scores[i + 1] for i in range(len(scores) - 1)) else None
