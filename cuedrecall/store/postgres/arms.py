"""The recall arms of the PostgreSQL store: each arm one query with the isolation predicate (and the cue period)
inside it, returning ranked (ref, rank, raw) hits.

Vector arms are exact: every comparable vector of the scope's scan window is scored
(pgvector's inner product, ``<#>``), so they return the rows the SQLite store's
in-process index returns for the same vectors. The scan order is the SQLite
store's: the scope's embedded rows of the query's width (and the vector model),
newest id first; ties go to memories, then the earlier scan position.

Lexical arms rank by BM25 with FTS5's constants (k1 = 1.2, b = 0.75, idf =
max(ln((n - df + 0.5) / (df + 0.5)), 1e-6)), its statistics taken over the scope, so
no other agent's rows move an agent's ranking: n = the scope's rows, df = the
scope's rows holding the term, the mean length over the scope; the cue period
filters after scoring; raw = -BM25, best (lowest) first, then id.

- trigram arms (``memory_keyword``, ``episode_fts``): a row matches a term when
  its lower-cased text holds the lower-cased term (the generated ``grams`` column
  and its GIN index find the candidates; FTS5 trigram matching, for Japanese and
  identifiers alike); tf = the term's (non-overlapping) occurrences, length =
  characters - 2 (FTS5's trigram count); an episode's summary and keywords count
  together (tf summed, lengths summed), as in FTS5. FTS5 takes its statistics over
  the whole table: on a one-agent store the two rank alike. The keyword budget's
  joined pass takes FTS5's (``_statistics``), so it ranks alike on any store.
- word arm (``memory_words``): the ``words`` column, the tokens SQLite's word
  index (porter over unicode61) makes of the content (words.py), finds the rows;
  tf = the token's places in ``word_tokens`` (the same tokens in order), length =
  the row's tokens, as FTS5.

Which terms rank is the SQLite store's rule, keyword-budget-v2
(``store.term_counts.plan_terms``), over this store's counts (terms.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from cuedrecall.store.base import EPISODE, MEMORY, CoarseHit, Hit, Period, Scope, make_ref
from cuedrecall.store.index.vector_index import coarse_hits, search_kinds
from cuedrecall.store.postgres.dialect import POSTGRES
from cuedrecall.store.postgres.words import any_of, query_lexemes, word_tokens
from cuedrecall.store.sql.arms import SqlArms
from cuedrecall.store.term_counts import PlannedHits, plan_terms, run_plan

if TYPE_CHECKING:
    from cuedrecall.store.index.vector_index import VectorIndex
    from cuedrecall.store.term_counts import TermCounts

_TEXT = {MEMORY: ("memories", "m.content"), EPISODE: ("episodes", "m.summary || E'\\n' || m.keywords")}
_K1, _B, _IDF_FLOOR = 1.2, 0.75, 1e-6  # FTS5's bm25 constants
# kind -> the columns a trigram arm scores and the row's length (FTS5: the tokens of every column together)
_COLUMNS = {MEMORY: (("content",), ("text_len",)), EPISODE: (("summary", "keywords"), ("summary_len", "keywords_len"))}


def sign_text(vector: np.ndarray) -> str:
    """A vector's sign bits as a PostgreSQL bit string (a dimension > 0 is a 1)."""
    return "".join("1" if x > 0 else "0" for x in np.asarray(vector).reshape(-1).tolist())


def row_length(lengths: Sequence[str]) -> str:
    """A row's length for BM25: the sum of its length columns (alias m)."""
    return " + ".join(f"m.{column}" for column in lengths)


