"""Stage 4, structuring: each chosen cluster becomes an item with a head, its claims, their roles and conflicts.

- The head is the most relevant member, or, when newer versions of that record
  (same msg_id, same project) are among the members, the newest of them.
- Retained rows: the head, the other members by relevance, then the walked rows in
  walk order, at most ``max_evidence`` (the rest are counted in ``claims_omitted``).
- Claims: every retained row, newest first (undated last, memories before
  episodes, then relevance), with ``as_of``, ``why`` (the key that joined it; absent
  for a row nothing joined) and, for walked rows, ``hops``.
- Roles say what another retained row is to a claim: the record stale-v1 finds
  current over it (``recall/stale.py``: a newer version of its message, or a newer
  statement of an entity attribute) ``supersedes`` it, an episode whose span holds
  its time ``supports`` it, and a declared relation with a role predicate names its
  subject's role.
- Conflicts: stale-v1's conflicts among the item's retained rows; those that span
  two items are the answer's own (``spanning_conflicts``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cuedrecall.clock import to_epoch
from cuedrecall.graph.relations import ROLE_PREDICATES, RecordRelation
from cuedrecall.recall.stale import Conflict, find
from cuedrecall.reconstruct.policy import KEYS
from cuedrecall.reconstruct.rows import Row
from cuedrecall.store.base import EPISODE, MEMORY, Relation


@dataclass
class Item:
    members: list[Row]  # the cluster's candidates, most relevant first
    head: Row
    retained: list[Row]  # the rows its claims list
    claims_omitted: int
    held: bool  # a held cluster (a seat's row), appended after the window
    hop_bound: bool  # a relation was left unfollowed at the hop bound


def build_item(members: list[Row], walked: Sequence[Row], max_evidence: int, *, held: bool, hop_bound: bool) -> Item:
    head = choose_head(members)
    ordered = [head, *sorted((row for row in members if row is not head), key=lambda row: row.relevance), *walked]
    return Item(members, head, ordered[:max_evidence], max(0, len(ordered) - max_evidence), held, hop_bound)


_BY_TIME = ("same_msg_id", "entity_attribute")  # the rules where time says which record is current


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


def claims(
    item: Item, relations: Sequence[RecordRelation], attributes: Sequence[Relation] = ()
) -> list[dict[str, Any]]:
    """The item's claims; ``attributes``: the entity relations anchored at its rows (stale-v1 reads them)."""
    found = item_conflicts(item, relations, attributes)
    out = []
    for row in sorted(item.retained, key=_newest_first):
        claim: dict[str, Any] = {"ref": row.ref, "as_of": row.record.timestamp}
        if row.why and row.why != "seed":  # a row nothing joined says nothing more: the answer stays small
            claim["why"] = row.why
        if row.hops is not None:
            claim["hops"] = row.hops
        named = roles(row, item.retained, relations, found)
        if named:
            claim["roles"] = named
        out.append(claim)
    return out


def roles(
    claim: Row, retained: Sequence[Row], relations: Sequence[RecordRelation], conflicts: Sequence[Conflict] = ()
) -> list[dict[str, str]]:
    """What other retained rows are to this claim; each entry's ref is the subject of the role."""
    out: list[dict[str, str]] = []
    for conflict in conflicts:  # a declared replacement is named below, by its own predicate
        if conflict.why in _BY_TIME and claim.ref in conflict.stale:
            out += [
                {"ref": ref, "role": "supersedes"}
                for ref in conflict.newer()
                if {"ref": ref, "role": "supersedes"} not in out
            ]
    out += [{"ref": episode.ref, "role": "supports"} for episode in retained if _holds(episode, claim)]
    present = {row.ref for row in retained}
    for relation in relations:
        if relation.object == claim.ref and relation.subject in present and relation.predicate in ROLE_PREDICATES:
            entry = {"ref": relation.subject, "role": relation.predicate}
            if entry not in out:
                out.append(entry)
    return out


def _holds(episode: Row, claim: Row) -> bool:
    """An episode supports a memory whose time lies in its span, in its project and channel."""
    e, c = episode.record, claim.record
    if (
        e.kind != EPISODE
        or c.kind != MEMORY
        or c.ts_epoch is None
        or (e.project_id, e.channel) != (c.project_id, c.channel)
    ):
        return False
    start = to_epoch(e.start_time)
    end = to_epoch(e.end_time) if e.end_time else start
    return start is not None and end is not None and start <= c.ts_epoch <= end


def item_conflicts(
    item: Item, relations: Sequence[RecordRelation] = (), attributes: Sequence[Relation] = ()
) -> list[Conflict]:
    """stale-v1's conflicts among the item's retained rows (recall/stale.py: the recall's own rule)."""
    return find([row.record for row in item.retained], relations, attributes)


def conflicts(
    item: Item, relations: Sequence[RecordRelation] = (), attributes: Sequence[Relation] = ()
) -> list[dict[str, Any]]:
    """The item's conflicts as its answer lists them: the current (or undecided newest) and the stale refs."""
    return [conflict.as_dict() for conflict in item_conflicts(item, relations, attributes)]


def spanning_conflicts(
    items: Sequence[Item], relations: Sequence[RecordRelation], attributes: Sequence[Relation]
) -> list[dict[str, Any]]:
    """stale-v1's conflicts among the retained rows of all the items that no single item holds whole (records
    that state two values of one entity attribute seldom share an item: sharing an entity never bundles)."""
    records = {row.ref: row.record for item in items for row in item.retained}
    held = [{row.ref for row in item.retained} for item in items]
    return [
        conflict.as_dict()
        for conflict in find(list(records.values()), relations, attributes)
        if not any(set(conflict.refs) <= refs for refs in held)
    ]
