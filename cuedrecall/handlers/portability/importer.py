"""import_memories: an export (ours or CPersona's) loaded in batches of ``COMMIT_BATCH`` records, one
transaction each.

The file is read from the export folder (``paths``) and checked whole against its
format (``formats``) before anything is written. The rules an import keeps, one
function each: the read check (``_read_denial``), the lock rule (``_keeps_lock``),
the profile rule (``_import_profile``) and which vectors are kept
(``_vectors_for``). Each memory or episode imported queues its block build in the
same transaction. The declared graph and folders are checked with the rest, and
carried once the records they name are in (``declared``), in batches of their own.

Why batches: one transaction over a 60,000-row file held SQLite's write lock for
longer than another process's store would wait, and that store failed. A batch is
embedded before its transaction opens and committed before the next is read, so
the lock is held for one batch's inserts at a time. A failure part-way keeps the
batches committed before it; running the file again adds only what is missing (an
import is idempotent). A dry run takes no write lock at all (``_dry_run``): it counts
with the store's plain reads, each short, and with what the file's earlier records
would have added, so a dry run of a large file never keeps another process's store
waiting; it embeds nothing (its counts need none).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import numpy as np

from cuedrecall.access import EVERY_AGENT, LOCAL, READ, Demand, Principal, denied
from cuedrecall.clock import parse_instant
from cuedrecall.errors import ToolArgumentError
from cuedrecall.handlers.blocks import queue_build
from cuedrecall.handlers.portability.declared import Carry, Declarations, check, record_homes
from cuedrecall.handlers.portability.formats import DECLARED, OURS, as_instant, as_text, parse
from cuedrecall.handlers.portability.paths import read_text, resolve
from cuedrecall.handlers.rows import episode_row, json_object, memory_row
from cuedrecall.handlers.write import normalize_source
from cuedrecall.runtime import Runtime
from cuedrecall.store.base import EPISODE, MEMORY, make_ref
from cuedrecall.text.sanitise import sanitise

COMMIT_BATCH = 500  # records per transaction: the write lock is never held for more than one batch's inserts
# (added, skipped) count of each record type
_COUNTED = {
    "memory": ("imported_memories", "skipped_memories"),
    "episode": ("imported_episodes", "skipped_episodes"),
    "profile": ("profile_updated", "skipped_profiles"),
}


def import_jsonl(
    rt: Runtime,
    input_path: str,
    target_agent_id: str,
    dry_run: bool,
    progress: Callable[[int], None] | None = None,
    batch_size: int = 256,
    anywhere: bool = False,
    principal: Principal = LOCAL,
) -> dict[str, Any]:
    """Load an export (ours or CPersona's) in batches, one transaction each; a second run of the same file adds
    nothing.

    The file is read from the export folder (``anywhere``, the operator's command
    line only, takes any path). Our ids are new: a record's file id is not kept,
    and a memory's ``msg_id`` (with its content) is what finds it again, so a
    repeated import skips every record. A vector is kept only when the file names
    our embedder's model beside it (and has our width); any other is re-embedded,
    in batches.

    Agents are walls:

    - ``target_agent_id`` "" files each record under its own agent (the caller
      then needs write access on every agent); a name files them all under it.
    - An import never overwrites a profile: an agent that already has one keeps
      it, and the file's is counted in ``skipped_profiles`` (so are CPersona's
      per-user profile rows: only the row with user_id "" is an agent's profile).
    - Reading a file is reading its agents' memory: the caller needs read access
      on every agent the file's records name, whatever the target.
    - A memory's ``locked`` flag is kept only when the caller named the target
      explicitly and the record's own agent is that target (or the operator
      imports on the command line); otherwise the memory arrives unlocked, so
      nobody can plant undeletable rows in an agent by importing a file under it.
    """
    path = resolve(rt, "input_path", input_path, anywhere=anywhere)
    version, _header, everything, _present = parse(read_text(rt, path))
    records = [item for item in everything if item["_type"] not in DECLARED]  # the graph and folders: ``declared``
    refusal = _read_denial(everything, principal)
    if refusal is not None:
        return refusal
    foreign = version not in OURS
    counts: dict[str, Any] = {
        "imported_memories": 0,
        "skipped_memories": 0,
        "imported_episodes": 0,
        "skipped_episodes": 0,
        "profile_updated": 0,
        "skipped_profiles": 0,
    }
    # an unnamed agent or an unreadable vector is refused here, before the first batch is written
    agents = [_agent_of(item, target_agent_id) for item in records]
    vectors, todo = _kept_vectors(rt, records)
    # and so is a malformed declaration, checked whole
    plan = check([(at, item) for at, item in enumerate(everything, 1) if item["_type"] in DECLARED], target_agent_id)
    if progress:
        progress(len(records) - len(todo))
    if dry_run:
        _dry_run(rt, records, agents, counts)
        if progress:
            progress(len(todo))
        return _answer(dry_run, counts, _carried(rt, plan, records, agents, dry_run, progress))
    by_batch: dict[int, list[int]] = {}
    for i in todo:
        by_batch.setdefault(i // COMMIT_BATCH, []).append(i)
    for start in range(0, len(records), COMMIT_BATCH):
        _embed_missing(rt, records, by_batch.get(start // COMMIT_BATCH, []), vectors, batch_size, progress)
        end = start + COMMIT_BATCH  # embedded above, outside the write lock; written below, one transaction
        _write_batch(
            rt, records[start:end], agents[start:end], vectors[start:end], counts, target_agent_id, anywhere, foreign
        )
    return _answer(dry_run, counts, _carried(rt, plan, records, agents, dry_run, progress))


def _carried(
    rt: Runtime,
    plan: Declarations,
    records: list[dict[str, Any]],
    agents: list[str],
    dry_run: bool,
    progress: Callable[[int], None] | None,
) -> dict[str, Any]:
    """The file's declared graph and folders, carried once the records they name are in (``declared``); the
    answer's keys for them (none when the file declares nothing)."""
    if not len(plan):
        return {}
    carry = Carry(rt, record_homes(rt, records, agents, dry_run), dry_run)
    carry.run(plan, progress)
    return carry.answer(plan)


