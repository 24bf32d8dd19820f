"""The trace view's time-cue and coverage sections: the period on a timeline, the moves, the stages, the ledger.

As in ``trace_parts``: each function reads the trace defensively and returns escaped
markup of refs, ranks, scores and reasons; places and ranks count from 1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from cuedrecall.clock import parse_instant
from cuedrecall.text import normalize
from cuedrecall.ui.markup import compact, el, esc, num, ref
from cuedrecall.ui.trace_parts import Trace, arm_hits, as_list, before_cut, rank_of, section

# -- the time cue ------------------------------------------------------------------------------


def cue(trace: Trace, times: Mapping[str, str], span: Sequence[str] | None) -> str:
    """The period on a timeline of the scope, the moves with their cue ranks, the stages and the revision."""
    c = trace.get("cue") if isinstance(trace.get("cue"), Mapping) else None
    ignored = trace.get("cue_ignored") if isinstance(trace.get("cue_ignored"), Mapping) else None
    given = (trace.get("request") or {}).get("time_cue")
    stages = [s for s in as_list(trace.get("stages")) if isinstance(s, Mapping)]
    if c is None and ignored is None and not given:
        return _stages(stages, trace) if len(stages) > 1 else ""
    out = [_timeline(given if isinstance(given, Mapping) else {}, stages, ignored, times, span, trace)]
    if ignored is not None:
        out.append(
            el(
                "p",
                esc(f"the cue was not used: {ignored.get('reason')} (its period {compact(ignored.get('period'))})"),
                cls="drop",
            )
        )
    if c is not None:
        cue_rank = {str(h.get("ref")): rank_of(h, i) for i, h in enumerate(arm_hits(trace).get("cue", []))}
        for name, hits in arm_hits(trace).items():
            if name.startswith("cue_stage_"):
                cue_rank.update({str(h.get("ref")): rank_of(h, i) for i, h in enumerate(hits)})
        rows = [el("tr", *(el("th", esc(h)) for h in ("ref", "from", "to", "moved", "cue rank")))]
        for move in as_list(c.get("lifted")):
            if (
                not isinstance(move, Mapping)
                or not isinstance(move.get("from"), int)
                or not isinstance(move.get("to"), int)
            ):
                continue
            r, start, end = str(move.get("ref")), move["from"] + 1, move["to"] + 1
            rank = cue_rank.get(r)
            rows.append(
                el(
                    "tr",
                    el("td", ref(r)),
                    el("td", f"#{start}", cls="n"),
                    el("td", f"#{end}", cls="n"),
                    el(
                        "td",
                        esc(f"{'up' if end < start else 'down'} {abs(start - end)}"),
                        cls="up" if end < start else "down",
                    ),
                    el("td", "-" if rank is None else f"#{rank + 1}", cls="n"),
                    data_ref=r,
                    cls="moved",
                )
            )
        seated = " ".join(
            ref(r) + esc(f" (cue rank #{cue_rank[str(r)] + 1})" if str(r) in cue_rank else "")
            for r in as_list(c.get("seated"))
        ) or esc("none")
        out += [
            el(
                "p",
                esc(
                    f"bound L = {c.get('bound')} places, confidence {c.get('confidence')}: no row moves up "
                    "more than L places"
                ),
                cls="summary",
            ),
            el("table", *rows, cls="moves") if len(rows) > 1 else el("p", esc("no row moved"), cls="empty"),
            el("p", esc("seated by the cue: "), seated),
        ]
    out.append(_stages(stages, trace))
    return section("the time cue", *out, cls="cue")


def _stages(stages: list[Mapping[str, Any]], trace: Trace) -> str:
    rows = [el("tr", *(el("th", esc(h)) for h in ("stage", "searched", "confidence", "period", "found", "next")))]
    for s in stages:
        period = s.get("period")
        rows.append(
            el(
                "tr",
                el("td", esc(s.get("stage")), cls="n"),
                el("td", esc(s.get("searched", "-"))),
                el("td", esc(s.get("confidence", "-"))),
                el("td", esc(" \u2192 ".join(map(str, period)) if isinstance(period, list) else "-")),
                el("td", esc(num(s.get("found"))), cls="n"),
                el("td", esc(s.get("next") or "-")),
                cls="revision" if (s.get("stage") or 0) >= 1 else None,
            )
        )
    revised = [s for s in stages if isinstance(s.get("stage"), int) and s["stage"] >= 1 and s.get("period")]
    note = (
        el(
            "p",
            esc(f"revised: the period held nothing, so stage {revised[0]['stage']} searched a wider one"),
            cls="revised",
        )
        if revised
        else ""
    )
    suspects = [s for s in as_list(trace.get("suspected")) if isinstance(s, Mapping)]
    listed = (
        el(
            "ul",
            *(
                el("li", esc(f"stage {s.get('stage')}: {s.get('code')}: {s.get('reason')}; {s.get('action', '-')}"))
                for s in suspects
            ),
            cls="suspected",
        )
        if suspects
        else el("p", esc("suspected: nothing"), cls="empty")
    )
    return el("h3", esc("stages of the loop")) + el("table", *rows, cls="stages") + note + listed


def _timeline(
    given: Mapping[str, Any],
    stages: list[Mapping[str, Any]],
    ignored: Mapping[str, Any] | None,
    times: Mapping[str, str],
    span: Sequence[str] | None,
    trace: Trace,
) -> str:
    """Bands on one axis: the scope's span (when known), the cue as given, each stage's period; the rows' times."""
    bands: list[tuple[str, str, Any, Any]] = []
    if span and len(span) == 2:
        bands.append(("scope", "the scope, oldest to newest record", span[0], span[1]))
    if given.get("after") or given.get("before"):
        bands.append(("given", "the cue as given", given.get("after"), given.get("before")))
    for s in stages:
        if isinstance(s.get("period"), list) and len(s["period"]) == 2:
            kind = "revision" if (s.get("stage") or 0) >= 1 else "searched"
            bands.append((kind, f"stage {s.get('stage')} searched ({s.get('confidence')})", *s["period"]))
    if ignored and isinstance(ignored.get("period"), list) and len(ignored["period"]) == 2:
        bands.append(("ignored", "the cue's own period (not used)", *ignored["period"]))
    wanted = {str(r) for r in before_cut(trace)} | {
        str(s.get("ref")) for s in as_list(trace.get("reservation")) if isinstance(s, Mapping)
    }
    instants = [(r, parse_instant(t)) for r, t in times.items() if r in wanted or not wanted]
    dots = [(r, t.timestamp()) for r, t in instants if t is not None]
    edges = [t.timestamp() for _, _, a, b in bands for t in (parse_instant(a), parse_instant(b)) if t is not None]
    edges += [t for _, t in dots]
    if not edges:
        return el("p", esc(f"the cue as given: {compact(dict(given))}"), cls="summary")
    low, high = min(edges), max(edges)
    pad = (high - low) * 0.04 or 86400.0
    low, high = low - pad, high + pad

    def at(epoch: float) -> float:
        return (epoch - low) / (high - low) * 100

    lanes, legend = [], []
    for kind, label, a, b in bands:
        start, end = parse_instant(a), parse_instant(b)
        left = at(start.timestamp()) if start else 0.0
        right = at(end.timestamp()) if end else 100.0
        text = f"{label}: {_day(a)} \u2192 {_day(b)}"
        lanes.append(
            el(
                "div",
                el(
                    "span",
                    "",
                    cls=f"band {kind}",
                    title=text,
                    style=f"left:{left:.2f}%;width:{max(right - left, 0.4):.2f}%",
                ),
                cls="lane",
            )
        )
        legend.append(el("li", el("span", "", cls=f"swatch {kind}"), esc(text)))
    marks = "".join(
        el("span", "", cls="dot", data_ref=r, title=f"{r} {_day(times[r])}", style=f"left:{at(t):.2f}%")
        for r, t in dots
    )
    axis = el("div", el("span", esc(_day_epoch(low))), el("span", esc(_day_epoch(high))), cls="ticks")
    rows_lane = el("div", marks, cls="lane rows") if marks else ""
    return el("div", *lanes, rows_lane, axis, cls="timeline") + el("ul", *legend, cls="legend")


