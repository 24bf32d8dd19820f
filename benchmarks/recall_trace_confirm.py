"""Confirmed failure codes: compare a recall trace with the known answer.

See docs/trace.md#suspected-and-confirmed-failures.

The loop inside a recall can only *suspect* a failure (``trace.suspected``); this
tool, outside the server, *confirms* one after the fact from the trace alone and
the refs of the records that hold the answer (the gold refs).

``confirm(trace, gold_refs, *, shown_text=None, quotes=None, correct=None)``
returns one code, or ``None`` when the evidence was returned and nothing says it
was misused:

1. no gold refs: ``UNATTRIBUTED``;
2. no gold ref on any arm (``trace.arms[*][*].ref``): ``CANDIDATE_MISS``;
3. ``kept`` is the first ``order.limit`` refs of ``order.before_cut`` (all of
   them when the limit is null) and ``reserved`` the refs of
   ``trace.reservation``. When no gold ref is in kept or reserved:
   the gold refs that have gate decisions, none of them passed: ``FILTER_DROP``;
   the gold refs that passed, all dropped by autocut: ``FILTER_DROP``;
   a gold ref cut by the count (``order.cut_by_count``): ``RANKING_MISS``;
   a gold ref on a seat arm's list (``block``, ``far``, ``propagation``, ``cue``,
   ``cue_stage_*``), so a seat could have held it: ``RANKING_MISS``;
   anything else: ``UNATTRIBUTED``;
4. returned: with ``shown_text`` and ``quotes``, a quote must appear in the
   shown text (both whitespace-collapsed), else ``RECONSTRUCTION_LOSS``; then
   ``correct is False`` gives ``AGENT_MISUSE``. Without them ``correct is False``
   gives ``UNATTRIBUTED``. Otherwise ``None``.

``attribute(trace, gold_refs)`` says, per gold ref, which stage lost it and why
(the arm lists it appeared on, its fusion votes, the gate's decision, autocut,
its place in the final order, a held seat).

Command line::

    python -m benchmarks.recall_trace_confirm RUN.jsonl [--json] [--details]
    python -m benchmarks.recall_trace_confirm --trace trace.json --gold mem:1 mem:2
    python -m benchmarks.recall_trace_confirm --trace-log traces.jsonl --entry ID --gold mem:1
    python -m benchmarks.recall_trace_confirm --trace-log traces.jsonl --answers answers.jsonl

``--trace-log`` reads the server's trace log (``CUEDRECALL_TRACE_LOG``, its rotated
file ``<path>.1`` too) directly, so live recalls are attributed after the fact once
the right answer is known: the entries named by ``--entry`` (ids, as ``cuedrecall
traces`` lists them) or asked with ``--query`` (matched by the query's hash), else
every entry, all with the refs of ``--gold``; or, with ``--answers``, a JSONL file of
``{"entry": id | "query": text, "gold": [...], "correct"?}``, one known answer a line.
A reconstruct entry is judged on the trace of the recall it made (``trace.recall``).

Each line of RUN.jsonl is ``{"trace": {...}, "gold": ["mem:1", ...], "id": "...",
"correct": bool?, "shown_text": str?, "quotes": [str]?}``; ``trace`` may also be a
whole recall response that carries the trace under ``"trace"``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from cuedrecall.recall.trace_schema import ArmHit, GateDecision, Trace

CANDIDATE_MISS = "CANDIDATE_MISS"
FILTER_DROP = "FILTER_DROP"
RANKING_MISS = "RANKING_MISS"
RECONSTRUCTION_LOSS = "RECONSTRUCTION_LOSS"
AGENT_MISUSE = "AGENT_MISUSE"
UNATTRIBUTED = "UNATTRIBUTED"
CODES = (CANDIDATE_MISS, FILTER_DROP, RANKING_MISS, RECONSTRUCTION_LOSS, AGENT_MISUSE, UNATTRIBUTED)
RETURNED = "returned"  # how tables and JSON spell a None from confirm()

# Arms whose rows a held seat can admit: a ref only they reached was lost to the seats, not to the arms.
# (Keyword seats take rows of the ordinary lexical arms, so the gate or the count already names their loss.)
SEAT_ARMS = ("block", "far", "propagation", "cue")
SEAT_ARM_PREFIX = "cue_stage_"


# -- reading a trace ---------------------------------------------------------------------


def is_seat_arm(name: str) -> bool:
    return name in SEAT_ARMS or name.startswith(SEAT_ARM_PREFIX)


def unwrap(obj: Any) -> Trace:
    """The trace itself, whether given bare or inside a recall response (``{"messages": ..., "trace": ...}``)."""
    if isinstance(obj, dict) and "trace_version" not in obj and isinstance(obj.get("trace"), dict):
        return obj["trace"]
    if not isinstance(obj, dict):
        raise ValueError(f"a trace must be a JSON object, got {type(obj).__name__}")
    return obj


def _ref(item: Any) -> str:
    """Order entries are refs in this project's trace, {ref} objects in CPersona's: accept both."""
    return item.get("ref") if isinstance(item, dict) else item


def _arms(trace: Trace) -> dict[str, list[ArmHit]]:
    return {name: list(hits or []) for name, hits in (trace.get("arms") or {}).items()}


def _before_cut(trace: Trace) -> list[str]:
    return [_ref(item) for item in (trace.get("order") or {}).get("before_cut") or []]


def _limit(trace: Trace) -> int | None:
    return (trace.get("order") or {}).get("limit")


def kept_refs(trace: Trace) -> list[str]:
    """The rows the count returned: the first ``order.limit`` of ``order.before_cut`` (all when null)."""
    before, limit = _before_cut(trace), _limit(trace)
    return before if limit is None else before[:limit]


def reserved_refs(trace: Trace) -> dict[str, str]:
    """ref -> kind of every row a held seat admitted."""
    return {item["ref"]: item.get("kind", "") for item in trace.get("reservation") or [] if "ref" in item}


def _decisions(trace: Trace) -> dict[str, GateDecision]:
    return {d["ref"]: d for d in (trace.get("gate") or {}).get("decisions") or [] if "ref" in d}


def _autocut_dropped(trace: Trace) -> list[str]:
    return list((trace.get("autocut") or {}).get("dropped") or [])


def _cut_by_count(trace: Trace) -> list[str]:
    return [_ref(item) for item in (trace.get("order") or {}).get("cut_by_count") or []]


def _collapse(text: str) -> str:
    return " ".join(str(text).split())


def _gold(gold_refs: Iterable[str] | str | None) -> list[str]:
    if gold_refs is None:
        return []
    if isinstance(gold_refs, str):
        gold_refs = [gold_refs]
    return list(dict.fromkeys(ref for ref in gold_refs if ref))


# -- the codes ---------------------------------------------------------------------------


def confirm(
    trace: Trace,
    gold_refs: Iterable[str],
    *,
    shown_text: str | None = None,
    quotes: Sequence[str] | None = None,
    correct: bool | None = None,
) -> str | None:
    """The confirmed failure code of one traced recall, or None when the evidence was returned and used."""
    trace = unwrap(trace)
    gold = _gold(gold_refs)
    if not gold:
        return UNATTRIBUTED
    on_arms = {hit.get("ref") for hits in _arms(trace).values() for hit in hits}
    if not any(ref in on_arms for ref in gold):
        return CANDIDATE_MISS
    returned = set(kept_refs(trace)) | set(reserved_refs(trace))
    if not any(ref in returned for ref in gold):
        return _lost(trace, gold)
    quotes = [q for q in (quotes or []) if _collapse(q)]  # a blank quote proves nothing
    if shown_text is not None and quotes:
        shown = _collapse(shown_text)
        if not any(_collapse(q) in shown for q in quotes):
            return RECONSTRUCTION_LOSS
        return AGENT_MISUSE if correct is False else None
    return UNATTRIBUTED if correct is False else None


def _lost(trace: Trace, gold: list[str]) -> str:
    """Step 3: the evidence was on an arm but not returned; which stage removed it."""
    decisions = _decisions(trace)
    judged = [ref for ref in gold if ref in decisions]
    if judged and not any(decisions[ref].get("passed") for ref in judged):
        return FILTER_DROP
    passed = [ref for ref in judged if decisions[ref].get("passed")]
    dropped = set(_autocut_dropped(trace))
    if passed and all(ref in dropped for ref in passed):
        return FILTER_DROP
    if any(ref in set(_cut_by_count(trace)) for ref in gold):
        return RANKING_MISS
    seat_refs = {hit.get("ref") for name, hits in _arms(trace).items() if is_seat_arm(name) for hit in hits}
    if any(ref in seat_refs for ref in gold):
        return RANKING_MISS
    return UNATTRIBUTED


def attribute(trace: Trace, gold_refs: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Per gold ref: the stage that lost it (or returned it), the code that stage means, and the record of why.

    Each value holds ``code`` (None when returned), ``stage`` (``arms``, ``gate``,
    ``autocut``, ``count``, ``seat``, ``returned``, ``reservation`` or ``unknown``),
    ``why`` (one line), and the evidence: ``arms`` ({arm: {rank, raw}}), ``fusion``
    ({score, votes} or None), ``scoring`` ({name: factor}), ``gate`` (the decision
    or None), ``autocut`` ({at} when autocut dropped it, else None), ``position``
    (0-based place in ``order.before_cut`` or None), ``limit``, ``cut_by_count``,
    ``reservation`` (the seat's kind or None) and ``returned``.
    """
    trace = unwrap(trace)
    arms = _arms(trace)
    fusion = {row.get("ref"): row for row in trace.get("fusion") or []}
    scoring = trace.get("scoring") or {}
    decisions = _decisions(trace)
    autocut = trace.get("autocut") or {}
    dropped = _autocut_dropped(trace)
    before, limit = _before_cut(trace), _limit(trace)
    kept = set(kept_refs(trace))
    cut = _cut_by_count(trace)
    reserved = reserved_refs(trace)
    out: dict[str, dict[str, Any]] = {}
    for ref in _gold(gold_refs):
        found = {
            name: {"rank": hit.get("rank"), "raw": hit.get("raw")}
            for name, hits in arms.items()
            for hit in hits
            if hit.get("ref") == ref
        }
        decision = decisions.get(ref)
        position = before.index(ref) if ref in before else None
        entry: dict[str, Any] = {
            "arms": found,
            "fusion": (
                {"score": fusion[ref].get("score"), "votes": fusion[ref].get("votes")} if ref in fusion else None
            ),
            "scoring": {
                name: factors[ref] for name, factors in scoring.items() if isinstance(factors, dict) and ref in factors
            },
            "gate": decision,
            "autocut": {"at": autocut.get("at")} if ref in dropped else None,
            "position": position,
            "limit": limit,
            "cut_by_count": ref in cut,
            "reservation": reserved.get(ref),
            "returned": ref in kept or ref in reserved,
        }
        entry["code"], entry["stage"], entry["why"] = _verdict(ref, entry, found)
        out[ref] = entry
    return out


