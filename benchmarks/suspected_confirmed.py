"""Does the recall's own suspicion name the failure the confirmation tool finds? Measured on LoCoMo.

    python -m benchmarks.suspected_confirmed --data PATH/locomo10.json

A recall can only *suspect* a failure while it runs (``trace.suspected``, docs/recall-process.md:
CANDIDATE_MISS when a time cue's period held nothing, FILTER_DROP when gate relief saw rows
just under the gate); ``benchmarks.recall_trace_confirm.confirm`` *confirms* one afterwards
from the trace and the evidence refs (docs/trace.md#suspected-and-confirmed-failures). Every scored LoCoMo question is
recalled at the server's defaults (the packaged embedder, the word arm and the block arm
on, the replay's calibrations run), with the cue ``benchmarks.cues.extract_cue`` reads in
its text where it finds one. Per code the report counts recalls where it was suspected and
confirmed, suspected only (split into recalls that returned the evidence and recalls that
failed for another reason), confirmed only, the suspicion's precision and recall, and the
confirmed codes of failed recalls that suspected nothing at all. Writes
benchmarks/results/suspected-confirmed.md (the command at the top); ``--dump-traces``
writes one ``{id, gold, trace}`` line per recall for ``benchmarks.recall_trace_confirm``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from benchmarks import harness as h
from benchmarks.cues import extract_cue
from benchmarks.datasets import Conversation, Question, load_locomo
from benchmarks.recall_trace_confirm import (
    CANDIDATE_MISS,
    FILTER_DROP,
    RANKING_MISS,
    UNATTRIBUTED,
    attribute,
    confirm,
)

PROG = "benchmarks.suspected_confirmed"
RETURNED = "returned"  # a recall that returned some evidence: nothing confirmed
# The codes a recall's stages can have, in report order (the reader codes need an answer: not here).
STAGE_CODES = (CANDIDATE_MISS, FILTER_DROP, RANKING_MISS, UNATTRIBUTED)
# The server's defaults: the harness turns blocks off for studies measured before blocks; here they are on.
SERVER_DEFAULTS = {"CPERSONA_BLOCK_BUILD_ENABLED": "true", "CPERSONA_BLOCK_RETRIEVAL_ENABLED": "true"}


# -- judging one recall ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Judged:
    """One traced recall: the codes its loop suspected, and the code confirmed afterwards (None: returned)."""

    suspected: frozenset[str]
    confirmed: str | None
    rescued: frozenset[str] = frozenset()  # suspected codes whose action returned some evidence


def suspected_codes(trace: Mapping[str, Any]) -> frozenset[str]:
    """The distinct codes in ``trace.suspected`` (a code suspected at two stages counts once)."""
    suspects = trace.get("suspected") or []
    return frozenset(s["code"] for s in suspects if isinstance(s, Mapping) and s.get("code"))


def rescued_codes(trace: Mapping[str, Any], gold: Sequence[str], suspected: frozenset[str]) -> frozenset[str]:
    """The suspected codes whose action brought evidence back: FILTER_DROP when gate relief admitted an
    evidence row (a ``relief`` reservation), CANDIDATE_MISS when a wider cue stage found one a seat held."""
    wanted = set(gold)
    reserved = {r.get("ref"): r.get("kind") for r in trace.get("reservation") or [] if isinstance(r, Mapping)}
    widened = {
        hit.get("ref")
        for name, hits in (trace.get("arms") or {}).items()
        if name.startswith("cue_stage_")
        for hit in hits or []
    }
    out = set()
    if FILTER_DROP in suspected and any(reserved.get(ref) == "relief" for ref in wanted):
        out.add(FILTER_DROP)
    if CANDIDATE_MISS in suspected and any(ref in widened and ref in reserved for ref in wanted):
        out.add(CANDIDATE_MISS)
    return frozenset(out)


def judge(trace: Mapping[str, Any], gold: Sequence[str]) -> Judged:
    """What one recall suspected, what the confirmation tool finds for its evidence refs, what was rescued."""
    suspected = suspected_codes(trace)
    return Judged(suspected, confirm(dict(trace), gold), rescued_codes(trace, gold, suspected))


def evidence_stages(trace: Mapping[str, Any], gold: Sequence[str]) -> str:
    """Where the evidence stopped, as ``attribute`` names the stages: each stage once, ``+``-joined."""
    return "+".join(sorted({a["stage"] for a in attribute(dict(trace), gold).values()}))


# -- counting ---------------------------------------------------------------------------------------


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def code_order(judged: Iterable[Judged]) -> list[str]:
    """The stage codes, then any other code suspected or confirmed, in first-seen order."""
    seen = list(STAGE_CODES)
    for item in judged:
        for code in (*sorted(item.suspected), item.confirmed):
            if code is not None and code not in seen:
                seen.append(code)
    return seen


def tally(judged: Iterable[Judged]) -> dict[str, Any]:
    """Per code: suspected and confirmed, suspected only, confirmed only, and precision and recall.

    ``both``: recalls that suspected the code and whose failure was confirmed as it.
    ``suspected_only``: suspected, not confirmed as it; ``suspected_returned`` of them returned the
    evidence (``rescued`` of those by the suspicion's own action), ``suspected_other`` failed with another
    code. ``confirmed_only``: confirmed, not suspected. Precision is both / suspected, recall both /
    confirmed (None when there is nothing to divide). ``unsuspected`` counts the confirmed codes of the
    failed recalls that suspected nothing at all.
    """
    items = list(judged)
    per: dict[str, dict[str, Any]] = {}
    for code in code_order(items):
        suspected = [j for j in items if code in j.suspected]
        both = sum(1 for j in suspected if j.confirmed == code)
        returned = sum(1 for j in suspected if j.confirmed is None)
        rescued = sum(1 for j in suspected if j.confirmed is None and code in j.rescued)
        confirmed = sum(1 for j in items if j.confirmed == code)
        per[code] = {
            "suspected": len(suspected),
            "confirmed": confirmed,
            "both": both,
            "suspected_only": len(suspected) - both,
            "suspected_returned": returned,
            "rescued": rescued,
            "suspected_other": len(suspected) - both - returned,
            "confirmed_only": confirmed - both,
            "precision": _ratio(both, len(suspected)),
            "recall": _ratio(both, confirmed),
        }
    failed = [j for j in items if j.confirmed is not None]
    unsuspected = Counter(j.confirmed for j in failed if not j.suspected)
    return {
        "recalls": len(items),
        "failed": len(failed),
        "returned": len(items) - len(failed),
        "with_suspicion": sum(1 for j in items if j.suspected),
        "failed_with_suspicion": sum(1 for j in failed if j.suspected),
        "codes": per,
        "unsuspected": {code: unsuspected[code] for code in code_order(items) if unsuspected.get(code)},
    }


# -- running --------------------------------------------------------------------------------------


def open_store(
    conversation: Conversation, embedder: h.PrefetchEmbedder, mode: str, workdir: Path
) -> h.ConversationStore:
    """A conversation's store at the server's defaults (blocks on), filled as the harness fills it."""
    return h.ConversationStore(conversation, embedder, mode, workdir, SERVER_DEFAULTS)


def cue_of(question: Question, use_cues: bool) -> dict[str, Any] | None:
    """The cue the harness's extractor reads in the question (None without one, or with cues off)."""
    return extract_cue(question.text, question.asked_at) if use_cues else None


def recall_traced(store: h.ConversationStore, question: Question, limit: int, use_cues: bool) -> dict[str, Any]:
    """One traced recall of a question, with its cue when it has one: the response."""
    return store.ask(question, limit=limit, time_cue=cue_of(question, use_cues), trace=True)


def evaluate_conversation(
    conversation: Conversation,
    embedder: h.PrefetchEmbedder,
    args: argparse.Namespace,
    workdir: Path,
    dump: IO[str] | None,
    advance: Any,
) -> list[dict[str, Any]]:
    """One row per scored question with evidence in the store: what was suspected and what is confirmed."""
    dataset = h.Dataset("locomo", [conversation])
    store = open_store(conversation, embedder, args.mode, workdir)
    rows = []
    try:
        scored = [q for q in conversation.questions if dataset.scored(q)]
        for question in h.replay(store, scored, args.history):
            gold = store.gold(question)
            response = recall_traced(store, question, args.limit, not args.no_cues)
            trace = response["trace"]
            judged = judge(trace, gold) if gold else None
            stages = evidence_stages(trace, gold) if judged is not None and judged.confirmed else None
            rows.append(
                {
                    "qid": question.qid,
                    "category": dataset.category_label(question.category),
                    "cued": cue_of(question, not args.no_cues) is not None,
                    "gold": gold,
                    "judged": judged,
                    "stages": stages,
                    "suspects": [dict(s) for s in trace.get("suspected") or []],
                }
            )
            if dump is not None and gold:
                dump.write(json.dumps({"id": question.qid, "gold": gold, "trace": trace}) + "\n")
            advance()
    finally:
        store.close()
    return rows


def run(args: argparse.Namespace, console: Any) -> tuple[list[Conversation], list[dict[str, Any]], str]:
    from rich.progress import Progress

    args.code = code_tree()  # at the start, before others' edits during the run
    conversations = load_locomo(args.data, limit_conversations=args.limit_conversations, option="--data")
    dataset = h.Dataset("locomo", conversations)
    workdir = h.workdir_for(args.workdir)
    dump = None
    if args.dump_traces:
        args.dump_traces.parent.mkdir(parents=True, exist_ok=True)
        dump = args.dump_traces.open("w", encoding="utf-8")
    rows: list[dict[str, Any]] = []
    try:
        with Progress(console=console) as progress:
            embedder = h.prefetched_embedder(args.embedder, [dataset], progress)
            asked = progress.add_task("recalls", total=h.count_questions([dataset], lambda d, q: d.scored(q)))
            for conversation in conversations:
                rows += evaluate_conversation(
                    conversation, embedder, args, workdir, dump, lambda: progress.advance(asked)
                )
    finally:
        if dump is not None:
            dump.close()
    return conversations, rows, embedder.model


# -- reporting ------------------------------------------------------------------------------------


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def code_table(summary: dict[str, Any]) -> list[str]:
    header = [
        "code",
        "suspected",
        "confirmed",
        "suspected & confirmed",
        "suspected only",
        "of which returned",
        "(rescued by its action)",
        "of which another code",
        "confirmed only",
        "precision",
        "recall",
    ]
    rows = [
        [
            code,
            c["suspected"],
            c["confirmed"],
            c["both"],
            c["suspected_only"],
            c["suspected_returned"],
            c["rescued"],
            c["suspected_other"],
            c["confirmed_only"],
            _share(c["precision"]),
            _share(c["recall"]),
        ]
        for code, c in summary["codes"].items()
    ]
    return h.markdown_table(header, rows)


def unsuspected_table(summary: dict[str, Any]) -> list[str]:
    rows = [[code, count] for code, count in summary["unsuspected"].items()]
    header = ["confirmed code", "failed recalls that suspected nothing"]
    return h.markdown_table(header, rows or [["(none)", 0]])


def stage_table(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Failed recalls by confirmed code and the stages their evidence stopped at."""
    counts = Counter((r["judged"].confirmed, r["stages"]) for r in rows if r["judged"].confirmed)
    table = [[code, stages, n] for (code, stages), n in sorted(counts.items())]
    header = ["confirmed code", "stages of the evidence", "failed recalls"]
    return h.markdown_table(header, table or [["", "", 0]], "llr")


def code_tree() -> str:
    """Which code ran: the working tree's commit, and whether cuedrecall/ had uncommitted edits."""
    return "the working tree at " + h.code_tree()


def overview(summary: dict[str, Any]) -> str:
    return (
        f"{summary['recalls']} recalls: {summary['returned']} returned some evidence, "
        f"{summary['failed']} failed; {summary['with_suspicion']} suspected something "
        f"({summary['failed_with_suspicion']} of the "
        f"failed ones)."
    )


def suspect_reasons(rows: Sequence[dict[str, Any]]) -> list[str]:
    """How often each (code, stage, action) was recorded: what the loop did on its suspicion."""
    counts = Counter((s.get("code"), s.get("stage"), s.get("action")) for r in rows for s in r["suspects"])
    ordered = sorted(counts.items(), key=lambda kv: -kv[1])
    table = [[code, stage, action, n] for (code, stage, action), n in ordered]
    return h.markdown_table(["code", "stage", "action", "times"], table or [["(none)", "", "", 0]], "lrlr")


def render(
    argv: Sequence[str],
    args: argparse.Namespace,
    conversations: Sequence[Conversation],
    rows: Sequence[dict[str, Any]],
    model: str,
    seconds: float,
) -> str:
    judged = [r for r in rows if r["judged"] is not None]
    summary = tally(r["judged"] for r in judged)
    cued = [r for r in judged if r["cued"]]
    lines = [
        "# Suspected against confirmed failure codes",
        "",
        f"Command: `{h.command_line(PROG, argv)}`",
        "",
        "## Setup",
        "",
        (
            f"- LoCoMo, {len(conversations)} conversation(s); one store per conversation, filled as "
            "`benchmarks/harness.py` fills it (turns with `Memory.store`, session summaries as episodes, "
            f"the calibrations queued by growth run); history `{args.history}`."
        ),
        (
            f"- Server defaults: embedder `{args.embedder}` ({model}), fusion `{args.mode}`, the word arm "
            "and the block arm on (blocks built as the replay stores), gate-v1 with relief; limit "
            f"{args.limit}; the question's asked_at as now."
        ),
        "- Time cue: "
        + (
            "none (`--no-cues`)."
            if args.no_cues
            else "the one `benchmarks.cues.extract_cue` reads in the question's text (its "
            f"asked_at as today), where it finds one: {len(cued)} of {len(judged)} recalls."
        ),
        (
            "- Suspected: the distinct codes of `trace.suspected`. Confirmed: "
            "`benchmarks.recall_trace_confirm.confirm(trace, evidence refs)`; a recall that returned some "
            "evidence has no confirmed code. Category 5 (adversarial) is left out"
        )
        + (
            f"; {len(rows) - len(judged)} question(s) had no evidence ref in the store and are left out too."
            if len(rows) > len(judged)
            else "."
        ),
        (
            "- Precision: suspected & confirmed over suspected; recall: suspected & confirmed over confirmed. "
            "A suspicion whose action rescued the evidence (relief admitting it, a wider cue period finding "
            "it) counts as suspected only, returned."
        ),
        f"- Code: {getattr(args, 'code', None) or code_tree()}. Ran in {seconds:.0f} s.",
        "",
        "## Per code",
        "",
        overview(summary),
        "",
        *code_table(summary),
        "",
        "## Confirmed failures with no suspicion at all",
        "",
        *unsuspected_table(summary),
        "",
        "## Where the evidence of the failed recalls stopped",
        "",
        (
            "`benchmarks.recall_trace_confirm.attribute` per evidence ref: `arms` (on no arm's list), `gate`, "
            "`autocut`, `count` (admitted, behind the count cut), `seat` (only a seat arm such as `block` or "
            "`cue` reached it and no seat held it); a recall with several evidence refs lists each stage "
            "once."
        ),
        "",
        *stage_table(judged),
        "",
    ]
    if cued and not args.no_cues:
        cued_summary = tally(r["judged"] for r in cued)
        lines += ["## Cued recalls only", "", overview(cued_summary), "", *code_table(cued_summary), ""]
    lines += ["## What the loop recorded", "", *suspect_reasons(judged), ""]
    return "\n".join(lines)


def print_summary(rows: Sequence[dict[str, Any]], console: Any) -> None:
    from rich.table import Table

    summary = tally(r["judged"] for r in rows if r["judged"] is not None)
    table = Table(title=overview(summary))
    columns = ("code", "suspected", "confirmed", "both", "susp. only", "conf. only", "precision", "recall")
    for column in columns:
        table.add_column(column, justify="left" if column == "code" else "right")
    for code, c in summary["codes"].items():
        counts = (str(c[k]) for k in ("suspected", "confirmed", "both", "suspected_only", "confirmed_only"))
        table.add_row(code, *counts, _share(c["precision"]), _share(c["recall"]))
    console.print(table)
    console.print(f"confirmed with no suspicion: {summary['unsuspected']}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m {PROG}", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="LoCoMo JSON file (locomo10.json or a split of it)")
    parser.add_argument("--limit-conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--limit", type=int, default=h.LIMIT, help="recall limit (default: %(default)s)")
    parser.add_argument(
        "--embedder",
        choices=["local", "hash"],
        default="local",
        help="local is the packaged embedder, the server's default (default: %(default)s)",
    )
    parser.add_argument("--mode", choices=["rrf", "rsf"], default="rrf", help="fusion (default: %(default)s)")
    parser.add_argument("--history", choices=h.HISTORIES, default="asked", help="as in benchmarks.retrieval")
    parser.add_argument("--no-cues", action="store_true", help="recall without the extracted time cues")
    parser.add_argument("--workdir", type=Path, help="keep the databases here (default: a temporary folder)")
    parser.add_argument(
        "--dump-traces", type=Path, metavar="PATH.jsonl", help="write one {id, gold, trace} line per recall"
    )
    parser.add_argument(
        "--out", type=Path, default=h.RESULTS / "suspected-confirmed.md", help="markdown report (default: %(default)s)"
    )
    return parser


def main(argv: Sequence[str] | None = None, console: Any = None) -> int:
    from rich.console import Console

    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    console = console or Console(stderr=True)
    started = time.perf_counter()
    conversations, rows, model = run(args, console)
    if not any(r["judged"] is not None for r in rows):
        console.print("no questions with evidence to judge")
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(argv, args, conversations, rows, model, time.perf_counter() - started), encoding="utf-8")
    print_summary(rows, console)
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