def _day(value: Any) -> str:
    moment = parse_instant(value)
    return "open" if moment is None else moment.strftime("%Y-%m-%d")


def _day_epoch(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d")


# -- the coverage ledger ----------------------------------------------------------------------


def coverage(ledger: Any, question: str | None, *, title: str = "coverage of the question") -> str:
    """The question with each part marked covered (with the refs that hold it) or uncovered; spans without it."""
    if ledger is None:
        return ""
    if not isinstance(ledger, Mapping):
        return section(title, el("p", esc("not readable"), cls="empty"))
    if "error" in ledger:
        return section(title, el("p", esc(f"the ledger could not be built: {ledger['error']}"), cls="drop"))
    parts = [p for p in as_list(ledger.get("parts")) if isinstance(p, Mapping)]
    covered = as_list(ledger.get("covered_by"))
    uncovered = {i for i in as_list(ledger.get("uncovered")) if isinstance(i, int)}
    out = [
        el(
            "p",
            esc(
                f"{len(parts)} parts, {len(uncovered)} uncovered, {ledger.get('records', 0)} records read"
                + (f", {ledger['parts_omitted']} parts left out" if ledger.get("parts_omitted") else "")
            ),
            cls="summary",
        )
    ]
    if question is not None:
        out.append(el("p", _marked(normalize(question), parts, covered, uncovered), cls="question"))
    rows = [el("tr", *(el("th", esc(h)) for h in ("part", "span", "kind", "covered by")))]
    for i, part in enumerate(parts):
        span = as_list(part.get("span"))
        refs = as_list(covered[i]) if i < len(covered) else []
        rows.append(
            el(
                "tr",
                el("td", str(i + 1), cls="n"),
                el("td", esc(":".join(map(str, span)))),
                el("td", esc(part.get("kind"))),
                el("td", " ".join(ref(r) for r in refs) or esc("none"), cls="" if refs else "drop"),
            )
        )
    out.append(el("table", *rows, cls="coverage"))
    return section(title, *out, cls="coverage")


def _marked(text: str, parts: list[Mapping[str, Any]], covered: list[Any], uncovered: set[int]) -> str:
    pieces, position = [], 0
    spans = []
    for i, part in enumerate(parts):
        span = as_list(part.get("span"))
        if len(span) == 2 and all(isinstance(x, int) for x in span) and 0 <= span[0] < span[1] <= len(text):
            spans.append((span[0], span[1], i))
    for start, end, i in sorted(spans):
        if start < position:
            continue
        refs = [str(r) for r in as_list(covered[i])] if i < len(covered) else []
        pieces.append(esc(text[position:start]))
        label = f"part {i + 1}: " + (f"held by {', '.join(refs)}" if refs else "held by no returned record")
        pieces.append(
            el("mark", esc(text[start:end]), cls="uncovered" if i in uncovered or not refs else "covered", title=label)
        )
        position = end
    pieces.append(esc(text[position:]))
    return "".join(pieces)