def _bm25(period: Period | None, *, given_df: bool = False) -> tuple[str, list[Any]]:
    """The ranking half of a lexical arm's query, after CTE ``o`` (id, ts_epoch, len, term i, tf): df per
    term among the matching rows, n and the mean row length over the scope (parameters: ``PgRecords._scope_lengths``),
    the period, best first. Its parameters: n, the mean, the period's, then the depth; with ``given_df``, each
    term's df (an array, in the terms' order) before them."""
    pwhere, pparams = POSTGRES.period_where("s", period)
    df = "(%s::float8[])[o.i]" if given_df else "count(*) FILTER (WHERE o.tf > 0) OVER (PARTITION BY o.i)"
    return (
        f"s AS (SELECT o.*, {df} AS df FROM o), "
        "n AS (SELECT %s::float8 AS n, %s::float8 AS mean) "
        f"SELECT s.id, -SUM(CASE WHEN s.tf > 0 THEN GREATEST(ln((n.n - s.df + 0.5) / (s.df + 0.5)), {_IDF_FLOOR}) "
        f"* s.tf * ({_K1} + 1) / (s.tf + {_K1} * (1 - {_B} + {_B} * s.len / n.mean)) ELSE 0 END)::float8 AS raw "
        f"FROM s CROSS JOIN n WHERE TRUE{pwhere} GROUP BY s.id ORDER BY raw, s.id LIMIT %s",
        pparams,
    )


def _ref(hit: Hit) -> str:
    return hit.ref


def _ranked(hits: list[Hit]) -> list[Hit]:
    """The hits numbered in their order (a joined pass puts two queries' rows in one list)."""
    return [hit if hit.rank == rank else Hit(hit.ref, rank, hit.raw) for rank, hit in enumerate(hits)]


