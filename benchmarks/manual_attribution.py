"""The traces of hand-attributed LoCoMo failures, regenerated (docs/trace.md#what-makes-the-trace-ready).

    python -m benchmarks.manual_attribution --data PATH/locomo10.json
    python -m benchmarks.manual_attribution --data PATH/locomo10.json --show conv-26:q4
    python -m benchmarks.manual_attribution --data PATH/locomo10.json --add conv-26:q7

``tests/fixtures/manual_attribution.json`` holds failed LoCoMo recalls, each looked at by
hand (the question, its evidence turns, what the arms, the gate and the order did) and
attributed to the stage that lost the evidence, with the reasoning written out. The
fixture holds the recall's trace (refs, ranks, scores; no stored text) and the evidence
refs, never dataset text; ``tests/benchmarks/test_manual_attribution.py`` checks that the
confirmation tool names the hand-attributed stage from the trace alone.

This script replays each case's conversation exactly as ``benchmarks.suspected_confirmed``
does (same settings; every scored question asked in the same order, so the store and
its calibrations are the benchmark's) and writes each case's evidence refs and trace
back, keeping the hand-written fields. It then says, case by case, whether the
confirmation tool still names the hand-attributed stage: a case the pipeline moved needs
a new look by hand, not an edited expectation. ``--show`` prints a case's question and
evidence text on the console (never into the fixture) for that look; ``--add`` adds
cases with their traces and empty hand fields to be filled in.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from benchmarks import harness as h
from benchmarks import suspected_confirmed as sc
from benchmarks.datasets import Conversation, load_locomo
from benchmarks.recall_trace_confirm import RETURNED, attribute, confirm

PROG = "benchmarks.manual_attribution"
FIXTURE = h.REPO / "tests" / "fixtures" / "manual_attribution.json"
HAND_FIELDS = ("stage", "code", "stages", "reasoning")  # written by a person; regeneration keeps them
# The code each stage of ``attribute`` means.
STAGE_CODES = {
    "arms": "CANDIDATE_MISS",
    "gate": "FILTER_DROP",
    "autocut": "FILTER_DROP",
    "count": "RANKING_MISS",
    "seat": "RANKING_MISS",
}
# The recall of every case, as benchmarks.suspected_confirmed runs it at its defaults.
DEFAULT_SETTINGS = {
    "embedder": "local",
    "mode": "rrf",
    "limit": h.LIMIT,
    "history": "asked",
    "cues": True,
    "environ": sc.SERVER_DEFAULTS,
}


# -- checking a case ----------------------------------------------------------------------------------


def disagreements(case: dict[str, Any]) -> list[str]:
    """Where the confirmation tool, reading the case's trace, differs from the hand (empty: nowhere)."""
    out = []
    code = confirm(case["trace"], case["gold"]) or RETURNED
    if code != case.get("code"):
        out.append(f"code: the tool says {code}, the hand {case.get('code')}")
    found = attribute(case["trace"], case["gold"])
    deciding = {a["stage"] for a in found.values() if a["code"] == code}
    if case.get("stage") not in deciding or STAGE_CODES.get(case.get("stage")) != case.get("code"):
        out.append(
            f"stage: the tool's evidence that gives {code} stopped at {sorted(deciding)}, "
            f"the hand says {case.get('stage')}"
        )
    for ref, stage in (case.get("stages") or {}).items():
        got = found[ref]["stage"] if ref in found else None
        if got != stage:
            out.append(f"{ref}: the tool says {got}, the hand {stage}")
    missing = set(case["gold"]) - set(case.get("stages") or {})
    if missing:
        out.append(f"no hand stage for {', '.join(sorted(missing))}")
    return out


def leaked_text(trace: dict[str, Any], texts: Iterable[str]) -> list[str]:
    """Runs of four words of the given texts (a question, its evidence) that the trace's JSON holds."""
    dumped = " ".join(re.findall(r"[a-z0-9]+", json.dumps(trace).lower()))
    leaks = []
    for text in texts:
        words = re.findall(r"[a-z0-9]+", text.lower())
        for i in range(max(0, len(words) - 3)):
            run = " ".join(words[i : i + 4])
            if re.search(rf"\b{re.escape(run)}\b", dumped):
                leaks.append(run)
    return leaks


# -- regenerating ------------------------------------------------------------------------------------


def _args(settings: dict[str, Any]) -> argparse.Namespace:
    return argparse.Namespace(
        mode=settings["mode"], limit=settings["limit"], history=settings["history"], no_cues=not settings["cues"]
    )


def traces_for(
    conversation: Conversation, embedder: h.PrefetchEmbedder, settings: dict[str, Any], wanted: set[str], workdir: Path
) -> dict[str, tuple[list[str], dict[str, Any]]]:
    """qid -> (evidence refs, trace) of the wanted questions; every scored question is asked, as the
    benchmark asks them."""
    if settings.get("environ") != sc.SERVER_DEFAULTS:
        raise ValueError("the fixture's settings are not those of benchmarks.suspected_confirmed")
    args = _args(settings)
    dataset = h.Dataset("locomo", [conversation])
    store = sc.open_store(conversation, embedder, args.mode, workdir)
    out = {}
    try:
        scored = [q for q in conversation.questions if dataset.scored(q)]
        for question in h.replay(store, scored, args.history):
            response = sc.recall_traced(store, question, args.limit, not args.no_cues)
            if question.qid in wanted:
                out[question.qid] = (store.gold(question), response["trace"])
    finally:
        store.close()
    return out


