"""What the recall arms of both backends share: the arms' entry points, the phrase scan, the newest rows.

How a backend scores (``_vector_arm``: SQLite's in-process index, PostgreSQL's
pgvector; ``_trigram_arm``: FTS5's bm25, PostgreSQL's BM25 over its trigram column)
is its own (``store/sqlite/arms.py``, ``store/postgres/arms.py``); each returns
ranked (ref, rank, raw) hits with the isolation predicate inside its query.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from cuedrecall.store import term_counts
from cuedrecall.store.base import EPISODE, MEMORY, Hit, Period, Scope, make_ref
from cuedrecall.store.predicates import like_escape
from cuedrecall.store.rows import TABLES

if TYPE_CHECKING:
    from cuedrecall.store.sql.dialect import Dialect


class SqlArms:
    """The arms' entry points over the backend's scoring, the phrase scan and the listing by recency."""

    if TYPE_CHECKING:  # provided by the backend's store and its arms
        dialect: Dialect

        def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]: ...
        def _vector_arm(
            self,
            scope: Scope,
            query: np.ndarray,
            floor: float,
            depth: int,
            *,
            positions: tuple[int, int | None],
            period: Period | None,
            kinds: tuple[str, ...],
        ) -> list[Hit]: ...
        def _trigram_arm(
            self, kind: str, scope: Scope, terms: Sequence[str], depth: int, period: Period | None
        ) -> list[Hit]: ...
        def row_count(self, table: str) -> int: ...
        def pool_counts(self, scope: Scope) -> tuple[int, int]: ...

    # -- vector arms ---------------------------------------------------------------------------

    def vector_near(self, scope: Scope, query: np.ndarray, *, floor: float, depth: int, window: int) -> list[Hit]:
        """Cosine over the newest ``window`` embedded rows of each kind in scope, best ``depth``."""
        return self._vector_arm(scope, query, floor, depth, positions=(0, window), period=None, kinds=(MEMORY, EPISODE))

    def vector_cosines(self, scope: Scope, query: np.ndarray, *, floor: float, depth: int, window: int) -> np.ndarray:
        """``vector_near``'s scores alone, best first, as float64 (a backend with an in-process index reads them
        without building the hits)."""
        hits = self.vector_near(scope, query, floor=floor, depth=depth, window=window)
        return np.array([hit.raw for hit in hits if hit.raw is not None], dtype=np.float64)

    def vector_far(
        self, scope: Scope, query: np.ndarray, *, floor: float, limit: int, window: int, reach: int
    ) -> list[Hit]:
        """The same over scan positions [window, reach): what the near window cannot see."""
        return self._vector_arm(
            scope, query, floor, limit, positions=(window, reach), period=None, kinds=(MEMORY, EPISODE)
        )

    def vector_in_period(
        self, scope: Scope, kind: str, query: np.ndarray, *, floor: float, depth: int, period: Period
    ) -> list[Hit]:
        """Cosine over every embedded record of one kind in the scope whose time lies in the period."""
        return self._vector_arm(scope, query, floor, depth, positions=(0, None), period=period, kinds=(kind,))

    # -- lexical arms ----------------------------------------------------------------------------

    def _small_scope(self, scope: Scope, table: str) -> bool:
        """Whether the scope holds few enough memories to scan them for the terms the budget leaves out (asked
        only of a table past the first budget: in a smaller one the budget leaves nothing out). Both backends
        plan a small scope's terms alike (``term_counts.plan_terms``)."""
        if self.row_count(table) <= term_counts.FIRST_PASS_ROWS:
            return False
        return self.pool_counts(scope)[0] <= term_counts.SCOPE_SCAN_ROWS

    def episode_fts(self, scope: Scope, terms: Sequence[str], *, depth: int, period: Period | None = None) -> list[Hit]:
        """Trigram matching over episode summary and keywords, best score first."""
        if not terms or depth <= 0 or not scope.episodes_visible:
            return []
        return self._trigram_arm(EPISODE, scope, terms, depth, period)

    def memory_keyword(
        self,
        scope: Scope,
        terms: Sequence[str],
        query: str,
        *,
        depth: int,
        period: Period | None = None,
        phrases: Sequence[str] = (),
    ) -> list[Hit]:
        """Trigram matching over memory content, then memories holding any of ``phrases`` (names too short for a
        trigram index, newest first); a scan for the query only when it has no trigram term and both find
        nothing (a row holding the whole query holds each of its terms, so the trigram arm already found it)."""
        if depth <= 0:
            return []
        hits = self._trigram_arm(MEMORY, scope, terms, depth, period) if terms else []
        if phrases and len(hits) < depth:
            hits += self._like_hits(scope, phrases, depth - len(hits), period, len(hits), {h.ref for h in hits})
        if hits or terms or not query.strip():
            return hits
        return self._like_hits(scope, [query.strip()], depth, period, 0, set())

    def _like_hits(
        self, scope: Scope, phrases: Sequence[str], depth: int, period: Period | None, first_rank: int, taken: set[str]
    ) -> list[Hit]:
        """Memories whose content holds any of the phrases (ASCII case folded), newest first, ranked after
        ``first_rank``."""
        where, params = self.dialect.scope_where(scope, "m", MEMORY)
        pwhere, pparams = self.dialect.period_where("m", period)
        mark = self.dialect.mark
        likes = " OR ".join(f"m.content {self.dialect.folded_like} {mark} ESCAPE '\\'" for _ in phrases)
        rows = self._read(
            f"SELECT m.id FROM memories m WHERE ({likes}) AND {where}{pwhere} ORDER BY m.id DESC LIMIT {mark}",
            [*(f"%{like_escape(phrase)}%" for phrase in phrases), *params, *pparams, depth + len(taken)],
        )
        refs = [make_ref(MEMORY, row_id) for (row_id,) in rows if make_ref(MEMORY, row_id) not in taken][:depth]
        return [Hit(ref, first_rank + rank, None) for rank, ref in enumerate(refs)]

    # -- recency ---------------------------------------------------------------------------------

    def newest(self, scope: Scope, kind: str, limit: int, period: Period | None = None) -> list[Hit]:
        """The scope's newest rows of one kind (by insertion, or by record time inside a period)."""
        if limit <= 0 or (kind == EPISODE and not scope.episodes_visible):
            return []
        where, params = self.dialect.scope_where(scope, "t", kind)
        pwhere, pparams = self.dialect.period_where("t", period)
        order = "t.ts_epoch DESC, t.id DESC" if period else "t.id DESC"
        rows = self._read(
            f"SELECT t.id FROM {TABLES[kind]} t WHERE {where}{pwhere} ORDER BY {order} LIMIT {self.dialect.mark}",
            [*params, *pparams, limit],
        )
        return [Hit(make_ref(kind, row_id), rank, None) for rank, (row_id,) in enumerate(rows)]
