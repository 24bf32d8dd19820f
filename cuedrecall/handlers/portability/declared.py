"""What is declared beside the records: the graph (entities with their aliases, mentions, relations) and the
folders (folders, filings), as an export file holds them and as an import carries them.

The shapes are CPersona 2.6.14's (``cpersona-export/1.1`` and ``1.2``), which our ``cuedrecall-export/2`` writes
too, so one reader serves both; a file names records by the ids they had where it was written, and an import maps
each onto the row that holds that record here. Two rules kept apart: a malformed declaration refuses the whole
file before anything is written (``check``), and a well-formed one that cannot hold here is left out and said
(``Carry``, under ``not_imported`` and ``dropped``). Carrying is idempotent, like the records' import
(docs/storage.md#moving-from-cpersona-what-an-import-carries).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cuedrecall.errors import ToolArgumentError
from cuedrecall.graph.names import MAX_NAME, normalize_name
from cuedrecall.handlers.portability.formats import as_instant, as_text
from cuedrecall.handlers.portability.paths import refuse
from cuedrecall.runtime import Runtime
from cuedrecall.store.base import ENTITY, EPISODE, MEMORY, Declared, NewRelation, make_ref, split_ref
from cuedrecall.text.sanitise import sanitise

DECLARED_BY = ("agent", "operator")
COMMIT_BATCH = 500  # declarations per write transaction, as the records' import batches
DROPPED_SHOWN = 50  # reasons listed in an answer; not_imported counts every one


# -- checked declarations ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Entity:
    at: int  # record number after the header
    file_id: int
    agent: str
    project: str
    channel: str
    name: str
    normalized: str
    aliases: tuple[tuple[str, str], ...]  # (as written, normalized)
    declared_by: str
    created_at: Any


@dataclass(frozen=True)
class _Mention:
    at: int
    entity: int  # file id
    ref: str  # as the file names it, canonical
    declared_by: str
    created_at: Any


@dataclass(frozen=True)
class _Relation:
    at: int
    agent: str
    project: str
    channel: str
    subject: tuple[str, int]  # (kind, file id)
    predicate: str  # normalized
    object: tuple[str, int]
    anchor: str  # "" or a canonical ref
    declared_by: str
    declared_at: Any


@dataclass(frozen=True)
class _Folder:
    at: int
    file_id: int
    agent: str
    project: str
    parent: int  # file id, 0 for the project
    name: str
    normalized: str
    declared_by: str
    created_at: Any


@dataclass(frozen=True)
class _Member:
    at: int
    ref: str
    folder: int  # file id
    declared_by: str
    declared_at: Any


@dataclass
class Declarations:
    """A file's declarations, checked: entities and folders in the order they can be written (a folder after
    its parent), then what names them."""

    entities: list[_Entity] = field(default_factory=list)
    mentions: list[_Mention] = field(default_factory=list)
    relations: list[_Relation] = field(default_factory=list)
    folders: list[_Folder] = field(default_factory=list)
    members: list[_Member] = field(default_factory=list)
    graph_records: int = 0  # entity, mention and relation records the file holds
    folder_records: int = 0  # folder and folder_member records

    def __len__(self) -> int:
        return self.graph_records + self.folder_records


def check(items: list[tuple[int, dict[str, Any]]], target_agent_id: str) -> Declarations:
    """The file's declaration records (each with its record number after the header), checked whole; a
    refusal naming the first malformed one. Each is filed under ``target_agent_id`` when one is given.

    Malformed: a field of the wrong type, a name empty after normalization or longer than ``MAX_NAME``, an
    unknown ``declared_by``, a duplicated id, a mention or relation naming an entity the file does not hold, a
    filing naming a folder it does not hold, a folder tree that loops or crosses agents or projects. A file
    CPersona or this server wrote has none of these."""
    out = Declarations()
    entities: dict[int, _Entity] = {}
    folders: dict[int, _Folder] = {}
    for at, item in items:
        kind = item["_type"]
        if kind in ("entity", "mention", "relation"):
            out.graph_records += 1
        else:
            out.folder_records += 1
        if kind == "entity":
            entity = _entity(at, item, target_agent_id)
            if entity.file_id in entities:
                raise _bad(at, kind, f"repeats entity id {entity.file_id}")
            entities[entity.file_id] = entity
        elif kind == "mention":
            out.mentions.append(_mention(at, item))
        elif kind == "relation":
            out.relations.append(_relation(at, item, target_agent_id))
        elif kind == "folder":
            folder = _folder(at, item, target_agent_id)
            if folder.file_id in folders:
                raise _bad(at, kind, f"repeats folder id {folder.file_id}")
            folders[folder.file_id] = folder
        else:
            out.members.append(_member(at, item))
    out.entities = list(entities.values())
    for mention in out.mentions:
        if mention.entity not in entities:
            raise _bad(mention.at, "mention", f"names entity {mention.entity}, which the file does not hold")
    for relation in out.relations:
        for end, (kind, file_id) in (("subject", relation.subject), ("object", relation.object)):
            if kind == ENTITY and file_id not in entities:
                raise _bad(relation.at, "relation", f"{end} names entity {file_id}, which the file does not hold")
    out.folders = _parents_first(folders)
    for member in out.members:
        if member.folder not in folders:
            raise _bad(member.at, "folder_member", f"names folder {member.folder}, which the file does not hold")
    return out


def _bad(at: int, kind: str, problem: str) -> ToolArgumentError:
    return refuse("input_path", f"record {at} after the header ({kind}) {problem}")


def _agent(at: int, item: dict[str, Any], target_agent_id: str) -> str:
    given = item.get("agent_id")
    agent = target_agent_id or (given if isinstance(given, str) else "")
    if not agent:
        raise ToolArgumentError(
            f"argument 'target_agent_id' is required: record {at} after the header ({item['_type']}) has no agent_id"
        )
    return agent


def _axis(at: int, item: dict[str, Any], key: str) -> str:
    value = item.get(key)
    if value is not None and not isinstance(value, str):
        raise _bad(at, item["_type"], f"has a {key} that is not a string")
    return as_text(value)


def _id(at: int, item: dict[str, Any], key: str, *, zero: bool = False) -> int:
    value = item.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not (0 if zero else 1) <= value < 2**63:
        raise _bad(at, item["_type"], f"has a {key} that is not a positive integer id")
    return value


def _name(at: int, item: dict[str, Any], key: str, value: Any) -> tuple[str, str]:
    """(as written, trimmed; normalized) of a name, alias or predicate."""
    if not isinstance(value, str) or not normalize_name(value):
        raise _bad(at, item["_type"], f"has a {key} that is not a nonempty name")
    written = value.strip()
    if len(written) > MAX_NAME:
        raise _bad(at, item["_type"], f"has a {key} longer than {MAX_NAME} characters")
    return written, normalize_name(written)


def _declared_by(at: int, item: dict[str, Any]) -> str:
    value = item.get("declared_by")
    if value is None:
        return "agent"
    if value not in DECLARED_BY:
        raise _bad(at, item["_type"], f"has declared_by {value!r}: it must be one of {', '.join(DECLARED_BY)}")
    return str(value)


def _ref(at: int, item: dict[str, Any], key: str, *, empty: bool = False) -> str:
    value = item.get(key)
    if empty and value in (None, ""):
        return ""
    try:
        if not isinstance(value, str):
            raise ValueError
        return make_ref(*split_ref(value.strip()))
    except ValueError:
        raise _bad(at, item["_type"], f"has a {key} that is not a record ref (mem:<id> or ep:<id>)") from None


def _entity(at: int, item: dict[str, Any], target_agent_id: str) -> _Entity:
    name, normalized = _name(at, item, "name", item.get("name"))
    aliases = item.get("aliases")
    if aliases is None:
        aliases = []
    if not isinstance(aliases, list):
        raise _bad(at, "entity", "has aliases that are not a list of names")
    return _Entity(
        at,
        _id(at, item, "id"),
        _agent(at, item, target_agent_id),
        _axis(at, item, "project_id"),
        _axis(at, item, "channel"),
        name,
        normalized,
        tuple(_name(at, item, "alias", alias) for alias in aliases),
        _declared_by(at, item),
        item.get("created_at"),
    )


def _mention(at: int, item: dict[str, Any]) -> _Mention:
    return _Mention(at, _id(at, item, "entity"), _ref(at, item, "ref"), _declared_by(at, item), item.get("created_at"))


def _end(at: int, item: dict[str, Any], end: str) -> tuple[str, int]:
    kind = item.get(f"{end}_kind")
    if kind not in (ENTITY, MEMORY, EPISODE):
        raise _bad(at, "relation", f"has a {end}_kind that is not entity, mem or ep")
    return str(kind), _id(at, item, f"{end}_id")


def _relation(at: int, item: dict[str, Any], target_agent_id: str) -> _Relation:
    return _Relation(
        at,
        _agent(at, item, target_agent_id),
        _axis(at, item, "project_id"),
        _axis(at, item, "channel"),
        _end(at, item, "subject"),
        _name(at, item, "predicate", item.get("predicate"))[1],
        _end(at, item, "object"),
        _ref(at, item, "anchor_ref", empty=True),
        _declared_by(at, item),
        item.get("declared_at"),
    )


def _folder(at: int, item: dict[str, Any], target_agent_id: str) -> _Folder:
    name, normalized = _name(at, item, "name", item.get("name"))
    return _Folder(
        at,
        _id(at, item, "id"),
        _agent(at, item, target_agent_id),
        _axis(at, item, "project_id"),
        _id(at, item, "parent_id", zero=True) if item.get("parent_id") is not None else 0,
        name,
        normalized,
        _declared_by(at, item),
        item.get("created_at"),
    )


def _member(at: int, item: dict[str, Any]) -> _Member:
    return _Member(
        at, _ref(at, item, "ref"), _id(at, item, "folder_id"), _declared_by(at, item), item.get("declared_at")
    )


def _parents_first(folders: dict[int, _Folder]) -> list[_Folder]:
    """The folders with each after its parent; a refusal for a parent the file lacks, a loop, or a parent of
    another agent or project."""
    placed: dict[int, None] = {}
    for folder in folders.values():
        chain: list[_Folder] = []
        current = folder
        while current.file_id not in placed:
            if current in chain:
                raise _bad(folder.at, "folder", "is its own ancestor: the folder tree loops")
            chain.append(current)
            if current.parent == 0:
                break
            parent = folders.get(current.parent)
            if parent is None:
                raise _bad(current.at, "folder", f"names parent {current.parent}, which the file does not hold")
            if (parent.agent, parent.project) != (current.agent, current.project):
                raise _bad(current.at, "folder", "has a parent of another agent or project")
            current = parent
        for member in reversed(chain):
            placed[member.file_id] = None
    return [folders[file_id] for file_id in placed]


# -- where each record of the file now lives -----------------------------------------------------


@dataclass(frozen=True)
class Home:
    """The row that holds a file's record here (a stand-in ref in a dry run), and its agent and project."""

    ref: str
    agent: str
    project: str