def _answer(dry_run: bool, counts: dict[str, Any], declared: dict[str, Any]) -> dict[str, Any]:
    """The import's answer: its counts, then what it carried of the declarations and what it left out."""
    return {"ok": True, "dry_run": dry_run, **counts, **declared}


def _agent_of(item: dict[str, Any], target_agent_id: str) -> str:
    """The agent a record is filed under: the target, else its own; a refusal when neither names one."""
    own = item.get("agent_id") if isinstance(item.get("agent_id"), str) else ""
    agent = target_agent_id or own
    if not agent:
        raise ToolArgumentError("argument 'target_agent_id' is required: a record of the file has no agent_id")
    return agent


def _write_batch(
    rt: Runtime,
    records: list[dict[str, Any]],
    agents: list[str],
    vectors: list[Any],
    counts: dict[str, Any],
    target_agent_id: str,
    anywhere: bool,
    foreign: bool,
) -> None:
    """One transaction over ``records``, counted once it is committed."""
    added = dict.fromkeys(counts, 0)
    with rt.store.write() as conn:
        for item, agent, vector in zip(records, agents, vectors):
            given = item.get("agent_id")
            own = given if isinstance(given, str) else ""
            keep_lock = _keeps_lock(own, target_agent_id, anywhere)
            added[_import_one(rt, conn, item, agent, vector, keep_lock, foreign)] += 1
    for key, value in added.items():
        counts[key] += value


def _dry_run(rt: Runtime, records: list[dict[str, Any]], agents: list[str], counts: dict[str, Any]) -> None:
    """The counts an import would give, under no write lock: each record is checked with the store's plain
    reads (each its own short read) and against what the file's earlier records would have added."""
    seen: set[tuple[str, ...]] = set()
    for item, agent in zip(records, agents):
        keys, reason = _dry_keys(rt, item, agent)
        if reason is None and not seen.intersection(keys):
            seen.update(keys)
            counts[_COUNTED[item["_type"]][0]] += 1
        else:
            counts[_COUNTED[item["_type"]][1]] += 1


