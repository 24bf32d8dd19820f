"""Lexical coverage (coverage-order-v1): within each lexical arm, a row that holds more of the question's distinct
content words comes first; the arm's own order (BM25) breaks ties.

Why: BM25 adds up per-word weights, so in a store that grows with other conversations a short row holding one
rare word (a name) outranks the row holding that name and the other words of the question, once those words
are common in the store; the row that answers is pushed down the arm, or past its depth. How many of the
question's words a row holds does not change as the store grows. Reorders an arm's rows, never adds or drops
one. The rule: docs/recall-process.md#lexical-coverage.
"""

from __future__ import annotations

import re
from typing import Final

from cuedrecall.recall.arm_registry import ARMS, Arms
from cuedrecall.recall.context import RecallContext
from cuedrecall.store.base import Hit
from cuedrecall.text import normalize
from cuedrecall.text.words import query_words

POLICY: Final = "coverage-order-v1"
STEM: Final = 5  # a word of at least this many letters matches the text's words that share its first STEM letters
_WORD = re.compile(r"[^\W_]+")


def order_by_coverage(ctx: RecallContext, arms: Arms) -> Arms:
    """Each lexical arm's rows by (content words held, descending; arm rank); other arms as they are."""
    words = query_words(ctx.query)
    if not ctx.params.lexical_coverage or len(words) < 2:
        return arms
    lexical = [name for name in ARMS.lexical_names if arms.get(name)]
    refs = dict.fromkeys(hit.ref for name in lexical for hit in arms[name])  # a row on two arms is read once
    ctx.facts.load(refs)
    held = {ref: _held(ctx, ref, words) for ref in refs}
    out = dict(arms)
    for name in lexical:
        ordered = sorted(arms[name], key=lambda hit: (-held[hit.ref], hit.rank))
        out[name] = [Hit(hit.ref, rank, hit.raw) for rank, hit in enumerate(ordered)]
    return out


def _held(ctx: RecallContext, ref: str, words: list[str]) -> int:
    record = ctx.facts.get(ref)
    if record is None:
        return 0
    tokens = set(_WORD.findall(normalize(record.text + " " + record.keywords)))
    stems = {token[:STEM] for token in tokens if len(token) >= STEM}
    return sum(1 for word in words if (word[:STEM] in stems if len(word) >= STEM else word in tokens))
