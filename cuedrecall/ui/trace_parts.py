"""The trace view's sections, one function each, and the per-ref journeys the page follows a row with.

Each function takes the trace (read defensively: any field may be missing) and
returns escaped markup holding refs, ranks, scores and reasons only. Places and
ranks are shown counting from 1; the trace counts from 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cuedrecall.ui.markup import compact, el, esc, num, ref

Trace = Mapping[str, Any]


def section(title: str, *body: str, cls: str = "") -> str:
    """One stage's box: a heading and its body (markup)."""
    return el("section", el("h2", esc(title)), *body, cls=f"stage {cls}".strip())


def as_list(value: Any) -> list[Any]:
    """A list field as a list; anything else (missing, malformed) as an empty one."""
    return list(value) if isinstance(value, (list, tuple)) else []


def arm_hits(trace: Trace) -> dict[str, list[Mapping[str, Any]]]:
    """arm name -> its hits that are objects."""
    arms = trace.get("arms") or {}
    return (
        {str(n): [h for h in as_list(hits) if isinstance(h, Mapping)] for n, hits in arms.items()}
        if isinstance(arms, Mapping)
        else {}
    )


def rank_of(hit: Mapping[str, Any], position: int) -> int:
    """A hit's 0-based rank, or its position on the list when the trace gives none."""
    rank = hit.get("rank")
    return rank if isinstance(rank, int) and not isinstance(rank, bool) else position


def before_cut(trace: Trace) -> list[str]:
    """The order before the count cut, as refs (this project writes refs, CPersona {ref} objects)."""
    order = trace.get("order") or {}
    return [str(i.get("ref") if isinstance(i, Mapping) else i) for i in as_list(order.get("before_cut"))]


# -- journeys: where each ref went ---------------------------------------------------------


def journeys(trace: Trace) -> dict[str, list[str]]:
    """ref -> the steps it went through, in stage order (what a click on it shows)."""
    out: dict[str, list[str]] = {}

    def say(r: Any, step: str) -> None:
        out.setdefault(str(r), []).append(step)

    for name, hits in arm_hits(trace).items():
        for position, hit in enumerate(hits):
            say(hit.get("ref"), f"{name} #{rank_of(hit, position) + 1}")
    for place, row in enumerate(as_list(trace.get("fusion")), 1):
        if isinstance(row, Mapping):
            say(row.get("ref"), f"fused #{place} ({num(row.get('score'))})")
    for d in as_list((trace.get("gate") or {}).get("decisions")):
        if isinstance(d, Mapping):
            say(d.get("ref"), "gate: passed" if d.get("passed") else f"gate: dropped ({d.get('reason') or 'below'})")
    for r in as_list((trace.get("autocut") or {}).get("dropped")):
        say(r, "dropped by autocut")
    limit = (trace.get("order") or {}).get("limit")
    for place, r in enumerate(before_cut(trace), 1):
        cut = isinstance(limit, int) and place > limit
        say(r, f"cut by count at #{place} (limit {limit})" if cut else f"kept at #{place}")
    for move in as_list((trace.get("cue") or {}).get("lifted")):
        if isinstance(move, Mapping) and isinstance(move.get("from"), int) and isinstance(move.get("to"), int):
            say(move.get("ref"), f"moved by the cue #{move['from'] + 1} \u2192 #{move['to'] + 1}")
    for seat in as_list(trace.get("reservation")):
        if isinstance(seat, Mapping):
            say(seat.get("ref"), f"returned by a held seat ({seat.get('kind')})")
    coverage = trace.get("coverage") or {}
    held: dict[str, int] = {}
    for refs in as_list(coverage.get("covered_by") if isinstance(coverage, Mapping) else None):
        for r in as_list(refs):
            held[str(r)] = held.get(str(r), 0) + 1
    for r, count in held.items():
        say(r, f"holds {count} part{'s' if count != 1 else ''} of the question")
    return out


def add_reconstruct_journeys(out: dict[str, list[str]], trace: Trace, items: Sequence[Mapping[str, Any]]) -> None:
    """A reconstruct's steps after its recall: a candidate, a cluster, an item's head or claim."""
    for r in as_list(trace.get("candidate_refs")):
        out.setdefault(str(r), []).append("reconstruct candidate")
    for number, cluster in enumerate(as_list(trace.get("clusters")), 1):
        for r in as_list(cluster.get("refs") if isinstance(cluster, Mapping) else None):
            out.setdefault(str(r), []).append(f"cluster {number}")
    for number, item in enumerate(items, 1):
        out.setdefault(str(item.get("head_ref")), []).append(f"head of item {number}")
        for claim in item.get("claims") or []:
            if claim.get("ref") != item.get("head_ref"):
                out.setdefault(str(claim.get("ref")), []).append(f"claim of item {number}")