def _dry_keys(rt: Runtime, item: dict[str, Any], agent: str) -> tuple[list[tuple[str, ...]], str | None]:
    """(what the record would add, as keys a later record's duplicate shares; why the store already makes it a
    skip, or None): the same rules as ``_import_memory``, ``_import_episode`` and ``_import_profile``."""
    store = rt.store
    project, channel = as_text(item.get("project_id")), as_text(item.get("channel"))
    if item["_type"] == "profile":
        content = sanitise(as_text(item.get("content")), rt.settings.max_profile_length)[0]
        existing = store.profile(agent)
        if as_text(item.get("user_id")) or not content.strip() or (existing is not None and existing[0].strip()):
            return [], "skipped"
        return [("profile", agent)], None
    if item["_type"] == "episode":
        summary = sanitise(as_text(item.get("summary")), rt.settings.max_content_length)[0]
        if not summary.strip() or store.find_episode(agent, project, channel, summary) is not None:
            return [], "skipped"
        return [("episode", agent, project, channel, summary)], None
    content = sanitise(as_text(item.get("content")), rt.settings.max_content_length)[0]
    msg_id = as_text(item.get("msg_id"))
    if not content.strip() or store.find_duplicate(agent, [project], [channel], msg_id, content):
        return [], "skipped"
    keys = [("content", agent, project, channel, content)]
    return keys + ([("msg_id", agent, project, msg_id)] if msg_id else []), None


def _read_denial(records: list[dict[str, Any]], principal: Principal) -> dict[str, Any] | None:
    """The read rule: reading a file is reading its agents' memory, so the caller needs read access on every
    agent its records name. The answer for the first agent (by name) it may not read, else None."""
    for agent in sorted({item["agent_id"] for item in records if isinstance(item.get("agent_id"), str)}):
        if not principal.allows(Demand(agent or EVERY_AGENT, READ)):
            return denied("import_memories", Demand(agent or EVERY_AGENT, READ), principal)
    return None


def _keeps_lock(own: str, target_agent_id: str, anywhere: bool) -> bool:
    """The lock rule: a record's ``locked`` flag is kept only when the caller named the target and the record's
    own agent is that target, or the operator imports on the command line (``anywhere``).

    Otherwise the memory arrives unlocked, so nobody can plant undeletable rows in an agent by importing a
    file under it.
    """
    return anywhere or (bool(target_agent_id) and own == target_agent_id)


def _our_width(rt: Runtime) -> int | None:
    """The width of our embedder's vectors (one probe), None when it gives none."""
    probe = rt.embed(["width"])[0]
    return None if probe is None else int(np.asarray(probe).shape[-1])


def _kept_vectors(rt: Runtime, records: list[dict[str, Any]]) -> tuple[list[np.ndarray | None], list[int]]:
    """The file's vector where our embedder made it, and the records to embed afresh (the ``todo`` list).

    "Our embedder made it" means the record names our model beside the vector; a
    vector with no label, or another model's, is re-embedded, and so is one whose
    width is not ours or that holds non-finite numbers.
    """
    out: list[np.ndarray | None] = [None] * len(records)
    todo: list[int] = []
    width: int | None = -1  # not probed yet
    model = rt.embedder.model
    for i, item in enumerate(records):
        if item["_type"] not in ("memory", "episode"):
            continue
        # a vector is only comparable with ours when the same model made it; anything else is re-embedded
        if "embedding_b64" in item and model and item.get("embedding_model") == model:
            vector = _decoded(item["embedding_b64"], i)
            if width == -1:
                width = _our_width(rt)
            if vector.shape[0] == width and np.all(np.isfinite(vector)):
                out[i] = vector
                continue
        todo.append(i)
    return out, todo


def _decoded(encoded: Any, i: int) -> np.ndarray:
    """A file's embedding_b64 as float32s; a refusal naming the record when it is not base64 of whole float32s."""
    try:
        return np.frombuffer(base64.b64decode(encoded, validate=True), dtype="<f4")
    except (TypeError, ValueError):  # not base64, or not a whole number of float32s
        raise ToolArgumentError(
            f"argument 'input_path': record {i + 1} after the header has an unreadable embedding_b64"
        ) from None


def _embed_missing(
    rt: Runtime,
    records: list[dict[str, Any]],
    todo: list[int],
    out: list[np.ndarray | None],
    batch: int,
    progress: Callable[[int], None] | None,
) -> None:
    """Embed the ``todo`` records' text (content, else summary) into ``out``, ``batch`` at a time."""
    for start in range(0, len(todo), batch):
        chunk = todo[start : start + batch]
        texts = [as_text(records[i].get("content")) or as_text(records[i].get("summary")) for i in chunk]
        for i, vector in zip(chunk, rt.embed(texts)):
            out[i] = vector
        if progress:
            progress(len(chunk))