def record_homes(rt: Runtime, rows: list[dict[str, Any]], agents: list[str], dry_run: bool) -> dict[str, Home]:
    """The file's ``mem:<id>`` / ``ep:<id>`` to the row holding that record now: the one imported for it, or the
    equal one that was already here (the rules ``importer`` skips a duplicate by). A record left out as empty
    has none. A dry run wrote nothing: a record it would import stands in as itself."""
    store = rt.store
    homes: dict[str, Home] = {}
    for item, agent in zip(rows, agents):
        kind = {"memory": MEMORY, "episode": EPISODE}.get(item["_type"])
        file_id = item.get("id")
        if kind is None or isinstance(file_id, bool) or not isinstance(file_id, int):
            continue
        project, channel = as_text(item.get("project_id")), as_text(item.get("channel"))
        if kind == MEMORY:
            text = sanitise(as_text(item.get("content")), rt.settings.max_content_length)[0]
            found = (
                store.find_duplicate(agent, [project], [channel], as_text(item.get("msg_id")), text)
                if text.strip()
                else None
            )
            row_id = None if found is None else found[1]
        else:
            text = sanitise(as_text(item.get("summary")), rt.settings.max_content_length)[0]
            row_id = store.find_episode(agent, project, channel, text) if text.strip() else None
        if row_id is not None:
            homes[f"{kind}:{file_id}"] = Home(make_ref(kind, row_id), agent, project)
        elif dry_run and text.strip():
            homes[f"{kind}:{file_id}"] = Home(f"{kind}:new-{file_id}", agent, project)
    return homes


