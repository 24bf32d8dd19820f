"""Which full-text terms are common enough to leave out of a first ranking pass, and how many rows each holds.

The counts are cached in a bounded LRU: a store that is asked fresh terms forever (every
recall a new CJK text, so new trigrams) keeps at most ``MAX_ENTRIES`` of them, never a
count per term ever asked.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar

from cuedrecall.store.base import Hit
from cuedrecall.text.words import STOP_WORDS

_Row = TypeVar("_Row")


TermKind = Literal["gram", "phrase", "word"]


class TermSource(Protocol):
    """The counts the rules need, from whichever backend keeps the full-text index."""

    def row_count(self, table: str) -> int: ...

    def term_counts(self, table: str, kind: TermKind, texts: Sequence[str]) -> list[int]:
        """Rows of the table holding each text, in order: a trigram (lower-cased) or a phrase of the trigram index,
        or a word of the word index (stemmed as it stems). One call for many, so a backend a round trip away
        counts them in one."""
        ...


class TermCounts:
    """Which FTS terms are common: found in more than ``ratio`` of a table's rows; and each term's row count.

    A three-character term is one trigram, counted exactly; a longer one is bounded
    by its rarest trigram and counted as a phrase only when that bound is over the
    line. Counts are cached until the table has grown or shrunk by a tenth, so a
    warm store pays nothing for the check; the least recently used count leaves
    first once ``MAX_ENTRIES`` are held. What one query's terms need is asked of the
    source at once (``prefetch``).
    """

    STALE_RATIO = 0.1
    MIN_ROWS = 200  # in a smaller store a tenth of the rows is too few to call a word common
    # About 150 bytes an entry (key tuple, short strings, value tuple): some 8 MB at the bound, while a
    # conversation's working vocabulary (its words and their trigrams) is a few thousand entries.
    MAX_ENTRIES = 50_000
    # A term's rarest trigram is looked for among its first distinct ones only: any of them bounds the term's
    # rows, so a 10,000-character token costs 16 counts, not 10,000 (the bound is only ever an upper one).
    MAX_BOUND_GRAMS = 16

    def __init__(self, source: TermSource, ratio: float, max_entries: int = MAX_ENTRIES) -> None:
        self._source = source
        self.ratio = ratio
        self.max_entries = max_entries
        self._counts: OrderedDict[tuple[str, str, str], tuple[int, int]] = OrderedDict()
        self._guard = threading.Lock()  # recalls on several threads share the cache; a count is read outside it

    def __len__(self) -> int:
        return len(self._counts)

    def row_count(self, table: str) -> int:
        return self._source.row_count(table)

    def counts_rows(self, table: str) -> bool:
        """Whether the common-term rule reads counts in this table (a smaller one has no common term)."""
        return self._reads_counts(self._source.row_count(table))

    def _reads_counts(self, total: int) -> bool:
        return total >= self.MIN_ROWS and self.ratio < 1.0

    def prefetch(self, table: str, terms: Sequence[str], *, words: bool) -> None:
        """Ask the source, in one call, every count the terms' plan may read that is not cached: each word, or
        each trigram term's bounding trigrams (a phrase's own count is asked when its bound is over the line)."""
        if words:
            self._many(table, "word", list(dict.fromkeys(terms)), self._source.row_count(table))
            return
        grams = dict.fromkeys(gram for term in terms for gram in self._grams(term))
        self._many(table, "gram", list(grams), self._source.row_count(table))

    def is_common(self, table: str, term: str) -> bool:
        total = self._source.row_count(table)
        if not self._reads_counts(total):
            return False
        limit = self.ratio * total
        if len(term) == 3:
            return self._count(table, "gram", term.lower(), total) > limit
        if self._bound(table, term, total) <= limit:
            return False  # a phrase is no commoner than its rarest trigram
        return self._count(table, "phrase", term, total) > limit

    def is_common_word(self, table: str, word: str) -> bool:
        """The same rule for a word of the word index, counted as the index stems it."""
        total = self._source.row_count(table)
        if not self._reads_counts(total):
            return False
        return self._count(table, "word", word, total) > self.ratio * total

    def term_rows(self, table: str, term: str) -> int:
        """The rows FTS5 reads for a trigram-index term: its trigram's, or its rarest trigram's (an upper bound
        of the rows that hold the phrase, read from the vocabulary: no phrase scan, whatever the term)."""
        total = self._source.row_count(table)
        if len(term) < 3:
            return 0
        if len(term) == 3:
            return self._count(table, "gram", term.lower(), total)
        return self._bound(table, term, total)

    def word_rows(self, table: str, word: str) -> int:
        """Rows holding a word of the word index."""
        return self._count(table, "word", word, self._source.row_count(table))

    def held_rows(self, table: str, terms: Sequence[str], *, words: bool) -> list[int]:
        """Rows holding each term itself, over the table, as FTS5's statistics count it (its df): a word of the word
        index, or a trigram-index term (a trigram's count, a longer term's phrase count; none for a shorter one).
        Cached as every count here: within STALE_RATIO of the table's rows."""
        total = self._source.row_count(table)
        if words:
            return self._many(table, "word", list(terms), total)
        grams = [term.lower() for term in terms if len(term) == 3]
        phrases = [term for term in terms if len(term) > 3]
        found = {
            **dict(zip(grams, self._many(table, "gram", grams, total) if grams else [])),
            **dict(zip(phrases, self._many(table, "phrase", phrases, total) if phrases else [])),
        }
        return [found.get(term.lower() if len(term) == 3 else term, 0) for term in terms]

    def _grams(self, term: str) -> list[str]:
        """The trigrams that bound a term's rows: its first MAX_BOUND_GRAMS distinct ones, lower-cased."""
        grams: dict[str, None] = {}
        for i in range(len(term) - 2):
            grams[term[i : i + 3].lower()] = None
            if len(grams) == self.MAX_BOUND_GRAMS:
                break
        return list(grams)

    def _bound(self, table: str, term: str, total: int) -> int:
        return min(self._many(table, "gram", self._grams(term), total))

    def _count(self, table: str, kind: TermKind, text: str, total: int) -> int:
        return self._many(table, kind, [text], total)[0]

    def _many(self, table: str, kind: TermKind, texts: list[str], total: int) -> list[int]:
        """The counts of the texts: from the cache where fresh (within STALE_RATIO of the table's rows), the
        rest asked of the source in one call."""
        found: dict[str, int] = {}
        with self._guard:
            for text in texts:
                cached = self._counts.get((table, kind, text))
                if cached is not None and abs(total - cached[1]) <= self.STALE_RATIO * cached[1]:
                    self._counts.move_to_end((table, kind, text))
                    found[text] = cached[0]
        missing = [text for text in dict.fromkeys(texts) if text not in found]
        if missing:
            counted = self._source.term_counts(table, kind, missing)
            found.update(zip(missing, counted))
            with self._guard:
                for text, count in zip(missing, counted):
                    self._counts[(table, kind, text)] = (count, total)
                    self._counts.move_to_end((table, kind, text))
                while len(self._counts) > self.max_entries:
                    self._counts.popitem(last=False)
        return [found[text] for text in texts]


