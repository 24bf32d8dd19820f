"""Stage 7, the count cut: the first ``limit`` rows of the final order are the answer."""

from __future__ import annotations

from cuedrecall.recall.candidates import Candidate
from cuedrecall.recall.context import RecallContext


def count_cut(ctx: RecallContext, rows: list[Candidate]) -> list[Candidate]:
    kept, cut = rows[: ctx.params.limit], rows[ctx.params.limit :]
    ctx.recorder.order(rows, ctx.params.limit, cut)
    return kept