class PgArms(SqlArms):
    """The vector and lexical arms' scoring and the far seats' coarse search; the entry points, the phrase scan
    and the listing by recency are ``SqlArms``'."""

    vector_model: str | None
    hnsw_dim: int | None  # the width of the optional HNSW index (None: every vector arm is exact)

    if TYPE_CHECKING:  # provided by PgConnection and PgRecords

        def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]: ...
        def _scope_lengths(self, kind: str, scope: Scope, lengths: Sequence[str]) -> tuple[int, Any]: ...
        def _table_lengths(self, kind: str, lengths: Sequence[str]) -> tuple[int, Any]: ...
        def _model_filter(self, alias: str) -> tuple[str, list[Any]]: ...

        _vocab: TermCounts

        def pool_counts(self, scope: Scope) -> tuple[int, int]: ...
        def _indexed(self) -> dict[str, VectorIndex] | None: ...

    # -- vector arms ---------------------------------------------------------------------------

    def _vector_arm(
        self,
        scope: Scope,
        query: np.ndarray,
        floor: float,
        depth: int,
        positions: tuple[int, int | None],
        period: Period | None,
        kinds: tuple[str, ...],
    ) -> list[Hit]:
        """One query: per kind, the scope's scan window scored, the floor applied; merged best first."""
        kinds = tuple(kind for kind in kinds if kind == MEMORY or scope.episodes_visible)
        query = np.asarray(query, dtype=np.float32).reshape(-1)
        if depth <= 0 or not kinds or not query.size:
            return []
        if self.hnsw_dim == query.size:
            return self._approximate_arm(scope, query, floor, depth, positions, period, kinds)
        indexes = self._indexed()
        if indexes is not None:  # the in-process index (vectors.py): the same rows, scores and order as the scan
            return search_kinds(indexes, scope, query, floor, depth, positions=positions, period=period, kinds=kinds)
        start, stop = positions
        parts, params = [], []
        for order, kind in enumerate(kinds):
            window, window_params = self._scan_window(scope, kind, query.size, period)
            parts.append(
                f"SELECT {order} AS kord, w.id, -(w.embedding <#> %s) AS score, w.pos FROM ({window} "
                "OFFSET %s LIMIT %s) w"
            )
            params += [query, *window_params, start, None if stop is None else max(0, stop - start)]
        rows = self._read(
            f"SELECT kord, id, score FROM ({' UNION ALL '.join(parts)}) s WHERE score >= %s "
            "ORDER BY score DESC, kord, pos LIMIT %s",
            [*params, floor, depth],
        )
        return [
            Hit(make_ref(kinds[kord], row_id), rank, float(score)) for rank, (kord, row_id, score) in enumerate(rows)
        ]

    def _approximate_arm(
        self,
        scope: Scope,
        query: np.ndarray,
        floor: float,
        depth: int,
        positions: tuple[int, int | None],
        period: Period | None,
        kinds: tuple[str, ...],
    ) -> list[Hit]:
        """With CUEDRECALL_PG_HNSW: the scan window as an id range, its nearest rows from the HNSW index.

        Approximate: the index walk may miss a row the exact scan finds (more often
        the narrower the scope), never adds one outside the scope, window or period.
        Ties go to memories, then the newer row (the earlier scan position).
        """
        dim, found = int(query.size), []
        for order, kind in enumerate(kinds):
            bounds = self._window_ids(scope, kind, dim, period, positions)
            if bounds is None:
                continue
            where, params = self._comparable(scope, kind, dim, period)
            # the literal width matches the partial index's predicate, so the planner can walk it
            rows = self._read(
                f"SELECT t.id, -((t.embedding::vector({dim})) <#> %s::vector({dim})) AS score FROM {_TEXT[kind][0]} t "
                f"WHERE {where} AND vector_dims(t.embedding) = {dim} AND t.id BETWEEN %s AND %s "
                f"ORDER BY (t.embedding::vector({dim})) <#> %s::vector({dim}) LIMIT %s",
                [query, *params, bounds[0], bounds[1], query, depth],
            )
            found += [
                (-score, order, -row_id, make_ref(kind, row_id), score) for row_id, score in rows if score >= floor
            ]
        found.sort(key=lambda item: item[:3])
        return [Hit(ref, rank, float(score)) for rank, (*_, ref, score) in enumerate(found[:depth])]

    def _window_ids(
        self, scope: Scope, kind: str, dim: int, period: Period | None, positions: tuple[int, int | None]
    ) -> tuple[int, int] | None:
        """(lowest, highest) id of the scan positions [start, stop) of one kind; None when the window is empty.
        Two probes down the (agent, id) index, no vector read."""
        start, stop = positions
        if stop is not None and stop <= start:
            return None
        where, params = self._comparable(scope, kind, dim, period)
        probe = f"SELECT t.id FROM {_TEXT[kind][0]} t WHERE {where} ORDER BY t.id DESC OFFSET %s LIMIT 1"
        high = self._read(probe, [*params, start])
        if not high:
            return None
        low = self._read(probe, [*params, stop - 1]) if stop is not None else []
        return (int(low[0][0]) if low else 0), int(high[0][0])

    def _comparable(self, scope: Scope, kind: str, dim: int, period: Period | None) -> tuple[str, list[Any]]:
        """The predicate of the rows a vector arm compares: the scope (less the source rule for episodes), a
        vector of the query's width and of the vector model, the period."""
        # source_id filters memories only: a visible episode carries no source to match
        kind_scope = scope if kind == MEMORY else Scope(scope.agent_id, scope.project_id, scope.channel)
        where, params = POSTGRES.scope_where(kind_scope, "t", kind)
        pwhere, pparams = POSTGRES.period_where("t", period)
        model, mparams = self._model_filter("t")
        return (
            f"{where} AND t.embedding IS NOT NULL AND vector_dims(t.embedding) = %s{model}{pwhere}",
            [*params, dim, *mparams, *pparams],
        )

    def _scan_window(self, scope: Scope, kind: str, dim: int, period: Period | None) -> tuple[str, list[Any]]:
        """The scope's comparable rows of one kind, newest first, each with its scan position (0-based)."""
        where, params = self._comparable(scope, kind, dim, period)
        return (
            f"SELECT t.id, t.embedding, t.sign_bits, row_number() OVER (ORDER BY t.id DESC) - 1 AS pos "
            f"FROM {_TEXT[kind][0]} t WHERE {where} ORDER BY t.id DESC",
            params,
        )

    def far_candidates(self, scope: Scope, query: np.ndarray, *, start: int, count: int) -> list[CoarseHit]:
        """The ``count`` embedded memories of the scope at scan positions >= ``start`` nearest the query by
        Hamming distance between sign bits (ties: the earlier position), each with its stored vector's cosine."""
        query = np.asarray(query, dtype=np.float32).reshape(-1)
        if count <= 0 or not query.size:
            return []
        indexes = self._indexed()
        if indexes is not None:
            return coarse_hits(indexes[MEMORY], scope, query, start=start, count=count)
        window, params = self._scan_window(scope, MEMORY, query.size, None)
        rows = self._read(
            # the cosine is computed for the chosen rows only, after the Hamming sort
            f"SELECT c.id, c.pos, c.distance, -(c.embedding <#> %s) FROM (SELECT w.id, w.pos, w.embedding, "
            f"bit_count(w.sign_bits # %s::varbit) AS distance FROM ({window} OFFSET %s) w "
            "ORDER BY distance, w.pos LIMIT %s) c ORDER BY c.distance, c.pos",
            [query, sign_text(query), *params, max(0, start), count],
        )
        return [
            CoarseHit(make_ref(MEMORY, row_id), int(pos), int(distance), float(cosine))
            for row_id, pos, distance, cosine in rows
        ]

    # -- lexical arms ----------------------------------------------------------------------------

    def _trigram_arm(
        self, kind: str, scope: Scope, terms: Sequence[str], depth: int, period: Period | None
    ) -> list[Hit]:
        """The terms' plan under keyword-budget-v2 (store/term_counts.py, as on SQLite): rank on its first terms,
        on its fallback terms when that finds fewer than ``depth``; a small scope is then scanned for the terms
        the budget left out."""
        terms = list(dict.fromkeys(term for term in terms if term))
        small = kind == MEMORY and self._small_scope(scope, "memories")
        plan = plan_terms(self._vocab, _TEXT[kind][0], terms, words=False, small_scope=small)
        hits, ranked_on = run_plan(
            plan, lambda chosen, also: self._bm25_arm(kind, scope, chosen, depth, period, also), depth, key=_ref
        )
        hits = _ranked(hits)
        if small and plan.left_out and len(hits) < depth:
            hits += self._like_hits(scope, plan.left_out, depth - len(hits), period, len(hits), {h.ref for h in hits})
        return PlannedHits(hits, plan, ranked_on)

    def _bm25_arm(
        self,
        kind: str,
        scope: Scope,
        first: Sequence[str],
        depth: int,
        period: Period | None,
        also: Sequence[str] = (),
    ) -> list[Hit]:
        """The documented BM25 of the trigram arms (the module's docstring), one query. As in FTS5, a row's
        columns (an episode's summary and keywords) count together: tf summed over them, length their sum.
        ``also``: keyword-budget-v2's joined pass, the rows holding one of ``first`` and one of ``also``, ranked on
        both with FTS5's statistics (``_statistics``)."""
        table, text = _TEXT[kind]
        terms = [*first, *also]
        where, params = POSTGRES.scope_where(scope, "m", kind)
        # candidates from the trigram index, one bitmap a term OR'ed together (a joined pass: the two groups'
        # bitmaps AND'ed), each row read once; then the scope and the substrings themselves on those rows only
        groups = [list(first), list(also)] if also else [list(first)]
        holds = " AND ".join(
            "("
            + " OR ".join("m.grams @> cr_trigrams(%s)" for _ in group)
            + ") AND ("
            + " OR ".join(f"strpos(lower({text}), lower(%s)) > 0" for _ in group)
            + ")"
            for group in groups
        )
        columns, lengths = _COLUMNS[kind]
        bodies = ", ".join(f"lower(m.{column}) AS body{j}" for j, column in enumerate(columns))
        tf = " + ".join(
            f"(char_length(c.body{j}) - char_length(replace(c.body{j}, lower(x.t), ''))) "
            f"/ GREATEST(char_length(x.t), 1)"
            for j in range(len(columns))
        )
        ranked, tail = _bm25(period, given_df=bool(also))
        rows = self._read(
            f"WITH c AS MATERIALIZED (SELECT m.id, m.ts_epoch, {row_length(lengths)} AS len, "
            f"{bodies} FROM {table} m WHERE {holds} AND {where}), "
            f"o AS MATERIALIZED (SELECT c.id, c.ts_epoch, c.len, x.i, {tf} AS tf FROM c CROSS JOIN unnest(%s::text[]) "
            f"WITH ORDINALITY AS x(t, i)), {ranked}",
            [
                *(value for group in groups for value in (*group, *group)),
                *params,
                list(terms),
                *self._statistics(table, kind, scope, terms, lengths, words=False, joined=bool(also)),
                *tail,
                depth,
            ],
        )
        return [Hit(make_ref(kind, row_id), rank, float(raw)) for rank, (row_id, raw) in enumerate(rows)]

    def _statistics(
        self,
        table: str,
        kind: str,
        scope: Scope,
        terms: Sequence[str],
        lengths: Sequence[str],
        *,
        words: bool,
        joined: bool,
    ) -> list[Any]:
        """A lexical query's BM25 parameters (``_bm25``): n and the mean row length over the scope; for the keyword
        budget's joined pass FTS5's instead, each term's df, n and the mean over the table (the term counts the
        budget reads, and the totals of every scope). Counted among the joined rows alone, a term's df would rank
        them apart from SQLite; counted over the scope, the pass would read every row either group of terms holds
        (docs/storage.md)."""
        if not joined:
            return list(self._scope_lengths(kind, scope, lengths))
        held = self._vocab.held_rows(table, terms, words=words)
        if words:  # the word query ranks each word's tokens (query_lexemes): each takes its word's df
            held = [count for word, count in zip(terms, held) for _ in word_tokens(word)]
        return [held, *self._table_lengths(kind, lengths)]

    def memory_words(
        self, scope: Scope, words: Sequence[str], *, depth: int, period: Period | None = None
    ) -> list[Hit]:
        """The word arm: memories holding any of the words (stemmed as SQLite's word index stems them, words.py),
        best BM25 first; the words' plan under keyword-budget-v2, as the trigram arms."""
        kept = list(dict.fromkeys(word for word in words if word))
        if not kept or depth <= 0:
            return []
        plan = plan_terms(self._vocab, "memories", kept, words=True, small_scope=self._small_scope(scope, "memories"))
        hits, ranked_on = run_plan(
            plan, lambda chosen, also: self._word_query(scope, chosen, depth, period, also), depth, key=_ref
        )
        return PlannedHits(_ranked(hits), plan, ranked_on)

    def _word_query(
        self, scope: Scope, first: Sequence[str], depth: int, period: Period | None, also: Sequence[str] = ()
    ) -> list[Hit]:
        """The documented BM25 of the word arm, one query: each word's tokens a term (a stem two words share counts
        for each), tf = the term's places among the row's tokens. ``also``: keyword-budget-v2's joined pass, as
        ``_bm25_arm``'s."""
        words = [*first, *also]
        where, params = POSTGRES.scope_where(scope, "m", MEMORY)
        ranked, tail = _bm25(period, given_df=bool(also))
        matches = [any_of(group) for group in ([first, also] if also else [words])]
        if any(match is None for match in matches):
            return []
        rows = self._read(
            "WITH q AS (SELECT u.lexeme, u.i FROM unnest(%s::text[]) WITH ORDINALITY AS u(lexeme, i)), "
            "c AS MATERIALIZED (SELECT m.id, m.ts_epoch, m.word_len AS len, m.word_tokens FROM memories m "
            f"WHERE {' AND '.join('m.words @@ %s::tsquery' for _ in matches)} AND {where}), "
            # each matching row with each query lexeme: tf = its places among the row's tokens (0 adds nothing to
            # a sum, a df or a row's presence)
            "o AS MATERIALIZED (SELECT c.id, c.ts_epoch, c.len, q.i, "
            "cardinality(array_positions(c.word_tokens, q.lexeme)) AS tf FROM c CROSS JOIN q), " + ranked,
            [
                query_lexemes(words),
                *matches,
                *params,
                *self._statistics("memories", MEMORY, scope, words, ("word_len",), words=True, joined=bool(also)),
                *tail,
                depth,
            ],
        )
        return [Hit(make_ref(MEMORY, row_id), rank, float(raw)) for rank, (row_id, raw) in enumerate(rows)]
