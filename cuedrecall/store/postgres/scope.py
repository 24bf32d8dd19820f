"""The WHERE fragments of ``store/predicates.py`` (isolation, one agent, a listing, the cue period) in
PostgreSQL's parameter style: the same rules, written once there, with %s placeholders."""

from __future__ import annotations

from typing import Any

from cuedrecall.store import predicates
from cuedrecall.store.base import Period, Scope


def scope_where(scope: Scope, alias: str, kind: str) -> tuple[str, list[Any]]:
    """``predicates.scope_where`` with %s placeholders."""
    return predicates.scope_where(scope, alias, kind, mark="%s")


def period_where(alias: str, period: Period | None) -> tuple[str, list[Any]]:
    """``predicates.period_where`` with %s placeholders."""
    return predicates.period_where(alias, period, mark="%s")


def agent_where(agent_id: str, alias: str = "") -> tuple[str, list[Any]]:
    """``predicates.agent_where`` with %s placeholders."""
    return predicates.agent_where(agent_id, alias, mark="%s")


def listing_where(agent_id: str, project_id: str | None) -> tuple[str, list[Any]]:
    """``predicates.listing_where`` with %s placeholders."""
    return predicates.listing_where(agent_id, project_id, mark="%s")
