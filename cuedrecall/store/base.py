"""The storage seam: the role protocols every backend implements (``Store`` is their union), the values they
hand upward, the scope.

Everything above ``store/`` is written against ``Store`` or one of its roles; a
further backend is a folder beside ``store/sqlite/`` and ``store/postgres/`` whose
store passes ``tests/contract/test_store_contract.py``, not a rewrite (docs/storage.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeGuard, TypeVar

import numpy as np

MEMORY = "mem"
EPISODE = "ep"
T = TypeVar("T")
TASK_ATTEMPTS = 3  # a queued task that failed this many times is dropped (retry_task), and logged


def make_ref(kind: str, row_id: int) -> str:
    return f"{kind}:{row_id}"


def split_ref(ref: str) -> tuple[str, int]:
    """``"mem:12"`` -> ``("mem", 12)``; ValueError for anything else."""
    kind, _, number = ref.partition(":")
    # an id past SQLite's and PostgreSQL's 64-bit integer names no record: refused here, before SQL overflows
    digits = number.isdigit() and number.isascii()
    if kind not in (MEMORY, EPISODE) or not digits or int(number) > 2**63 - 1:
        raise ValueError(f"not a record ref: {ref!r} (expected mem:<id> or ep:<id>, the id below 2**63)")
    return kind, int(number)


def is_ref(value: object) -> TypeGuard[str]:
    """Whether a value is a record ref (a task payload written by another version may hold anything)."""
    if not isinstance(value, str):
        return False
    try:
        split_ref(value)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class Scope:
    """The isolation axes of one read: the space a search happens in, never widened.

    agent_id is exact. project_id None = every project, "" = the global pool only,
    "X" = X and the global pool. channel "" = every channel, "C" = C and the shared
    channel "". source_id (memories only; "" = no filter) names one source when its
    last character is a letter or a digit (``str.isalnum``: "discord:1", "zoë") and
    then matches exactly; a value ending in anything else ("discord:", "docs/",
    "user-") is a case-sensitive namespace prefix of the stored source's id. The
    rule lives in ``source_exact``; every form of the scope (SQL, vector index)
    applies it from there.
    """

    agent_id: str
    project_id: str | None = None
    channel: str = ""
    source_id: str = ""

    @property
    def source_exact(self) -> bool:
        """True when source_id names one source (it ends in a letter or digit), False for a namespace prefix."""
        return self.source_id[-1:].isalnum()

    def source_matches(self, stored: str) -> bool:
        """Whether a stored memory's source id passes this scope's source_id (the rule, in plain Python)."""
        if not self.source_id:
            return True
        return stored == self.source_id if self.source_exact else stored.startswith(self.source_id)

    @property
    def episodes_visible(self) -> bool:
        """Episodes carry no per-user source: a source filter hides them unless a channel scopes the read."""
        return not self.source_id or bool(self.channel)

    def reads(self, record: Record) -> bool:
        """Whether this scope may read one record (the whole rule, in plain Python): for the few refs an answer
        names beside what the arms found, such as the record a relation was declared in."""
        if record.agent_id != self.agent_id:
            return False
        if self.project_id is not None and record.project_id not in {"", self.project_id}:
            return False
        if self.channel and record.channel not in ("", self.channel):
            return False
        if record.kind == EPISODE:
            return self.episodes_visible
        return self.source_matches(str(record.source.get("id", "")))

    def as_dict(self) -> dict[str, Any]:
        return {
            "agent_id": self.agent_id,
            "project_id": self.project_id,
            "channel": self.channel,
            "source_id": self.source_id,
        }


@dataclass(frozen=True)
class Hit:
    """One row of a retrieval arm: its ref, 0-based rank on that arm and raw score."""

    ref: str
    rank: int
    raw: float | None


@dataclass(frozen=True)
class Record:
    """A stored memory or episode as recall and the read tools see it."""

    ref: str
    kind: str
    id: int
    agent_id: str
    project_id: str
    channel: str
    text: str  # memory content, or episode summary (without any label)
    timestamp: str  # caller's time (memories) or start_time else created_at (episodes)
    created_at: str
    msg_id: str = ""
    source: dict[str, Any] = field(default_factory=dict)
    keywords: str = ""
    resolved: bool = False
    locked: bool = False
    start_time: str | None = None  # episodes: as given, possibly absent
    end_time: str | None = None
    ts_epoch: float | None = None  # the record time as epoch seconds, the sortable form; None when unreadable

    @property
    def display_content(self) -> str:
        return f"[Episode] {self.text}" if self.kind == EPISODE else self.text


Period = tuple[float, float]  # [start, end) in epoch seconds


@dataclass(frozen=True)
class BlockHit:
    """A record the block arm reached, by its best block."""

    ref: str
    block: int  # the block's index within the record
    distance: int  # Hamming distance between the block's sign bits and the query's
    cosine: float | None  # the int8 re-rank cosine; None when the hits are in Hamming order


@dataclass(frozen=True)
class CoarseHit:
    """A memory the far seats' coarse search reached beyond the scan window, by the sign bits of its vector."""

    ref: str
    position: int  # its place in the scope's memory scan order (newest first, 0-based)
    distance: int  # Hamming distance between its sign bits and the query's
    cosine: float  # the dot product of its stored float vector with the query vector


