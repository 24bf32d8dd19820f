"""Keyword seats: held places after the count for rows only the lexical arms found (off by default).

The rule (CPersona 2.6's keyword seats, docs/recall-process.md#keyword-seats): with n = ``keyword_seats``
(0..10) above 0, when the gate and autocut admitted something and the gate's
fallback did not fire, the first n rows of the order *before the gate* that only a
lexical arm reached, that the answer does not hold, and that the gate and autocut
admitted or that the gate judged on the fused score, each take a seat after the
count. A seat displaces nothing. Each row says ``signal: keyword``, ``admission:
reservation``, its 1-based place and its fused score.

CPersona needs them because its calibrated gate is floored above any rrf score, so
no lexical-only row passes it. Our gate judges lexical-only rows on their own fused
scale, so the design leaves them off (n = 0); they exist to measure that choice.
Under our gate every lexical-only row is judged on the fused score, so any of them
the answer lacks may take a seat, the rows the gate refused included.
"""

from __future__ import annotations

from cuedrecall.recall.candidates import Candidate
from cuedrecall.recall.context import RecallContext

MAX_KEYWORD_SEATS = 10  # the setting is clamped to 0..10


def keyword_seats(
    ctx: RecallContext,
    scored: list[Candidate],
    admitted: list[Candidate],
    gate_fallback: bool,
    present: list[Candidate],
) -> list[Candidate]:
    """Up to n lexical-only rows the answer lacks, in the order before the gate; recorded as kind ``keyword``."""
    n = min(max(ctx.params.keyword_seats, 0), MAX_KEYWORD_SEATS)
    if n == 0 or ctx.blank or not admitted or gate_fallback:
        return []
    mode = ctx.params.mode
    held = {row.ref for row in present}
    passed = {row.ref for row in admitted}
    seated: list[Candidate] = []
    for row in scored:
        if len(seated) == n:
            break
        if not row.lexical_only or row.fused is None or row.ref in held or ctx.facts.get(row.ref) is None:
            continue
        if row.ref in passed or row.signal(mode) == mode:
            seated.append(Candidate(row.ref, seat="keyword", seat_detail={"seat": len(seated) + 1, mode: row.fused}))
            ctx.recorder.reservation(row.ref, "keyword")
    return seated
