"""What both SQL stores (``sqlite/``, ``postgres/``) do alike with rows: read them into records, sum up the agents,
group refs by kind, count the gate's pool, walk the two kinds in batches, decode a task's payload, hash a record's text.

The rule of the house: one piece of code per idea. A helper that does not depend on
the SQL dialect lives once, here (or in ``predicates.py`` for WHERE fragments, in
``sql/`` for whole queries), and both backends import it; what the dialects make
different is a hook of ``sql/dialect.py`` or stays in each backend.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from cuedrecall.store.base import EPISODE, MEMORY, AgentSummary, Record, Scope, make_ref, split_ref
from cuedrecall.store.predicates import scope_where

TABLES = {MEMORY: "memories", EPISODE: "episodes"}
# kind -> (table, the text column, the source id column): what a block set divides and the axes it copies
TEXT_COLUMNS = {MEMORY: ("memories", "content", "source_id"), EPISODE: ("episodes", "summary", "''")}
# the columns, on table alias t, that ``memory_record`` / ``episode_record`` read, in their order
RECORD_COLUMNS = {
    MEMORY: "t.id, t.agent_id, t.project_id, t.channel, t.content, t.timestamp, t.created_at, t.msg_id, t.source, "
    "t.locked, t.ts_epoch",
    EPISODE: "t.id, t.agent_id, t.project_id, t.channel, t.summary, COALESCE(NULLIF(t.start_time, ''), t.created_at), "
    "t.created_at, t.keywords, t.resolved, t.start_time, t.end_time, t.ts_epoch",
}
# the columns, on alias f, that ``Folder`` is built from, in its fields' order
FOLDER_COLUMNS = "f.id, f.agent_id, f.project_id, f.parent_id, f.name, f.normalized, f.declared_by, f.created_at"
BLOCK_BITS = 16  # a record's block index fits 16 bits (SQLite's block index keys it there)
MAX_BLOCK = (1 << BLOCK_BITS) - 1  # so the block arm reads at most MAX_BLOCK + 1 blocks of one record
# the columns, on alias e and r, that ``Entity`` and ``Relation`` are built from, in their fields' order
ENTITY_COLUMNS = "e.id, e.agent_id, e.project_id, e.channel, e.name, e.normalized, e.declared_by, e.created_at"
RELATION_COLUMNS = (
    "r.id, r.agent_id, r.project_id, r.channel, r.subject_kind, r.subject_id, r.predicate, "
    "r.object_kind, r.object_id, r.anchor_ref, r.declared_by, r.declared_at"
)
SCANNED_COLUMNS = ("content", "timestamp", "source")  # the memory columns scan_memories may read
PAGE_MAX = 500  # the most rows one page of page_records reads
_TOP = 1 << 62  # above every id: a newest-first walk of a kind starts below it


def _parsed_source(source: str) -> dict[str, Any]:
    """A stored source as a new dict ({} for one that is not a JSON object). A flat source (the usual: a speaker,
    a type and an id) is parsed once and copied: a store's sources repeat, and a recall hydrates a few hundred
    records."""
    flat = _flat_source(source)
    if flat is not None:
        return dict(flat)
    parsed = json.loads(source)  # nested values: parsed again, so no record shares them
    return parsed if isinstance(parsed, dict) else {}


@lru_cache(maxsize=4096)
def _flat_source(source: str) -> tuple[tuple[str, Any], ...] | None:
    """A source's items when its values are all scalars (none for one that is not a JSON object); None when a
    value is a list or an object."""
    try:
        parsed = json.loads(source) if source else {}
    except ValueError:
        return ()
    if not isinstance(parsed, dict):
        return ()
    if any(isinstance(value, (dict, list)) for value in parsed.values()):
        return None
    return tuple(parsed.items())


def memory_record(row: Sequence[Any]) -> Record:
    """A memory from a row of ``RECORD_COLUMNS[MEMORY]``; a source that is not a JSON object reads as {}."""
    row_id, agent, project, channel, content, timestamp, created_at, msg_id, source, locked, ts = row
    return Record(
        ref=make_ref(MEMORY, row_id),
        kind=MEMORY,
        id=row_id,
        agent_id=agent,
        project_id=project,
        channel=channel,
        text=content,
        timestamp=timestamp,
        created_at=created_at,
        msg_id=msg_id,
        source=_parsed_source(source),
        locked=bool(locked),
        ts_epoch=ts,
    )


def episode_record(row: Sequence[Any]) -> Record:
    """An episode from a row of ``RECORD_COLUMNS[EPISODE]``."""
    row_id, agent, project, channel, summary, time, created_at, keywords, resolved, start, end, ts = row
    return Record(
        ref=make_ref(EPISODE, row_id),
        kind=EPISODE,
        id=row_id,
        agent_id=agent,
        project_id=project,
        channel=channel,
        text=summary,
        timestamp=time or "",
        created_at=created_at,
        keywords=keywords,
        resolved=bool(resolved),
        source={"System": "episode"},
        start_time=start,
        end_time=end,
        ts_epoch=ts,
    )


def record_of(kind: str, row: Sequence[Any]) -> Record:
    """A record of either kind from a row of ``RECORD_COLUMNS[kind]``."""
    return memory_record(row) if kind == MEMORY else episode_record(row)


def agent_summaries(read: Callable[[str], list[tuple]]) -> list[AgentSummary]:
    """Every agent with a memory, an episode or a profile, by agent id, with its counts, projects and channels:
    one grouped pass per table over the isolation index (agent, project, channel), read through ``read``."""
    counts: dict[str, list[int]] = {}
    projects: dict[str, set[str]] = {}
    channels: dict[str, set[str]] = {}
    for position, table in enumerate(("memories", "episodes")):
        for agent, project, channel, count in read(
            f"SELECT agent_id, project_id, channel, COUNT(*) FROM {table} GROUP BY agent_id, project_id, channel"
        ):
            counts.setdefault(agent, [0, 0])[position] += int(count)
            projects.setdefault(agent, set()).add(project)
            channels.setdefault(agent, set()).add(channel)
    profiled = {agent for (agent,) in read("SELECT DISTINCT agent_id FROM profiles")}
    summaries = []
    for agent in sorted(set(counts) | profiled):
        memories, episodes = counts.get(agent, [0, 0])
        summaries.append(
            AgentSummary(
                agent,
                memories,
                episodes,
                tuple(sorted(projects.get(agent, ()))),
                tuple(sorted(channels.get(agent, ()))),
                agent in profiled,
            )
        )
    return summaries


def page_window(kind: str, scope: Scope, limit: int, offset: int) -> tuple[int, int]:
    """(rows to read, rows to skip) of one page of ``page_records``: at most PAGE_MAX rows, none of the episodes a
    source filter hides (``Scope.episodes_visible``); ValueError for a kind that is not a record's."""
    if kind not in TABLES:
        raise ValueError(f"unknown record kind {kind!r}")
    if kind == EPISODE and not scope.episodes_visible:
        return 0, max(0, offset)
    return max(0, min(limit, PAGE_MAX)), max(0, offset)