def _import_one(
    rt: Runtime, conn: Any, item: dict[str, Any], agent: str, vector: Any, keep_lock: bool, foreign: bool
) -> str:
    """One record filed under ``agent``; answers the count it adds to (imported_... or skipped_...)."""
    now = rt.now_iso()
    if item["_type"] == "profile":
        return _import_profile(rt, conn, item, agent, now)
    created_at = as_instant(item.get("created_at"), now)
    if item["_type"] == "memory":
        return _import_memory(rt, conn, item, agent, vector, keep_lock, foreign, created_at)
    return _import_episode(rt, conn, item, agent, vector, created_at)


def _import_memory(
    rt: Runtime,
    conn: Any,
    item: dict[str, Any],
    agent: str,
    vector: Any,
    keep_lock: bool,
    foreign: bool,
    created_at: str,
) -> str:
    """A memory, skipped when empty or when the agent already holds it (same msg_id and content)."""
    store = rt.store
    project, channel = as_text(item.get("project_id")), as_text(item.get("channel"))
    content = sanitise(as_text(item.get("content")), rt.settings.max_content_length)[0]
    msg_id = as_text(item.get("msg_id"))
    if not content.strip() or store.find_duplicate(agent, [project], [channel], msg_id, content):
        return "skipped_memories"
    source, metadata = json_object(item.get("source")), json_object(item.get("metadata"))
    if foreign:
        source, metadata = _cpersona_columns(item, source, metadata)
    timestamp = as_text(item.get("timestamp"))
    memory_id = store.insert_memory(
        conn,
        memory_row(
            agent_id=agent,
            project_id=project,
            channel=channel,
            msg_id=msg_id,
            content=content,
            source=source,
            timestamp=timestamp if parse_instant(timestamp) else created_at,
            metadata=metadata,
            created_at=created_at,
            vector=vector,
            model=rt.embedder.model,
            locked=keep_lock and bool(item.get("locked")),
        ),
    )
    queue_build(rt, conn, make_ref(MEMORY, memory_id))  # committed with the row
    return "imported_memories"


def _cpersona_columns(item: dict[str, Any], source: Any, metadata: Any) -> tuple[Any, Any]:
    """A CPersona memory's source and metadata, taking its verbatim text where the column was not JSON."""
    # CPersona carries a column that was not JSON verbatim beside the {} it exports
    if isinstance(item.get("source_text"), str) and item["source_text"]:
        source = normalize_source(item["source_text"])
    if isinstance(item.get("metadata_text"), str) and item["metadata_text"]:
        metadata = {"text": item["metadata_text"]}
    return normalize_source(source), metadata


def _import_episode(rt: Runtime, conn: Any, item: dict[str, Any], agent: str, vector: Any, created_at: str) -> str:
    """An episode, skipped when empty or when the agent already holds one with the same summary."""
    store = rt.store
    project, channel = as_text(item.get("project_id")), as_text(item.get("channel"))
    summary = sanitise(as_text(item.get("summary")), rt.settings.max_content_length)[0]
    if not summary.strip() or store.find_episode(agent, project, channel, summary) is not None:
        return "skipped_episodes"
    keywords = item.get("keywords")
    keywords = " ".join(as_text(k) for k in keywords) if isinstance(keywords, list) else as_text(keywords)
    episode_id = store.insert_episode(
        conn,
        episode_row(
            agent_id=agent,
            project_id=project,
            channel=channel,
            summary=summary,
            keywords=keywords,
            start_time=as_text(item.get("start_time")) or None,
            end_time=as_text(item.get("end_time")) or None,
            resolved=bool(item.get("resolved")),
            created_at=created_at,
            vector=vector,
            model=rt.embedder.model,
        ),
    )
    queue_build(rt, conn, make_ref(EPISODE, episode_id))
    return "imported_episodes"


def _import_profile(rt: Runtime, conn: Any, item: dict[str, Any], agent: str, now: str) -> str:
    """The profile rule: an agent's profile is set only when the agent has none (an import never overwrites one)."""
    if as_text(item.get("user_id")):  # CPersona's per-user rows: the agent's own profile is user_id ""
        return "skipped_profiles"
    content = sanitise(as_text(item.get("content")), rt.settings.max_profile_length)[0]
    existing = rt.store.profile(agent)
    if not content.strip() or (existing is not None and existing[0].strip()):
        return "skipped_profiles"
    rt.store.set_profile(conn, agent, content, as_instant(item.get("updated_at"), now))
    return "profile_updated"