@dataclass(frozen=True)
class BlockSet:
    """A record's blocks as the builder writes them: spans of its text and each span's vector, two ways.

    A set whose ``bits`` has no rows marks a record that divides into fewer than two
    blocks as done (nothing to search). ``codes`` of no columns: the blocks have no
    int8 code (the block arm then ranks by Hamming distance alone).
    """

    ref: str
    text_hash: str  # of the text the spans divide; the set is written only while the record still has it
    model: str  # the embedding model that made the vectors
    spans: tuple[tuple[int, int, bool], ...]  # (start, end, forced) per block, in text order
    bits: np.ndarray  # (blocks, dim/8) uint8: sign bits, MSB first
    codes: np.ndarray  # (blocks, dim) int8: round(v * 127 / max|v|)


@dataclass(frozen=True)
class Task:
    """A unit of background work from the persisted queue (kind "build_blocks", "backfill_blocks", ...)."""

    id: int
    kind: str
    payload: dict[str, Any]
    attempts: int


@dataclass(frozen=True)
class Threshold:
    """One calibrated gate threshold, with the fingerprint (model, scoring version) it was measured under."""

    agent_id: str
    signal: str
    value: float
    embedding_model: str
    scoring_version: str


@dataclass(frozen=True)
class IndexGap:
    """How an index derived from the rows (full-text or vector) differs from them, by row id."""

    missing: list[int]  # rows that belong in the index and are not in it
    stray: list[int]  # entries of the index without such a row
    problem: str = ""  # what the index's own integrity check reports ("" = nothing)

    @property
    def count(self) -> int:
        """Rows out of step; 1 when only the integrity check sees a fault."""
        return len(self.missing) + len(self.stray) or int(bool(self.problem))


ENTITY = "entity"  # the endpoint kind of a relation that names an entity (the others: MEMORY, EPISODE)


@dataclass(frozen=True)
class Entity:
    """A declared entity: its name as written and normalized, in the scope it was declared in."""

    id: int
    agent_id: str
    project_id: str
    channel: str
    name: str
    normalized: str
    declared_by: str
    created_at: str


@dataclass(frozen=True)
class NameHit:
    """A name or alias of an entity, as written and normalized (what a query's cues are matched against)."""

    entity_id: int
    written: str
    normalized: str