def ids_by_kind(refs: Sequence[str], *, skip_others: bool = False) -> dict[str, list[int]]:
    """Record ids by kind, in the refs' order. What is not a record ref raises ValueError, or with
    ``skip_others`` is left out (the profile's row among a graph's refs)."""
    out: dict[str, list[int]] = {MEMORY: [], EPISODE: []}
    for ref in refs:
        try:
            kind, row_id = split_ref(ref)
        except ValueError:
            if skip_others:
                continue
            raise
        out[kind].append(row_id)
    return out


def after_plan(after: str | None) -> list[tuple[str, int]]:
    """(kind, id after which to start) for each kind still to walk oldest first: memories, then episodes."""
    if after is None:
        return [(MEMORY, 0), (EPISODE, 0)]
    kind, row_id = split_ref(after)
    return [(MEMORY, row_id), (EPISODE, 0)] if kind == MEMORY else [(EPISODE, row_id)]


def before_plan(before: str | None) -> list[tuple[str, int]]:
    """(kind, id below which to start) for each kind still to walk newest first: memories, then episodes."""
    if before is None:
        return [(MEMORY, _TOP), (EPISODE, _TOP)]
    kind, row_id = split_ref(before)
    return [(MEMORY, row_id), (EPISODE, _TOP)] if kind == MEMORY else [(EPISODE, row_id)]


def task_payload(text: str) -> dict[str, Any]:
    """A queued task's stored payload; {} when it is not a JSON object (another version may have written it)."""
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def text_hash(text: str) -> str:
    """The hash that ties a block set to the text it divides: sha256 of the UTF-8 text, 16 hex digits."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def pool_growth(
    read: Callable[[str, Sequence[Any]], list[tuple]], scope: Scope, mark: str, upto: dict[str, int], by_id: str = ""
) -> tuple[tuple[int, int], dict[str, int]]:
    """The pool counts of the records with ids above ``upto`` (kind -> id; a kind absent: every record), and the
    newest id of each table the pool reads, from the same statement (store/sqlite/grown_stats.py folds the counts into
    kept ones). ``by_id``: the backend's clause after the table that makes a count above an id walk the id range
    (SQLite's ``NOT INDEXED``: else it walks the agent's index, every row of the scope, to find the new few)."""
    counts, newest = {MEMORY: 0, EPISODE: 0}, {}
    for kind in (MEMORY, EPISODE) if scope.episodes_visible else (MEMORY,):
        where, params = scope_where(scope, "t", kind, mark=mark)
        table, hint = TABLES[kind], by_id if upto.get(kind) else ""
        count, top = read(
            f"SELECT (SELECT COUNT(*) FROM {table} t{hint} WHERE {where} AND t.id > {mark}), "
            f"(SELECT COALESCE(MAX(id), 0) FROM {table})",
            [*params, upto.get(kind, 0)],
        )[0]
        counts[kind], newest[kind] = int(count), int(top)
    return (counts[MEMORY], counts[EPISODE]), newest