# -- the keyword budget (keyword-budget-v2) ----------------------------------------------------

# v2: a first pass that fills the depth shares it with the joined pass's rows (``run_plan``)
KEYWORD_BUDGET_RULE = "keyword-budget-v2"
# bm25 scores every row an FTS5 expression matches, of every agent, before LIMIT applies: a pass's cost
# is its matching rows. A pass ranks on the terms that fit its budget, rarest first, counting a term's
# rows at most once per row of the table (min(sum, rows)); a store no larger than the budget keeps all.
FIRST_PASS_ROWS = 2_000  # the first pass: the uncommon terms (not in more than ratio of the rows)
FALLBACK_ROWS = 8_000  # the second pass, when the first finds fewer rows than the arm's depth: any term
# A term the budget leaves out is in many rows of the store, but maybe of other agents: a scope of at most this
# many memories is scanned for it (LIKE over its own rows, newest first, after the ranked rows), so what other
# agents store neither hides a small scope's rows nor makes it pay for theirs.
SCOPE_SCAN_ROWS = 2_000


@dataclass(frozen=True)
class TermPlan:
    """Which of a query's terms each pass ranks on (in the query's order), and the counts that decided it."""

    first: tuple[str, ...]
    fallback: tuple[str, ...]
    terms: tuple[str, ...] = ()  # every term the arm was given, in the query's order
    rows: dict[str, int] = field(default_factory=dict)  # rows each term holds, where the rule read them
    table_rows: int = 0
    fallback_rows: int = FALLBACK_ROWS  # the fallback's budget: FIRST_PASS_ROWS for a scope the arm scans

    @property
    def left_out(self) -> tuple[str, ...]:
        """Terms neither pass ranks on: each holds more rows than the fallback's budget leaves."""
        return tuple(term for term in self.rows if term not in self.fallback)

    def record(self, ranked_on: str) -> dict[str, Any]:
        """The trace's account: the rule, its budgets, each pass's terms and which pass the hits came from.

        A trace holds no text, the query's included: terms are named by their place in the
        arm's term list (``fts_terms``/``query_words`` of the query, which the caller has).
        """
        place = {term: i for i, term in enumerate(self.terms)}
        return {
            "rule": KEYWORD_BUDGET_RULE,
            "first_pass_rows": FIRST_PASS_ROWS,
            "fallback_rows": self.fallback_rows,
            "table_rows": self.table_rows,
            "terms": len(self.terms),
            "first": [place[t] for t in self.first],
            "fallback": [place[t] for t in self.fallback],
            "left_out": [place[t] for t in self.left_out],
            "term_rows": [self.rows.get(t) for t in self.terms],
            "ranked_on": ranked_on,
        }


class PlannedHits(list[Hit]):
    """An arm's hits with the term plan they were ranked under (the trace records it; a plain list otherwise)."""

    def __init__(self, hits: Iterable[Hit], plan: TermPlan, ranked_on: str) -> None:
        super().__init__(hits)
        self.plan, self.ranked_on = plan, ranked_on