@dataclass(frozen=True)
class Relation:
    """A declared relation. An endpoint is (kind, id): kind ENTITY, MEMORY or EPISODE."""

    id: int
    agent_id: str
    project_id: str
    channel: str
    subject_kind: str
    subject_id: int
    predicate: str  # normalized
    object_kind: str
    object_id: int
    anchor_ref: str  # the record it was declared from, "" for none
    declared_by: str
    declared_at: str

    @property
    def recency(self) -> tuple[str, int]:
        """Larger is more recent: the later declaration, then the higher id."""
        return self.declared_at, self.id


@dataclass(frozen=True)
class NewRelation:
    """A relation as the declaring code asks the store to add it (insert or find the same one)."""

    agent_id: str
    project_id: str
    channel: str
    subject_kind: str
    subject_id: int
    predicate: str
    object_kind: str
    object_id: int
    anchor_ref: str
    declared_at: str
    declared_by: str = "agent"


@dataclass(frozen=True)
class Mentions:
    """The records in scope that mention one entity: the first of them by record id, and how many there are."""

    refs: list[str]
    total: int


@dataclass(frozen=True)
class DeclaredMention:
    """A mention as stored: the entity, the record it was declared about, by whom and when."""

    entity_id: int
    ref: str
    declared_by: str
    created_at: str


@dataclass(frozen=True)
class Folder:
    """A folder an agent declared under a project (CPersona 2.6.14's declared folders); parent 0 is the project.
    Folders classify records and never narrow a search: nothing on the recall path reads them."""

    id: int
    agent_id: str
    project_id: str
    parent_id: int
    name: str
    normalized: str
    declared_by: str
    created_at: str


@dataclass(frozen=True)
class FolderMember:
    """A record filed in a folder (a record sits in at most one)."""

    ref: str
    folder_id: int
    declared_by: str
    declared_at: str


@dataclass(frozen=True)
class Declared:
    """What one agent (every agent: "") declared beside its records, as export writes it: entities with their
    aliases, mentions, relations, folders and filings, each list by id (mentions by entity, then ref)."""

    entities: list[Entity]
    aliases: dict[int, list[NameHit]]
    mentions: list[DeclaredMention]
    relations: list[Relation]
    folders: list[Folder]
    members: list[FolderMember]


@dataclass(frozen=True)
class AgentSummary:
    """One agent the store holds rows for: its counts, and the projects and channels its rows are filed under."""

    agent_id: str
    memories: int
    episodes: int
    projects: tuple[str, ...]  # sorted; "" is the global pool
    channels: tuple[str, ...]  # sorted; "" is the shared channel
    profile: bool  # whether the agent has a profile


class Transactions(Protocol):
    """What every role shares: the store's transactions. Isolation is applied inside every read.

    Reads see every write committed by any connection. ``snapshot()`` makes a run of
    reads consistent and pays the freshness check once; ``write()`` is one
    transaction, and the calibration written in it commits or rolls back with the data.
    """

    schema_version: int
    vector_model: str | None  # the only embedding model the vector arms compare with a query (None: any)
    read_only: bool  # set by a read-only opener (the explorer without --write): ``write`` refuses

    def close(self) -> None: ...
    def snapshot(self) -> AbstractContextManager[None]: ...
    def write(self) -> AbstractContextManager[Any]: ...
    def beside(self, work: Callable[[], T]) -> Callable[[], T]:
        """Start a read on a helper thread inside this thread's snapshot where the backend can; the callable
        returned gives its result, as if it had run here (docs/storage.md#arms-beside-each-other)."""
        ...