def _verdict(ref: str, e: dict[str, Any], found: dict[str, Any]) -> tuple[str | None, str, str]:
    arms = ", ".join(f"{name}#{hit['rank']}" for name, hit in found.items())
    if not found:
        return CANDIDATE_MISS, "arms", "on no arm's list"
    if e["position"] is not None and e["returned"] and e["reservation"] is None:
        return None, "returned", f"returned at place {e['position'] + 1} (limit {e['limit']}); arms {arms}"
    if e["reservation"] is not None:
        return None, "reservation", f"returned by a held seat ({e['reservation']}); arms {arms}"
    d = e["gate"]
    if d is not None and not d.get("passed"):
        measured = (
            f"{d.get('signal')} {d.get('score')} < {d.get('threshold')} ({d.get('origin')})"
            if d.get("score") is not None
            else f"{d.get('signal')}, threshold {d.get('threshold')}"
        )
        return FILTER_DROP, "gate", f"refused by the gate: {d.get('reason') or 'not passed'}, {measured}; arms {arms}"
    if e["autocut"] is not None:
        return FILTER_DROP, "autocut", f"passed the gate, dropped by autocut at {e['autocut']['at']}; arms {arms}"
    if e["cut_by_count"]:
        return (
            RANKING_MISS,
            "count",
            f"admitted, at place {e['position'] + 1} behind the count cut at {e['limit']}; arms {arms}",
        )
    if any(is_seat_arm(name) for name in found):
        return RANKING_MISS, "seat", f"reached by a seat arm but no seat held it; arms {arms}"
    return UNATTRIBUTED, "unknown", f"on an arm but neither judged nor ordered (excluded?); arms {arms}"


