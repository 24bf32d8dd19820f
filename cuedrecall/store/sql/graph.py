"""The associative graph (both backends): entities, aliases, mentions and relations.

An entity and a relation are readable in a scope by the record rule less the source
(``scope_where`` with a kind that is not a memory); an alias and a mention have no
scope of their own and are readable with their entity. Deletes of records and
entities take their graph rows by trigger (each backend's schema).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from cuedrecall.store.base import (
    ENTITY,
    EPISODE,
    MEMORY,
    Entity,
    Mentions,
    NameHit,
    NewRelation,
    Relation,
    Scope,
    make_ref,
)
from cuedrecall.store.rows import ENTITY_COLUMNS, RELATION_COLUMNS, TABLES, ids_by_kind

if TYPE_CHECKING:
    from cuedrecall.store.sql.dialect import Dialect

_RELATION_KEY = (
    "agent_id",
    "project_id",
    "channel",
    "subject_kind",
    "subject_id",
    "predicate",
    "object_kind",
    "object_id",
    "anchor_ref",
)


class SqlGraph:
    """Writes and reads of the graph tables."""

    if TYPE_CHECKING:  # provided by the backend's store
        dialect: Dialect

        def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]: ...
        def _cached(self, key: tuple[Any, ...], compute: Callable[[], Any]) -> Any: ...

    # -- writes, inside write() ---------------------------------------------------------------

    def insert_entity(
        self,
        conn: Any,
        agent_id: str,
        project_id: str,
        channel: str,
        name: str,
        normalized: str,
        created_at: str,
        declared_by: str = "agent",
    ) -> int:
        return self.dialect.insert_id(
            conn,
            "INSERT INTO entities(agent_id, project_id, channel, name, normalized, declared_by, created_at) "
            f"VALUES ({self.dialect.marks(7)})",
            (agent_id, project_id, channel, name, normalized, declared_by, created_at),
        )

    def add_alias(self, conn: Any, entity_id: int, alias: str, normalized: str) -> bool:
        sql = self.dialect.insert_ignore("entity_aliases", ("entity_id", "alias", "normalized"))
        return conn.execute(sql, (entity_id, alias, normalized)).rowcount > 0

    def add_mention(self, conn: Any, entity_id: int, ref: str, created_at: str, declared_by: str = "agent") -> bool:
        sql = self.dialect.insert_ignore("entity_mentions", ("entity_id", "ref", "declared_by", "created_at"))
        return conn.execute(sql, (entity_id, ref, declared_by, created_at)).rowcount > 0

    def add_relation(self, conn: Any, relation: NewRelation) -> int:
        """The relation's id: a new row, or the one already declared with the same key (scope, ends, predicate,
        anchor), which keeps its first declaration time."""
        key = tuple(getattr(relation, column) for column in _RELATION_KEY)
        conn.execute(
            self.dialect.insert_ignore("relations", (*_RELATION_KEY, "declared_by", "declared_at")),
            (*key, relation.declared_by, relation.declared_at),
        )
        match = " AND ".join(f"{column} = {self.dialect.mark}" for column in _RELATION_KEY)
        return int(conn.execute(f"SELECT id FROM relations WHERE {match}", key).fetchone()[0])

    def retract_relation(self, conn: Any, agent_id: str, relation_id: int) -> bool:
        mark = self.dialect.mark
        sql = f"DELETE FROM relations WHERE id = {mark} AND agent_id = {mark}"
        return conn.execute(sql, (relation_id, agent_id)).rowcount > 0

    def retract_mention(self, conn: Any, agent_id: str, entity_id: int, ref: str) -> bool:
        mark = self.dialect.mark
        sql = (
            f"DELETE FROM entity_mentions WHERE entity_id = {mark} AND ref = {mark} "
            f"AND entity_id IN (SELECT id FROM entities WHERE id = {mark} AND agent_id = {mark})"
        )
        return conn.execute(sql, (entity_id, ref, entity_id, agent_id)).rowcount > 0

    def _delete_graph(self, conn: Any, agent_id: str) -> dict[str, int]:
        """Every relation and entity of one agent (the triggers take aliases and mentions); the count of each."""
        mark = self.dialect.mark
        relations = conn.execute(f"DELETE FROM relations WHERE agent_id = {mark}", (agent_id,)).rowcount
        entities = conn.execute(f"DELETE FROM entities WHERE agent_id = {mark}", (agent_id,)).rowcount
        return {"relations": int(relations), "entities": int(entities)}

    # -- reads --------------------------------------------------------------------------------

    def has_graph(self, agent_id: str) -> bool:
        """Whether the agent has declared any entity or relation; where the backend caches (``_cached``), kept
        until any connection changes the graph, so a reader of an empty graph pays no query once warm."""
        mark = self.dialect.mark
        return self._cached(
            ("graph", agent_id),
            lambda: bool(
                self._read(
                    f"SELECT EXISTS (SELECT 1 FROM entities WHERE agent_id = {mark}) "
                    f"OR EXISTS (SELECT 1 FROM relations WHERE agent_id = {mark})",
                    (agent_id, agent_id),
                )[0][0]
            ),
        )

    def find_entity(self, agent_id: str, project_id: str, channel: str, normalized: str) -> Entity | None:
        """The lowest-id entity of exactly this bucket that the normalized name names, as its name or an alias."""
        mark = self.dialect.mark
        rows = self._read(
            f"SELECT {ENTITY_COLUMNS} FROM entities e WHERE e.agent_id = {mark} AND e.project_id = {mark} "
            f"AND e.channel = {mark} AND (e.normalized = {mark} "
            f"OR e.id IN (SELECT entity_id FROM entity_aliases WHERE normalized = {mark})) ORDER BY e.id LIMIT 1",
            (agent_id, project_id, channel, normalized, normalized),
        )
        return Entity(*rows[0]) if rows else None

    def entities(self, ids: Sequence[int]) -> dict[int, Entity]:
        """Entities by id, whoever's they are (the caller checks the owner)."""
        out: dict[int, Entity] = {}
        for among, params in self.dialect.within("e.id", sorted(set(ids))):
            for row in self._read(f"SELECT {ENTITY_COLUMNS} FROM entities e WHERE {among}", params):
                out[row[0]] = Entity(*row)
        return out

    def entities_named(self, scope: Scope, normalized: str) -> list[Entity]:
        """The entities readable in the scope that the normalized name names, as name or alias; lowest id first."""
        where, params = self.dialect.scope_where(scope, "e", ENTITY)
        mark = self.dialect.mark
        rows = self._read(
            f"SELECT {ENTITY_COLUMNS} FROM entities e WHERE {where} AND (e.normalized = {mark} "
            f"OR e.id IN (SELECT entity_id FROM entity_aliases WHERE normalized = {mark})) ORDER BY e.id",
            [*params, normalized, normalized],
        )
        return [Entity(*row) for row in rows]

    def names_within(self, scope: Scope, text: str) -> list[NameHit]:
        """Every name and alias of the entities readable in the scope whose normalized form occurs in ``text``
        (itself normalized); names before aliases, then by entity id."""
        where, params = self.dialect.scope_where(scope, "e", ENTITY)
        rows = self._read(
            f"SELECT e.id, e.name, e.normalized, 0 FROM entities e WHERE {where} "
            f"AND {self.dialect.contains('e.normalized')} "
            f"UNION ALL SELECT a.entity_id, a.alias, a.normalized, 1 FROM entity_aliases a "
            f"JOIN entities e ON e.id = a.entity_id WHERE {where} AND {self.dialect.contains('a.normalized')} "
            "ORDER BY 4, 1, 3",
            [*params, text, *params, text],
        )
        return [NameHit(entity_id, written, normalized) for entity_id, written, normalized, _ in rows]

    def aliases(self, entity_ids: Sequence[int]) -> dict[int, list[NameHit]]:
        """Each entity's aliases, by normalized form; an entity without one is absent."""
        out: dict[int, list[NameHit]] = {}
        for among, params in self.dialect.within("entity_id", sorted(set(entity_ids))):
            for entity_id, alias, normalized in self._read(
                f"SELECT entity_id, alias, normalized FROM entity_aliases WHERE {among} ORDER BY entity_id, normalized",
                params,
            ):
                out.setdefault(entity_id, []).append(NameHit(entity_id, alias, normalized))
        return out

    def mentioned_entities(self, scope: Scope, refs: Sequence[str]) -> dict[str, list[int]]:
        """For each ref, the entities readable in the scope that it mentions, lowest id first (none: absent)."""
        where, params = self.dialect.scope_where(scope, "e", ENTITY)
        out: dict[str, list[int]] = {}
        for among, chunk in self.dialect.within("m.ref", sorted(set(refs))):
            for ref, entity_id in self._read(
                # the refs kept outermost: a few index probes, never a pass over the agent's entities
                f"SELECT m.ref, m.entity_id FROM entity_mentions m {self.dialect.ordered_join} entities e "
                f"ON e.id = m.entity_id WHERE {among} AND {where} ORDER BY m.ref, m.entity_id",
                [*chunk, *params],
            ):
                out.setdefault(ref, []).append(entity_id)
        return out

    def mentioning(self, scope: Scope, entity_ids: Sequence[int], limit: int) -> dict[int, Mentions]:
        """Per entity, the records readable in the scope that mention it: the first ``limit`` by record id
        (a memory before an episode of the same id) and how many there are. An entity none mentions is absent."""
        out: dict[int, Mentions] = {}
        kinds = [MEMORY, EPISODE] if scope.episodes_visible else [MEMORY]
        for among, chunk in self.dialect.within("m.entity_id", sorted(set(entity_ids))):
            parts, params = [], []
            for order, kind in enumerate(kinds):
                where, scope_params = self.dialect.scope_where(scope, "t", kind)
                prefix = kind + ":"
                # the record found by its primary key, from the ref
                parts.append(
                    f"SELECT m.entity_id, m.ref, t.id AS rid, {order} AS kord FROM entity_mentions m "
                    f"JOIN {TABLES[kind]} t ON {self.dialect.ref_names('m.ref', prefix, 't.id')} "
                    f"WHERE {among} AND substr(m.ref, 1, {len(prefix)}) = '{prefix}' AND {where}"
                )
                params += [*chunk, *scope_params]
            rows = self._read(
                "SELECT entity_id, ref, total FROM (SELECT entity_id, ref, rid, kord, "
                "ROW_NUMBER() OVER (PARTITION BY entity_id ORDER BY rid, kord) AS place, "
                f"COUNT(*) OVER (PARTITION BY entity_id) AS total FROM ({' UNION ALL '.join(parts)}) u) p "
                f"WHERE place <= {self.dialect.mark} ORDER BY entity_id, place",
                [*params, limit],
            )
            for entity_id, ref, total in rows:
                out.setdefault(entity_id, Mentions([], int(total))).refs.append(ref)
        return out

    def entity_relations(self, scope: Scope, entity_ids: Sequence[int]) -> list[Relation]:
        """The relations between two entities that touch one of ``entity_ids``, the relation and both entities
        readable in the scope; by id."""
        rwhere, rparams = self.dialect.scope_where(scope, "r", ENTITY)
        swhere, sparams = self.dialect.scope_where(scope, "s", ENTITY)
        owhere, oparams = self.dialect.scope_where(scope, "o", ENTITY)
        found: dict[int, Relation] = {}
        for end in ("subject", "object"):  # one indexed read per end, not an OR the planner scans
            for among, chunk in self.dialect.within(f"r.{end}_id", sorted(set(entity_ids))):
                rows = self._read(
                    f"SELECT {RELATION_COLUMNS} FROM relations r JOIN entities s ON s.id = r.subject_id "
                    f"JOIN entities o ON o.id = r.object_id WHERE r.{end}_kind = '{ENTITY}' "
                    f"AND {among} AND r.subject_kind = '{ENTITY}' AND r.object_kind = '{ENTITY}' "
                    f"AND {rwhere} AND {swhere} AND {owhere}",
                    [*chunk, *rparams, *sparams, *oparams],
                )
                found.update((row[0], Relation(*row)) for row in rows)
        return [found[key] for key in sorted(found)]

    def relations_between(self, scope: Scope, refs: Sequence[str]) -> list[Relation]:
        """The relations readable in the scope whose subject and object are both records among ``refs``; by id."""
        wanted = set(refs)
        where, params = self.dialect.scope_where(scope, "r", ENTITY)
        found: dict[int, Relation] = {}
        for kind, ids in ids_by_kind(sorted(wanted), skip_others=True).items():
            for among, chunk in self.dialect.within("r.subject_id", ids):
                for row in self._read(
                    f"SELECT {RELATION_COLUMNS} FROM relations r WHERE r.subject_kind = '{kind}' "
                    f"AND {among} AND r.object_kind IN ('{MEMORY}', '{EPISODE}') AND {where}",
                    [*chunk, *params],
                ):
                    relation = Relation(*row)
                    if make_ref(relation.object_kind, relation.object_id) in wanted:
                        found[relation.id] = relation
        return [found[key] for key in sorted(found)]

    def anchored_relations(self, scope: Scope, refs: Sequence[str]) -> list[Relation]:
        """The relations between two entities declared from one of ``refs`` (their anchor), the relation
        and both entities readable in the scope; by id."""
        rwhere, rparams = self.dialect.scope_where(scope, "r", ENTITY)
        swhere, sparams = self.dialect.scope_where(scope, "s", ENTITY)
        owhere, oparams = self.dialect.scope_where(scope, "o", ENTITY)
        found: dict[int, Relation] = {}
        for among, chunk in self.dialect.within("r.anchor_ref", sorted(set(refs))):
            for row in self._read(
                f"SELECT {RELATION_COLUMNS} FROM relations r JOIN entities s ON s.id = r.subject_id "
                f"JOIN entities o ON o.id = r.object_id WHERE {among} "
                f"AND r.subject_kind = '{ENTITY}' AND r.object_kind = '{ENTITY}' AND {rwhere} AND {swhere} "
                f"AND {owhere}",
                [*chunk, *rparams, *sparams, *oparams],
            ):
                found[row[0]] = Relation(*row)
        return [found[key] for key in sorted(found)]
