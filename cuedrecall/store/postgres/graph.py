"""The associative graph in the PostgreSQL store (mirrors ``store/sqlite/graph.py``): entities, aliases, mentions and
relations. An entity and a relation are readable in a scope by the record rule less the source; an alias and a
mention follow their entity. Deletes of records and entities take their graph rows by trigger (schema.py)."""

from __future__ import annotations

from collections.abc import Sequence
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
from cuedrecall.store.postgres.scope import scope_where
from cuedrecall.store.rows import ENTITY_COLUMNS, RELATION_COLUMNS, TABLES, ids_by_kind


class PgGraph:
    """Writes and reads of the graph tables."""

    if TYPE_CHECKING:  # provided by PgConnection

        def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]: ...

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
        return int(
            conn.execute(
                "INSERT INTO entities(agent_id, project_id, channel, name, normalized, declared_by, created_at) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING id",
                (agent_id, project_id, channel, name, normalized, declared_by, created_at),
            ).fetchone()[0]
        )

    def add_alias(self, conn: Any, entity_id: int, alias: str, normalized: str) -> bool:
        return (
            conn.execute(
                "INSERT INTO entity_aliases(entity_id, alias, normalized) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                (entity_id, alias, normalized),
            ).rowcount
            > 0
        )

    def add_mention(self, conn: Any, entity_id: int, ref: str, created_at: str, declared_by: str = "agent") -> bool:
        return (
            conn.execute(
                "INSERT INTO entity_mentions(entity_id, ref, declared_by, created_at) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT DO NOTHING",
                (entity_id, ref, declared_by, created_at),
            ).rowcount
            > 0
        )

    def add_relation(self, conn: Any, relation: NewRelation) -> int:
        """The relation's id: a new row, or the one already declared with the same key (first time kept)."""
        key = (
            relation.agent_id,
            relation.project_id,
            relation.channel,
            relation.subject_kind,
            relation.subject_id,
            relation.predicate,
            relation.object_kind,
            relation.object_id,
            relation.anchor_ref,
        )
        conn.execute(
            "INSERT INTO relations(agent_id, project_id, channel, subject_kind, subject_id, predicate, object_kind, "
            "object_id, anchor_ref, declared_by, declared_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT DO NOTHING",
            (*key, relation.declared_by, relation.declared_at),
        )
        return int(
            conn.execute(
                "SELECT id FROM relations WHERE agent_id = %s AND project_id = %s AND channel = %s "
                "AND subject_kind = %s AND subject_id = %s AND predicate = %s AND object_kind = %s AND object_id = %s "
                "AND anchor_ref = %s",
                key,
            ).fetchone()[0]
        )

    def retract_relation(self, conn: Any, agent_id: str, relation_id: int) -> bool:
        return (
            conn.execute("DELETE FROM relations WHERE id = %s AND agent_id = %s", (relation_id, agent_id)).rowcount > 0
        )

    def retract_mention(self, conn: Any, agent_id: str, entity_id: int, ref: str) -> bool:
        return (
            conn.execute(
                "DELETE FROM entity_mentions WHERE entity_id = %s AND ref = %s "
                "AND entity_id IN (SELECT id FROM entities WHERE id = %s AND agent_id = %s)",
                (entity_id, ref, entity_id, agent_id),
            ).rowcount
            > 0
        )

    def _delete_graph(self, conn: Any, agent_id: str) -> dict[str, int]:
        """Every relation and entity of one agent (the trigger takes aliases and mentions); the count of each."""
        relations = conn.execute("DELETE FROM relations WHERE agent_id = %s", (agent_id,)).rowcount
        entities = conn.execute("DELETE FROM entities WHERE agent_id = %s", (agent_id,)).rowcount
        return {"relations": relations, "entities": entities}

    # -- reads --------------------------------------------------------------------------------

    def has_graph(self, agent_id: str) -> bool:
        """Whether the agent has declared any entity or relation."""
        return bool(
            self._read(
                "SELECT EXISTS (SELECT 1 FROM entities WHERE agent_id = %s) "
                "OR EXISTS (SELECT 1 FROM relations WHERE agent_id = %s)",
                (agent_id, agent_id),
            )[0][0]
        )

    def find_entity(self, agent_id: str, project_id: str, channel: str, normalized: str) -> Entity | None:
        """The lowest-id entity of exactly this bucket that the normalised name names, as its name or an alias."""
        rows = self._read(
            f"SELECT {ENTITY_COLUMNS} FROM entities e WHERE e.agent_id = %s AND e.project_id = %s AND e.channel = %s "
            "AND (e.normalized = %s OR e.id IN (SELECT entity_id FROM entity_aliases WHERE normalized = %s)) "
            "ORDER BY e.id LIMIT 1",
            (agent_id, project_id, channel, normalized, normalized),
        )
        return Entity(*rows[0]) if rows else None

    def entities(self, ids: Sequence[int]) -> dict[int, Entity]:
        """Entities by id, whoever's they are (the caller checks the owner)."""
        rows = self._read(f"SELECT {ENTITY_COLUMNS} FROM entities e WHERE e.id = ANY(%s)", [sorted(set(ids))])
        return {row[0]: Entity(*row) for row in rows}

    def entities_named(self, scope: Scope, normalized: str) -> list[Entity]:
        """The entities readable in the scope that the normalised name names, as name or alias; lowest id first."""
        where, params = scope_where(scope, "e", ENTITY)
        rows = self._read(
            f"SELECT {ENTITY_COLUMNS} FROM entities e WHERE {where} AND (e.normalized = %s "
            "OR e.id IN (SELECT entity_id FROM entity_aliases WHERE normalized = %s)) ORDER BY e.id",
            [*params, normalized, normalized],
        )
        return [Entity(*row) for row in rows]

    def names_within(self, scope: Scope, text: str) -> list[NameHit]:
        """Every name and alias of the scope's entities whose normalised form occurs in ``text``; names before
        aliases, then by entity id."""
        where, params = scope_where(scope, "e", ENTITY)
        rows = self._read(
            f"SELECT e.id, e.name, e.normalized, 0 AS o FROM entities e WHERE {where} AND strpos(%s, e.normalized) > 0 "
            f"UNION ALL SELECT a.entity_id, a.alias, a.normalized, 1 FROM entity_aliases a "
            f"JOIN entities e ON e.id = a.entity_id WHERE {where} AND strpos(%s, a.normalized) > 0 "
            "ORDER BY 4, 1, 3",
            [*params, text, *params, text],
        )
        return [NameHit(entity_id, written, normalized) for entity_id, written, normalized, _ in rows]

    def aliases(self, entity_ids: Sequence[int]) -> dict[int, list[NameHit]]:
        """Each entity's aliases, by normalised form; an entity without one is absent."""
        out: dict[int, list[NameHit]] = {}
        for entity_id, alias, normalized in self._read(
            "SELECT entity_id, alias, normalized FROM entity_aliases WHERE entity_id = ANY(%s) "
            "ORDER BY entity_id, normalized",
            [sorted(set(entity_ids))],
        ):
            out.setdefault(entity_id, []).append(NameHit(entity_id, alias, normalized))
        return out

    def mentioned_entities(self, scope: Scope, refs: Sequence[str]) -> dict[str, list[int]]:
        """For each ref, the entities readable in the scope that it mentions, lowest id first (none: absent)."""
        where, params = scope_where(scope, "e", ENTITY)
        out: dict[str, list[int]] = {}
        for ref, entity_id in self._read(
            f"SELECT m.ref, m.entity_id FROM entity_mentions m JOIN entities e ON e.id = m.entity_id "
            f"WHERE m.ref = ANY(%s) AND {where} ORDER BY m.ref, m.entity_id",
            [sorted(set(refs)), *params],
        ):
            out.setdefault(ref, []).append(entity_id)
        return out

    def mentioning(self, scope: Scope, entity_ids: Sequence[int], limit: int) -> dict[int, Mentions]:
        """Per entity, the records readable in the scope that mention it: the first ``limit`` by record id (a
        memory before an episode of the same id) and how many there are."""
        kinds = [MEMORY, EPISODE] if scope.episodes_visible else [MEMORY]
        parts, params = [], []
        for order, kind in enumerate(kinds):
            where, scope_params = scope_where(scope, "t", kind)
            prefix = kind + ":"
            parts.append(
                f"SELECT m.entity_id, m.ref, t.id AS rid, {order} AS kord FROM entity_mentions m "
                f"JOIN {TABLES[kind]} t ON m.ref = '{prefix}' || t.id WHERE m.entity_id = ANY(%s) "
                f"AND left(m.ref, {len(prefix)}) = '{prefix}' AND {where}"
            )
            params += [sorted(set(entity_ids)), *scope_params]
        rows = self._read(
            "SELECT entity_id, ref, total FROM (SELECT entity_id, ref, rid, kord, "
            "ROW_NUMBER() OVER (PARTITION BY entity_id ORDER BY rid, kord) AS place, "
            f"COUNT(*) OVER (PARTITION BY entity_id) AS total FROM ({' UNION ALL '.join(parts)}) u) p "
            "WHERE place <= %s ORDER BY entity_id, place",
            [*params, limit],
        )
        out: dict[int, Mentions] = {}
        for entity_id, ref, total in rows:
            out.setdefault(entity_id, Mentions([], int(total))).refs.append(ref)
        return out

    def entity_relations(self, scope: Scope, entity_ids: Sequence[int]) -> list[Relation]:
        """The relations between two entities that touch one of ``entity_ids``, the relation and both entities
        readable in the scope; by id."""
        rwhere, rparams = scope_where(scope, "r", ENTITY)
        swhere, sparams = scope_where(scope, "s", ENTITY)
        owhere, oparams = scope_where(scope, "o", ENTITY)
        ids = sorted(set(entity_ids))
        rows = self._read(
            f"SELECT {RELATION_COLUMNS} FROM relations r JOIN entities s ON s.id = r.subject_id "
            f"JOIN entities o ON o.id = r.object_id WHERE (r.subject_id = ANY(%s) OR r.object_id = ANY(%s)) "
            f"AND r.subject_kind = '{ENTITY}' AND r.object_kind = '{ENTITY}' AND {rwhere} AND {swhere} AND {owhere} "
            "ORDER BY r.id",
            [ids, ids, *rparams, *sparams, *oparams],
        )
        return [Relation(*row) for row in rows]

    def relations_between(self, scope: Scope, refs: Sequence[str]) -> list[Relation]:
        """The relations readable in the scope whose subject and object are both records among ``refs``; by id."""
        wanted = set(refs)
        where, params = scope_where(scope, "r", ENTITY)
        found: dict[int, Relation] = {}
        for kind, ids in ids_by_kind(sorted(wanted), skip_others=True).items():
            if not ids:
                continue
            for row in self._read(
                f"SELECT {RELATION_COLUMNS} FROM relations r WHERE r.subject_kind = '{kind}' "
                f"AND r.subject_id = ANY(%s) AND r.object_kind IN ('{MEMORY}', '{EPISODE}') AND {where}",
                [ids, *params],
            ):
                relation = Relation(*row)
                if make_ref(relation.object_kind, relation.object_id) in wanted:
                    found[relation.id] = relation
        return [found[key] for key in sorted(found)]

    def anchored_relations(self, scope: Scope, refs: Sequence[str]) -> list[Relation]:
        """The relations between two entities declared from one of ``refs`` (their anchor), the relation
        and both entities readable in the scope; by id."""
        rwhere, rparams = scope_where(scope, "r", ENTITY)
        swhere, sparams = scope_where(scope, "s", ENTITY)
        owhere, oparams = scope_where(scope, "o", ENTITY)
        anchors = sorted(set(refs))
        if not anchors:
            return []
        rows = self._read(
            f"SELECT {RELATION_COLUMNS} FROM relations r JOIN entities s ON s.id = r.subject_id "
            f"JOIN entities o ON o.id = r.object_id WHERE r.anchor_ref = ANY(%s) "
            f"AND r.subject_kind = '{ENTITY}' AND r.object_kind = '{ENTITY}' AND {rwhere} AND {swhere} "
            f"AND {owhere} ORDER BY r.id",
            [anchors, *rparams, *sparams, *oparams],
        )
        return [Relation(*row) for row in rows]