# -- the command -------------------------------------------------------------------------


def _log_items(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Items from a trace log: each entry's recall trace (a reconstruct's ``trace.recall``) with its gold refs."""
    from cuedrecall.handlers.trace_log import read_entries, stored_query_hash

    if not Path(args.trace_log).exists() and not Path(args.trace_log + ".1").exists():
        raise OSError(f"no trace log at {args.trace_log}")
    entries = [entry for _, entry in read_entries(args.trace_log)]
    wanted: list[tuple[dict[str, Any], dict[str, Any]]] = []  # (entry, answer)
    if args.answers:
        with open(args.answers, encoding="utf-8") as handle:
            answers = [json.loads(line) for line in handle if line.strip()]
        for answer in answers:
            match = (
                {"id": answer["entry"]}
                if "entry" in answer
                else {"query_sha256": stored_query_hash(answer["query"], args.db)}
            )
            key, value = next(iter(match.items()))
            wanted += [(entry, answer) for entry in entries if entry.get(key) == value]
    else:
        hashes = {stored_query_hash(q, args.db) for q in args.query or []}
        ids = set(args.entry or [])
        for entry in entries:
            if (not ids and not hashes) or entry.get("id") in ids or entry.get("query_sha256") in hashes:
                wanted.append((entry, {"gold": args.gold or []}))
    items = []
    for entry, answer in wanted:
        trace = entry.get("trace") or {}
        if entry.get("tool") == "reconstruct":
            trace = trace.get("recall") or {}
        item: dict[str, Any] = {"id": entry.get("id"), "trace": unwrap(trace), "gold": answer.get("gold") or []}
        if "correct" in answer:
            item["correct"] = answer["correct"]
        items.append(item)
    return items


def _read_items(args: argparse.Namespace) -> list[dict[str, Any]]:
    if args.trace_log:
        return _log_items(args)
    if args.trace:
        trace = json.loads(Path(args.trace).read_text(encoding="utf-8"))
        item: dict[str, Any] = {"id": Path(args.trace).name, "trace": unwrap(trace), "gold": args.gold or []}
        if args.correct is not None:
            item["correct"] = args.correct
        if args.shown_text is not None:
            item["shown_text"] = Path(args.shown_text).read_text(encoding="utf-8")
        if args.quote:
            item["quotes"] = args.quote
        return [item]
    items = []
    with open(args.run, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                item["trace"] = unwrap(item["trace"])
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{args.run}:{number}: not a trace line ({type(exc).__name__}: {exc})") from None
            item.setdefault("id", str(number))
            items.append(item)
    return items


def evaluate(items: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Codes per item and counts per code (None is counted as ``returned``)."""
    results = []
    for item in items:
        code = confirm(
            item["trace"],
            item.get("gold") or [],
            shown_text=item.get("shown_text"),
            quotes=item.get("quotes"),
            correct=item.get("correct"),
        )
        results.append({"id": item.get("id"), "code": code})
    counts = Counter(r["code"] or RETURNED for r in results)
    ordered = {code: counts.get(code, 0) for code in (*CODES, RETURNED)}
    return {"total": len(results), "counts": ordered, "items": results}


