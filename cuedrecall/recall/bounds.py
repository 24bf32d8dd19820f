"""recall-bounds-v1: what one recall may cost, whatever passed the tools' validation, and its trace record.

Validation (tools/bounds.py) caps what a caller may send: a query's length, the limit,
the exclusion list's length. Inside recall each of those is turned into work, and each
kind of work has a cap of its own, named where it applies:

- the query's distinct full-text terms (``text.fts.MAX_TERMS``), of them the trigrams cut
  from CJK runs (``text.fts.MAX_CJK_TRIGRAMS``), and its content words
  (``text.words.MAX_WORDS``): the first ones are taken, the rest left out;
- the rows a keyword arm ranks (``store.term_counts``, keyword-budget-v2): terms are
  taken rarest first within a budget of matching rows;
- the exclusion entries applied (``text.exclusion.MAX_EXCLUSIONS``), each check a few
  set probes and one bisection, not one comparison per entry;
- the time cue's stages and depth (``cue_policy.MAX_CUE_STAGES``, ``CUE_DEPTH``).

The trace's ``bounds`` section names the policy, every cap, and what each one left out.
"""

from __future__ import annotations

from typing import Any

from cuedrecall.recall.context import RecallContext
from cuedrecall.recall.cue_policy import CUE_DEPTH, MAX_CUE_STAGES
from cuedrecall.store.term_counts import FALLBACK_ROWS, FIRST_PASS_ROWS, KEYWORD_BUDGET_RULE
from cuedrecall.text.exclusion import MAX_EXCLUSIONS
from cuedrecall.text.fts import MAX_CJK_TRIGRAMS, MAX_TERMS
from cuedrecall.text.words import MAX_WORDS

POLICY = "recall-bounds-v1"
CAPS: dict[str, Any] = {
    "terms": MAX_TERMS,
    "cjk_trigrams": MAX_CJK_TRIGRAMS,
    "words": MAX_WORDS,
    "exclusions": MAX_EXCLUSIONS,
    "keyword_rule": KEYWORD_BUDGET_RULE,
    "keyword_first_pass_rows": FIRST_PASS_ROWS,
    "keyword_fallback_rows": FALLBACK_ROWS,
    "cue_stages": MAX_CUE_STAGES,
    "cue_depth": CUE_DEPTH,
}


def record(ctx: RecallContext) -> dict[str, Any]:
    """The trace's ``bounds`` section: the policy, its caps, and how many of the caller's items each left out."""
    left_out = {**ctx.left_out, "exclusions": getattr(ctx.params.exclusions, "left_out", 0)}
    return {"policy": POLICY, "caps": dict(CAPS), "left_out": left_out}