# -- the arms, the fusion, the gate, the cuts ------------------------------------------------


def arms(trace: Trace) -> str:
    """The arms side by side: one column per arm, one row per rank, each cell the ref and its raw score."""
    found = arm_hits(trace)
    if not found:
        return section("arms", el("p", esc("no arm recorded"), cls="empty"))
    cells: dict[str, dict[int, Mapping[str, Any]]] = {}
    for name, hits in found.items():
        cells[name] = {rank_of(hit, position): hit for position, hit in enumerate(hits)}
    ranks = sorted({rank for column in cells.values() for rank in column})
    head = el("tr", el("th", "#"), *(el("th", esc(f"{name} ({len(found[name])})")) for name in found))
    rows = [head]
    for rank in ranks:
        row = [el("td", str(rank + 1), cls="n")]
        for name in found:
            hit = cells[name].get(rank)
            row.append(
                el("td", ref(hit.get("ref")) + el("small", esc(f" {num(hit.get('raw'))}")), data_ref=hit.get("ref"))
                if hit
                else el("td", "")
            )
        rows.append(el("tr", *row))
    excluded = as_list(trace.get("excluded"))
    note = (
        el("p", esc("left out as the caller's own context: "), " ".join(ref(r) for r in excluded)) if excluded else ""
    )
    return section("arms: rank, ref and raw score", el("div", el("table", *rows, cls="arms"), cls="scroll"), note)


def fusion(trace: Trace) -> str:
    rows_in = [r for r in as_list(trace.get("fusion")) if isinstance(r, Mapping)]
    mode = (trace.get("request") or {}).get("mode", "?")
    if not rows_in:
        return section(f"fusion ({mode})", el("p", esc("none: a blank query, or no candidate"), cls="empty"))
    voters: list[str] = []
    for row in rows_in:
        for arm in row.get("votes") or {}:
            if arm not in voters:
                voters.append(arm)
    scoring = {n: f for n, f in (trace.get("scoring") or {}).items() if isinstance(f, Mapping)}
    top = (
        max((v for row in rows_in for v in (row.get("votes") or {}).values() if isinstance(v, (int, float))), default=0)
        or 1
    )
    rows = [
        el(
            "tr",
            el("th", "#"),
            el("th", "ref"),
            el("th", "fused"),
            *(el("th", esc(a)) for a in voters),
            *(el("th", esc(n)) for n in scoring),
        )
    ]
    for place, row in enumerate(rows_in, 1):
        votes = row.get("votes") or {}
        cells = [el("td", str(place), cls="n"), el("td", ref(row.get("ref"))), el("td", num(row.get("score")), cls="n")]
        for arm in voters:
            vote = votes.get(arm)
            cells.append(
                el("td", _bar(vote / top) + esc(num(vote)), cls="n vote")
                if isinstance(vote, (int, float))
                else el("td", "")
            )
        cells += [el("td", esc(num(f.get(row.get("ref")))), cls="n") for f in scoring.values()]
        rows.append(el("tr", *cells, data_ref=row.get("ref")))
    return section(
        f"fusion ({mode}): the fused score and each arm's contribution",
        el("div", el("table", *rows, cls="fusion"), cls="scroll"),
    )


def _bar(share: float, *, cls: str = "vbar") -> str:
    width = max(0.0, min(1.0, share)) * 100
    return el("span", el("span", "", style=f"width:{width:.1f}%"), cls=cls)


