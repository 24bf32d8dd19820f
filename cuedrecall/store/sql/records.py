"""The rows of memories, episodes, profiles and calibration that both backends write and read alike.

Writes run inside ``write()``; reads the backend caches (profiles, thresholds,
precision overrides) go through its ``_cached`` (SQLite keeps them until any
connection changes them; PostgreSQL reads afresh). What each backend reads its own
way (duplicates, a memory's every column, export, the scope's statistics, vectors)
is in its folder.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from cuedrecall.store.base import EPISODE, Record, Scope, Threshold, split_ref
from cuedrecall.store.rows import RECORD_COLUMNS, TABLES, ids_by_kind, record_of

if TYPE_CHECKING:
    from cuedrecall.store.sql.dialect import Dialect


class SqlRecords:
    """Writes and plain reads of memories, episodes, profiles and calibration."""

    if TYPE_CHECKING:  # provided by the backend's store (and SqlGraph, SqlFolders)
        dialect: Dialect

        def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]: ...
        def _cached(self, key: tuple[Any, ...], compute: Callable[[], Any]) -> Any: ...
        def _delete_graph(self, conn: Any, agent_id: str) -> dict[str, int]: ...
        def _delete_folders(self, conn: Any, agent_id: str) -> int: ...

    def newest_episode_time(self, scope: Scope) -> str | None:
        """When the scope's newest episode was recorded: the episode penalty's boundary."""
        if not scope.episodes_visible:
            return None
        where, params = self.dialect.scope_where(scope, "t", EPISODE)
        # by time, not id (an import can add an episode recorded long before); an unreadable time sorts last
        rows = self._read(
            f"SELECT t.created_at FROM episodes t WHERE {where} "
            f"ORDER BY {self.dialect.newest_first.format('t.created_at')}, t.id DESC LIMIT 1",
            params,
        )
        return rows[0][0] if rows else None

    # -- writes, inside write() ---------------------------------------------------------

    def insert_memory(self, conn: Any, row: dict[str, Any]) -> int:
        """Insert one memory inside an open write(); returns its id. (The duplicate check that guards it runs inside
        the same write, under the writers' lock: handlers/write.py.)"""
        return self._insert(conn, "memories", row)

    def insert_episode(self, conn: Any, row: dict[str, Any]) -> int:
        """Insert one episode inside an open write(); returns its id."""
        return self._insert(conn, "episodes", row)

    def _insert(self, conn: Any, table: str, row: dict[str, Any]) -> int:
        row = {**row, "embedding": self.dialect.vector_param(row.get("embedding"))}
        return self.dialect.insert_id(
            conn, f"INSERT INTO {table} ({', '.join(row)}) VALUES ({self.dialect.marks(len(row))})", list(row.values())
        )

    def update_memory(self, conn: Any, memory_id: int, changes: dict[str, Any]) -> None:
        if "embedding" in changes:
            changes = {**changes, "embedding": self.dialect.vector_param(changes["embedding"])}
        mark = self.dialect.mark
        sets = ", ".join(f"{column} = {mark}" for column in changes)
        conn.execute(f"UPDATE memories SET {sets} WHERE id = {mark}", [*changes.values(), memory_id])

    def set_thresholds(self, conn: Any, thresholds: Sequence[Threshold]) -> None:
        cursor = conn.cursor()
        try:
            cursor.executemany(
                "INSERT INTO calibration(agent_id, signal, value, embedding_model, scoring_version) "
                f"VALUES ({self.dialect.marks(5)}) ON CONFLICT(agent_id, signal) DO UPDATE SET value = excluded.value, "
                "embedding_model = excluded.embedding_model, scoring_version = excluded.scoring_version",
                [(t.agent_id, t.signal, t.value, t.embedding_model, t.scoring_version) for t in thresholds],
            )
        finally:
            cursor.close()

    def drop_thresholds(self, conn: Any, agent_ids: Sequence[str]) -> None:
        for among, chunk in self.dialect.within("agent_id", list(agent_ids)):
            conn.execute(f"DELETE FROM calibration WHERE {among}", chunk)

    def set_beta(self, conn: Any, agent_id: str, beta: float | None) -> None:
        """The agent's precision override; None removes it."""
        mark = self.dialect.mark
        if beta is None:
            conn.execute(f"DELETE FROM recall_precision WHERE agent_id = {mark}", (agent_id,))
            return
        conn.execute(
            f"INSERT INTO recall_precision(agent_id, beta) VALUES ({mark}, {mark}) "
            "ON CONFLICT(agent_id) DO UPDATE SET beta = excluded.beta",
            (agent_id, beta),
        )

    def delete(self, conn: Any, ref: str) -> bool:
        kind, row_id = split_ref(ref)
        return conn.execute(f"DELETE FROM {TABLES[kind]} WHERE id = {self.dialect.mark}", (row_id,)).rowcount > 0

    def delete_agent(self, conn: Any, agent_id: str) -> dict[str, int]:
        """Delete every memory, episode and profile of one agent, and its graph and folders; the count of each."""
        counts = self._delete_graph(conn, agent_id)
        counts["folders"] = self._delete_folders(conn, agent_id)
        for table in ("memories", "episodes", "profiles"):
            deleted = conn.execute(f"DELETE FROM {table} WHERE agent_id = {self.dialect.mark}", (agent_id,)).rowcount
            counts[table] = int(deleted)
        return counts

    def set_profile(self, conn: Any, agent_id: str, content: str, updated_at: str) -> None:
        mark = self.dialect.mark
        conn.execute(
            f"INSERT INTO profiles(agent_id, user_id, content, updated_at) VALUES ({mark}, '', {mark}, {mark}) "
            "ON CONFLICT(agent_id, user_id) DO UPDATE SET content = excluded.content, "
            "updated_at = excluded.updated_at",
            (agent_id, content, updated_at),
        )

    # -- plain reads --------------------------------------------------------------------

    def records(self, refs: Sequence[str]) -> dict[str, Record]:
        """Hydrate refs into records; unknown refs are absent from the result."""
        out: dict[str, Record] = {}
        for kind, ids in ids_by_kind(refs).items():
            for among, chunk in self.dialect.within("t.id", ids):
                for record in self._select_records(kind, among, chunk, ""):
                    out[record.ref] = record
        return out

    def _select_records(self, kind: str, where: str, params: Sequence[Any], tail: str) -> list[Record]:
        rows = self._read(f"SELECT {RECORD_COLUMNS[kind]} FROM {TABLES[kind]} t WHERE {where} {tail}", params)
        return [record_of(kind, row) for row in rows]

    def list_records(
        self, kind: str, agent_id: str, project_id: str | None, limit: int, *, newest_first: bool = True
    ) -> list[Record]:
        """Browse one kind; agent_id "" means every agent."""
        where, params = self.dialect.listing_where(agent_id, project_id)
        order = "DESC" if newest_first else "ASC"
        return self._select_records(kind, where, [*params, limit], f"ORDER BY t.id {order} LIMIT {self.dialect.mark}")

    def profile(self, agent_id: str) -> tuple[str, str] | None:
        """(content, updated_at) of the agent's profile; where the backend caches, until any connection changes
        a profile."""

        def read() -> tuple[str, str] | None:
            rows = self._read(
                f"SELECT content, updated_at FROM profiles WHERE agent_id = {self.dialect.mark} AND user_id = ''",
                (agent_id,),
            )
            return (rows[0][0], rows[0][1]) if rows else None

        return self._cached(("profile", agent_id), read)

    def profiles(self, agent_id: str) -> list[tuple[str, str, str]]:
        """(agent_id, content, updated_at) of one agent's profile, or every agent's for ""."""
        where, params = (f"WHERE agent_id = {self.dialect.mark}", [agent_id]) if agent_id else ("", [])
        rows = self._read(f"SELECT agent_id, content, updated_at FROM profiles {where} ORDER BY agent_id", params)
        return [(agent, content, updated_at) for agent, content, updated_at in rows]

    def thresholds(self) -> list[Threshold]:
        """Every calibrated threshold, with the fingerprint it was measured under."""
        return self._cached(
            ("thresholds",),
            lambda: [
                Threshold(*row)
                for row in self._read(
                    "SELECT agent_id, signal, value, embedding_model, scoring_version FROM calibration "
                    "ORDER BY agent_id, signal"
                )
            ],
        )

    def betas(self) -> dict[str, float]:
        """The agents' precision overrides."""
        return self._cached(("betas",), lambda: dict(self._read("SELECT agent_id, beta FROM recall_precision")))
