"""Lexical coverage (coverage-order-v1): within each lexical arm, a row that holds more of the question's distinct
content words comes first; the arm's own order (BM25) breaks ties.

Why: BM25 adds up per-word weights, so in a store that grows with other conversations a short row holding one
rare word (a name) outranks the row holding that name and the other words of the question, once those words
are common in the store; the row that answers is pushed down the arm, or past its depth. How many of the
question's words a row holds does not change as the store grows. Reorders an arm's rows, never adds or drops
one. The rule: docs/recall-process.md#lexical-coverage.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from cuedrecall.recall.arm_registry import ARMS, Arms
from cuedrecall.recall.context import RecallContext
from cuedrecall.store.base import Hit
from cuedrecall.store.term_counts import PlannedHits
from cuedrecall.text import normalize
from cuedrecall.text.words import query_words

POLICY: Final = "coverage-order-v1"
STEM: Final = 5  # a word of at least this many letters matches the text's words that share its first STEM letters


def order_by_coverage(ctx: RecallContext, arms: Arms, counted: Mapping[str, int] | None = None) -> Arms:
    """Each lexical arm's rows by (content words held, descending; arm rank); other arms as they are. ``counted``:
    rows already counted (``count_held``: the helper thread counts its arms' rows while the vector arms run)."""
    words = _words(ctx)
    if words is None:
        return arms
    lexical = [name for name in ARMS.lexical_names if arms.get(name)]
    held = {**(counted or {}), **count_held(ctx, {name: arms[name] for name in lexical}, exclude=counted or {})}
    out = dict(arms)
    for name in lexical:
        ordered = sorted(arms[name], key=lambda hit: (-held[hit.ref], hit.rank))
        hits = [Hit(hit.ref, rank, hit.raw) for rank, hit in enumerate(ordered)]
        found = arms[name]  # a keyword arm's term plan stays with its rows, for the trace
        out[name] = PlannedHits(hits, found.plan, found.ranked_on) if isinstance(found, PlannedHits) else hits
    return out


def count_held(ctx: RecallContext, arms: Arms, exclude: Mapping[str, int] | None = None) -> dict[str, int]:
    """How many of the question's content words each row of the lexical lists holds (its record hydrated first,
    a row on two arms read once); {} where the rule does not apply."""
    words = _words(ctx)
    if words is None:
        return {}
    refs = dict.fromkeys(
        hit.ref for name in ARMS.lexical_names for hit in arms.get(name, ()) if hit.ref not in (exclude or {})
    )
    ctx.facts.load(refs)
    return {ref: _held(ctx, ref, words) for ref in refs}


def _words(ctx: RecallContext) -> list[str] | None:
    """The question's content words, or None when the rule is off or has fewer than two to count."""
    words = query_words(ctx.query)
    return words if ctx.params.lexical_coverage and len(words) >= 2 else None


def _held(ctx: RecallContext, ref: str, words: list[str]) -> int:
    record = ctx.facts.get(ref)
    if record is None:
        return 0
    text = normalize(record.text + " " + record.keywords)
    return sum(1 for word in words if holds(text, word))


def holds(text: str, word: str) -> bool:
    """Whether a normalized text holds a question word: a word of at least STEM letters as the start of one of the
    text's words (its first STEM letters), a shorter one as a whole word. A text's words are its runs of letters and
    digits (``str.isalnum``, as the regex ``[^\\W_]``); the search finds the word's letters, then checks its edges,
    so a row costs a substring search per question word rather than a split of its text."""
    needle = word[:STEM] if len(word) >= STEM else word
    if not needle.isalnum():
        return False  # no run of letters and digits holds it
    whole = len(word) < STEM
    start = text.find(needle)
    while start >= 0:
        end = start + len(needle)
        if (start == 0 or not text[start - 1].isalnum()) and (not whole or end == len(text) or not text[end].isalnum()):
            return True
        start = text.find(needle, start + 1)
    return False
