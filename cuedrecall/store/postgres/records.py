"""Rows of the PostgreSQL store: writes, the plain reads, the scope statistics (mirrors ``SqliteStore``'s own).

A mixin of ``PostgresStore`` over its ``PgConnection``. The rows are the SQLite
store's, column for column; a vector is a pgvector ``vector`` (float32, the
source of truth) and comes back as a float32 numpy array.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from cuedrecall.store.base import EPISODE, MEMORY, Scope, make_ref, split_ref
from cuedrecall.store.postgres.dialect import POSTGRES, stored_vector
from cuedrecall.store.postgres.words import content_words
from cuedrecall.store.rows import TABLES
from cuedrecall.store.sql.records import SqlRecords

if TYPE_CHECKING:
    from contextlib import contextmanager

# every stored column the records read (the derived grams and sign_bits are the database's business; the word
# arm's columns, words.WORD_COLUMNS, the store writes with the content: content_words)
MEMORY_COLUMNS = (
    "id",
    "agent_id",
    "project_id",
    "channel",
    "msg_id",
    "content",
    "source",
    "source_id",
    "timestamp",
    "ts_epoch",
    "metadata",
    "embedding",
    "embedding_model",
    "locked",
    "created_at",
)
EPISODE_COLUMNS = (
    "id",
    "agent_id",
    "project_id",
    "channel",
    "summary",
    "keywords",
    "start_time",
    "end_time",
    "ts_epoch",
    "resolved",
    "embedding",
    "embedding_model",
    "created_at",
)
COLUMNS = {MEMORY: MEMORY_COLUMNS, EPISODE: EPISODE_COLUMNS}
# kind -> every row length its lexical arms normalize by, as FTS5 counts tokens (the trigram arm's, the word arm's)
_LENGTHS = {MEMORY: (("text_len",), ("word_len",)), EPISODE: (("summary_len", "keywords_len"),)}


def as_vector(value: Any) -> np.ndarray | None:
    """A stored vector as float32 numpy (None stays None)."""
    if value is None:
        return None
    return stored_vector(value)


class PgRecords(SqlRecords):
    """The reads of memories and episodes PostgreSQL makes its own way: duplicates, whole rows, the scope's
    statistics and vectors (the rest: ``SqlRecords``)."""

    if TYPE_CHECKING:  # provided by PgConnection, SqlGraph and SqlFolders

        def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]: ...
        @contextmanager
        def translated(self) -> Iterator[None]: ...
        def _per_snapshot(self, key: tuple[Any, ...], compute: Any) -> Any: ...
        def _delete_graph(self, conn: Any, agent_id: str) -> dict[str, int]: ...
        def _delete_folders(self, conn: Any, agent_id: str) -> int: ...

        _conn: Any
        _lock: Any

    # -- writes, inside write() ---------------------------------------------------------

    def insert_memory(self, conn: Any, row: dict[str, Any]) -> int:
        """As ``SqlRecords``', the word arm's words made with the content (words.py)."""
        return super().insert_memory(conn, {**row, **content_words(row["content"])})

    def update_memory(self, conn: Any, memory_id: int, changes: dict[str, Any]) -> None:
        """As ``SqlRecords``'; a new content brings its words."""
        if "content" in changes:
            changes = {**changes, **content_words(changes["content"])}
        super().update_memory(conn, memory_id, changes)

    # -- plain reads -----------------------------------------------------------------------

    def find_duplicate(
        self, agent_id: str, projects: Sequence[str], channels: Sequence[str], msg_id: str, content: str
    ) -> tuple[str, int] | None:
        """(reason, existing id) when the memory is already stored in the write scope; inside write() it reads the
        write's own transaction, which sees every write committed before it took the writers' lock."""
        with self.translated(), self._lock:
            return self._duplicate(
                lambda sql, params: self._conn.execute(sql, params), agent_id, projects, channels, msg_id, content
            )

    @staticmethod
    def _duplicate(
        execute: Any, agent_id: str, projects: Sequence[str], channels: Sequence[str], msg_id: str, content: str
    ) -> tuple[str, int] | None:
        if msg_id:
            row = execute(
                "SELECT id FROM memories WHERE agent_id = %s AND msg_id = %s AND msg_id != '' "
                "AND project_id = ANY(%s) ORDER BY id LIMIT 1",
                (agent_id, msg_id, list(projects)),
            ).fetchone()
            if row:
                return "duplicate msg_id", row[0]
        row = execute(
            # md5 reaches the content index (a long text exceeds a b-tree entry); the text itself decides
            "SELECT id FROM memories WHERE agent_id = %s AND md5(content) = md5(%s) AND content = %s "
            "AND project_id = ANY(%s) AND channel = ANY(%s) ORDER BY id LIMIT 1",
            (agent_id, content, content, list(projects), list(channels)),
        ).fetchone()
        return ("duplicate content", row[0]) if row else None

    def find_episode(self, agent_id: str, project_id: str, channel: str, summary: str) -> int | None:
        rows = self._read(
            "SELECT id FROM episodes WHERE agent_id = %s AND project_id = %s AND channel = %s "
            "AND summary = %s ORDER BY id LIMIT 1",
            (agent_id, project_id, channel, summary),
        )
        return rows[0][0] if rows else None

    def memory_row(self, memory_id: int) -> dict[str, Any] | None:
        """Every column of one memory, embedding as a vector."""
        rows = self._read(f"SELECT {', '.join(MEMORY_COLUMNS)} FROM memories WHERE id = %s", (memory_id,))
        return _row_dict(MEMORY_COLUMNS, rows[0]) if rows else None

    def export_rows(self, kind: str, agent_id: str) -> Iterator[dict[str, Any]]:
        """Every column of every row of one kind (one agent, or all for ""), oldest first."""
        columns = COLUMNS[kind]
        where, params = ("WHERE agent_id = %s", [agent_id]) if agent_id else ("", [])
        rows = self._read(f"SELECT {', '.join(columns)} FROM {TABLES[kind]} {where} ORDER BY id", params)
        for row in rows:
            yield _row_dict(columns, row)

    # -- scope statistics and vectors --------------------------------------------------------

    def pool_counts(self, scope: Scope) -> tuple[int, int]:
        """(memories, episodes) in the scope: the gate's pool (the lexical arms' n, from the same scan)."""
        memories = self._scope_lengths(MEMORY, scope, _LENGTHS[MEMORY][0])[0]
        episodes = self._scope_lengths(EPISODE, scope, _LENGTHS[EPISODE][0])[0] if scope.episodes_visible else 0
        return memories, episodes

    def _scope_lengths(self, kind: str, scope: Scope, lengths: Sequence[str]) -> tuple[int, Any]:
        """(rows, mean length) over the scope's rows of one kind, for one BM25 length (its columns summed): from
        the scope's totals (schema step 5: a row per agent, project, channel and source, kept by triggers), read
        once a snapshot, so a recall's gate pool, trigram and word arms (and a plan's fallback query) share it.
        The mean is the numeric quotient ``avg`` computes, so the scores are those of an average over the rows."""
        where, params = POSTGRES.scope_where(scope, "m", kind)
        return self._totals_lengths(kind, where, params, lengths)

    def _table_lengths(self, kind: str, lengths: Sequence[str]) -> tuple[int, Any]:
        """(rows, mean length) over every row of one kind, every agent's: FTS5's statistics, which the keyword
        budget's joined pass ranks with (arms.py); from the same totals, read once a snapshot."""
        return self._totals_lengths(kind, "TRUE", [], lengths)

    def _totals_lengths(self, kind: str, where: str, params: list[Any], lengths: Sequence[str]) -> tuple[int, Any]:
        kind_lengths = _LENGTHS[kind]

        def read() -> dict[tuple[str, ...], tuple[int, Any]]:
            means = ", ".join(
                "GREATEST((" + " + ".join(f"sum(m.{c})" for c in columns) + ")::numeric / NULLIF(sum(m.rows), 0), 1)"
                for columns in kind_lengths
            )
            n, *found = self._read(
                f"SELECT COALESCE(sum(m.rows), 0), {means} FROM scope_totals m WHERE m.kind = %s AND {where}",
                [kind, *params],
            )[0]
            return {columns: (int(n), mean) for columns, mean in zip(kind_lengths, found)}

        return self._per_snapshot(("scope_lengths", kind, where, *params), read)[tuple(lengths)]

    def span(self, scope: Scope) -> tuple[float, float] | None:
        """(oldest, newest) memory time in the scope, epoch seconds; None when nothing is dated."""
        where, params = POSTGRES.scope_where(scope, "t", MEMORY)
        low, high = self._read(f"SELECT MIN(t.ts_epoch), MAX(t.ts_epoch) FROM memories t WHERE {where}", params)[0]
        return None if low is None else (low, high)

    def vectors(self, refs: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors of the refs the vector arms compare (of their width; the vector model's, when one is set)."""
        out: dict[str, np.ndarray] = {}
        dim = self.embedding_dim()
        for kind, table in TABLES.items():
            ids = [split_ref(ref)[1] for ref in refs if ref.startswith(kind + ":")]
            if not ids or dim is None:
                continue
            model, params = self._model_filter("t")
            for row_id, vector in self._read(
                f"SELECT t.id, t.embedding FROM {table} t WHERE t.id = ANY(%s) AND t.embedding IS NOT NULL "
                f"AND vector_dims(t.embedding) = %s{model}",
                [ids, dim, *params],
            ):
                out[make_ref(kind, row_id)] = stored_vector(vector)
        return out

    def embedded_memory_ids(self, agent_id: str) -> tuple[np.ndarray, np.ndarray]:
        """(ids, times) of the agent's comparable memories ("" = every agent), oldest first; ``vectors`` reads
        the vectors of those a caller samples."""
        model, params = self._model_filter("t")
        agent = " AND t.agent_id = %s" if agent_id else ""
        dim = self.embedding_dim()
        rows = (
            []
            if dim is None
            else self._read(
                f"SELECT t.id, t.ts_epoch FROM memories t WHERE t.embedding IS NOT NULL "
                f"AND vector_dims(t.embedding) = %s{model}{agent} ORDER BY t.id",
                [dim, *params, *([agent_id] if agent_id else [])],
            )
        )
        ids = np.array([row[0] for row in rows], dtype=np.int64)
        times = np.array([np.nan if row[1] is None else row[1] for row in rows], dtype=np.float64)
        return ids, times

    def embedding_dim(self) -> int | None:
        """The width the vector arms compare: of the oldest comparable memory (else episode) vector."""
        model, params = self._model_filter("t")
        for table in ("memories", "episodes"):
            rows = self._read(
                f"SELECT vector_dims(t.embedding) FROM {table} t WHERE t.embedding IS NOT NULL{model} "
                "ORDER BY t.id LIMIT 1",
                params,
            )
            if rows:
                return int(rows[0][0])
        return None

    def _model_filter(self, alias: str) -> tuple[str, list[Any]]:
        """The vector-model predicate (" AND ..."), empty when the store compares vectors of any model."""
        model = getattr(self, "vector_model", None)
        return ("", []) if model is None else (f" AND {alias}.embedding_model = %s", [model])


def _row_dict(columns: Sequence[str], row: Sequence[Any]) -> dict[str, Any]:
    out = dict(zip(columns, row))
    out["embedding"] = as_vector(out["embedding"])
    return out
