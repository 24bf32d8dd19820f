"""The browsing reads of the PostgreSQL store (mirrors ``store/browse.py``): every agent, one page of records."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from cuedrecall.store.base import EPISODE, MEMORY, AgentSummary, Period, Record, Scope
from cuedrecall.store.browse import PAGE_MAX
from cuedrecall.store.postgres.scope import period_where, scope_where

_TABLES = {MEMORY: "memories", EPISODE: "episodes"}


class PgBrowse:
    """Every agent with its counts and axes; a page of records, highest id first, keyset or offset paged."""

    if TYPE_CHECKING:  # provided by PgConnection and PgRecords
        def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]: ...
        def _select_records(self, kind: str, where: str, params: Sequence[Any], tail: str) -> list[Record]: ...

    def agents(self) -> list[AgentSummary]:
        """Every agent with a row or a profile: its counts, projects and channels (one grouped pass a table)."""
        counts: dict[str, list[int]] = {}
        projects: dict[str, set[str]] = {}
        channels: dict[str, set[str]] = {}
        for position, table in enumerate(("memories", "episodes")):
            for agent, project, channel, count in self._read(
                    f"SELECT agent_id, project_id, channel, COUNT(*) FROM {table} GROUP BY agent_id, project_id, "
                    "channel"):
                counts.setdefault(agent, [0, 0])[position] += int(count)
                projects.setdefault(agent, set()).add(project)
                channels.setdefault(agent, set()).add(channel)
        profiled = {agent for (agent,) in self._read("SELECT DISTINCT agent_id FROM profiles")}
        return [AgentSummary(agent, *counts.get(agent, [0, 0]), tuple(sorted(projects.get(agent, ()))),
                             tuple(sorted(channels.get(agent, ()))), agent in profiled)
                for agent in sorted(set(counts) | profiled)]

    def page_records(self, kind: str, scope: Scope, *, limit: int, before_id: int | None = None, offset: int = 0,
                     period: Period | None = None) -> list[Record]:
        """Up to ``limit`` (at most PAGE_MAX) records of the scope, highest id first: below ``before_id`` when
        given, after skipping ``offset`` rows, with a record time in ``period`` [start, end) when given."""
        if kind not in _TABLES:
            raise ValueError(f"unknown record kind {kind!r}")
        if kind == EPISODE and not scope.episodes_visible:
            return []
        size, offset = max(0, min(limit, PAGE_MAX)), max(0, offset)
        if size == 0:
            return []
        where, params = scope_where(scope, "t", kind)
        if before_id is not None:
            where += " AND t.id < %s"
            params.append(before_id)
        pwhere, pparams = period_where("t", period)
        return self._select_records(kind, where + pwhere, [*params, *pparams, size, offset],
                                    "ORDER BY t.id DESC LIMIT %s OFFSET %s")
