"""The recall arms and the term counts of the SQLite store: each arm one query (or one masked product over the
in-process index) with the isolation predicate inside, returning ranked (ref, rank, raw) hits.

A mixin of ``SqliteStore``: it reads through the store's connection, lock, indexes and caches.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from cuedrecall.errors import StoreError
from cuedrecall.store.base import EPISODE, MEMORY, CoarseHit, Hit, Period, Scope, make_ref
from cuedrecall.store.index.vector_index import coarse_hits, search_kinds, window_cosines
from cuedrecall.store.predicates import period_where, scope_where
from cuedrecall.store.rows import TABLES
from cuedrecall.store.sql.arms import SqlArms
from cuedrecall.store.term_counts import PlannedHits, TermKind, TermPlan, plan_terms, run_plan
from cuedrecall.text.fts import fts_expression
from cuedrecall.text.words import words_expression

if TYPE_CHECKING:
    from cuedrecall.store.index.locks import SnapshotLock
    from cuedrecall.store.index.vector_index import VectorIndex
    from cuedrecall.store.term_counts import TermCounts

# kind -> (table, alias, its FTS5 table): the two full-text arms differ only in these names
_FTS_TABLES = {MEMORY: ("memories", "m", "memories_fts"), EPISODE: ("episodes", "e", "episodes_fts")}
# The narrow index of each table's isolation columns by id (migration 8): a match's scope is checked there,
# not in the wide row, so another agent's matching rows cost an index probe, not a page of text and vector.
_SCOPE_INDEX = {MEMORY: "idx_memories_scope", EPISODE: "idx_episodes_scope"}


def fts_arm_sql(kind: str, scope: Scope, period: Period | None) -> tuple[str, list[Any]]:
    """The one query both full-text arms run: MATCH, isolation, period, best bm25 first.

    The statement takes the MATCH expression as its first parameter and the depth as
    its last; the parameters returned are those in between.
    """
    table, alias, fts = _FTS_TABLES[kind]
    where, params = scope_where(scope, alias, kind)
    pwhere, pparams = period_where(alias, period)
    sql = (
        f"SELECT {alias}.id, bm25({fts}) FROM {fts} JOIN {table} {alias} INDEXED BY {_SCOPE_INDEX[kind]} "
        f"ON {alias}.id = {fts}.rowid "
        f"WHERE {fts} MATCH ? AND {where}{pwhere} ORDER BY bm25({fts}), {alias}.id LIMIT ?"
    )
    return sql, [*params, *pparams]


def words_arm_sql(scope: Scope, period: Period | None) -> tuple[str, list[Any]]:
    """The word arm's query, as ``fts_arm_sql`` over the stemmed word index."""
    where, params = scope_where(scope, "m", MEMORY)
    pwhere, pparams = period_where("m", period)
    sql = (
        f"SELECT m.id, bm25(memories_words) FROM memories_words JOIN memories m INDEXED BY {_SCOPE_INDEX[MEMORY]} "
        f"ON m.id = memories_words.rowid WHERE memories_words MATCH ? AND {where}{pwhere} "
        "ORDER BY bm25(memories_words), m.id LIMIT ?"
    )
    return sql, [*params, *pparams]


