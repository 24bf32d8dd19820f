"""The browsing reads of the SQLite store: the agents it holds, and one page of a scope's records.

``SqliteBrowse`` is a mixin of ``SqliteStore`` (its connection, lock and record
decoding), holding no state of its own. It serves the explorer (``cuedrecall ui``):
every read is bounded (a page, or one grouped pass over the isolation index), never
a whole-table load of rows.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from itertools import islice
from typing import TYPE_CHECKING, Any

from cuedrecall.store.base import AgentSummary, Period, Record, Scope
from cuedrecall.store.predicates import scope_where
from cuedrecall.store.rows import TABLES, agent_summaries, page_window

MAX_BUCKETS = 64  # past this many (project, channel) pairs in a scope, a page is one ordered query instead


class SqliteBrowse:
    """Every agent with its counts and axes; a page of records, highest id first, keyset or offset paged."""

    if TYPE_CHECKING:  # provided by SqliteStore

        def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]: ...
        def _select_records(self, kind: str, where: str, params: Sequence[Any], tail: str) -> list[Record]: ...
        def _cached(self, key: tuple[Any, ...], compute: Any) -> Any: ...

    def agents(self) -> list[AgentSummary]:
        """Every agent with a memory, an episode or a profile, by agent id: one grouped pass per table over the
        isolation index (agent, project, channel), so the read costs the index, not the rows; kept until the next
        change any connection makes."""
        return self._cached(("browse_agents",), lambda: agent_summaries(self._read))

    def page_records(
        self,
        kind: str,
        scope: Scope,
        *,
        limit: int,
        before_id: int | None = None,
        offset: int = 0,
        period: Period | None = None,
    ) -> list[Record]:
        """Up to ``limit`` (at most PAGE_MAX) records of the scope, highest id first: below ``before_id`` when
        given (keyset paging), after skipping ``offset`` rows, and with a record time in ``period`` [start, end)
        when given. Episodes a source filter hides (``Scope.episodes_visible``) are not read.

        Without a period the ids come from the isolation index, one (project, channel) bucket of the scope at a
        time, each already in id order, merged: no sort of the whole scope, whatever its size or the page's
        depth. With a period the time index bounds the read and only the period's rows are ordered."""
        size, offset = page_window(kind, scope, limit, offset)
        if size == 0:
            return []
        buckets = None if period is not None else self._buckets(kind, scope)
        if buckets is None:  # ids only (the time index covers them), ordered, then the page's rows
            where, params = scope_where(scope, "t", kind)
            if before_id is not None:
                where += " AND t.id < ?"
                params.append(before_id)
            if period is not None:
                where += " AND t.ts_epoch >= ? AND t.ts_epoch < ?"
                params += [period[0], period[1]]
            rows = self._read(
                f"SELECT t.id FROM {TABLES[kind]} t WHERE {where} ORDER BY t.id DESC LIMIT ? OFFSET ?",
                [*params, size, offset],
            )
            ids = [row_id for (row_id,) in rows]
        else:
            ids = self._newest_ids(kind, scope, buckets, before_id, offset + size)[offset:]
        if not ids:
            return []
        marks = ", ".join("?" * len(ids))
        return self._select_records(kind, f"t.id IN ({marks})", ids, "ORDER BY t.id DESC")

    def _buckets(self, kind: str, scope: Scope) -> list[tuple[str, str]] | None:
        """The scope's (project, channel) pairs that hold rows of the kind; None when there are too many to merge."""
        table = TABLES[kind]
        pairs = self._cached(
            ("browse_buckets", kind, scope.agent_id),
            lambda: self._read(
                f"SELECT DISTINCT project_id, channel FROM {table} WHERE agent_id = ?", (scope.agent_id,)
            ),
        )
        wanted = [
            (project, channel)
            for project, channel in pairs
            if (scope.project_id is None or project in {"", scope.project_id})
            and (not scope.channel or channel in {"", scope.channel})
        ]
        return wanted if len(wanted) <= MAX_BUCKETS else None

    def _newest_ids(
        self, kind: str, scope: Scope, buckets: list[tuple[str, str]], before_id: int | None, count: int
    ) -> list[int]:
        """The ``count`` highest ids of the scope below ``before_id``: each bucket's run read from the isolation
        index (agent, project, channel, id) in id order, the runs merged."""
        table = TABLES[kind]
        base, base_params = scope_where(Scope(scope.agent_id, source_id=scope.source_id), "t", kind)
        runs = []
        for project, channel in buckets:
            where, params = f"{base} AND t.project_id = ? AND t.channel = ?", [*base_params, project, channel]
            if before_id is not None:
                where += " AND t.id < ?"
                params.append(before_id)
            rows = self._read(f"SELECT t.id FROM {table} t WHERE {where} ORDER BY t.id DESC LIMIT ?", [*params, count])
            runs.append([row_id for (row_id,) in rows])
        return list(islice(heapq.merge(*runs, reverse=True), count))
