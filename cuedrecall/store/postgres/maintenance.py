"""The maintenance queries and repairs of the PostgreSQL store (mirrors ``store/sqlite/maintenance.py``).

Every read takes ``agent_id`` "" to mean every agent; ids come oldest first. The
derived indexes here are the database's own (generated columns and their GIN
indexes, kept by PostgreSQL in the row's transaction), so ``fts_gap`` and
``index_gap`` compare the derived columns with what the text and vector give now.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from cuedrecall.store.base import EPISODE, MEMORY, IndexGap, make_ref, split_ref
from cuedrecall.store.postgres.records import stored_vector, to_db_vector
from cuedrecall.store.postgres.scope import agent_where
from cuedrecall.store.rows import SCANNED_COLUMNS, TABLES, before_plan

if TYPE_CHECKING:
    from contextlib import contextmanager

_TEXT = {MEMORY: "content", EPISODE: "summary"}
_GRAMS = {MEMORY: "cr_trigrams(content)", EPISODE: "cr_trigrams(summary || E'\\n' || keywords)"}
_BLANK = "E' \\t\\n\\r'"  # the characters trimmed when asking whether a text is empty


class PgMaintenance:
    """What check_health and deep_check read and repair."""

    vector_model: str | None

    if TYPE_CHECKING:  # provided by PgConnection and PgRecords

        def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]: ...
        @contextmanager
        def snapshot(self) -> Iterator[None]: ...
        def embedding_dim(self) -> int | None: ...

    def maintenance_counts(self, agent_id: str) -> dict[str, int]:
        """Rows of each kind, and how many of them carry a vector."""
        where, params = agent_where(agent_id)
        out = {}
        for kind, name in ((MEMORY, "memories"), (EPISODE, "episodes")):
            total, embedded = self._read(
                f"SELECT COUNT(*), COUNT(embedding) FROM {TABLES[kind]} WHERE {where}", params
            )[0]
            out[name], out[f"embedded_{name}"] = int(total), int(embedded)
        return out

    def _counted_ids(self, table: str, where: str, params: list[Any], limit: int) -> tuple[int, list[int]]:
        """(how many rows match, the ids of the oldest ``limit`` of them), from one snapshot."""
        with self.snapshot():
            count = self._read(f"SELECT COUNT(*) FROM {table} WHERE {where}", params)[0][0]
            ids = self._read(f"SELECT id FROM {table} WHERE {where} ORDER BY id LIMIT %s", [*params, max(0, limit)])
        return int(count), [row_id for (row_id,) in ids]

    def unembedded(self, kind: str, agent_id: str, limit: int) -> tuple[int, list[int]]:
        """Rows of one kind without a vector: (count, oldest ids)."""
        where, params = agent_where(agent_id)
        return self._counted_ids(TABLES[kind], f"{where} AND embedding IS NULL", params, limit)

    def misfit_embeddings(self, kind: str, agent_id: str, width: int, limit: int) -> tuple[int, list[int]]:
        """Rows whose vector does not have ``width`` components: (count, oldest ids)."""
        where, params = agent_where(agent_id)
        return self._counted_ids(
            TABLES[kind], f"{where} AND embedding IS NOT NULL AND vector_dims(embedding) != %s", [*params, width], limit
        )

    def stale_embeddings(self, model: str, agent_id: str = "") -> dict[str, int]:
        """Rows of each kind whose vector another model than ``model`` made: the re-embedding's work left."""
        where, params = agent_where(agent_id)
        return {
            kind: int(
                self._read(
                    f"SELECT COUNT(*) FROM {table} WHERE {where} AND embedding IS NOT NULL AND embedding_model != %s",
                    [*params, model],
                )[0][0]
            )
            for kind, table in TABLES.items()
        }

    def stale_records(self, model: str, before: str | None, limit: int, agent_id: str = "") -> list[tuple[str, str]]:
        """(ref, text) of at most ``limit`` rows whose vector another model made, newest first: memories, then
        episodes, from just below the ``before`` ref."""
        out: list[tuple[str, str]] = []
        where, params = agent_where(agent_id)
        for kind, below in before_plan(before):
            if len(out) >= limit:
                break
            rows = self._read(
                f"SELECT id, {_TEXT[kind]} FROM {TABLES[kind]} WHERE id < %s AND {where} "
                "AND embedding IS NOT NULL AND embedding_model != %s ORDER BY id DESC LIMIT %s",
                [below, *params, model, limit - len(out)],
            )
            out += [(make_ref(kind, row_id), text) for row_id, text in rows]
        return out

    def oversized_memories(self, agent_id: str, cap: int, limit: int) -> tuple[int, list[int]]:
        """Memories whose content is longer than ``cap`` characters: (count, oldest ids)."""
        where, params = agent_where(agent_id)
        return self._counted_ids("memories", f"{where} AND char_length(content) > %s", [*params, cap], limit)

    def empty_memories(self, agent_id: str, limit: int) -> tuple[int, list[int]]:
        """Memories whose content is empty or only spaces, tabs and line breaks: (count, oldest ids)."""
        where, params = agent_where(agent_id)
        return self._counted_ids("memories", f"{where} AND btrim(content, {_BLANK}) = ''", params, limit)

    def duplicate_copies(self, agent_id: str) -> list[tuple[int, int, bool]]:
        """Every later copy of a memory: same agent, project, channel and content. (id, the lowest id, locked)."""
        where, params = agent_where(agent_id)
        rows = self._read(
            "SELECT id, keep, locked FROM (SELECT id, locked, MIN(id) OVER (PARTITION BY agent_id, project_id, "
            f"channel, content) AS keep FROM memories WHERE {where}) d WHERE id != keep ORDER BY id",
            params,
        )
        return [(row_id, keep, bool(locked)) for row_id, keep, locked in rows]

    def scan_memories(self, agent_id: str, column: str) -> list[tuple[int, str]]:
        """(id, value) of one text column (content, timestamp or source) of every memory."""
        if column not in SCANNED_COLUMNS:
            raise ValueError(f"column {column!r} cannot be scanned (accepted: {', '.join(SCANNED_COLUMNS)})")
        where, params = agent_where(agent_id)
        return [
            tuple(row) for row in self._read(f"SELECT id, {column} FROM memories WHERE {where} ORDER BY id", params)
        ]

    def embedded_vectors(self, kind: str, agent_id: str) -> Iterator[tuple[int, np.ndarray]]:
        """(id, stored vector) of every row of one kind that has one, whatever its width."""
        where, params = agent_where(agent_id)
        for row_id, vector in self._read(
            f"SELECT id, embedding FROM {TABLES[kind]} WHERE {where} AND embedding IS NOT NULL ORDER BY id", params
        ):
            yield row_id, stored_vector(vector)

    def agents_without_profile(self, agent_id: str) -> list[str]:
        """Agents holding memories but no profile."""
        where, params = agent_where(agent_id, "m")
        rows = self._read(
            f"SELECT DISTINCT m.agent_id FROM memories m WHERE {where} AND NOT EXISTS "
            "(SELECT 1 FROM profiles p WHERE p.agent_id = m.agent_id) ORDER BY m.agent_id",
            params,
        )
        return [agent for (agent,) in rows]

    def memory_epochs(self, agent_id: str) -> list[float]:
        """The readable record times of an agent's memories, epoch seconds, ascending."""
        where, params = agent_where(agent_id)
        return [
            epoch
            for (epoch,) in self._read(
                f"SELECT ts_epoch FROM memories WHERE {where} AND ts_epoch IS NOT NULL ORDER BY ts_epoch", params
            )
        ]

    def episode_spans(self, agent_id: str) -> list[tuple[int, str | None, str | None]]:
        """(id, start_time, end_time) of every episode, as given."""
        where, params = agent_where(agent_id)
        return [
            tuple(row)
            for row in self._read(f"SELECT id, start_time, end_time FROM episodes WHERE {where} ORDER BY id", params)
        ]

    # -- the derived columns -------------------------------------------------------------------

    def fts_gap(self, kind: str, agent_id: str) -> IndexGap:
        """Rows whose stored trigram column differs from their text's (``missing``); no entry can outlive its row
        here (``stray`` is always empty)."""
        where, params = agent_where(agent_id)
        rows = self._read(
            f"SELECT id FROM {TABLES[kind]} WHERE {where} AND grams IS DISTINCT FROM {_GRAMS[kind]} ORDER BY id", params
        )
        return IndexGap([row_id for (row_id,) in rows], [])

    def rebuild_fts(self, conn: Any, kind: str) -> None:
        """Recompute the derived trigram column of one kind where it is out of step, inside an open write() (an
        UPDATE recomputes a generated column; the text stays, so no trigger drops the blocks)."""
        conn.execute(
            f"UPDATE {TABLES[kind]} SET {_TEXT[kind]} = {_TEXT[kind]} WHERE grams IS DISTINCT FROM {_GRAMS[kind]}"
        )

    def index_gap(self, kind: str, agent_id: str) -> IndexGap:
        """Comparable rows (the vector width and model the arms compare) whose sign bits do not follow their
        vector; the arms read the rows themselves, so nothing else can be out of step."""
        width = self.embedding_dim()
        if width is None:
            return IndexGap([], [])
        where, params = agent_where(agent_id)
        model = " AND embedding_model = %s" if self.vector_model is not None else ""
        rows = self._read(
            f"SELECT id FROM {TABLES[kind]} WHERE {where} AND embedding IS NOT NULL AND vector_dims(embedding) = %s"
            f"{model} AND sign_bits IS DISTINCT FROM cr_sign_bits(embedding) ORDER BY id",
            [*params, width, *([self.vector_model] if self.vector_model is not None else [])],
        )
        return IndexGap([row_id for (row_id,) in rows], [])

    def rebuild_index(self) -> None:
        """Nothing to rebuild: the vector arms read the rows (an optional HNSW index is PostgreSQL's own)."""

    def quick_check(self) -> list[str]:
        """What the server reports wrong: [] when it answers (PostgreSQL checks its own pages)."""
        return [] if self._read("SELECT 1") == [(1,)] else ["the server did not answer SELECT 1"]

    # -- repairs, inside write() -----------------------------------------------------------

    def replace_stale_embedding(self, conn: Any, ref: str, text: str, vector: np.ndarray, model: str) -> bool:
        """Give a row ``model``'s vector of ``text`` while its vector is another model's and its text is ``text``."""
        kind, row_id = split_ref(ref)
        return (
            conn.execute(
                f"UPDATE {TABLES[kind]} SET embedding = %s, embedding_model = %s WHERE id = %s AND {_TEXT[kind]} = %s "
                "AND embedding IS NOT NULL AND embedding_model != %s",
                (to_db_vector(vector), model, row_id, text, model),
            ).rowcount
            > 0
        )

    def set_episode_embedding(self, conn: Any, episode_id: int, vector: np.ndarray | None, model: str) -> None:
        """Replace an episode's vector and the label of the model that made it."""
        conn.execute(
            "UPDATE episodes SET embedding = %s, embedding_model = %s WHERE id = %s",
            (to_db_vector(vector), model, episode_id),
        )
