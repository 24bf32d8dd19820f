"""Stage 4, structuring: each chosen cluster becomes an item with a head, its claims, their roles and conflicts.

- The head is the most relevant member, or, when newer versions of that record
  (same msg_id, same project) are among the members, the newest of them.
- Retained rows: the head, the other members by relevance, then the walked rows in
  walk order, at most ``max_evidence`` (the rest are counted in ``claims_omitted``).
- Claims: every retained row, newest first (undated last, memories before
  episodes, then relevance), with ``as_of``, ``why`` (the key that joined it; absent
  for a row nothing joined) and, for walked rows, ``hops``.
- Roles say what another retained row is to a claim: the next newer version
  ``supersedes`` it, an episode whose span holds its time ``supports`` it, and a
  declared relation with a role predicate names its subject's role.
- Conflicts: versions of one message with one timestamp, which time cannot order.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cuedrecall.clock import to_epoch
from cuedrecall.graph.relations import ROLE_PREDICATES, RecordRelation
from cuedrecall.reconstruct.policy_v1 import KEYS
from cuedrecall.reconstruct.rows import Row
from cuedrecall.store.base import EPISODE, MEMORY


@dataclass
class Item:
    members: list[Row]  # the cluster's candidates, most relevant first
    head: Row
    retained: list[Row]  # the rows its claims list
    claims_omitted: int
    held: bool  # a held cluster (a seat's row), appended after the window
    hop_bound: bool  # a relation was left unfollowed at the hop bound


def build_item(members: list[Row], walked: Sequence[Row], max_evidence: int, *, held: bool,
               hop_bound: bool) -> Item:
    head = choose_head(members)
    ordered = [head, *sorted((row for row in members if row is not head), key=lambda row: row.relevance), *walked]
    return Item(members, head, ordered[:max_evidence], max(0, len(ordered) - max_evidence), held, hop_bound)


def _version_key(row: Row) -> tuple[str, str] | None:
    record = row.record
    return (record.msg_id, record.project_id) if record.kind == MEMORY and record.msg_id else None


def _newest_first(row: Row) -> tuple[int, float, int, int, int]:
    moment = row.record.ts_epoch
    return (moment is None, -(moment or 0.0), row.kind_order, row.rank, row.record.id)


def choose_head(members: Sequence[Row]) -> Row:
    best = min(members, key=lambda row: row.relevance)
    key = _version_key(best)
    if key is None:
        return best
    return min((row for row in members if _version_key(row) == key), key=_newest_first)


def independence_reason(item: Item) -> str:
    """The strongest key that joined the members (msg_id > episode > adjacent > relation > chain), or singleton."""
    found = {(row.why or "").removeprefix("cluster:").split(":")[0] for row in item.members}
    return next((key for key in KEYS if key in found), "singleton")


def claims(item: Item, relations: Sequence[RecordRelation]) -> list[dict[str, Any]]:
    out = []
    for row in sorted(item.retained, key=_newest_first):
        claim: dict[str, Any] = {"ref": row.ref, "as_of": row.record.timestamp}
        if row.why and row.why != "seed":  # a row nothing joined says nothing more: the answer stays small
            claim["why"] = row.why
        if row.hops is not None:
            claim["hops"] = row.hops
        found = roles(row, item.retained, relations)
        if found:
            claim["roles"] = found
        out.append(claim)
    return out


def roles(claim: Row, retained: Sequence[Row], relations: Sequence[RecordRelation]) -> list[dict[str, str]]:
    """What other retained rows are to this claim; each entry's ref is the subject of the role."""
    out: list[dict[str, str]] = []
    newer = _next_version(claim, retained)
    if newer is not None:
        out.append({"ref": newer.ref, "role": "supersedes"})
    out += [{"ref": episode.ref, "role": "supports"} for episode in retained if _holds(episode, claim)]
    present = {row.ref for row in retained}
    for relation in relations:
        if relation.object == claim.ref and relation.subject in present and relation.predicate in ROLE_PREDICATES:
            entry = {"ref": relation.subject, "role": relation.predicate}
            if entry not in out:
                out.append(entry)
    return out


def _next_version(claim: Row, retained: Sequence[Row]) -> Row | None:
    key, moment = _version_key(claim), claim.record.ts_epoch
    if key is None or moment is None:
        return None
    later = [row for row in retained if _version_key(row) == key and (row.record.ts_epoch or -math.inf) > moment]
    return min(later, key=lambda row: (row.record.ts_epoch, row.relevance), default=None)


def _holds(episode: Row, claim: Row) -> bool:
    """An episode supports a memory whose time lies in its span, in its project and channel."""
    e, c = episode.record, claim.record
    if e.kind != EPISODE or c.kind != MEMORY or c.ts_epoch is None or (e.project_id, e.channel) != (c.project_id,
                                                                                                   c.channel):
        return False
    start = to_epoch(e.start_time)
    end = to_epoch(e.end_time) if e.end_time else start
    return start is not None and end is not None and start <= c.ts_epoch <= end


def conflicts(item: Item) -> list[dict[str, Any]]:
    """Versions of one message (msg_id, project) stored with the same timestamp: which is current is unknown."""
    groups: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for row in item.retained:
        key = _version_key(row)
        if key is not None:
            groups[(*key, row.record.timestamp)].append(row.ref)
    return [{"refs": sorted(refs), "reason": "same_msg_id_same_timestamp", "msg_id": key[0]}
            for key, refs in groups.items() if len(refs) > 1]
