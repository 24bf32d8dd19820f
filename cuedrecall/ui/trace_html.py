"""The trace view: a recall or reconstruct trace as one self-contained HTML page (``cuedrecall view``).

What it shows, stage by stage: the arms side by side (each candidate's rank and raw
score), the fusion (each arm's contribution), the gate line (each decision against
its bar, with the reason of a drop), what autocut and the count cut dropped, the held
seats; with a time cue, the period on a timeline, each moved row's from -> to with its
cue rank, and the revision; the coverage ledger as the question with covered and
uncovered words marked. Every ref is a ``data-ref`` element: hovering or clicking one
follows that row through every stage (``static/trace.js``).

The rules: the page holds what the trace holds (refs, ranks, scores, reasons) and
never stored text. Given a whole response, it reads only the refs and record times of
its rows, never their content. The question is the caller's own text, shown only when
given. Places and ranks are shown counting from 1 (the trace counts from 0). The view
reads defensively: a trace from another version, or a section it does not know, still
renders (unknown sections as JSON).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cuedrecall.recall.trace_schema import SECTIONS
from cuedrecall.ui import trace_cue, trace_parts
from cuedrecall.ui.markup import compact, document, el, esc, num, ref

CSS = ("trace.css",)
JS = ("trace.js",)
_SHOWN = frozenset(SECTIONS) | {"excluded"}


@dataclass
class Source:
    """What a page is made from: the trace, and what a response or log entry adds around it (never text)."""

    kind: str  # "recall" | "reconstruct"
    trace: dict[str, Any]
    question: str | None = None
    times: dict[str, str] = field(default_factory=dict)  # ref -> record time (the rows' timestamps)
    items: list[dict[str, Any]] = field(default_factory=list)  # reconstruct: head_ref and claims, refs only
    entry: dict[str, Any] = field(default_factory=dict)  # a trace log entry's id, at, tool, refs


def read_source(obj: Any, question: str | None = None) -> Source:
    """A trace, a recall or reconstruct response holding one, or a trace log entry, as a ``Source``."""
    if not isinstance(obj, Mapping):
        return Source("recall", {}, question)
    if isinstance(obj.get("trace"), Mapping) and "tool" in obj and "trace_version" not in obj:  # a log entry
        inner = read_source(obj["trace"], question)
        inner.entry = {key: obj.get(key) for key in ("id", "at", "tool", "refs", "scope", "query_sha256")}
        return inner
    if "trace_version" not in obj and isinstance(obj.get("trace"), Mapping):  # a response
        inner = read_source(obj["trace"], question)
        for row in obj.get("messages") or []:
            if isinstance(row, Mapping) and row.get("ref"):
                inner.times[str(row["ref"])] = str(row.get("timestamp") or "")
        for item in obj.get("items") or []:
            if isinstance(item, Mapping):
                inner.items.append(_item_refs(item))
                for claim in item.get("claims") or []:
                    if isinstance(claim, Mapping) and claim.get("ref") and claim.get("as_of"):
                        inner.times.setdefault(str(claim["ref"]), str(claim["as_of"]))
        return inner
    trace = dict(obj)
    kind = (
        "reconstruct"
        if "trace_version" not in trace and ("candidate_refs" in trace or "clusters" in trace)
        else "recall"
    )
    return Source(kind, trace, question)


def _item_refs(item: Mapping[str, Any]) -> dict[str, Any]:
    """A reconstruct item without its text: the head ref and each claim's ref, time, why and roles."""
    claims = [
        {
            "ref": c.get("ref"),
            "as_of": c.get("as_of"),
            "why": c.get("why"),
            "roles": [
                {"ref": r.get("ref"), "role": r.get("role")} for r in c.get("roles") or [] if isinstance(r, Mapping)
            ],
        }
        for c in item.get("claims") or []
        if isinstance(c, Mapping)
    ]
    return {"head_ref": item.get("head_ref"), "claims": claims, "as_of": item.get("as_of")}


def trace_page(obj: Any, *, question: str | None = None, title: str | None = None) -> str:
    """The whole self-contained page for a trace (or a response or log entry holding one)."""
    source = read_source(obj, question)
    heading = title or f"{source.kind} trace"
    body = el(
        "header",
        el("h1", esc(heading)),
        el(
            "p",
            esc("Hover or click a ref to follow that row through every stage. Places and ranks count from 1."),
            cls="hint",
        ),
        cls="page",
    ) + trace_fragment(source)
    return document(heading, el("main", body), css=CSS, js=JS)


def trace_fragment(source: Source | Any, *, question: str | None = None, span: list[str] | None = None) -> str:
    """The view as a fragment the explorer inserts beside an answer; ``span``: the scope's [oldest, newest]."""
    if not isinstance(source, Source):
        source = read_source(source, question)
    if source.kind == "reconstruct":
        nested = source.trace.get("recall")
        recall: Mapping[str, Any] = nested if isinstance(nested, Mapping) else {}
        journeys = trace_parts.journeys(recall)
        trace_parts.add_reconstruct_journeys(journeys, source.trace, source.items)
        inner = _reconstruct(source) + el(
            "section",
            el("h2", esc("the recall reconstruct read its candidates from")),
            _recall_sections(recall, source, span),
            id="recall-view",
            cls="stage nested",
        )
    else:
        journeys = trace_parts.journeys(source.trace)
        inner = _recall_sections(source.trace, source, span)
    bar = el("div", esc("Click a ref to follow it through the stages."), cls="journey", aria_live="polite")
    return el(
        "div",
        bar,
        _entry(source.entry),
        inner,
        cls="trace-view",
        data_journeys=json.dumps(journeys, ensure_ascii=False),
    )


