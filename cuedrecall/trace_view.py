"""``cuedrecall recall "query" --trace``: the recall trace as readable tables.

The trace holds refs, ranks, scores and reasons, never stored text, and these
tables show only what it holds. Every field is read defensively: a trace from
another version, or one whose coverage ledger failed, still prints.

``write_page`` writes what ``cuedrecall view`` renders: the page holds the trace's
refs and scopes, so it is private, 0600 whatever the umask, never written through a
symbolic link, a pipe or a device.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from cuedrecall.recall.trace_schema import SECTIONS, Trace

_SHOWN = frozenset(SECTIONS)  # every section the trace declares; anything else prints as extra


def _num(value: Any, digits: int = 4) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return f"{value:.{digits}g}"
    return str(value)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def print_trace(trace: Trace, console: Console) -> None:
    """Print every part of a recall trace as rich tables (arms side by side, fusion, gate, cuts, ...)."""
    if not isinstance(trace, dict):
        console.print(f"[red]no trace to show[/] ({type(trace).__name__})")
        return
    console.rule(f"[bold]recall trace v{trace.get('trace_version', '?')}")
    _header(trace, console)
    _arms(trace, console)
    _fusion(trace, console)
    _gate(trace, console)
    _cuts(trace, console)
    _loop(trace, console)
    _conflicts(trace, console)
    _coverage(trace, console)
    _timing(trace, console)
    _other(trace, console)


def _header(trace: Trace, console: Console) -> None:
    table = Table(title="policy, scope, request, config", show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    policy: Mapping[str, Any] = trace.get("policy") or {}
    propagation = f", propagation {policy['propagation']}" if policy.get("propagation") else ""
    table.add_row("policy", f"process {policy.get('process', '-')}, scoring {policy.get('scoring', '-')}{propagation}")
    table.add_row("server_version", str(trace.get("server_version")))
    for key, section in (
        ("scope", trace.get("scope")),
        ("request", trace.get("request")),
        ("config", trace.get("config")),
    ):
        value = section or {}
        table.add_row(key, ", ".join(f"{k}={_compact(v)}" for k, v in value.items()) or "-")
    console.print(table)


def _arms(trace: Trace, console: Console) -> None:
    arms = {name: list(hits or []) for name, hits in (trace.get("arms") or {}).items()}
    if not arms:
        console.print("[dim]arms: none recorded[/]")
        return
    table = Table(title="arms (rank: ref raw score)")
    table.add_column("rank", justify="right")
    cells: dict[str, dict[int, str]] = {}
    for name, hits in arms.items():
        table.add_column(f"{name} ({len(hits)})", overflow="fold")
        cells[name] = {}
        for position, hit in enumerate(hits):
            rank = hit.get("rank", position)
            cells[name][rank if isinstance(rank, int) else position] = f"{hit.get('ref')} {_num(hit.get('raw'))}"
    ranks = sorted({rank for column in cells.values() for rank in column})
    for rank in ranks:
        table.add_row(str(rank), *(cells[name].get(rank, "") for name in arms))
    if not ranks:
        table.add_row("-", *("(empty)" for _ in arms))
    console.print(table)


def _fusion(trace: Trace, console: Console) -> None:
    rows = trace.get("fusion") or []
    if not rows:
        console.print("[dim]fusion: none (blank query or no candidates)[/]")
        return
    voters: list[str] = []
    for row in rows:
        for arm in row.get("votes") or {}:
            if arm not in voters:
                voters.append(arm)
    scoring = {name: factors for name, factors in (trace.get("scoring") or {}).items() if isinstance(factors, dict)}
    table = Table(title=f"fusion ({(trace.get('request') or {}).get('mode', '?')}): fused score and each arm's vote")
    table.add_column("#", justify="right")
    table.add_column("ref")
    table.add_column("fused", justify="right")
    for arm in voters:
        table.add_column(arm, justify="right")
    for name in scoring:
        table.add_column(name, justify="right")
    for place, row in enumerate(rows, 1):
        votes = row.get("votes") or {}
        table.add_row(
            str(place),
            str(row.get("ref")),
            _num(row.get("score")),
            *(_num(votes[arm]) if arm in votes else "" for arm in voters),
            *(_num(factors.get(row.get("ref"))) if row.get("ref") in factors else "" for factors in scoring.values()),
        )
    console.print(table)


def _gate(trace: Trace, console: Console) -> None:
    gate: Mapping[str, Any] = trace.get("gate") or {}
    decisions = gate.get("decisions") or []
    caption = (
        f"pool {gate.get('pool', '-')}, heuristic minimum {_num(gate.get('heuristic_min'))}, "
        f"calibrated {_compact(gate.get('calibrated') or {})}, gate_fallback {_num(gate.get('gate_fallback'))}"
    )
    table = Table(title="quality gate", caption=caption)
    for column in ("ref", "signal", "score", "threshold", "origin", "decision"):
        table.add_column(column, justify="right" if column in ("score", "threshold") else "left")
    for d in decisions:
        verdict = "[green]passed[/]" if d.get("passed") else f"[red]dropped: {d.get('reason') or 'not passed'}[/]"
        table.add_row(
            str(d.get("ref")),
            str(d.get("signal")),
            _num(d.get("score")),
            _num(d.get("threshold")),
            str(d.get("origin") or "-"),
            verdict,
        )
    if not decisions:
        table.add_row("-", "", "", "", "", "no candidates")
    console.print(table)


def _cuts(trace: Trace, console: Console) -> None:
    """What autocut and the count cut dropped, and why; then the final order."""
    autocut = trace.get("autocut") or {}
    order: Mapping[str, Any] = trace.get("order") or {}
    before = [item.get("ref") if isinstance(item, dict) else item for item in order.get("before_cut") or []]
    limit = order.get("limit")
    cut = set(order.get("cut_by_count") or [])
    reserved = {item.get("ref"): item.get("kind") for item in trace.get("reservation") or []}
    table = Table(title="after the gate: autocut, the count cut, held seats")
    for column in ("place", "ref", "fate", "why"):
        table.add_column(column, overflow="fold")
    for dropped in autocut.get("dropped") or []:
        table.add_row(
            "-",
            str(dropped),
            "[red]dropped by autocut[/]",
            f"largest relative score gap, cut at position {autocut.get('at')}",
        )
    for place, ref in enumerate(before, 1):
        if ref in cut or (limit is not None and place > limit):
            table.add_row(str(place), str(ref), "[yellow]cut by count[/]", f"place {place} > limit {limit}")
        else:
            table.add_row(str(place), str(ref), "[green]returned[/]", f"within limit {limit}")
    for seat, kind in reserved.items():
        table.add_row("seat", str(seat), "[cyan]returned by a held seat[/]", f"kind {kind}")
    if not before and not reserved and not autocut.get("dropped"):
        table.add_row("-", "-", "nothing admitted", "")
    fired = autocut.get("fired")
    console.print(table)
    console.print(
        f"autocut: {'fired at ' + str(autocut.get('at')) if fired else 'did not fire'}; "
        f"count cut: limit {limit}, {len(cut)} cut"
    )


def _loop(trace: Trace, console: Console) -> None:
    stages = trace.get("stages") or []
    table = Table(title="stages of the loop")
    for column in ("stage", "searched", "confidence", "period", "found", "next"):
        table.add_column(column, overflow="fold")
    for s in stages:
        period = s.get("period")
        table.add_row(
            str(s.get("stage")),
            str(s.get("searched", "-")),
            str(s.get("confidence", "-")),
            " to ".join(period) if isinstance(period, list) else "-",
            _num(s.get("found")),
            str(s.get("next") or "-"),
        )
    console.print(table)
    cue = trace.get("cue")
    if cue:
        lifted = ", ".join(f"{m.get('ref')} {m.get('from')}->{m.get('to')}" for m in cue.get("lifted") or []) or "none"
        console.print(
            f"time cue: bound L={cue.get('bound')}, confidence {cue.get('confidence')}, moved {lifted}, "
            f"seated {', '.join(cue.get('seated') or []) or 'none'}"
        )
    propagation = trace.get("propagation")
    if propagation:
        seated = (
            ", ".join(
                f"{s.get('ref')} (fused_rank {s.get('fused_rank')}, cosine_rank {s.get('cosine_rank')})"
                for s in propagation.get("seated") or []
            )
            or "none"
        )
        console.print(
            f"propagation seat ({propagation.get('policy')}): anchor {propagation.get('anchor', '-')}, "
            f"depth {propagation.get('depth')}, {propagation.get('candidates')} candidates, "
            f"seated {seated}"
        )
    if trace.get("cue_ignored"):
        ignored = trace["cue_ignored"]
        console.print(f"time cue ignored: {ignored.get('reason')} (period {_compact(ignored.get('period'))})")
    suspected = trace.get("suspected") or []
    if suspected:
        table = Table(title="suspected during the recall")
        for column in ("stage", "code", "reason", "action"):
            table.add_column(column, overflow="fold")
        for suspect in suspected:
            table.add_row(
                str(suspect.get("stage")),
                str(suspect.get("code")),
                str(suspect.get("reason")),
                str(suspect.get("action", "-")),
            )
        console.print(table)
    else:
        console.print("suspected: nothing")


def _conflicts(trace: Trace, console: Console) -> None:
    """stale-v1's conflicts among the returned rows (recall/stale.py); nothing when they agreed."""
    for conflict in trace.get("conflicts") or []:
        current = conflict.get("current") or "undecided among " + ", ".join(conflict.get("undecided") or [])
        stale = ", ".join(conflict.get("stale") or []) or "none"
        console.print(f"conflict ({conflict.get('why')}): current {current}, stale {stale}")


