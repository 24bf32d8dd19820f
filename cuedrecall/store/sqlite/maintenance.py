"""The maintenance queries and repairs of the SQLite store: what check_health and deep_check read and mend.

``SqliteMaintenance`` is a mixin of ``SqliteStore``: it uses that class's
connection, lock, transactions and vector index, and holds no state of its own.
Every read takes ``agent_id`` "" to mean every agent; ids come oldest first.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from cuedrecall.store.base import EPISODE, MEMORY, IndexGap, make_ref, split_ref
from cuedrecall.store.predicates import agent_where
from cuedrecall.store.rows import SCANNED_COLUMNS, before_plan

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from cuedrecall.store.sqlite.vector_index import VectorIndex

# kind -> (table, its FTS5 table, the text column)
_TABLES = {MEMORY: ("memories", "memories_fts", "content"), EPISODE: ("episodes", "episodes_fts", "summary")}
_BLANK = "' ' || char(9, 10, 13)"  # the characters SQL trims when it asks whether a text is empty


class SqliteMaintenance:
    """Looks that find what is out of order in the rows and the indexes derived from them, and the repairs."""

    if TYPE_CHECKING:  # provided by SqliteStore

        @property
        def _conn(self) -> sqlite3.Connection: ...

        _indexes: dict[str, VectorIndex]
        vector_model: str | None

        def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]: ...
        def _rebuild_indexes(self) -> None: ...
        def _model_filter(self, where: str, params: Sequence[Any]) -> tuple[str, list[Any]]: ...
        def snapshot(self) -> AbstractContextManager[None]: ...
        def write(self) -> AbstractContextManager[sqlite3.Connection]: ...

    # -- counts and row selections ---------------------------------------------------------

    def maintenance_counts(self, agent_id: str) -> dict[str, int]:
        """Rows of each kind, and how many of them carry a vector."""
        where, params = agent_where(agent_id)
        out = {}
        for kind, name in ((MEMORY, "memories"), (EPISODE, "episodes")):
            table = _TABLES[kind][0]
            total, embedded = self._read(f"SELECT COUNT(*), COUNT(embedding) FROM {table} WHERE {where}", params)[0]
            out[name], out[f"embedded_{name}"] = total, embedded
        return out

    def _counted_ids(self, table: str, where: str, params: list[Any], limit: int) -> tuple[int, list[int]]:
        """(how many rows match, the ids of the oldest ``limit`` of them)."""
        with self.snapshot():
            count = self._read(f"SELECT COUNT(*) FROM {table} WHERE {where}", params)[0][0]
            ids = self._read(f"SELECT id FROM {table} WHERE {where} ORDER BY id LIMIT ?", [*params, max(0, limit)])
        return count, [row_id for (row_id,) in ids]

    def unembedded(self, kind: str, agent_id: str, limit: int) -> tuple[int, list[int]]:
        """Rows of one kind without a vector: (count, oldest ids)."""
        where, params = agent_where(agent_id)
        return self._counted_ids(_TABLES[kind][0], f"{where} AND embedding IS NULL", params, limit)

    def misfit_embeddings(self, kind: str, agent_id: str, width: int, limit: int) -> tuple[int, list[int]]:
        """Rows whose vector does not have ``width`` float32 components: (count, oldest ids)."""
        where, params = agent_where(agent_id)
        return self._counted_ids(
            _TABLES[kind][0],
            f"{where} AND embedding IS NOT NULL AND length(embedding) != ?",
            [*params, 4 * width],
            limit,
        )

    def stale_embeddings(self, model: str, agent_id: str = "") -> dict[str, int]:
        """Rows of each kind ("mem", "ep") whose vector another model than ``model`` made: the re-embedding's
        work left."""
        where, params = agent_where(agent_id)
        return {
            kind: self._read(
                f"SELECT COUNT(*) FROM {table} WHERE {where} AND embedding IS NOT NULL AND embedding_model != ?",
                [*params, model],
            )[0][0]
            for kind, (table, _, _) in _TABLES.items()
        }

    def stale_records(self, model: str, before: str | None, limit: int, agent_id: str = "") -> list[tuple[str, str]]:
        """(ref, text) of at most ``limit`` rows whose vector another model made, newest first: memories, then
        episodes, each by id descending, from just below the ``before`` ref (None: from the newest)."""
        out: list[tuple[str, str]] = []
        where, params = agent_where(agent_id)
        for kind, below in before_plan(before):
            if len(out) >= limit:
                break
            table, _, column = _TABLES[kind]
            rows = self._read(
                f"SELECT id, {column} FROM {table} WHERE id < ? AND {where} AND embedding IS NOT NULL "
                "AND embedding_model != ? ORDER BY id DESC LIMIT ?",
                [below, *params, model, limit - len(out)],
            )
            out += [(make_ref(kind, row_id), text) for row_id, text in rows]
        return out

    def oversized_memories(self, agent_id: str, cap: int, limit: int) -> tuple[int, list[int]]:
        """Memories whose content is longer than ``cap`` characters: (count, oldest ids)."""
        where, params = agent_where(agent_id)
        return self._counted_ids("memories", f"{where} AND length(content) > ?", [*params, cap], limit)

    def empty_memories(self, agent_id: str, limit: int) -> tuple[int, list[int]]:
        """Memories whose content is empty or only spaces, tabs and line breaks: (count, oldest ids)."""
        where, params = agent_where(agent_id)
        return self._counted_ids("memories", f"{where} AND trim(content, {_BLANK}) = ''", params, limit)

    def duplicate_copies(self, agent_id: str) -> list[tuple[int, int, bool]]:
        """Every later copy of a memory: same agent, project, channel and content. (id, the lowest id, locked)."""
        where, params = agent_where(agent_id)
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
        where, params = agent_where(agent_id)
        return self._read(f"SELECT id, {column} FROM memories WHERE {where} ORDER BY id", params)

    def embedded_vectors(self, kind: str, agent_id: str) -> Iterator[tuple[int, np.ndarray]]:
        """(id, stored vector) of every row of one kind that has one, whatever its width."""
        where, params = agent_where(agent_id)
        rows = self._read(
            f"SELECT id, embedding FROM {_TABLES[kind][0]} WHERE {where} AND embedding IS NOT NULL ORDER BY id", params
        )
        for row_id, blob in rows:
            yield row_id, np.frombuffer(blob, dtype="<f4")

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
        rows = self._read(
            f"SELECT ts_epoch FROM memories WHERE {where} AND ts_epoch IS NOT NULL ORDER BY ts_epoch", params
        )
        return [epoch for (epoch,) in rows]

    def episode_spans(self, agent_id: str) -> list[tuple[int, str | None, str | None]]:
        """(id, start_time, end_time) of every episode, as given."""
        where, params = agent_where(agent_id)
        return self._read(f"SELECT id, start_time, end_time FROM episodes WHERE {where} ORDER BY id", params)

    # -- the derived indexes and the file --------------------------------------------------

    def fts_gap(self, kind: str, agent_id: str) -> IndexGap:
        """How a full-text table differs from its rows.

        ``missing``: the scope's rows without an entry; ``stray``: entries whose row is
        gone (any agent's: an entry without a row has none); ``problem``: what FTS5's
        'integrity-check' against the content table says (it also sees an entry that
        holds another text than its row). The check runs in a write transaction that
        writes nothing, so no writer changes the rows while it reads.
        """
        table, fts, _ = _TABLES[kind]
        where, params = agent_where(agent_id, "t")
        with self.write() as conn:
            missing = conn.execute(
                f"SELECT t.id FROM {table} t WHERE {where} AND NOT EXISTS "
                f"(SELECT 1 FROM {fts}_docsize d WHERE d.id = t.id) ORDER BY t.id",
                params,
            ).fetchall()
            stray = conn.execute(
                f"SELECT d.id FROM {fts}_docsize d WHERE NOT EXISTS (SELECT 1 FROM {table} t WHERE t.id = d.id) "
                "ORDER BY d.id"
            ).fetchall()
            try:
                conn.execute(f"INSERT INTO {fts}({fts}, rank) VALUES ('integrity-check', 1)")
                problem = ""
            except sqlite3.DatabaseError as exc:
                problem = f"{fts}: {exc}"
        return IndexGap([i for (i,) in missing], [i for (i,) in stray], problem)

    def rebuild_fts(self, conn: sqlite3.Connection, kind: str) -> None:
        """Rebuild one full-text table from its rows, inside an open write()."""
        fts = _TABLES[kind][1]
        conn.execute(f"INSERT INTO {fts}({fts}) VALUES ('rebuild')")

    def index_gap(self, kind: str, agent_id: str) -> IndexGap:
        """How the in-process vector index differs from the rows: by id, in the agent's scope.

        The rows that belong in it are those with a vector of the index's width (of the
        oldest vector when the index is empty: what a rebuild takes) and, when the store
        has a vector model, of that model; a vector of another width is
        ``misfit_embeddings``' business, one of another model ``stale_embeddings``'.
        """
        table = _TABLES[kind][0]
        model, model_params = self._model_filter("1 = 1", ())  # the rows the index may hold (sqlite.py)
        where, params = agent_where(agent_id)
        where, params = f"{where} AND {model}", [*params, *model_params]
        with self.snapshot():
            index = self._indexes[kind]
            width = index.dim or self._oldest_width(table, model, model_params)
            indexed = set(index.agent_rows(agent_id)[0].tolist())
            rows = (
                []
                if width is None
                else self._read(
                    f"SELECT id FROM {table} WHERE {where} AND length(embedding) = ? ORDER BY id", [*params, 4 * width]
                )
            )
        expected = [row_id for (row_id,) in rows]
        present = set(expected)
        return IndexGap([i for i in expected if i not in indexed], sorted(indexed - present))

    def _oldest_width(self, table: str, where: str = "1 = 1", params: Sequence[Any] = ()) -> int | None:
        rows = self._read(
            f"SELECT length(embedding) FROM {table} WHERE {where} AND embedding IS NOT NULL ORDER BY id LIMIT 1", params
        )
        return rows[0][0] // 4 if rows and rows[0][0] else None

    def rebuild_index(self) -> None:
        """Build the in-process vector indexes (and the block index) again from the rows."""
        self._rebuild_indexes()

    def quick_check(self) -> list[str]:
        """What SQLite's ``PRAGMA quick_check`` finds wrong in the file; [] when it answers ok."""
        rows = self._read("PRAGMA quick_check")
        return [] if [r[0] for r in rows] == ["ok"] else [str(r[0]) for r in rows]

    # -- repairs, inside write() -----------------------------------------------------------

    def replace_stale_embedding(
        self, conn: sqlite3.Connection, ref: str, text: str, vector: np.ndarray, model: str
    ) -> bool:
        """Give a row ``model``'s vector of ``text`` while its vector is still another model's and its text is
        still ``text``; False, changing nothing, when the row is gone, changed, or already re-embedded."""
        kind, row_id = split_ref(ref)
        table, _, column = _TABLES[kind]
        blob = np.asarray(vector, dtype="<f4").tobytes()
        return (
            conn.execute(
                f"UPDATE {table} SET embedding = ?, embedding_model = ? WHERE id = ? AND {column} = ? "
                "AND embedding IS NOT NULL AND embedding_model != ?",
                (blob, model, row_id, text, model),
            ).rowcount
            > 0
        )

    def set_episode_embedding(
        self, conn: sqlite3.Connection, episode_id: int, vector: np.ndarray | None, model: str
    ) -> None:
        """Replace an episode's vector and the label of the model that made it."""
        blob = None if vector is None else np.asarray(vector, dtype="<f4").tobytes()
        conn.execute("UPDATE episodes SET embedding = ?, embedding_model = ? WHERE id = ?", (blob, model, episode_id))
