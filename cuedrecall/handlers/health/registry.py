"""check_health's checks, in run order, and ``HEALTH_CHECKS``: name -> (severity, check, repair or None).

The order is the run order: deletions first (nothing is embedded to be thrown
away), then the vectors, then the indexes derived from the rows, then the
reports. A check looks at one agent's rows ("" = every agent); the file and the
indexes are shared by every agent, so their own integrity checks look at them whole.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from cuedrecall.clock import to_epoch
from cuedrecall.embed import EmbeddingError
from cuedrecall.handlers.blocks import BACKFILL_CHARS, BACKFILL_RECORDS, backfill_step, building
from cuedrecall.handlers.health.run import (
    KINDS,
    NOTHING,
    Check,
    Finding,
    Repair,
    Run,
    delete_unlocked,
    finding,
    gap_finding,
    reembed,
    ref_items,
    rewrite,
    short,
)
from cuedrecall.handlers.reembed import REEMBED, reembed_now, stale_rows
from cuedrecall.store.base import EPISODE, MEMORY, make_ref

SOURCE_TYPES = ("User", "Agent", "System")
_NOUN = {MEMORY: "memories", EPISODE: "episodes"}


def _sqlite_integrity(run: Run) -> Finding:
    """The database file itself (every agent's): PRAGMA quick_check."""
    problems = run.rt.store.quick_check()
    detail = f"SQLite's quick_check reports {len(problems)} problem(s) in the file, the first: {short(problems[:1])}"
    return finding(len(problems), detail, [{"detail": p} for p in problems[: run.limit]]) if problems else NOTHING


def _empty_content(run: Run) -> Finding:
    """Memories with no content (empty, or only spaces and line breaks)."""
    count, ids = run.rt.store.empty_memories(run.agent_id, run.limit)
    detail = f"{count} memories have no content (fix: deleted; locked memories are kept)"
    return finding(count, detail, ref_items(MEMORY, ids))


def _delete_empty(run: Run, found: Finding) -> int:
    """Delete the memories without content, locked ones kept."""
    _, ids = run.rt.store.empty_memories(run.agent_id, found.count)
    return delete_unlocked(run, [make_ref(MEMORY, i) for i in ids])


def _oversized_content(run: Run) -> Finding:
    """Memories longer than the content cap (settings.max_content_length)."""
    cap = run.rt.settings.max_content_length
    count, ids = run.rt.store.oversized_memories(run.agent_id, cap, run.limit)
    detail = f"{count} memories are longer than {cap} characters (fix: truncated; locked memories are kept)"
    return finding(count, detail, ref_items(MEMORY, ids))


def _truncate_oversized(run: Run, found: Finding) -> int:
    """Cut the memories longer than the cap to the cap (within the budget), locked ones kept."""
    cap = run.rt.settings.max_content_length
    _, ids = run.rt.store.oversized_memories(run.agent_id, cap, run.budget)
    return rewrite(run, [make_ref(MEMORY, i) for i in ids], lambda text: text[:cap])


def _duplicate_content(run: Run) -> Finding:
    """Memories repeating an earlier one's content in the same agent, project and channel."""
    copies = run.rt.store.duplicate_copies(run.agent_id)
    if not copies:
        return NOTHING
    locked = sum(1 for *_, is_locked in copies if is_locked)
    detail = (
        f"{len(copies)} memories repeat the content of an earlier one in the same agent, project and channel "
        f"(fix: the lowest id is kept, the copies deleted; {locked} locked copies are kept)"
    )
    items = [{"ref": make_ref(MEMORY, i), "detail": f"a copy of mem:{keep}"} for i, keep, _ in copies[: run.limit]]
    return finding(len(copies), detail, items)


def _delete_duplicates(run: Run, found: Finding) -> int:
    """Delete every copy but the lowest id, locked copies kept."""
    copies = run.rt.store.duplicate_copies(run.agent_id)
    return delete_unlocked(run, [make_ref(MEMORY, i) for i, _, is_locked in copies if not is_locked])


def _embedding_dimension(run: Run) -> Finding:
    """Vectors whose width is not the current one: vector recall cannot compare them with a query."""
    width = run.width
    if width is None:
        return NOTHING
    found = {kind: run.rt.store.misfit_embeddings(kind, run.agent_id, width, run.limit) for kind in KINDS}
    count = sum(n for n, _ in found.values())
    items = [item for kind, (_, ids) in found.items() for item in ref_items(kind, ids)]
    return finding(
        count, f"{count} vectors are not {width} wide, the current width (fix: embedded again)", items[: run.limit]
    )


def _reembed_misfits(run: Run, found: Finding) -> int:
    """Embed the rows of another width again, while the embedder can."""
    if not run.rt.embedder.available or run.width is None:
        return 0
    refs = [
        make_ref(kind, i)
        for kind in KINDS
        for i in run.rt.store.misfit_embeddings(kind, run.agent_id, run.width, run.budget)[1]
    ]
    return reembed(run, refs)


def _unembedded(run: Run, kind: str) -> Finding:
    """Rows without a vector, counted only while the embedder can make one (mode none stores none by design)."""
    if not run.rt.embedder.available:
        return NOTHING
    count, ids = run.rt.store.unembedded(kind, run.agent_id, run.limit)
    detail = f"{count} {_NOUN[kind]} have no vector; the embedder ({run.rt.embedder.model}) can make them"
    return finding(count, detail, ref_items(kind, ids))


def _embed_unembedded(run: Run, kind: str) -> int:
    """Embed the rows of one kind without a vector (within the budget), while the embedder can."""
    if not run.rt.embedder.available:
        return 0
    _, ids = run.rt.store.unembedded(kind, run.agent_id, run.budget)
    return reembed(run, [make_ref(kind, i) for i in ids])


def _null_embedding(run: Run) -> Finding:
    """Memories without a vector."""
    return _unembedded(run, MEMORY)


def _embed_memories(run: Run, found: Finding) -> int:
    return _embed_unembedded(run, MEMORY)


def _null_episode_embedding(run: Run) -> Finding:
    """Episodes without a vector."""
    return _unembedded(run, EPISODE)


def _embed_episodes(run: Run, found: Finding) -> int:
    return _embed_unembedded(run, EPISODE)


def _stale_embeddings(run: Run) -> Finding:
    """Rows whose vector another model made than the embedder's: the vector arms leave them out until the
    background re-embedding (handlers.reembed) reaches them. Its progress."""
    counts = stale_rows(run.rt, run.agent_id)
    count = sum(counts.values())
    if not count:
        return NOTHING
    model, pending = run.rt.embedder.model, run.rt.store.pending_tasks(REEMBED)
    sample = run.rt.store.stale_records(model, None, run.limit, run.agent_id)
    detail = (
        f"{counts.get(MEMORY, 0)} memories and {counts.get(EPISODE, 0)} episodes carry vectors of another "
        f"model than {model}: the vector arms leave them out until the background re-embedding reaches them "
        f"({pending} task(s) queued) (fix: re-embedded now, within the run's budget)"
    )
    return finding(count, detail, [{"ref": ref} for ref, _ in sample], {"by_kind": counts, "queued": pending})


def _reembed_stale(run: Run, found: Finding) -> int:
    """Re-embed the scope's stale rows now, newest first, within the run's budget (an embedder failure stops it)."""
    try:
        done = reembed_now(run.rt, run.agent_id, max(0, run.budget))
    except EmbeddingError:
        return 0
    run.budget -= done
    return done


def _fts_integrity(run: Run) -> Finding:
    """The full-text tables against their rows (the scope's rows; entries without a row and FTS5's own check whole)."""
    return gap_finding(run, {kind: run.rt.store.fts_gap(kind, run.agent_id) for kind in KINDS}, "full-text index")


def _rebuild_fts(run: Run, found: Finding) -> int:
    """Rebuild both full-text tables from their rows; every gap found counts as repaired."""
    with run.rt.store.write() as conn:
        for kind in KINDS:
            run.rt.store.rebuild_fts(conn, kind)
    return found.count


def _vector_index(run: Run) -> Finding:
    """The in-process vector index against the embedded rows, by id."""
    return gap_finding(run, {kind: run.rt.store.index_gap(kind, run.agent_id) for kind in KINDS}, "vector index")


def _rebuild_vector_index(run: Run, found: Finding) -> int:
    """Rebuild the vector index from the rows; every gap found counts as repaired."""
    run.rt.store.rebuild_index()
    return found.count


def _missing_blocks(run: Run) -> Finding:
    """Records without a block set for their current text (and the embedder's model): the backfill's progress."""
    if not building(run.rt):
        return NOTHING  # not run (check_health says so under not_run)
    model = run.rt.embedder.model
    counts = run.rt.store.block_counts(run.agent_id, model)
    lacking = counts["records_lacking_blocks"]
    if not lacking:
        return NOTHING
    sample = run.rt.store.records_lacking_blocks(None, run.limit, model, agent_id=run.agent_id)
    detail = (
        f"{lacking} records have no block set for their current text yet ({counts['records_with_blocks']} "
        f"have one, {counts['block_rows']} blocks); the background backfill builds them (fix: one backfill "
        f"step now, at most {BACKFILL_RECORDS} records and {BACKFILL_CHARS} characters)"
    )
    return finding(lacking, detail, [{"ref": ref} for ref, _, _ in sample], {"blocks": counts})


def _advance_backfill(run: Run, found: Finding) -> int:
    """One bounded backfill step over the scope's records lacking blocks (within the run's budget)."""
    if not building(run.rt) or run.budget <= 0:
        return 0
    done, _, _ = backfill_step(run.rt, None, agent_id=run.agent_id, limit=run.budget)
    run.budget -= done
    return done


def not_run(rt: Any) -> dict[str, str]:
    """The checks this configuration does not run, with the reason."""
    if building(rt):
        return {}
    return {
        "missing_blocks": "not run: blocks are not built here (CUEDRECALL_BLOCK_BUILD_ENABLED is off, or the "
        "embedder makes no vectors), so there is no block set to miss"
    }


def _invalid_timestamp(run: Run) -> Finding:
    """Memories whose timestamp is not a readable ISO-8601 time: no time cue can place them."""
    bad = [(i, ts) for i, ts in run.rt.store.scan_memories(run.agent_id, "timestamp") if to_epoch(ts) is None]
    items = [{"ref": make_ref(MEMORY, i), "detail": f"timestamp {short(ts)!r}"} for i, ts in bad[: run.limit]]
    return finding(len(bad), f"{len(bad)} memories have a timestamp that does not parse as ISO-8601", items)


def timestamp_form(text: str) -> str:
    """How a stored timestamp writes its time: "utc" (Z or a zero offset), "aware" (another offset), or "naive"
    (no zone, or a text that does not read as ISO-8601 at all)."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return "naive"
    offset = moment.utcoffset()
    return "naive" if offset is None else "utc" if not offset else "aware"


def _timestamp_format_drift(run: Run) -> Finding:
    """Memories whose timestamp is written in more than one form (UTC, another offset, no zone or unreadable):
    each row's time is still read (an unreadable one's is its store time), but the texts no longer sort as times."""
    forms: dict[str, list[int]] = {"utc": [], "aware": [], "naive": []}
    for i, ts in run.rt.store.scan_memories(run.agent_id, "timestamp"):
        if ts:
            forms[timestamp_form(ts)].append(i)
    if sum(1 for ids in forms.values() if ids) <= 1 and not forms["aware"]:
        return NOTHING
    odd = forms["aware"] + forms["naive"]
    counts = {form: len(ids) for form, ids in forms.items()}
    detail = (
        f"memory timestamps are written in more than one form ({counts['utc']} UTC, {counts['aware']} with "
        f"another offset, {counts['naive']} without a zone or unreadable); each row's time is still known, an "
        "unreadable one's being its store time (report only: the texts are kept as given)"
    )
    return finding(len(odd), detail, ref_items(MEMORY, sorted(odd)[: run.limit]), counts)


def source_problem(text: str) -> str | None:
    """Why a stored source is malformed: not a JSON object, or a type other than User, Agent or System."""
    try:
        value = json.loads(text) if text.strip() else {}
    except ValueError:
        return "not JSON"
    if not isinstance(value, dict):
        return "not a JSON object"
    kind = value.get("type")
    return None if kind is None or kind in SOURCE_TYPES else f"type {short(kind)!r}"


def _invalid_source_type(run: Run) -> Finding:
    """Memories whose source is not a JSON object or names a type other than User, Agent or System."""
    bad = [(i, why) for i, text in run.rt.store.scan_memories(run.agent_id, "source") if (why := source_problem(text))]
    items = [{"ref": make_ref(MEMORY, i), "detail": f"source {why}"} for i, why in bad[: run.limit]]
    detail = f"{len(bad)} memories have a source that is not an object of type {', '.join(SOURCE_TYPES)}"
    return finding(len(bad), detail, items)


def _missing_profile(run: Run) -> Finding:
    """Agents holding memories but no profile."""
    agents = run.rt.store.agents_without_profile(run.agent_id)
    items: list[dict[str, Any]] = [
        {"agent_id": a, "detail": f"agent {a!r} has memories but no profile"} for a in agents[: run.limit]
    ]
    detail = f"{len(agents)} agents have memories but no profile: {short(', '.join(agents))}"
    return finding(len(agents), detail, items)


HEALTH_CHECKS: dict[str, tuple[str, Check, Repair | None]] = {
    "sqlite_integrity": ("critical", _sqlite_integrity, None),
    "empty_content": ("warn", _empty_content, _delete_empty),
    "oversized_content": ("warn", _oversized_content, _truncate_oversized),
    "duplicate_content": ("warn", _duplicate_content, _delete_duplicates),
    "embedding_dimension": ("critical", _embedding_dimension, _reembed_misfits),
    "null_embedding": ("warn", _null_embedding, _embed_memories),
    "null_episode_embedding": ("warn", _null_episode_embedding, _embed_episodes),
    "stale_embeddings": ("info", _stale_embeddings, _reembed_stale),
    "fts_integrity": ("warn", _fts_integrity, _rebuild_fts),
    "vector_index": ("warn", _vector_index, _rebuild_vector_index),
    "missing_blocks": ("info", _missing_blocks, _advance_backfill),
    "invalid_timestamp": ("warn", _invalid_timestamp, None),
    "timestamp_format_drift": ("info", _timestamp_format_drift, None),
    "invalid_source_type": ("info", _invalid_source_type, None),
    "missing_profile": ("info", _missing_profile, None),
}
