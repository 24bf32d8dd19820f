"""check_health, deep_check, get_queue_status, get_session_findings.

A check is one small function that looks and answers a ``Finding`` (see ``run``).
A repair, where a check has one, mends what its check looks for and answers how
many rows it repaired; the check then runs again, so what a fix run reports as
left is what the store holds after the commit. Two registries (``HEALTH_CHECKS``
in ``registry``, ``DEEP_CHECKS`` in ``deep``) fix the run order. While the
caller's session is paused a fix only looks. Every read and write goes through
the Store's maintenance methods.
"""

from __future__ import annotations

from typing import Any

from cuedrecall.errors import ToolArgumentError
from cuedrecall.handlers.blocks import RETRY_DELAY_S, building
from cuedrecall.handlers.health.deep import DEEP_CHECKS, NOT_IMPLEMENTED
from cuedrecall.handlers.health.registry import HEALTH_CHECKS, not_run
from cuedrecall.handlers.health.run import SAMPLE, Check, Finding, Repair, Run
from cuedrecall.handlers.reembed import REEMBED
from cuedrecall.runtime import Runtime
from cuedrecall.sessions import SessionKey
from cuedrecall.store.base import TASK_ATTEMPTS

__all__ = ["DEEP_CHECKS", "HEALTH_CHECKS", "check_health", "deep_check", "queue_status", "session_findings"]

SEVERITIES = ("info", "warn", "critical")


def queue_status(rt: Runtime) -> dict[str, Any]:
    """The background queue (block builds, the backfill, the re-embedding): how many tasks wait, claimed ones
    included, in all and by kind. Off while blocks are not built and nothing is re-embedded."""
    if not building(rt) and not (rt.embedder.available and rt.store.pending_tasks(REEMBED)):
        return {"enabled": False, "pending": 0}
    return {
        "enabled": True,
        "pending": rt.store.pending_tasks(),
        "pending_by_kind": rt.store.pending_by_kind(),
        "max_retries": TASK_ATTEMPTS,
        "retry_delay": int(RETRY_DELAY_S),
    }


def _selected(checks: list[str], registry: dict[str, Any], tolerated: dict[str, str] | None = None) -> list[str]:
    """The named checks in run order (all for none); ToolArgumentError naming any unknown one.

    A ``tolerated`` name is not refused, and not run either.
    """
    unknown = [name for name in checks if name not in registry and name not in (tolerated or {})]
    if unknown:
        raise ToolArgumentError(
            f"argument 'checks': unknown check(s) {', '.join(map(repr, unknown))} (known: {', '.join(registry)})"
        )
    return [name for name in registry if not checks or name in checks]


def _skip_reason(rt: Runtime, fix: bool, session_key: SessionKey) -> str:
    """Why a fix only looks ("" when it may repair): the caller's session is paused."""
    left = rt.pauses.remaining(session_key, rt.clock())
    if not fix or left <= 0:
        return ""
    return (
        f"no-persist: persistence is paused for this session ({round(left)} s left): the checks ran, nothing was "
        "repaired"
    )


def _with_skip(out: dict[str, Any], skipped: str) -> dict[str, Any]:
    """The answer, saying why nothing was repaired when a paused session asked for a fix."""
    return {**out, "repairs_skipped": True, "repairs_skip_reason": skipped} if skipped else out


def _fixed(repaired: bool, count: int) -> dict[str, Any]:
    """``fixed``: whether the repairs ran (CPersona's key, a boolean); ``fixed_count``: the rows they repaired."""
    return {"fixed": repaired, "fixed_count": count}


def _report(found: Finding) -> dict[str, Any]:
    """A finding as the tools report it: count, detail, the first SAMPLE refs, any further keys."""
    out: dict[str, Any] = {"count": found.count, "detail": found.detail}
    refs = [item["ref"] for item in found.items if "ref" in item][:SAMPLE]
    return {**out, **({"sample_refs": refs} if refs else {}), **found.extra}


def _checked(run: Run, check: Check, repair: Repair | None) -> tuple[dict[str, Any], int]:
    """One check's report, repaired when a repair is given and there is something to repair; and what is left."""
    found = check(run)
    report = _report(found)
    if repair is None or not found.count:
        return report, found.count
    fixed = repair(run, found)
    left = check(run).count
    return {**report, "fixed": fixed, **({"remaining": left} if left else {})}, left


def _verdict(open_severities: list[str]) -> str:
    """unhealthy while a critical issue is left, degraded while a warning is; info never degrades."""
    if "critical" in open_severities:
        return "unhealthy"
    return "degraded" if "warn" in open_severities else "healthy"


