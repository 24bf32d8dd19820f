"""The isolation predicate in PostgreSQL's parameter style: the SQLite store's rule, one source of it."""

from __future__ import annotations

from typing import Any

from cuedrecall.store.arms import scope_where as _sqlite_scope_where
from cuedrecall.store.base import Period, Scope


def scope_where(scope: Scope, alias: str, kind: str) -> tuple[str, list[Any]]:
    """``store.arms.scope_where`` with %s placeholders: agent exact, project and channel with the shared pool,
    the source rule on memories (exact, or a case-sensitive prefix through substr)."""
    where, params = _sqlite_scope_where(scope, alias, kind)
    return where.replace("?", "%s"), params


def period_where(alias: str, period: Period | None) -> tuple[str, list[Any]]:
    """The cue period [start, end) on the record time, inside the arm's query (" AND ...")."""
    if period is None:
        return "", []
    return f" AND {alias}.ts_epoch >= %s AND {alias}.ts_epoch < %s", [period[0], period[1]]