class RecordStore(Transactions, Protocol):
    """Memories, episodes and profiles: their writes (inside write()), reads, scope statistics and vectors."""

    def insert_memory(self, conn: Any, row: dict[str, Any]) -> int: ...
    def insert_episode(self, conn: Any, row: dict[str, Any]) -> int: ...
    def update_memory(self, conn: Any, memory_id: int, changes: dict[str, Any]) -> None: ...
    def delete(self, conn: Any, ref: str) -> bool: ...
    def delete_agent(self, conn: Any, agent_id: str) -> dict[str, int]: ...
    def set_profile(self, conn: Any, agent_id: str, content: str, updated_at: str) -> None: ...

    def find_duplicate(
        self, agent_id: str, projects: Sequence[str], channels: Sequence[str], msg_id: str, content: str
    ) -> tuple[str, int] | None: ...
    def find_episode(self, agent_id: str, project_id: str, channel: str, summary: str) -> int | None: ...
    def memory_row(self, memory_id: int) -> dict[str, Any] | None: ...
    def records(self, refs: Sequence[str]) -> dict[str, Record]: ...
    def profile(self, agent_id: str) -> tuple[str, str] | None: ...

    # scope statistics and vectors
    def pool_counts(self, scope: Scope) -> tuple[int, int]: ...
    def span(self, scope: Scope) -> tuple[float, float] | None: ...
    def newest_episode_time(self, scope: Scope) -> str | None: ...
    def vectors(self, refs: Sequence[str]) -> dict[str, np.ndarray]: ...
    def embedded_memory_ids(self, agent_id: str) -> tuple[np.ndarray, np.ndarray]: ...
    def embedding_dim(self) -> int | None: ...


class CalibrationStore(Transactions, Protocol):
    """The gate's calibrated thresholds and the agents' precision overrides (written inside write())."""

    def set_thresholds(self, conn: Any, thresholds: Sequence[Threshold]) -> None: ...
    def drop_thresholds(self, conn: Any, agent_ids: Sequence[str]) -> None: ...
    def set_beta(self, conn: Any, agent_id: str, beta: float | None) -> None: ...
    def thresholds(self) -> list[Threshold]: ...
    def betas(self) -> dict[str, float]: ...


class BrowseStore(Transactions, Protocol):
    """Listing what is stored: the explorer's pages, the list tools, export."""

    def list_records(self, kind: str, agent_id: str, project_id: str | None, limit: int) -> list[Record]: ...
    # every agent with a row or a profile, and one page of a scope's records, highest id (newest stored) first:
    # below ``before_id`` when given, skipping ``offset``, inside ``period`` (record time)
    def agents(self) -> list[AgentSummary]: ...
    def page_records(
        self,
        kind: str,
        scope: Scope,
        *,
        limit: int,
        before_id: int | None = None,
        offset: int = 0,
        period: Period | None = None,
    ) -> list[Record]: ...
    def profiles(self, agent_id: str) -> list[tuple[str, str, str]]: ...
    def export_rows(self, kind: str, agent_id: str) -> Iterator[dict[str, Any]]: ...


class ArmStore(Transactions, Protocol):
    """The recall arms: ranked (ref, rank, raw) rows, each read inside the scope."""

    def vector_near(self, scope: Scope, query: np.ndarray, *, floor: float, depth: int, window: int) -> list[Hit]: ...
    # vector_near's scores alone, best first, as float64 (the gate's outlier bar reads every row's)
    def vector_cosines(
        self, scope: Scope, query: np.ndarray, *, floor: float, depth: int, window: int
    ) -> np.ndarray: ...
    def vector_far(
        self, scope: Scope, query: np.ndarray, *, floor: float, limit: int, window: int, reach: int
    ) -> list[Hit]: ...
    def far_candidates(self, scope: Scope, query: np.ndarray, *, start: int, count: int) -> list[CoarseHit]: ...
    def vector_in_period(
        self, scope: Scope, kind: str, query: np.ndarray, *, floor: float, depth: int, period: Period
    ) -> list[Hit]: ...
    def episode_fts(
        self, scope: Scope, terms: Sequence[str], *, depth: int, period: Period | None = None
    ) -> list[Hit]: ...
    def memory_keyword(
        self,
        scope: Scope,
        terms: Sequence[str],
        query: str,
        *,
        depth: int,
        period: Period | None = None,
        phrases: Sequence[str] = (),
    ) -> list[Hit]: ...
    def memory_words(
        self, scope: Scope, words: Sequence[str], *, depth: int, period: Period | None = None
    ) -> list[Hit]: ...
    def newest(self, scope: Scope, kind: str, limit: int, period: Period | None = None) -> list[Hit]: ...


