"""Declared folders (both backends), and the export read of everything declared beside the records.

A folder is what CPersona 2.6.14 calls a declared folder: a name an agent gave under
a project, at most one parent (0: the project itself), and the records filed in it,
a record in at most one folder. The stores keep them so that a migration from
CPersona, and our own export and import, lose nothing; no search reads them, and no
tool writes them but ``import_memories``. A record deleted leaves its folder and a
folder deleted takes its filings, by trigger (each backend's schema).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cuedrecall.store.base import Declared, DeclaredMention, Entity, Folder, FolderMember, NameHit, Relation
from cuedrecall.store.rows import ENTITY_COLUMNS, FOLDER_COLUMNS, RELATION_COLUMNS

if TYPE_CHECKING:
    from collections.abc import Iterator
    from contextlib import contextmanager

    from cuedrecall.store.sql.dialect import Dialect


class SqlFolders:
    """Writes and reads of the folder tables; the export read of the graph and the folders."""

    if TYPE_CHECKING:  # provided by the backend's store (and SqlGraph's aliases)
        dialect: Dialect

        def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]: ...
        @contextmanager
        def snapshot(self) -> Iterator[None]: ...
        def aliases(self, entity_ids: Sequence[int]) -> dict[int, list[NameHit]]: ...

    # -- writes, inside write() ---------------------------------------------------------------

    def insert_folder(
        self,
        conn: Any,
        agent_id: str,
        project_id: str,
        parent_id: int,
        name: str,
        normalized: str,
        declared_by: str,
        created_at: str,
    ) -> int:
        return self.dialect.insert_id(
            conn,
            "INSERT INTO folders(agent_id, project_id, parent_id, name, normalized, declared_by, created_at) "
            f"VALUES ({self.dialect.marks(7)})",
            (agent_id, project_id, parent_id, name, normalized, declared_by, created_at),
        )

    def file_record(self, conn: Any, ref: str, folder_id: int, declared_by: str, declared_at: str) -> int:
        """File the record unless it is filed already; the folder it is in afterwards."""
        conn.execute(
            self.dialect.insert_ignore("folder_members", ("ref", "folder_id", "declared_by", "declared_at")),
            (ref, folder_id, declared_by, declared_at),
        )
        mark = self.dialect.mark
        return int(conn.execute(f"SELECT folder_id FROM folder_members WHERE ref = {mark}", (ref,)).fetchone()[0])

    def _delete_folders(self, conn: Any, agent_id: str) -> int:
        """Every folder of one agent (the trigger takes their filings); how many."""
        return int(conn.execute(f"DELETE FROM folders WHERE agent_id = {self.dialect.mark}", (agent_id,)).rowcount)

    # -- reads --------------------------------------------------------------------------------

    def find_folder(self, agent_id: str, project_id: str, parent_id: int, normalized: str) -> int | None:
        """The folder of that name directly below ``parent_id`` (0: the project), or None."""
        mark = self.dialect.mark
        rows = self._read(
            f"SELECT id FROM folders WHERE agent_id = {mark} AND project_id = {mark} AND parent_id = {mark} "
            f"AND normalized = {mark}",
            (agent_id, project_id, parent_id, normalized),
        )
        return int(rows[0][0]) if rows else None

    def filed_in(self, refs: Sequence[str]) -> dict[str, int]:
        """The folder each of ``refs`` is filed in; a record filed nowhere is absent."""
        out: dict[str, int] = {}
        for among, params in self.dialect.within("ref", sorted(set(refs))):
            for ref, folder_id in self._read(f"SELECT ref, folder_id FROM folder_members WHERE {among}", params):
                out[ref] = int(folder_id)
        return out

    def declared(self, agent_id: str) -> Declared:
        """One agent's declarations (every agent's for ""), read in one snapshot: entities, their aliases,
        mentions, relations, folders and filings, each by id (mentions by entity and ref, filings by ref)."""
        mark = self.dialect.mark
        own_e, own_r, own_f = (f"WHERE e.agent_id = {mark}", f"WHERE r.agent_id = {mark}", f"WHERE f.agent_id = {mark}")
        if not agent_id:
            own_e = own_r = own_f = ""
        params = (agent_id,) if agent_id else ()
        with self.snapshot():
            entities = [
                Entity(*row)
                for row in self._read(f"SELECT {ENTITY_COLUMNS} FROM entities e {own_e} ORDER BY e.id", params)
            ]
            mentions = [
                DeclaredMention(*row)
                for row in self._read(
                    "SELECT m.entity_id, m.ref, m.declared_by, m.created_at FROM entity_mentions m "
                    f"JOIN entities e ON e.id = m.entity_id {own_e} ORDER BY m.entity_id, m.ref",
                    params,
                )
            ]
            relations = [
                Relation(*row)
                for row in self._read(f"SELECT {RELATION_COLUMNS} FROM relations r {own_r} ORDER BY r.id", params)
            ]
            folders = [
                Folder(*row)
                for row in self._read(f"SELECT {FOLDER_COLUMNS} FROM folders f {own_f} ORDER BY f.id", params)
            ]
            members = [
                FolderMember(*row)
                for row in self._read(
                    "SELECT m.ref, m.folder_id, m.declared_by, m.declared_at FROM folder_members m "
                    f"JOIN folders f ON f.id = m.folder_id {own_f} ORDER BY m.ref",
                    params,
                )
            ]
            aliases = self.aliases([entity.id for entity in entities])
        return Declared(entities, aliases, mentions, relations, folders, members)
