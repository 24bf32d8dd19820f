"""The WHERE fragments both SQL stores build alike: the isolation rule, one agent's rows, the cue period, a LIKE
pattern.

One piece of code per idea: the SQLite store (``?`` placeholders) and the PostgreSQL
store (``%s``) build these from here, each naming its placeholder ``mark`` (through
``Dialect.scope_where`` and its kin); only what the dialects
make different stays in a backend.
"""

from __future__ import annotations

from typing import Any

from cuedrecall.store.base import MEMORY, Period, Scope


def scope_where(scope: Scope, alias: str, kind: str, mark: str = "?") -> tuple[str, list[Any]]:
    """The isolation predicate of one table, applied inside every query: agent exact, project and channel with
    the shared pool, the source rule on memories (exact, or a case-sensitive prefix through substr)."""
    clauses = [f"{alias}.agent_id = {mark}"]
    params: list[Any] = [scope.agent_id]  # strings, and the length of a source prefix
    if scope.project_id is not None:
        if scope.project_id:
            clauses.append(f"{alias}.project_id IN ({mark}, '')")
            params.append(scope.project_id)
        else:
            clauses.append(f"{alias}.project_id = ''")
    if scope.channel:
        clauses.append(f"{alias}.channel IN ({mark}, '')")
        params.append(scope.channel)
    if scope.source_id and kind == MEMORY:
        if scope.source_exact:
            clauses.append(f"{alias}.source_id = {mark}")
            params.append(scope.source_id)
        else:
            # a case-sensitive prefix, as the vector index applies it (LIKE would fold ASCII case and widen the read)
            clauses.append(f"substr({alias}.source_id, 1, {mark}) = {mark}")
            params += [len(scope.source_id), scope.source_id]
    return " AND ".join(clauses), params


def agent_where(agent_id: str, alias: str = "", mark: str = "?") -> tuple[str, list[Any]]:
    """One agent's rows, or every row for agent "" (the maintenance reads' scope)."""
    column = f"{alias}.agent_id" if alias else "agent_id"
    return (f"{column} = {mark}", [agent_id]) if agent_id else ("1 = 1", [])


def listing_where(agent_id: str, project_id: str | None, mark: str = "?") -> tuple[str, list[Any]]:
    """``list_records``' rows (alias t): one agent's, or every agent's for ""; project None = every project, "" =
    the global pool only, "X" = X and the global pool."""
    clauses, params = ["1 = 1"], []
    if agent_id:
        clauses.append(f"t.agent_id = {mark}")
        params.append(agent_id)
    if project_id is not None:
        clauses.append(f"t.project_id IN ({mark}, '')" if project_id else "t.project_id = ''")
        params += [project_id] if project_id else []
    return " AND ".join(clauses), params


def period_where(alias: str, period: Period | None, mark: str = "?") -> tuple[str, list[Any]]:
    """The cue period [start, end) on the record time, inside the arm's query (" AND ..."); "" without one."""
    if period is None:
        return "", []
    return f" AND {alias}.ts_epoch >= {mark} AND {alias}.ts_epoch < {mark}", [period[0], period[1]]


def like_escape(text: str) -> str:
    """The text as a LIKE pattern's literal part, under ``ESCAPE '\\'``."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
