"""The browsing reads of the PostgreSQL store (mirrors ``store/sqlite/browse.py``): every agent, one page of records."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cuedrecall.store.base import AgentSummary, Period, Record, Scope
from cuedrecall.store.postgres.dialect import POSTGRES
from cuedrecall.store.rows import agent_summaries, page_window


class PgBrowse:
    """Every agent with its counts and axes; a page of records, highest id first, keyset or offset paged."""

    if TYPE_CHECKING:  # provided by PgConnection and PgRecords

        def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]: ...
        def _select_records(self, kind: str, where: str, params: Sequence[Any], tail: str) -> list[Record]: ...

    def agents(self) -> list[AgentSummary]:
        """Every agent with a row or a profile: its counts, projects and channels (one grouped pass a table)."""
        return agent_summaries(self._read)

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
        given, after skipping ``offset`` rows, with a record time in ``period`` [start, end) when given."""
        size, offset = page_window(kind, scope, limit, offset)
        if size == 0:
            return []
        where, params = POSTGRES.scope_where(scope, "t", kind)
        if before_id is not None:
            where += " AND t.id < %s"
            params.append(before_id)
        pwhere, pparams = POSTGRES.period_where("t", period)
        return self._select_records(
            kind, where + pwhere, [*params, *pparams, size, offset], "ORDER BY t.id DESC LIMIT %s OFFSET %s"
        )
