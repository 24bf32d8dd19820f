"""The maintenance queries and repairs both backends share: what check_health and deep_check read and mend.

Every read takes ``agent_id`` "" to mean every agent; ids come oldest first. What
looks at an index derived from the rows (full-text, vectors), at a vector's width, or
at the database file is each backend's own (``store/sqlite/maintenance.py``,
``store/postgres/maintenance.py``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from cuedrecall.store.base import EPISODE, MEMORY, make_ref, split_ref
from cuedrecall.store.rows import SCANNED_COLUMNS, TABLES, TEXT_COLUMNS, before_plan

if TYPE_CHECKING:
    from contextlib import contextmanager

    from cuedrecall.store.sql.dialect import Dialect


class SqlMaintenance:
    """Counts and row selections of the health checks, and the repairs of vectors."""

    if TYPE_CHECKING:  # provided by the backend's store
        dialect: Dialect

        def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]: ...
        @contextmanager
        def snapshot(self) -> Iterator[None]: ...

    # -- counts and row selections ---------------------------------------------------------

    def maintenance_counts(self, agent_id: str) -> dict[str, int]:
        """Rows of each kind, and how many of them carry a vector."""
        where, params = self.dialect.agent_where(agent_id)
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
            ids = self._read(
                f"SELECT id FROM {table} WHERE {where} ORDER BY id LIMIT {self.dialect.mark}", [*params, max(0, limit)]
            )
        return int(count), [row_id for (row_id,) in ids]

    def unembedded(self, kind: str, agent_id: str, limit: int) -> tuple[int, list[int]]:
        """Rows of one kind without a vector: (count, oldest ids)."""
        where, params = self.dialect.agent_where(agent_id)
        return self._counted_ids(TABLES[kind], f"{where} AND embedding IS NULL", params, limit)

    def stale_embeddings(self, model: str, agent_id: str = "") -> dict[str, int]:
        """Rows of each kind ("mem", "ep") whose vector another model than ``model`` made: the re-embedding's
        work left."""
        where, params = self.dialect.agent_where(agent_id)
        mark = self.dialect.mark
        return {
            kind: int(
                self._read(
                    f"SELECT COUNT(*) FROM {table} WHERE {where} AND embedding IS NOT NULL "
                    f"AND embedding_model != {mark}",
                    [*params, model],
                )[0][0]
            )
            for kind, table in TABLES.items()
        }

    def stale_records(self, model: str, before: str | None, limit: int, agent_id: str = "") -> list[tuple[str, str]]:
        """(ref, text) of at most ``limit`` rows whose vector another model made, newest first: memories, then
        episodes, each by id descending, from just below the ``before`` ref (None: from the newest)."""
        out: list[tuple[str, str]] = []
        where, params = self.dialect.agent_where(agent_id)
        mark = self.dialect.mark
        for kind, below in before_plan(before):
            if len(out) >= limit:
                break
            table, column, _ = TEXT_COLUMNS[kind]
            rows = self._read(
                f"SELECT id, {column} FROM {table} WHERE id < {mark} AND {where} AND embedding IS NOT NULL "
                f"AND embedding_model != {mark} ORDER BY id DESC LIMIT {mark}",
                [below, *params, model, limit - len(out)],
            )
            out += [(make_ref(kind, row_id), text) for row_id, text in rows]
        return out

    def oversized_memories(self, agent_id: str, cap: int, limit: int) -> tuple[int, list[int]]:
        """Memories whose content is longer than ``cap`` characters: (count, oldest ids)."""
        where, params = self.dialect.agent_where(agent_id)
        return self._counted_ids(
            "memories", f"{where} AND length(content) > {self.dialect.mark}", [*params, cap], limit
        )

    def empty_memories(self, agent_id: str, limit: int) -> tuple[int, list[int]]:
        """Memories whose content is empty or only spaces, tabs and line breaks: (count, oldest ids)."""
        where, params = self.dialect.agent_where(agent_id)
        return self._counted_ids("memories", f"{where} AND {self.dialect.trim_blank('content')} = ''", params, limit)

    def duplicate_copies(self, agent_id: str) -> list[tuple[int, int, bool]]:
        """Every later copy of a memory: same agent, project, channel and content. (id, the lowest id, locked)."""
        where, params = self.dialect.agent_where(agent_id)
        rows = self._read(
            "SELECT m.id, k.keep, m.locked FROM memories m JOIN ("
            f"SELECT agent_id, project_id, channel, content, MIN(id) AS keep FROM memories WHERE {where} "
            "GROUP BY agent_id, project_id, channel, content HAVING COUNT(*) > 1) k "
            "ON m.agent_id = k.agent_id AND m.project_id = k.project_id AND m.channel = k.channel "
            "AND m.content = k.content WHERE m.id != k.keep ORDER BY m.id",
            params,
        )
        return [(row_id, keep, bool(locked)) for row_id, keep, locked in rows]

    def scan_memories(self, agent_id: str, column: str) -> list[tuple[int, str]]:
        """(id, value) of one text column (content, timestamp or source) of every memory, for checks SQL cannot do."""
        if column not in SCANNED_COLUMNS:
            raise ValueError(f"column {column!r} cannot be scanned (accepted: {', '.join(SCANNED_COLUMNS)})")
        where, params = self.dialect.agent_where(agent_id)
        rows = self._read(f"SELECT id, {column} FROM memories WHERE {where} ORDER BY id", params)
        return [(row_id, value) for row_id, value in rows]

    def embedded_vectors(self, kind: str, agent_id: str) -> Iterator[tuple[int, np.ndarray]]:
        """(id, stored vector) of every row of one kind that has one, whatever its width."""
        where, params = self.dialect.agent_where(agent_id)
        rows = self._read(
            f"SELECT id, embedding FROM {TABLES[kind]} WHERE {where} AND embedding IS NOT NULL ORDER BY id", params
        )
        for row_id, stored in rows:
            yield row_id, self.dialect.vector_of(stored)

    def agents_without_profile(self, agent_id: str) -> list[str]:
        """Agents holding memories but no profile."""
        where, params = self.dialect.agent_where(agent_id, "m")
        rows = self._read(
            f"SELECT DISTINCT m.agent_id FROM memories m WHERE {where} AND NOT EXISTS "
            "(SELECT 1 FROM profiles p WHERE p.agent_id = m.agent_id) ORDER BY m.agent_id",
            params,
        )
        return [agent for (agent,) in rows]

    def memory_epochs(self, agent_id: str) -> list[float]:
        """The readable record times of an agent's memories, epoch seconds, ascending."""
        where, params = self.dialect.agent_where(agent_id)
        rows = self._read(
            f"SELECT ts_epoch FROM memories WHERE {where} AND ts_epoch IS NOT NULL ORDER BY ts_epoch", params
        )
        return [epoch for (epoch,) in rows]

    def episode_spans(self, agent_id: str) -> list[tuple[int, str | None, str | None]]:
        """(id, start_time, end_time) of every episode, as given."""
        where, params = self.dialect.agent_where(agent_id)
        rows = self._read(f"SELECT id, start_time, end_time FROM episodes WHERE {where} ORDER BY id", params)
        return [(row_id, start, end) for row_id, start, end in rows]

    # -- repairs, inside write() -----------------------------------------------------------

    def replace_stale_embedding(self, conn: Any, ref: str, text: str, vector: np.ndarray, model: str) -> bool:
        """Give a row ``model``'s vector of ``text`` while its vector is still another model's and its text is
        still ``text``; False, changing nothing, when the row is gone, changed, or already re-embedded."""
        kind, row_id = split_ref(ref)
        table, column, _ = TEXT_COLUMNS[kind]
        mark = self.dialect.mark
        return (
            conn.execute(
                f"UPDATE {table} SET embedding = {mark}, embedding_model = {mark} WHERE id = {mark} "
                f"AND {column} = {mark} AND embedding IS NOT NULL AND embedding_model != {mark}",
                (self.dialect.vector_param(vector), model, row_id, text, model),
            ).rowcount
            > 0
        )

    def set_episode_embedding(self, conn: Any, episode_id: int, vector: np.ndarray | None, model: str) -> None:
        """Replace an episode's vector and the label of the model that made it."""
        mark = self.dialect.mark
        conn.execute(
            f"UPDATE episodes SET embedding = {mark}, embedding_model = {mark} WHERE id = {mark}",
            (self.dialect.vector_param(vector), model, episode_id),
        )