def gate(trace: Trace) -> str:
    """The gate line: each decision against its bar (the threshold sits at the middle), and the reason of a drop."""
    g = trace.get("gate") or {}
    bars = g.get("bar") or {}
    summary = [
        f"pool {g.get('pool', '-')}",
        f"heuristic minimum {num(g.get('heuristic_min'))}",
        f"calibrated {compact(g.get('calibrated') or {})}",
        f"gate fallback {num(g.get('gate_fallback'))}",
    ]
    if isinstance(bars, Mapping) and bars:
        summary.append(
            "bars "
            + ", ".join(
                f"{s} {num(b.get('threshold'))} ({b.get('origin')})" for s, b in bars.items() if isinstance(b, Mapping)
            )
        )
    rows = [
        el("tr", *(el("th", esc(c)) for c in ("ref", "signal", "score", "threshold", "origin", "line", "decision")))
    ]
    for d in as_list(g.get("decisions")):
        if not isinstance(d, Mapping):
            continue
        score, bar = d.get("score"), d.get("threshold")
        line = (
            _bar(score / (2 * bar), cls="gateline")
            if isinstance(score, (int, float)) and isinstance(bar, (int, float)) and bar > 0
            else ""
        )
        passed = bool(d.get("passed"))
        verdict = "passed" if passed else f"dropped: {d.get('reason') or 'not passed'}"
        lexical = " (lexical)" if d.get("lexical") else ""
        rows.append(
            el(
                "tr",
                el("td", ref(d.get("ref"))),
                el("td", esc(f"{d.get('signal')}{lexical}")),
                el("td", esc(num(score)), cls="n"),
                el("td", esc(num(bar)), cls="n"),
                el("td", esc(d.get("origin") or "-")),
                el("td", line),
                el("td", esc(verdict), cls="decision " + ("pass" if passed else "drop")),
                data_ref=d.get("ref"),
            )
        )
    fallback = as_list(g.get("fallback_admitted"))
    extra = el("p", esc("admitted by the gate fallback: "), " ".join(ref(r) for r in fallback)) if fallback else ""
    return section(
        "the quality gate", el("p", esc("; ".join(summary)), cls="summary"), el("table", *rows, cls="gate"), extra
    )


def cuts(trace: Trace) -> str:
    """What autocut and the count cut dropped, and the order the count cut read."""
    autocut = trace.get("autocut") or {}
    order = trace.get("order") or {}
    limit = order.get("limit")
    cut = {str(r) for r in as_list(order.get("cut_by_count"))}
    rows = [el("tr", el("th", "place"), el("th", "ref"), el("th", "fate"))]
    for r in as_list(autocut.get("dropped")):
        rows.append(
            el(
                "tr",
                el("td", "-"),
                el("td", ref(r)),
                el("td", esc(f"dropped by autocut (largest relative score gap, at {autocut.get('at')})"), cls="drop"),
                data_ref=r,
            )
        )
    for place, r in enumerate(before_cut(trace), 1):
        dropped = r in cut or (isinstance(limit, int) and place > limit)
        fate = f"cut by count (place {place} > limit {limit})" if dropped else "kept"
        rows.append(
            el(
                "tr",
                el("td", str(place), cls="n"),
                el("td", ref(r)),
                el("td", esc(fate), cls="drop" if dropped else "pass"),
                data_ref=r,
                cls="limit" if isinstance(limit, int) and place == limit else None,
            )
        )
    fired = f"fired at {autocut.get('at')}" if autocut.get("fired") else "did not fire"
    return section(
        "autocut and the count cut",
        el("p", esc(f"autocut {fired}; count cut at limit {limit}, {len(cut)} cut"), cls="summary"),
        el("table", *rows, cls="cuts"),
    )


def seats(trace: Trace) -> str:
    """The held seats (rows admitted after the answer: block, keyword, far, cue, propagation, relief)."""
    held = [s for s in as_list(trace.get("reservation")) if isinstance(s, Mapping)]
    body = (
        [el("p", esc("no seat was held"), cls="empty")]
        if not held
        else [
            el(
                "table",
                el("tr", el("th", "ref"), el("th", "seat")),
                *(
                    el("tr", el("td", ref(s.get("ref"))), el("td", esc(s.get("kind"))), data_ref=s.get("ref"))
                    for s in held
                ),
                cls="seats",
            )
        ]
    )
    block = trace.get("block")
    if isinstance(block, Mapping):
        body.append(el("p", esc(f"block arm order: {block.get('order')}")))
    propagation = trace.get("propagation")
    if isinstance(propagation, Mapping):
        seated = [s for s in as_list(propagation.get("seated")) if isinstance(s, Mapping)]
        body.append(
            el(
                "p",
                esc(f"propagation ({propagation.get('policy')}): anchor "),
                ref(propagation.get("anchor")),
                esc(f", depth {propagation.get('depth')}, {propagation.get('candidates')} candidates; seated: "),
                " ".join(
                    ref(s.get("ref")) + esc(f" (fused #{s.get('fused_rank')}, cosine #{s.get('cosine_rank')})")
                    for s in seated
                )
                or "none",
            )
        )
    return section("held seats", *body)