def _print_table(summary: dict[str, Any], items: Sequence[dict[str, Any]], details: bool, console: Any) -> None:
    from rich.table import Table

    total = summary["total"]
    table = Table(title=f"confirmed failure codes ({total} traced recall{'s' if total != 1 else ''})")
    table.add_column("code")
    table.add_column("count", justify="right")
    table.add_column("share", justify="right")
    table.add_column("ids", overflow="fold")
    by_code: dict[str, list[str]] = {}
    for r in summary["items"]:
        by_code.setdefault(r["code"] or RETURNED, []).append(str(r["id"]))
    for code, count in summary["counts"].items():
        ids = by_code.get(code, [])
        shown = ", ".join(ids[:5]) + (f" (+{len(ids) - 5})" if len(ids) > 5 else "")
        share = f"{100 * count / total:.1f}%" if total else "-"
        table.add_row(code, str(count), share, shown, style=None if count else "dim")
    console.print(table)
    if not details:
        return
    per = Table(title="attribution per gold ref")
    for column in ("id", "ref", "stage", "code", "why"):
        per.add_column(column, overflow="fold")
    for item in items:
        for ref, a in attribute(item["trace"], item.get("gold") or []).items():
            per.add_row(str(item.get("id")), ref, a["stage"], a["code"] or RETURNED, a["why"])
    console.print(per)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.recall_trace_confirm",
        description="Confirm failure codes (CANDIDATE_MISS, FILTER_DROP, RANKING_MISS, RECONSTRUCTION_LOSS, "
        "AGENT_MISUSE, UNATTRIBUTED) from recall traces and the refs of the known answer.",
    )
    parser.add_argument(
        "run", nargs="?", help='JSONL, one {"trace", "gold", "id", "correct"?, "shown_text"?, "quotes"?} per line'
    )
    parser.add_argument("--trace", help="one trace (or recall response holding one) as a JSON file")
    parser.add_argument("--gold", nargs="+", metavar="REF", help="gold refs for --trace, e.g. mem:1 ep:2")
    parser.add_argument(
        "--correct",
        dest="correct",
        action="store_true",
        default=None,
        help="with --trace: the reader's answer was right",
    )
    parser.add_argument(
        "--incorrect", dest="correct", action="store_false", help="with --trace: the reader's answer was wrong"
    )
    parser.add_argument("--shown-text", metavar="FILE", help="with --trace: the text the reader was shown")
    parser.add_argument("--quote", action="append", metavar="TEXT", help="with --trace: a gold quote (repeatable)")
    parser.add_argument("--trace-log", metavar="PATH", help="the server's trace log (CUEDRECALL_TRACE_LOG)")
    parser.add_argument("--entry", nargs="+", metavar="ID", help="with --trace-log: the entries to judge")
    parser.add_argument(
        "--db",
        help="with --trace-log and a query: the database the log was written for (its secret keys the query hashes)",
    )
    parser.add_argument(
        "--query", action="append", metavar="TEXT", help="with --trace-log: the entries of this question (repeatable)"
    )
    parser.add_argument(
        "--answers",
        metavar="FILE",
        help='with --trace-log: JSONL of {"entry" or "query", "gold", "correct"?}, one known answer a line',
    )
    parser.add_argument("--json", action="store_true", help="print counts and per-item codes as JSON")
    parser.add_argument("--details", action="store_true", help="also show, per gold ref, the stage that lost it")
    return parser


def main(argv: Sequence[str] | None = None, console: Any = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if sum(map(bool, (args.run, args.trace, args.trace_log))) != 1:
        parser.error("give one of RUN.jsonl, --trace FILE (with --gold) or --trace-log PATH")
    if args.trace and not args.gold:
        parser.error("--trace needs --gold REF [REF ...]")
    if args.trace_log and not args.gold and not args.answers:
        parser.error("--trace-log needs --gold REF [REF ...] or --answers FILE")
    try:
        items = _read_items(args)
    except (OSError, ValueError, KeyError) as exc:
        print(f"recall_trace_confirm: {exc}", file=sys.stderr)
        return 2
    summary = evaluate(items)
    if args.json:
        if args.details:
            for result, item in zip(summary["items"], items):
                result["attribution"] = attribute(item["trace"], item.get("gold") or [])
        print(json.dumps(summary, ensure_ascii=False, indent=1))
        return 0
    if console is None:
        from rich.console import Console

        console = Console()
    _print_table(summary, items, args.details, console)
    return 0


if __name__ == "__main__":
    sys.exit(main())