def _health_issues(run: Run, names: list[str], repairing: bool) -> tuple[list[dict[str, Any]], list[str]]:
    """The issues the named checks find (repaired when ``repairing``), and the severities of those left open."""
    issues, open_severities = [], []
    for name in names:
        severity, check, repair = HEALTH_CHECKS[name]
        report, left = _checked(run, check, repair if repairing else None)
        if report["count"]:
            issues.append({"check": name, "type": name, "severity": severity, **report})  # type: CPersona's key
            open_severities += [severity] if left else []
    return issues, open_severities


def check_health(rt: Runtime, agent_id: str, fix: bool, checks: list[str], session_key: SessionKey) -> dict[str, Any]:
    """Run the named checks (all for none) over one agent's rows ("" = every agent), repairing with ``fix``.

    ``severity_summary`` counts the issues found; ``status`` is the verdict on what is
    left after the repairs: unhealthy while a critical issue is left, degraded while a
    warning is, info never degrades. The file and the indexes are shared by every agent:
    their own integrity checks are reported whatever the agent.
    """
    selected = _selected(checks, HEALTH_CHECKS)
    off = {name: reason for name, reason in not_run(rt).items() if name in selected}
    names = [name for name in selected if name not in off]
    skipped = _skip_reason(rt, fix, session_key)
    issues, open_severities = _health_issues(Run(rt, agent_id), names, fix and not skipped)
    stats = rt.store.maintenance_counts(agent_id)
    out = {
        "total_memories": stats["memories"],
        "issues": issues,
        "severity_summary": {s: sum(1 for i in issues if i["severity"] == s) for s in SEVERITIES},
        "status": _verdict(open_severities),
        **_fixed(fix and not skipped, sum(i.get("fixed", 0) for i in issues)),
        "checks_run": names,
        "stats": stats,
        **({"not_run": off} if off else {}),
    }
    return _with_skip(out, skipped)


def deep_check(rt: Runtime, agent_id: str, fix: bool, checks: list[str], session_key: SessionKey) -> dict[str, Any]:
    """The slower checks of one agent's memory; with ``fix``, the repairs that are safe (see DEEP_CHECKS).

    A check CPersona 2.6 has and cuedrecall does not (NOT_IMPLEMENTED) is answered under
    ``not_run`` with the reason, not refused; a name neither knows is refused.
    """
    names = _selected(checks, DEEP_CHECKS, NOT_IMPLEMENTED)
    skipped = _skip_reason(rt, fix, session_key)
    run = Run(rt, agent_id)
    results = {}
    for name in names:
        check, repair = DEEP_CHECKS[name]
        results[name] = _checked(run, check, repair if fix and not skipped else None)[0]
    not_run = {name: NOT_IMPLEMENTED[name] for name in checks if name in NOT_IMPLEMENTED}
    out = {
        "agent_id": agent_id,
        "checks_run": names,
        "results": results,
        **_fixed(fix and not skipped, sum(r.get("fixed", 0) for r in results.values())),
        **({"not_run": not_run} if not_run else {}),
    }
    return _with_skip(out, skipped)


def session_findings(rt: Runtime, per_kind_limit: int, include_summary: bool) -> dict[str, Any]:
    """What every check_health check finds in the whole store, nothing repaired: a list of findings, each with
    its kind (the check) and severity, at most ``per_kind_limit`` a kind, and the counts by kind and severity."""
    run = Run(rt, "", limit=per_kind_limit)
    findings: list[dict[str, Any]] = []
    counts: dict[str, int] = {}
    by_severity = dict.fromkeys(("info", "warn", "critical"), 0)
    for name, (severity, check, _) in HEALTH_CHECKS.items():
        found = check(run)
        if found.count:
            counts[name] = found.count
            by_severity[severity] += found.count
            findings += [{"kind": name, "severity": severity, **item} for item in found.items[:per_kind_limit]]
    out = {
        "findings": findings,
        "counts_by_kind": counts,
        "counts_by_severity": by_severity,
        "per_kind_limit": per_kind_limit,
        "capped_kinds": [n for n, c in counts.items() if c > per_kind_limit],
        "total": sum(counts.values()),
    }
    return {**out, "summary": _summary(rt, counts)} if include_summary else out


def _summary(rt: Runtime, counts: dict[str, int]) -> str:
    """One short paragraph: the store's size, what was found by kind and severity, which of it a fix repairs."""
    stats = rt.store.maintenance_counts("")
    size = f"The store holds {stats['memories']} memories and {stats['episodes']} episodes."
    if not counts:
        return f"{size} check_health finds nothing to report."
    found = ", ".join(f"{n} {name} ({HEALTH_CHECKS[name][0]})" for name, n in counts.items())
    mendable = [name for name in counts if HEALTH_CHECKS[name][2] is not None]
    repair = (
        f" check_health with fix: true repairs {', '.join(mendable)}."
        if mendable
        else " None of it is repaired automatically."
    )
    return (
        f"{size} check_health finds {sum(counts.values())} problem(s) of {len(counts)} kind(s): {found}. "
        f"Nothing was repaired.{repair}"
    )