# -- carrying --------------------------------------------------------------------------------------


@dataclass
class Carry:
    """One file's declarations carried into the store (or, in a dry run, counted as they would be).

    Left out and said (under ``not_imported`` by kind, the reason in ``dropped``): a declaration naming a record
    this import did not bring in (not in the file, or left out as empty) or a record of another agent; an alias
    that already names another entity in its scope; a filing of a record filed in another folder already, or
    whose agent or project is not its folder's. An entity is found again by its name (or an alias) in its exact
    scope, a folder by its name under the same parent, and mentions, relations and filings are added only where
    missing, so a second run of the same file adds nothing."""

    rt: Runtime
    homes: dict[str, Home]
    dry_run: bool
    counts: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(("entities", "aliases", "mentions", "relations", "folders", "members"), 0)
    )
    not_imported: dict[str, int] = field(default_factory=dict)
    dropped: list[dict[str, Any]] = field(default_factory=list)
    entity_ids: dict[int, int] = field(default_factory=dict)  # file id -> ours (a dry run's new ones negative)
    entity_agent: dict[int, str] = field(default_factory=dict)
    folder_ids: dict[int, int] = field(default_factory=dict)
    folder_home: dict[int, tuple[str, str]] = field(default_factory=dict)
    # a dry run's stand-ins: the names and folders it would register, and the records it would file
    _names: dict[tuple[str, str, str, str], tuple[int, str]] = field(default_factory=dict)
    _folders: dict[tuple[str, str, int, str], int] = field(default_factory=dict)
    _filed: dict[str, int] = field(default_factory=dict)
    _stand_in: int = 0

    def run(self, plan: Declarations, progress: Callable[[int], None] | None = None) -> None:
        """Carry every declaration, ``COMMIT_BATCH`` a write transaction (none in a dry run)."""
        steps: list[Callable[[Any], None]] = [
            *(lambda conn, e=e: self._entity(conn, e) for e in plan.entities),
            *(lambda conn, m=m: self._mention(conn, m) for m in plan.mentions),
            *(lambda conn, r=r: self._relation(conn, r) for r in plan.relations),
            *(lambda conn, f=f: self._folder(conn, f) for f in plan.folders),
            *(lambda conn, m=m: self._member(conn, m) for m in plan.members),
        ]
        if self.dry_run:
            self._filed = self.rt.store.filed_in([home.ref for home in self.homes.values()])
        for start in range(0, len(steps), COMMIT_BATCH):
            chunk = steps[start : start + COMMIT_BATCH]
            if self.dry_run:
                for step in chunk:
                    step(None)
            else:
                with self.rt.store.write() as conn:
                    for step in chunk:
                        step(conn)
            if progress:
                progress(len(chunk))

    def answer(self, plan: Declarations) -> dict[str, Any]:
        """The answer's keys for the declarations: CPersona's ``associations`` (entities, mentions, relations;
        ours adds aliases) when the file holds a graph, ``folders`` (folders, members) when it holds folders,
        and what was left out, by kind, with the reasons."""
        out: dict[str, Any] = {}
        if plan.graph_records:
            out["associations"] = {k: self.counts[k] for k in ("entities", "aliases", "mentions", "relations")}
        if plan.folder_records:
            out["folders"] = {k: self.counts[k] for k in ("folders", "members")}
        if self.not_imported:
            out["not_imported"] = dict(self.not_imported)
            out["dropped"] = self.dropped[:DROPPED_SHOWN]
        return out

    def _drop(self, at: int, kind: str, reason: str) -> None:
        self.not_imported[kind] = self.not_imported.get(kind, 0) + 1
        self.dropped.append({"record": at, "type": kind, "reason": reason})

    def _new_id(self) -> int:
        self._stand_in -= 1
        return self._stand_in

    def _now_or(self, value: Any) -> str:
        """A declaration's time from the file, in our spelling; now when the file has none it can read."""
        return as_instant(value, self.rt.now_iso())

    def _home(self, at: int, kind: str, ref: str, agent: str, what: str) -> Home | None:
        """Where the record ``ref`` of the file now lives, when it came along and is ``agent``'s; else dropped."""
        home = self.homes.get(ref)
        if home is None:
            self._drop(at, kind, f"{what} {ref}, a record this import did not bring in (not in the file, or empty)")
        elif home.agent != agent:
            self._drop(at, kind, f"{what} {ref}, a record of another agent than the declaration's")
            return None
        return home

    # entities and their aliases

    def _find_name(self, agent: str, project: str, channel: str, normalized: str) -> tuple[int, str] | None:
        """(entity id, its normalized name) of the entity this name (or alias) names in exactly this scope."""
        found = self.rt.store.find_entity(agent, project, channel, normalized)
        if found is not None:
            return found.id, found.normalized
        return self._names.get((agent, project, channel, normalized))

    def _entity(self, conn: Any, entity: _Entity) -> None:
        scope = (entity.agent, entity.project, entity.channel)
        found = self._find_name(*scope, entity.normalized)
        if found is not None:
            entity_id = found[0]
        elif self.dry_run:
            entity_id = self._new_id()
            self._names[(*scope, entity.normalized)] = (entity_id, entity.normalized)
        else:
            entity_id = self.rt.store.insert_entity(
                conn, *scope, entity.name, entity.normalized, self._now_or(entity.created_at), entity.declared_by
            )
        self.entity_ids[entity.file_id] = entity_id
        self.entity_agent[entity.file_id] = entity.agent
        self.counts["entities"] += 1
        for written, normalized in entity.aliases:
            if normalized != entity.normalized:
                self._alias(conn, entity, entity_id, written, normalized)

    def _alias(self, conn: Any, entity: _Entity, entity_id: int, written: str, normalized: str) -> None:
        """The alias rule ``declare_associations`` keeps: an alias must not name another entity where its scope
        can see (the exact scope, then the agent's global pool; the entity's own global twin aside)."""
        owner = self._find_name(entity.agent, entity.project, entity.channel, normalized)
        if owner is None and (entity.project or entity.channel):
            owner = self._find_name(entity.agent, "", "", normalized)
        if owner is not None and owner[0] != entity_id and owner[1] != entity.normalized:
            self._drop(entity.at, "alias", f"{written!r} already names another entity in this scope (id {owner[0]})")
            return
        if self.dry_run:
            self._names.setdefault(
                (entity.agent, entity.project, entity.channel, normalized), (entity_id, entity.normalized)
            )
        else:
            self.rt.store.add_alias(conn, entity_id, written, normalized)
        self.counts["aliases"] += 1

    # mentions and relations

    def _mention(self, conn: Any, mention: _Mention) -> None:
        agent = self.entity_agent[mention.entity]
        home = self._home(mention.at, "mention", mention.ref, agent, "names")
        if home is None:
            return
        if not self.dry_run:
            self.rt.store.add_mention(
                conn, self.entity_ids[mention.entity], home.ref, self._now_or(mention.created_at), mention.declared_by
            )
        self.counts["mentions"] += 1

    def _relation(self, conn: Any, relation: _Relation) -> None:
        ends: list[tuple[str, int]] = []
        for end, (kind, file_id) in (("subject", relation.subject), ("object", relation.object)):
            if kind == ENTITY:
                if self.entity_agent[file_id] != relation.agent:
                    self._drop(relation.at, "relation", f"its {end} is an entity of another agent")
                    return
                ends.append((ENTITY, self.entity_ids[file_id]))
                continue
            home = self._home(relation.at, "relation", make_ref(kind, file_id), relation.agent, f"its {end} names")
            if home is None:
                return
            ends.append(split_ref(home.ref) if not self.dry_run else (kind, 0))
        anchor = ""
        if relation.anchor:
            home = self._home(relation.at, "relation", relation.anchor, relation.agent, "its anchor_ref names")
            if home is None:
                return
            anchor = home.ref
        if not self.dry_run:
            (s_kind, s_id), (o_kind, o_id) = ends
            self.rt.store.add_relation(
                conn,
                NewRelation(
                    relation.agent,
                    relation.project,
                    relation.channel,
                    s_kind,
                    s_id,
                    relation.predicate,
                    o_kind,
                    o_id,
                    anchor,
                    self._now_or(relation.declared_at),
                    relation.declared_by,
                ),
            )
        self.counts["relations"] += 1

    # folders and filings

    def _folder(self, conn: Any, folder: _Folder) -> None:
        parent = 0 if folder.parent == 0 else self.folder_ids[folder.parent]
        key = (folder.agent, folder.project, parent, folder.normalized)
        found = self.rt.store.find_folder(*key) if parent >= 0 else None
        if found is None:
            found = self._folders.get(key)
        if found is None:
            if self.dry_run:
                found = self._folders[key] = self._new_id()
            else:
                found = self.rt.store.insert_folder(
                    conn, *key[:3], folder.name, folder.normalized, folder.declared_by, self._now_or(folder.created_at)
                )
        self.folder_ids[folder.file_id] = found
        self.folder_home[folder.file_id] = (folder.agent, folder.project)
        self.counts["folders"] += 1

    def _member(self, conn: Any, member: _Member) -> None:
        agent, project = self.folder_home[member.folder]
        home = self._home(member.at, "folder_member", member.ref, agent, "files")
        if home is None:
            return
        if home.project != project:
            self._drop(member.at, "folder_member", f"files {member.ref} in a folder of another project than its own")
            return
        folder_id = self.folder_ids[member.folder]
        if self.dry_run:
            now_in = self._filed.setdefault(home.ref, folder_id)
        else:
            now_in = self.rt.store.file_record(
                conn, home.ref, folder_id, member.declared_by, self._now_or(member.declared_at)
            )
        if now_in != folder_id:
            self._drop(member.at, "folder_member", f"files {member.ref}, which is filed in another folder already")
            return
        self.counts["members"] += 1