def _entry(entry: Mapping[str, Any]) -> str:
    if not entry:
        return ""
    refs = " ".join(ref(r) for r in entry.get("refs") or [])
    return el(
        "p",
        esc(f"trace log entry {entry.get('id')} at {entry.get('at')} ({entry.get('tool')}); returned: "),
        refs or esc("nothing"),
        cls="entry",
    )


def _recall_sections(trace: Mapping[str, Any], source: Source, span: list[str] | None) -> str:
    if not trace:
        return el("p", esc("no trace to show"), cls="empty")
    parts = [
        _header(trace),
        trace_parts.arms(trace),
        trace_parts.fusion(trace),
        trace_parts.gate(trace),
        trace_parts.cuts(trace),
        trace_cue.cue(trace, source.times, span),
        trace_parts.seats(trace),
        trace_cue.coverage(trace.get("coverage"), source.question),
        _timing(trace),
        _other(trace),
    ]
    return "".join(parts)


def _header(trace: Mapping[str, Any]) -> str:
    policy = trace.get("policy") or {}
    rows = [
        ("trace", f"version {trace.get('trace_version', '?')}, server {trace.get('server_version', '?')}"),
        ("policy", ", ".join(f"{k} {v}" for k, v in policy.items()) if isinstance(policy, Mapping) else policy),
    ]
    for key in ("scope", "request", "config"):
        value = trace.get(key) or {}
        if isinstance(value, Mapping):
            rows.append((key, ", ".join(f"{k}={compact(v)}" for k, v in value.items()) or "-"))
    body = "".join(el("dt", esc(k)) + el("dd", esc(v)) for k, v in rows)
    return el("section", el("h2", esc("policy, scope, request, config")), el("dl", body), cls="stage header")


def _timing(trace: Mapping[str, Any]) -> str:
    timing = trace.get("timing_ms") or {}
    if not isinstance(timing, Mapping) or not timing:
        return ""
    head = "".join(el("th", esc(k)) for k in timing)
    cells = "".join(el("td", esc(num(v, 6)), cls="n") for v in timing.values())
    return el("section", el("h2", esc("timing (ms)")), el("table", el("tr", head), el("tr", cells)), cls="stage")


def _other(trace: Mapping[str, Any]) -> str:
    """Sections this view does not know (a newer trace adds fields without a version bump), as JSON."""
    extra = [(k, v) for k, v in trace.items() if k not in _SHOWN]
    if not extra:
        return ""
    body = "".join(el("dt", esc(k)) + el("dd", el("code", esc(compact(v)))) for k, v in extra)
    return el("section", el("h2", esc("other fields")), el("dl", body), cls="stage")


def _reconstruct(source: Source) -> str:
    """The reconstruct trace: its items (refs only), candidates, clusters, cues, coverage, a link to its recall."""
    t = source.trace
    candidates = [str(r) for r in t.get("candidate_refs") or []]
    out = [
        el(
            "p",
            esc(f"{len(candidates)} candidates from the recall: "),
            " ".join(ref(r) for r in candidates),
            " ",
            el("a", esc("the recall's trace view \u2193"), href="#recall-view", cls="to-recall"),
        )
    ]
    if source.items:
        rows = [el("tr", el("th", "#"), el("th", "head"), el("th", "claims (ref, as of, why, roles)"))]
        for place, item in enumerate(source.items, 1):
            claims = "".join(
                el(
                    "li",
                    ref(c.get("ref")),
                    esc(f" {c.get('as_of') or ''} {c.get('why') or ''}"),
                    *(esc(" ") + esc(f"{r.get('role')} ") + ref(r.get("ref")) for r in c["roles"]),
                )
                for c in item["claims"]
            )
            rows.append(
                el(
                    "tr",
                    el("td", str(place), cls="n"),
                    el("td", ref(item.get("head_ref"))),
                    el("td", el("ul", claims, cls="claims")),
                )
            )
        out.append(el("h3", esc("items")) + el("table", *rows, cls="items"))
    clusters = [c for c in t.get("clusters") or [] if isinstance(c, Mapping)]
    if clusters:
        rows = [el("tr", el("th", "#"), el("th", "refs (why)"))]
        for place, cluster in enumerate(clusters, 1):
            whys = list(cluster.get("why") or [])
            members = " ".join(
                ref(r) + el("small", esc(f" {whys[i] if i < len(whys) else ''}"))
                for i, r in enumerate(cluster.get("refs") or [])
            )
            rows.append(el("tr", el("td", str(place), cls="n"), el("td", members)))
        out.append(el("h3", esc("clusters")) + el("table", *rows, cls="clusters"))
    cues = t.get("cues")
    if isinstance(cues, Mapping):
        out.append(
            el(
                "p",
                esc(
                    f"cues: {len(cues.get('entities') or [])} entities matched in the question, "
                    f"{len(cues.get('terms') or [])} other names searched"
                ),
            )
        )
    out.append(trace_cue.coverage(t.get("coverage"), source.question, title="coverage of the cited records"))
    return el("section", el("h2", esc("reconstruct")), *out, cls="stage reconstruct")
