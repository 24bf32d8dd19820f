"""Stage 2, bundling: candidate rows that tell one thing become one cluster, by four keys in a fixed order.

- ``cluster:msg_id``: memories with the same non-empty msg_id in the same project
  (versions of one message);
- ``cluster:episode``: a memory whose time lies in a candidate episode's span, in the
  episode's project and channel, when that span is at most the episode window (a
  session); a longer episode digests many sessions, and lying in its span is no reason
  to tell two records as one (docs/reconstruct-and-graph.md#reconstruct-step-by-step);
- ``cluster:adjacent``: memories of one source (type and id) in one project and
  channel, each within the adjacency window of its burst's first row;
- ``cluster:relation``: a declared record -> record relation between two candidates.

Sharing an entity never bundles, and neither does a source alone. Union-find: the
more relevant row represents the cluster, and a row's ``why`` is the first key that
joined it to another (a row nothing joined is a ``seed``). Clusters come out in the
order of their best row.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from cuedrecall.clock import to_epoch
from cuedrecall.graph.relations import RecordRelation
from cuedrecall.reconstruct.rows import Row
from cuedrecall.store.base import EPISODE, MEMORY


class _Clusters:
    """Union-find over row positions (0 = most relevant); the lower position represents."""

    def __init__(self, rows: Sequence[Row]) -> None:
        self.rows = rows
        self.parent = list(range(len(rows)))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def join(self, i: int, j: int, why: str) -> None:
        for row in (self.rows[i], self.rows[j]):
            if row.why is None:
                row.why = why
        a, b = self.find(i), self.find(j)
        if a != b:
            self.parent[max(a, b)] = min(a, b)

    def groups(self) -> list[list[Row]]:
        members: dict[int, list[Row]] = defaultdict(list)
        for i, row in enumerate(self.rows):
            members[self.find(i)].append(row)
        return [members[root] for root in sorted(members)]


def bundle(
    rows: Sequence[Row], relations: Sequence[RecordRelation], adjacency_s: float, episode_span_s: float
) -> list[list[Row]]:
    """The clusters of ``rows`` (given most relevant first), each most relevant first, in order of their best row."""
    clusters = _Clusters(rows)
    _by_msg_id(clusters)
    _by_episode(clusters, episode_span_s)
    _by_adjacency(clusters, adjacency_s)
    _by_relation(clusters, relations)
    for row in rows:
        row.why = row.why or "seed"
    return clusters.groups()


def _memories(rows: Sequence[Row]) -> list[int]:
    return [i for i, row in enumerate(rows) if row.record.kind == MEMORY]


def _by_msg_id(c: _Clusters) -> None:
    first: dict[tuple[str, str], int] = {}
    for i in _memories(c.rows):
        record = c.rows[i].record
        if not record.msg_id:
            continue
        key = (record.msg_id, record.project_id)
        if key in first:
            c.join(first[key], i, "cluster:msg_id")
        else:
            first[key] = i


def _by_episode(c: _Clusters, episode_span_s: float) -> None:
    spans = []
    for i, row in enumerate(c.rows):
        record = row.record
        if record.kind != EPISODE:
            continue
        start = to_epoch(record.start_time)
        end = to_epoch(record.end_time) if record.end_time else start
        if start is not None and end is not None and end - start <= episode_span_s:
            spans.append((i, start, end, record.project_id, record.channel))
    for i in _memories(c.rows):
        record = c.rows[i].record
        for e, start, end, project, channel in spans:
            if (
                record.ts_epoch is not None
                and start <= record.ts_epoch <= end
                and (record.project_id, record.channel) == (project, channel)
            ):
                c.join(min(i, e), max(i, e), "cluster:episode")


def _by_adjacency(c: _Clusters, window_s: float) -> None:
    sources: dict[tuple[str, str, str, str], list[int]] = defaultdict(list)
    for i in _memories(c.rows):
        record = c.rows[i].record
        kind, ident = str(record.source.get("type") or ""), str(record.source.get("id") or "")
        if kind and ident and record.ts_epoch is not None:
            sources[(kind, ident, record.project_id, record.channel)].append(i)
    for members in sources.values():
        members.sort(key=lambda i: (c.rows[i].record.ts_epoch, i))
        burst = members[0]
        for i in members[1:]:
            if c.rows[i].record.ts_epoch - c.rows[burst].record.ts_epoch <= window_s:  # type: ignore[operator]
                c.join(min(burst, i), max(burst, i), "cluster:adjacent")
            else:
                burst = i


def _by_relation(c: _Clusters, relations: Sequence[RecordRelation]) -> None:
    position = {row.ref: i for i, row in enumerate(c.rows)}
    for relation in relations:
        i, j = position.get(relation.subject), position.get(relation.object)
        if i is not None and j is not None and i != j:
            c.join(min(i, j), max(i, j), f"relation:{relation.predicate}")