class MaintenanceStore(Transactions, Protocol):
    """What check_health and deep_check read and repair (agent_id "" = every agent, ids oldest first), and
    re-embedding under another model."""

    def maintenance_counts(self, agent_id: str) -> dict[str, int]: ...
    def unembedded(self, kind: str, agent_id: str, limit: int) -> tuple[int, list[int]]: ...
    def misfit_embeddings(self, kind: str, agent_id: str, width: int, limit: int) -> tuple[int, list[int]]: ...
    def oversized_memories(self, agent_id: str, cap: int, limit: int) -> tuple[int, list[int]]: ...
    def empty_memories(self, agent_id: str, limit: int) -> tuple[int, list[int]]: ...
    def duplicate_copies(self, agent_id: str) -> list[tuple[int, int, bool]]: ...
    def scan_memories(self, agent_id: str, column: str) -> list[tuple[int, str]]: ...
    def embedded_vectors(self, kind: str, agent_id: str) -> Iterator[tuple[int, np.ndarray]]: ...
    def agents_without_profile(self, agent_id: str) -> list[str]: ...
    def memory_epochs(self, agent_id: str) -> list[float]: ...
    def episode_spans(self, agent_id: str) -> list[tuple[int, str | None, str | None]]: ...
    def fts_gap(self, kind: str, agent_id: str) -> IndexGap: ...
    def index_gap(self, kind: str, agent_id: str) -> IndexGap: ...
    def quick_check(self) -> list[str]: ...
    def set_episode_embedding(self, conn: Any, episode_id: int, vector: np.ndarray | None, model: str) -> None: ...
    # re-embedding under another model: rows whose vector another model made (agent "" = every agent), newest first
    def stale_embeddings(self, model: str, agent_id: str = "") -> dict[str, int]: ...
    def stale_records(
        self, model: str, before: str | None, limit: int, agent_id: str = ""
    ) -> list[tuple[str, str]]: ...
    def replace_stale_embedding(self, conn: Any, ref: str, text: str, vector: np.ndarray, model: str) -> bool: ...
    def rebuild_fts(self, conn: Any, kind: str) -> None: ...
    def rebuild_index(self) -> None: ...


class BlockStore(Transactions, Protocol):
    """Blocks and the task queue: background work persisted with the data (claims expire, so the work of a
    process that died resumes); a record's block set is current while its text is the one the set divides."""

    def enqueue(self, conn: Any, kind: str, payload: dict[str, Any], not_before: float = 0.0) -> int: ...
    def claim_task(self, now: float, lease_s: float) -> Task | None: ...
    def finish_task(self, conn: Any, task_id: int) -> None: ...
    def retry_task(self, task_id: int, error: str, not_before: float) -> bool: ...
    def pending_tasks(self, kind: str = "") -> int: ...
    def pending_by_kind(self) -> dict[str, int]: ...
    def record_text(self, ref: str) -> tuple[str, str] | None: ...
    def has_block_set(self, ref: str, model: str) -> bool: ...
    def write_blocks(self, conn: Any, block_set: BlockSet) -> bool: ...
    def records_lacking_blocks(
        self, after: str | None, limit: int, model: str, *, agent_id: str = ""
    ) -> list[tuple[str, str, str]]: ...
    def block_counts(self, agent_id: str, model: str = "") -> dict[str, int]: ...
    def block_spans(self, refs: Sequence[str]) -> dict[str, list[tuple[int, int, bool]]]: ...
    def block_codes(self, ref: str, model: str) -> np.ndarray | None: ...
    def block_arm(
        self,
        scope: Scope,
        query: np.ndarray,
        model: str,
        *,
        examine: int = 250_000,
        rerank: int = 200,
        per_record: int = 64,
    ) -> tuple[list[BlockHit], str]: ...