def plan_terms(
    counts: TermCounts, table: str, terms: Sequence[str], *, words: bool, small_scope: bool = False
) -> TermPlan:
    """keyword-budget-v2 over the trigram index's terms (``words`` False) or the word index's words.

    In a table of at most FIRST_PASS_ROWS rows every pass fits: the first ranks on the
    terms not common (in more than ``ratio`` of the rows), the fallback on all. In a
    larger one each term's rows are read (``term_rows``/``word_rows``: vocabulary
    lookups, cached), a term is common past ``ratio`` of them, and each pass takes
    what fits its budget. For a ``small_scope`` (one the arm scans for what the budget
    leaves out) the fallback keeps the first pass's budget: the scan finds the scope's
    rows that hold the commoner terms, so other agents' rows are never read for them.
    """
    total = counts.row_count(table)
    if total > FIRST_PASS_ROWS or counts.counts_rows(table):
        counts.prefetch(table, terms, words=words)  # one request for every count below
    if total <= FIRST_PASS_ROWS:  # every pass fits: only the common-term rule reads counts
        common = counts.is_common_word if words else counts.is_common
        return TermPlan(tuple(t for t in terms if not common(table, t)), tuple(terms), tuple(terms), table_rows=total)
    rows = {term: counts.word_rows(table, term) if words else counts.term_rows(table, term) for term in terms}
    line = counts.ratio * total if counts.ratio < 1.0 and total >= counts.MIN_ROWS else float("inf")
    uncommon = [term for term in terms if rows[term] <= line]
    fallback_rows = FIRST_PASS_ROWS if small_scope else FALLBACK_ROWS
    return TermPlan(
        _within(uncommon, rows, FIRST_PASS_ROWS, total),
        _within(terms, rows, fallback_rows, total),
        tuple(terms),
        rows,
        total,
        fallback_rows,
    )


# One ranked query of an arm: the rows holding any of ``terms`` (and, when ``also`` is not empty, any of ``also``
# as well, every one of both lists counted in the ranking), best first, at most the arm's depth.
RunPass = Callable[[list[str], list[str]], list[_Row]]


def run_plan(plan: TermPlan, run: RunPass[_Row], depth: int, *, key: Callable[[_Row], Any]) -> tuple[list[_Row], str]:
    """Rank on the plan's first terms; on its fallback terms when that finds fewer than ``depth`` rows. Returns the
    rows and the pass they came from ("first", "joined", "fallback" or "none"); ``key`` names a row.

    bm25 must score every row a term matches, and a common word ("the", "was")
    matches a large share of the store, for a small weight (low idf). Leaving
    such words out keeps the keyword arm's cost proportional to what the rare
    words match. But a word is left out of the first pass for its rows, not its
    meaning: in a store grown with other text an ordinary word of the question
    ("degree") passes the budget, and the first pass's depth fills with rows that
    hold the rarer words alone while the row that also holds it slides past. So
    when the first pass fills the depth, the fallback's other content words (a
    function word, "what", says nothing of a row) rank too, among the rows that
    hold a first-pass term: the "joined" pass, a first term AND one of them, ranked
    on both. The depth is shared: the joined rows and the first pass's alternate,
    so neither pass's best rows are cut for the other's. Its cost is the rows of
    the first terms and of the fallback's, as the two passes' was.
    docs/recall-process.md#the-full-text-query says the same in prose.
    """
    if plan.first and plan.first != plan.fallback:
        rows = run(list(plan.first), [])
        if len(rows) < depth:
            return _fallback(plan, run)
        others = [term for term in plan.fallback if term not in plan.first and term.lower() not in STOP_WORDS]
        joined = run(list(plan.first), others) if others else []
        if not joined:
            return rows, "first"
        return _alternate(joined, rows, depth, key), "joined"
    return _fallback(plan, run)


def _alternate(one: list[_Row], other: list[_Row], depth: int, key: Callable[[_Row], Any]) -> list[_Row]:
    """``one``'s first row, ``other``'s first, ``one``'s second, ... each row once, to the depth; a list that runs
    out leaves its turns to the other."""
    out: list[_Row] = []
    seen: set[Any] = set()
    for place in range(max(len(one), len(other))):
        for rows in (one, other):
            if len(out) == depth:
                return out
            if place < len(rows) and key(rows[place]) not in seen:
                seen.add(key(rows[place]))
                out.append(rows[place])
    return out


def _fallback(plan: TermPlan, run: RunPass[_Row]) -> tuple[list[_Row], str]:
    if not plan.fallback:
        return [], "none"
    return run(list(plan.fallback), []), "fallback"


def _within(terms: Sequence[str], rows: dict[str, int], budget: int, total: int) -> tuple[str, ...]:
    """The terms that fit the budget taken rarest first (ties: query order), returned in the query's order."""
    if total <= budget:
        return tuple(terms)
    kept, spent = set(), 0
    for term in sorted(terms, key=lambda t: rows[t]):  # sorted() is stable: ties keep the query's order
        if spent + rows[term] > budget:
            break
        kept.add(term)
        spent += rows[term]
    return tuple(term for term in terms if term in kept)