# -- export ----------------------------------------------------------------------------------------


def export_lines(declared: Declared) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The declared records an export writes after the records (CPersona's shapes, parents before children),
    and the header counts of each kind (all zero: nothing declared)."""
    lines: list[dict[str, Any]] = []
    for entity in declared.entities:
        lines.append(
            {
                "_type": "entity",
                "id": entity.id,
                "agent_id": entity.agent_id,
                "project_id": entity.project_id,
                "channel": entity.channel,
                "name": entity.name,
                "declared_by": entity.declared_by,
                "created_at": entity.created_at,
                "aliases": [alias.written for alias in declared.aliases.get(entity.id, [])],
            }
        )
    for mention in declared.mentions:
        lines.append(
            {
                "_type": "mention",
                "entity": mention.entity_id,
                "ref": mention.ref,
                "declared_by": mention.declared_by,
                "created_at": mention.created_at,
            }
        )
    for relation in declared.relations:
        lines.append(
            {
                "_type": "relation",
                "id": relation.id,
                "agent_id": relation.agent_id,
                "project_id": relation.project_id,
                "channel": relation.channel,
                "subject_kind": relation.subject_kind,
                "subject_id": relation.subject_id,
                "predicate": relation.predicate,
                "object_kind": relation.object_kind,
                "object_id": relation.object_id,
                "anchor_ref": relation.anchor_ref,
                "declared_by": relation.declared_by,
                "declared_at": relation.declared_at,
            }
        )
    for folder in declared.folders:
        lines.append(
            {
                "_type": "folder",
                "id": folder.id,
                "agent_id": folder.agent_id,
                "project_id": folder.project_id,
                "parent_id": folder.parent_id,
                "name": folder.name,
                "declared_by": folder.declared_by,
                "created_at": folder.created_at,
            }
        )
    for member in declared.members:
        lines.append(
            {
                "_type": "folder_member",
                "ref": member.ref,
                "folder_id": member.folder_id,
                "declared_by": member.declared_by,
                "declared_at": member.declared_at,
            }
        )
    counts = {
        "entity_count": len(declared.entities),
        "mention_count": len(declared.mentions),
        "relation_count": len(declared.relations),
        "folder_count": len(declared.folders),
        "folder_member_count": len(declared.members),
    }
    return lines, counts