class GraphStore(Transactions, Protocol):
    """The associative graph (graph/) and the declared folders. An entity, and a relation, is readable in a scope
    by the record rule without the source (agent exact, project and channel with the shared pool); a record as
    records are. Writes, inside write(); each insert-or-ignore answers whether it added a row (add_relation: the
    id of the relation, new or the same one already there). Folders are kept, exported and imported; no search
    reads them."""

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
    ) -> int: ...
    def add_alias(self, conn: Any, entity_id: int, alias: str, normalized: str) -> bool: ...
    def add_mention(self, conn: Any, entity_id: int, ref: str, created_at: str, declared_by: str = "agent") -> bool: ...
    def add_relation(self, conn: Any, relation: NewRelation) -> int: ...
    def retract_relation(self, conn: Any, agent_id: str, relation_id: int) -> bool: ...
    def retract_mention(self, conn: Any, agent_id: str, entity_id: int, ref: str) -> bool: ...

    def has_graph(self, agent_id: str) -> bool: ...
    def find_entity(self, agent_id: str, project_id: str, channel: str, normalized: str) -> Entity | None: ...
    def entities(self, ids: Sequence[int]) -> dict[int, Entity]: ...
    def entities_named(self, scope: Scope, normalized: str) -> list[Entity]: ...
    def names_within(self, scope: Scope, text: str) -> list[NameHit]: ...
    def aliases(self, entity_ids: Sequence[int]) -> dict[int, list[NameHit]]: ...
    def mentioned_entities(self, scope: Scope, refs: Sequence[str]) -> dict[str, list[int]]: ...
    def mentioning(self, scope: Scope, entity_ids: Sequence[int], limit: int) -> dict[int, Mentions]: ...
    def entity_relations(self, scope: Scope, entity_ids: Sequence[int]) -> list[Relation]: ...
    def relations_between(self, scope: Scope, refs: Sequence[str]) -> list[Relation]: ...
    # entity -> entity relations declared from one of the refs (stale conflicts' entity attributes)
    def anchored_relations(self, scope: Scope, refs: Sequence[str]) -> list[Relation]: ...

    def find_folder(self, agent_id: str, project_id: str, parent_id: int, normalized: str) -> int | None: ...
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
    ) -> int: ...
    # files the record unless it is filed already; the folder it is in afterwards
    def file_record(self, conn: Any, ref: str, folder_id: int, declared_by: str, declared_at: str) -> int: ...
    def filed_in(self, refs: Sequence[str]) -> dict[str, int]: ...
    # everything declared beside the records, for export: one agent's, or every agent's for ""
    def declared(self, agent_id: str) -> Declared: ...


class Store(RecordStore, CalibrationStore, BrowseStore, ArmStore, MaintenanceStore, BlockStore, GraphStore, Protocol):
    """What the layers above storage may ask of a backend: the union of the roles above. A caller that needs
    one role types against that role; a backend implements them all (tests/contract/test_store_contract.py)."""


ROLES = (RecordStore, CalibrationStore, BrowseStore, ArmStore, MaintenanceStore, BlockStore, GraphStore)


def memory_vectors(store: Store, ids: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the ids whose vectors were read, their vectors stacked in that order): the few memories a caller sampled
    from ``embedded_memory_ids``, read one query a kind (a row deleted since is left out)."""
    found = store.vectors([make_ref(MEMORY, int(row_id)) for row_id in ids])
    kept = [int(row_id) for row_id in ids if make_ref(MEMORY, int(row_id)) in found]
    vectors = [found[make_ref(MEMORY, row_id)] for row_id in kept]
    stacked = np.stack(vectors) if vectors else np.zeros((0, store.embedding_dim() or 0), np.float32)
    return np.array(kept, dtype=np.int64), stacked