def _coverage(trace: Trace, console: Console) -> None:
    coverage = trace.get("coverage")
    if coverage is None:
        console.print("[dim]coverage: not recorded[/]")
        return
    if "error" in coverage:
        console.print(f"[red]coverage ledger could not be built: {coverage['error']}[/]")
        return
    parts = coverage.get("parts") or []
    covered = coverage.get("covered_by") or []
    uncovered = coverage.get("uncovered") or []
    omitted = f", {coverage['parts_omitted']} parts omitted" if coverage.get("parts_omitted") else ""
    table = Table(
        title=f"coverage ({coverage.get('normalization', '?')}): {len(parts)} parts, "
        f"{len(uncovered)} uncovered, {coverage.get('records', 0)} records read{omitted}",
        caption="spans index the normalized question; the trace holds no text",
    )
    for column in ("part", "span", "kind", "covered by"):
        table.add_column(column, overflow="fold")
    for i, part in enumerate(parts):
        refs = covered[i] if i < len(covered) else []
        span = part.get("span") or ["?", "?"]
        table.add_row(
            str(i), f"{span[0]}:{span[1]}", str(part.get("kind")), ", ".join(refs) if refs else "[red]none[/]"
        )
    console.print(table)


def _timing(trace: Trace, console: Console) -> None:
    timing = trace.get("timing_ms") or {}
    table = Table(title="timing (ms)")
    for stage in timing:
        table.add_column(stage, justify="right")
    table.add_row(*(_num(v, 6) for v in timing.values()))
    console.print(table)


def _other(trace: Trace, console: Console) -> None:
    """Fields this view does not know (a newer trace adds fields without a version bump)."""
    extra = {key: value for key, value in trace.items() if key not in _SHOWN}
    for key, value in extra.items():
        console.print(f"{key}: {_compact(value)}")


def write_page(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` as a private file (0600), never through a link or into a pipe; OSError
    saying why otherwise."""
    flags = (
        os.O_WRONLY
        | os.O_CREAT
        | getattr(os, "O_NOFOLLOW", 0)
        | getattr(os, "O_NONBLOCK", 0)
        | getattr(os, "O_CLOEXEC", 0)
    )
    try:
        fd = os.open(path, flags, 0o600)
    except OSError:
        if os.path.islink(path):
            raise OSError(f"{path} is a symbolic link: the page is not written through it") from None
        raise
    with os.fdopen(fd, "wb") as out:
        if not stat.S_ISREG(os.fstat(out.fileno()).st_mode):
            raise OSError(f"{path} is not a regular file")
        os.fchmod(out.fileno(), 0o600)
        out.truncate(0)
        out.write(text.encode("utf-8"))