def regenerate(
    fixture: dict[str, Any], conversations: Sequence[Conversation], workdir: Path, add: Sequence[str] = ()
) -> dict[str, Any]:
    """The fixture with every case's evidence refs and trace recomputed; ``add`` appends new cases."""
    settings = {**DEFAULT_SETTINGS, **fixture.get("settings", {})}
    cases = list(fixture.get("cases", []))
    known = {case["qid"] for case in cases}
    cases += [{"qid": qid, **{field: None for field in HAND_FIELDS}} for qid in add if qid not in known]
    by_conversation: dict[str, set[str]] = {}
    for case in cases:
        by_conversation.setdefault(case["qid"].rsplit(":", 1)[0], set()).add(case["qid"])
    chosen = [c for c in conversations if c.conv_id in by_conversation]
    if {c.conv_id for c in chosen} != set(by_conversation):
        lacking = sorted(set(by_conversation) - {c.conv_id for c in chosen})
        raise ValueError(f"the data lacks conversations {lacking}")
    embedder = h.new_embedder(settings["embedder"])
    found: dict[str, tuple[list[str], dict[str, Any]]] = {}
    for conversation in chosen:
        wanted = by_conversation[conversation.conv_id]
        found.update(traces_for(conversation, embedder, settings, wanted, workdir))
    questions = {q.qid: q for c in chosen for q in c.questions}
    out = []
    for case in cases:
        if case["qid"] not in found:
            raise ValueError(f"{case['qid']}: no such scored question in the data")
        gold, trace = found[case["qid"]]
        question = questions[case["qid"]]
        evidence = [t.content for c in chosen for t in c.turns if t.msg_id in question.evidence]
        texts = [question.text, question.answer, *evidence]
        leaks = leaked_text(trace, texts)
        if leaks:
            raise ValueError(f"{case['qid']}: the trace holds dataset text ({leaks[:3]}); nothing written")
        out.append(
            {
                "qid": case["qid"],
                "category": question.category,
                "cued": sc.cue_of(question, settings["cues"]) is not None,
                "evidence": list(question.evidence),
                "gold": gold,
                **{field: case.get(field) for field in HAND_FIELDS},
                "trace": trace,
            }
        )
    command = f"python -m {PROG} --data <LoCoMo JSON>"
    return {**fixture, "settings": settings, "command": command, "cases": out}


def dumps(fixture: dict[str, Any]) -> str:
    """The fixture as JSON: readable fields, each trace on one line of its own."""
    head = {key: value for key, value in fixture.items() if key != "cases"}
    lines = ["{"]
    for key, value in head.items():
        lines.append(f"  {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)},")
    lines.append('  "cases": [')
    for n, case in enumerate(fixture["cases"]):
        fields = [f"    {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in case.items()]
        comma = "," if n + 1 < len(fixture["cases"]) else ""
        lines.append("   {\n" + ",\n".join(fields) + "\n   }" + comma)
    lines += ["  ]", "}"]
    return "\n".join(lines) + "\n"


# -- showing a case -----------------------------------------------------------------------------------


def show(case: dict[str, Any], conversations: Sequence[Conversation], console: Any) -> None:
    """A case's question, evidence turns and what the trace says of each (console only)."""
    turns = {t.msg_id: t for c in conversations for t in c.turns}
    question = next(q for c in conversations for q in c.questions if q.qid == case["qid"])
    console.print(f"[bold]{case['qid']}[/] (category {question.category}): {question.text}")
    console.print(f"  answer: {question.answer}")
    found = attribute(case["trace"], case["gold"])
    for msg_id, ref in zip(question.evidence, case["gold"], strict=False):
        console.print(f"  {ref} ({msg_id}): {turns[msg_id].content}")
        if ref in found:
            console.print(f"    tool: {found[ref]['stage']}: {found[ref]['why']}")
    console.print(f"  hand: {case.get('code')} {case.get('stages')}: {case.get('reasoning')}")


# -- the command -------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m {PROG}", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="LoCoMo JSON (locomo10.json or a split)")
    parser.add_argument("--fixture", type=Path, default=FIXTURE, help="the fixture (default: %(default)s)")
    parser.add_argument("--show", nargs="+", metavar="QID", help="print these cases' text, run nothing")
    parser.add_argument("--add", nargs="+", default=[], metavar="QID", help="add these questions as cases")
    parser.add_argument("--workdir", type=Path, help="keep the databases here (default: a temporary folder)")
    return parser


def main(argv: Sequence[str] | None = None, console: Any = None) -> int:
    from rich.console import Console

    args = build_parser().parse_args(argv)
    console = console or Console()
    fixture = json.loads(args.fixture.read_text(encoding="utf-8")) if args.fixture.exists() else {"cases": []}
    conversations = load_locomo(args.data, option="--data")
    if args.show:
        cases = {case["qid"]: case for case in fixture["cases"]}
        for qid in args.show:
            show(cases[qid], conversations, console)
        return 0
    try:
        fixture = regenerate(fixture, conversations, h.workdir_for(args.workdir), args.add)
    except ValueError as exc:
        console.print(f"manual_attribution: {exc}")
        return 2
    args.fixture.write_text(dumps(fixture), encoding="utf-8")
    moved = 0
    for case in fixture["cases"]:
        problems = disagreements(case) if case.get("code") is not None else ["not attributed by hand yet"]
        moved += bool(problems)
        console.print(f"{case['qid']}: " + ("; ".join(problems) if problems else f"agrees ({case['code']})"))
    console.print(f"wrote {args.fixture}: {len(fixture['cases'])} cases, {moved} to look at again by hand")
    return 1 if moved else 0


if __name__ == "__main__":
    sys.exit(main())