class SqliteArms(SqlArms):
    """The arms' scoring over FTS5 and the in-process index, and the term counts (store.term_counts.TermSource);
    the entry points, the phrase scan and the listing by recency are ``SqlArms``'."""

    if TYPE_CHECKING:  # provided by SqliteStore
        _lock: SnapshotLock
        _indexes: dict[str, VectorIndex]
        _vocab: TermCounts

        def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]: ...
        def _catch_up(self, force: bool = False) -> None: ...
        def _cached(self, key: tuple[Any, ...], compute: Callable[[], Any]) -> Any: ...
        def _kept(self, key: tuple[Any, ...], full: Any, grow: Any) -> Any: ...
        def pool_counts(self, scope: Scope) -> tuple[int, int]: ...

    # -- recall arms ---------------------------------------------------------------------

    def far_candidates(self, scope: Scope, query: np.ndarray, *, start: int, count: int) -> list[CoarseHit]:
        """The ``count`` embedded memories of the scope at scan positions >= ``start`` nearest the query by
        Hamming distance between sign bits (ties: the earlier position), each with its stored vector's cosine."""
        with self._lock:
            self._catch_up()
            return coarse_hits(self._indexes[MEMORY], scope, query, start=start, count=count)

    def vector_cosines(self, scope: Scope, query: np.ndarray, *, floor: float, depth: int, window: int) -> np.ndarray:
        """``vector_near``'s scores from the index alone (``window_cosines``): the same values, no hits built."""
        with self._lock:
            self._catch_up()
            return window_cosines(self._indexes, scope, query, floor=floor, depth=depth, window=window)

    def _vector_arm(
        self,
        scope: Scope,
        query: np.ndarray,
        floor: float,
        depth: int,
        *,
        positions: tuple[int, int | None],
        period: Period | None = None,
        kinds: tuple[str, ...] = (MEMORY, EPISODE),
    ) -> list[Hit]:
        with self._lock:
            self._catch_up()
            return search_kinds(
                self._indexes, scope, query, floor, depth, positions=positions, period=period, kinds=kinds
            )

    def memory_words(
        self, scope: Scope, words: Sequence[str], *, depth: int, period: Period | None = None
    ) -> list[Hit]:
        """The word arm: memories holding any of the words (stemmed), best bm25 first."""
        if not words or depth <= 0:
            return []
        sql, params = words_arm_sql(scope, period)
        # as the keyword arm: the words' plan under keyword-budget-v2
        plan = plan_terms(self._vocab, "memories", words, words=True, small_scope=self._small_scope(scope, "memories"))
        rows, ranked_on = self._ranked(sql, plan, words_expression, [*params, depth], depth)
        return PlannedHits(
            (Hit(make_ref(MEMORY, row_id), rank, score) for rank, (row_id, score) in enumerate(rows)), plan, ranked_on
        )

    def _trigram_arm(
        self, kind: str, scope: Scope, terms: Sequence[str], depth: int, period: Period | None
    ) -> list[Hit]:
        sql, params = fts_arm_sql(kind, scope, period)
        small = kind == MEMORY and self._small_scope(scope, "memories")
        plan = plan_terms(self._vocab, _FTS_TABLES[kind][0], terms, words=False, small_scope=small)
        rows, ranked_on = self._ranked(sql, plan, fts_expression, [*params, depth], depth)
        hits = [Hit(make_ref(kind, row_id), rank, score) for rank, (row_id, score) in enumerate(rows)]
        if small and plan.left_out and len(hits) < depth:
            hits += self._like_hits(scope, plan.left_out, depth - len(hits), period, len(hits), {h.ref for h in hits})
        return PlannedHits(hits, plan, ranked_on)

    def _ranked(
        self, sql: str, plan: TermPlan, expression: Any, params: list[Any], depth: int
    ) -> tuple[list[tuple], str]:
        """The rows of ``sql`` ranked under the plan (``term_counts.run_plan``) and the pass they came from."""

        def run(terms: list[str], also: list[str]) -> list[tuple]:
            match = f"({expression(terms)}) AND ({expression(also)})" if also else expression(terms)
            return self._read_fts(sql, [match, *params])

        return run_plan(plan, run, depth, key=lambda row: row[0])

    def _read_fts(self, sql: str, params: list[Any]) -> list[tuple]:
        try:
            return self._read(sql, params)
        except StoreError as exc:
            if isinstance(exc.__cause__, sqlite3.OperationalError):
                return []  # an expression FTS5 cannot parse finds nothing; the LIKE path still runs
            raise

    # -- term counts (store.term_counts.TermSource) ------------------------------------------

    def row_count(self, table: str) -> int:
        """Rows in a table, across every agent (what FTS5's idf counts)."""
        kind = next((kind for kind, name in TABLES.items() if name == table), None)
        if kind is None:
            return self._cached(("rows", table), lambda: self._read(f"SELECT COUNT(*) FROM {table}")[0][0])

        def read(upto: dict[str, int]) -> tuple[int, dict[str, int]]:
            count, top = self._read(
                f"SELECT (SELECT COUNT(*) FROM {table} WHERE id > ?), (SELECT COALESCE(MAX(id), 0) FROM {table})",
                (upto.get(kind, 0),),
            )[0]
            return count, {kind: top}

        def grow(kept: int, upto: dict[str, int]) -> tuple[int, dict[str, int]]:
            added, newest = read(upto)
            return kept + added, newest

        return self._kept(("rows", table), lambda: read({}), grow)

    def term_counts(self, table: str, kind: TermKind, texts: Sequence[str]) -> list[int]:
        """Rows holding each text: a trigram from the fts5vocab table, a phrase or a word by a count of its
        matches (in process, one statement a text)."""
        count = {"gram": self._gram_count, "phrase": self._phrase_count, "word": self._word_count}[kind]
        return [count(table, text) for text in texts]

    def _gram_count(self, table: str, gram: str) -> int:
        rows = self._read(f"SELECT doc FROM {table}_vocab WHERE term = ?", (gram,))
        return rows[0][0] if rows else 0

    def _word_count(self, table: str, word: str) -> int:
        rows = self._read_fts(
            f"SELECT COUNT(*) FROM {table}_words WHERE {table}_words MATCH ?", [words_expression([word])]
        )
        return rows[0][0] if rows else 0

    def _phrase_count(self, table: str, phrase: str) -> int:
        rows = self._read_fts(f"SELECT COUNT(*) FROM {table}_fts WHERE {table}_fts MATCH ?", [fts_expression([phrase])])
        return rows[0][0] if rows else 0
