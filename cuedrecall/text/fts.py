"""The full-text query builder: a free-text question becomes an FTS5 OR expression."""

from __future__ import annotations

import re
from collections.abc import Sequence

# Characters stripped from the edges of each whitespace token, so "(bug-183)," searches bug-183.
_EDGE_PUNCTUATION = "\"'`.,;:!?()[]{}"

# Hiragana, katakana, CJK extension A, the unified ideographs and half-width katakana:
# text in these scripts has no spaces, so it is cut into trigrams rather than words.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff66-\uff9f"
_RUNS = re.compile(f"[{_CJK}]+|[^\\s{_CJK}]+")
_CJK_RUN = re.compile(f"[{_CJK}]+")

# The FTS5 trigram tokenizer cannot match anything shorter than three characters.
MIN_TERM = 3

# recall-bounds-v1 (recall/bounds.py records them): a query's cost must not grow with its length. A pasted page
# gives the arms its first distinct terms; a CJK run, whose every three characters are a term, its first
# trigrams. Each term is one phrase of the FTS5 expression and one count the keyword budget reads.
MAX_TERMS = 48
MAX_CJK_TRIGRAMS = 32


def _strip_edges(query: str) -> str:
    """Strip edge punctuation from every whitespace token and re-join with single spaces."""
    return " ".join(token.strip(_EDGE_PUNCTUATION) for token in query.split())


def _trigrams(run: str) -> list[str]:
    """All overlapping three-character substrings of a run (none when it is shorter)."""
    return [run[i : i + MIN_TERM] for i in range(len(run) - MIN_TERM + 1)]


def _quote(term: str) -> str:
    """An FTS5 string literal: the term in double quotes, inner quotes doubled."""
    return '"' + term.replace('"', '""') + '"'


def fts_terms(query: str, extra_terms: Sequence[str] = ()) -> list[str]:
    """The distinct search terms of a query plus extra phrases, in first-seen order, capped (``capped_terms``)."""
    return capped_terms(query, extra_terms)[0]


def capped_terms(query: str, extra_terms: Sequence[str] = ()) -> tuple[list[str], int]:
    """The query's first ``MAX_TERMS`` distinct terms (of them at most ``MAX_CJK_TRIGRAMS`` CJK trigrams), then
    the extra phrases (at most ``MAX_TERMS`` of them); and how many distinct terms the caps left out."""
    taken: dict[str, None] = {}
    seen: set[str] = set()  # every distinct term, taken or not (set operations: a long run costs C time)
    cjk = 0
    for run in _RUNS.findall(_strip_edges(query)):
        is_cjk = bool(_CJK_RUN.fullmatch(run))
        grams = _trigrams(run) if is_cjk else ([run] if len(run) >= MIN_TERM else [])
        room = MAX_TERMS - len(taken)
        if is_cjk:
            room = min(room, MAX_CJK_TRIGRAMS - cjk)
        for term in grams:
            if room <= 0:
                break
            if term not in taken:
                taken[term] = None
                cjk += is_cjk
                room -= 1
        seen.update(grams)
    extras = list(dict.fromkeys(t for t in (term.strip() for term in extra_terms) if len(t) >= MIN_TERM))
    fresh = [term for term in extras if term not in taken]
    kept = [*taken, *fresh[:MAX_TERMS]]
    seen.update(extras)
    return kept, len(seen) - len(kept)


# a query's runs of two characters in a script without spaces (移転, 会議): words the trigram index cannot hold
SHORT_RUN = 2
MAX_SHORT_RUNS = 4


def short_runs(query: str) -> list[str]:
    """The query's first ``MAX_SHORT_RUNS`` distinct CJK runs of exactly two characters, in order: the short-word
    arm looks for them as substrings (docs/recall-process.md#short-words). One character alone is too common."""
    runs = (run for run in _CJK_RUN.findall(query) if len(run) == SHORT_RUN)
    return list(dict.fromkeys(runs))[:MAX_SHORT_RUNS]


def fts_expression(terms: Sequence[str]) -> str:
    """Quoted terms joined with OR; "" for no terms."""
    return " OR ".join(_quote(term) for term in terms)


def build_fts_expression(query: str, extra_terms: Sequence[str] = ()) -> str:
    """The FTS5 MATCH expression for a query plus extra phrases; "" when no term survives."""
    return fts_expression(fts_terms(query, extra_terms))
