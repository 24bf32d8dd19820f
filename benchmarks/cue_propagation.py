"""Cue propagation (propagated-v1) against propagation off and against off with as many extra rows, side by side.

    python -m benchmarks.cue_propagation --long-span large

Each store is built once at the shipped defaults (packaged embedder, word arm,
blocks built and drained before any question and searched, the gate calibrating
itself as the store grows) and every question is recalled without a time cue
(propagation runs only when the caller gave none) three ways, the settings
swapped between recalls (``ConversationStore.using``), so all see the same rows,
blocks and calibration: (off) ``cue_propagation=False``; (on)
``cue_propagation=True``; (w) off with limit + *s*, *s* the seats (on) used, so
extra places alone are controlled for. Layouts: LoCoMo one conversation per
agent; every LoCoMo conversation under one agent; the time-cue study's generated
long-span history (its questions asked without their cue). Writes
benchmarks/results/cue-propagation.md.

A layout may be run on its own (``--layouts``) with its rows kept (``--rows``), and
the report written from the kept rows of several runs (``--merge``); the report
then names every command that produced rows.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from benchmarks import harness as h
from benchmarks import stats
from benchmarks.datasets import Conversation
from benchmarks.relief import layouts
from benchmarks.time_cue import appended
from cuedrecall.recall.stopping import TIME_LIMIT

PROG = "benchmarks.cue_propagation"
LAYOUTS = ("per-conversation", "one-agent", "long-span")
OFF = {"cue_propagation": False}
ON = {"cue_propagation": True}
SEAT = "propagated_cue"  # the propagated seat's match_reason signal (cuedrecall/recall/cue_propagation.py)
SOURCE = "propagated-v1"  # the propagation stage names its policy in "searched"
VARIANTS = ("off", "on", "w", "d")
# scores: over the first 10 rows, and over the returned rows (the equal-rows comparison against (w) and (d))
METRICS = ("rows", "hit@10", "recall@10", "ndcg@10", "hit", "recall", "ndcg")
# the verdict's score, and the scores on which a control beating propagation counts as harm
PRIMARY = "ndcg"
HARM = ("hit@10", "recall@10", "ndcg@10", "hit", "recall", "ndcg")
CONTROLS = ("off", "w")


# -- reading one response ------------------------------------------------------------------------


def reason(message: dict[str, Any]) -> dict[str, Any]:
    return message.get("match_reason") or {}


def propagation_stage(response: dict[str, Any]) -> dict[str, Any] | None:
    """The trace's propagation stage (the strong hit's period searched), or None when no strong hit was found."""
    for stage in (response.get("trace") or {}).get("stages") or []:
        if "source" in stage and SOURCE in str(stage.get("searched", "")):
            return stage
    return None


def propagated_seats(response: dict[str, Any]) -> list[str]:
    """Refs of the rows the propagated seat admitted, best first."""
    return [
        m["ref"]
        for m in reversed(response.get("messages") or [])
        if reason(m).get("admission") == "reservation" and reason(m).get("signal") == SEAT
    ]


def what_it_did(response: dict[str, Any], gold: Sequence[str]) -> dict[str, Any]:
    """Whether propagation fired (a strong hit proposed its period), moved rows, seated one; and for the evidence.

    ``rose``: rows that rose (a rise is one place at most); ``moved``: it reordered the answer; ``seated``: the
    seat held a row; ``*_gold``: an evidence row rose / fell / was seated; ``source_fell``: the strong hit itself
    (left out of what its period found) was pushed down by a neighbour; ``stopped``: why the stage stopped.
    """
    stage = propagation_stage(response)
    seated = propagated_seats(response)
    evidence = set(gold)
    if stage is None:
        return {
            "fired": False,
            "found": 0,
            "moved": False,
            "rose": 0,
            "rose_gold": False,
            "fell_gold": False,
            "source_fell": False,
            "seated": len(seated),
            "seated_gold": any(r in evidence for r in seated),
            "stopped": None,
        }
    lifted = stage.get("lifted") or []
    rose = [m["ref"] for m in lifted if m["to"] < m["from"]]
    fell = [m["ref"] for m in lifted if m["to"] > m["from"]]
    return {
        "fired": True,
        "found": int(stage.get("found", 0)),
        "moved": bool(lifted),
        "rose": len(rose),
        "rose_gold": any(r in evidence for r in rose),
        "fell_gold": any(r in evidence for r in fell),
        "source_fell": stage.get("source") in fell,
        "seated": len(seated),
        "seated_gold": any(r in evidence for r in seated),
        "stopped": stage.get("stopped"),
    }


def policy(response: dict[str, Any]) -> str:
    return ((response.get("trace") or {}).get("policy") or {}).get("process", "?")


def metrics(ranked: Sequence[str], gold: Sequence[str]) -> dict[str, float]:
    """The scores of one ranking: over the first 10 rows, and over all the returned rows."""
    evidence = set(gold)
    share = (lambda rows: len(evidence & set(rows)) / len(evidence)) if evidence else (lambda rows: 0.0)
    return {
        "rows": float(len(ranked)),
        "hit@10": h.recall_any(ranked, gold, 10),
        "recall@10": share(ranked[:10]),
        "ndcg@10": h.ndcg(ranked, gold, 10),
        "hit": float(bool(evidence & set(ranked))),
        "recall": share(ranked),
        "ndcg": h.ndcg(ranked, gold),
    }


def put(row: dict[str, Any], name: str, ranked: Sequence[str], gold: Sequence[str]) -> None:
    for metric, value in metrics(list(ranked), gold).items():
        row[f"{metric}:{name}"] = value


# -- one question ----------------------------------------------------------------------------------


def study_question(
    store: h.ConversationStore, question: Any, gold: Sequence[str], limit: int, row: dict[str, Any]
) -> None:
    """(off), (on), (w) = off with limit + s, and (d) = off's rows with (w)'s first s new rows appended."""
    with store.using(**OFF):
        off = store.ask(question, limit=limit, trace=True)
    with store.using(**ON):
        on = store.ask(question, limit=limit, trace=True)
    did = what_it_did(on, gold)
    s = did["seated"]
    with store.using(**OFF):
        wider = store.ask(question, limit=limit + s) if s else off
    r_off, r_on, r_w = h.best_first(off), h.best_first(on), h.best_first(wider)
    for name, ranked in (("off", r_off), ("on", r_on), ("w", r_w), ("d", appended(r_off, r_w, s))):
        put(row, name, ranked, gold)
    row.update(did)
    row["changed"] = r_on != r_off
    row["policy_off"], row["policy_on"] = policy(off), policy(on)


def study(args: argparse.Namespace, layout: str, dataset: str, conversation: Conversation) -> tuple[list[Any], Any]:
    """A store's scored questions and the row of each: (off), (on), (w) and (d)."""
    locomo = dataset == "locomo"

    def row_of(store: h.ConversationStore, question: Any, row: dict[str, Any]) -> dict[str, Any]:
        gold = store.gold(question)
        row.update(category=question.category, gold=len(gold))
        study_question(store, question, gold, args.limit, row)
        return row

    return [q for q in conversation.questions if not (locomo and q.category in h.LOCOMO_EXCLUDED)], row_of


# -- counting and the verdict (pure: tests/benchmarks/test_bench_cue_propagation.py) ---------------------------


def counts(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """How often propagation fired, moved rows, seated a row, and for the evidence."""
    n = len(rows)
    fired = [r for r in rows if r["fired"]]
    return {
        "n": n,
        "fired": len(fired),
        "found": sum(1 for r in fired if r["found"]),
        "moved": sum(1 for r in rows if r["moved"]),
        "seated": sum(1 for r in rows if r["seated"]),
        "rose_gold": sum(1 for r in rows if r["rose_gold"]),
        "fell_gold": sum(1 for r in rows if r.get("fell_gold")),
        "source_fell": sum(1 for r in rows if r.get("source_fell")),
        "seated_gold": sum(1 for r in rows if r["seated_gold"]),
        "changed": sum(1 for r in rows if r["changed"]),
        "time_limit": sum(1 for r in fired if r["stopped"] == TIME_LIMIT),
    }


def judge(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One set: propagation *helps* when on beats off and beats (w) on the primary score; it *hurts* when off or
    (w) beats on on any score of ``HARM``. The comparisons are kept for the tables."""
    tests = {(c, m): stats.compare_on(rows, "on", c, m) for c in (*CONTROLS, "d") for m in HARM}
    helps = all(stats.beats(tests[(c, PRIMARY)]) for c in CONTROLS)
    hurts = [f"{c} > on on {m}" for c in CONTROLS for m in HARM if stats.beaten(tests[(c, m)])]
    return {"helps": helps, "hurts": hurts, "tests": tests}


def verdict(judged: Sequence[dict[str, Any]]) -> bool:
    """On by default only if it helps on at least one set and hurts on none."""
    return any(j["helps"] for j in judged) and not any(j["hurts"] for j in judged)


def question_sets(rows: Sequence[dict[str, Any]]) -> list[tuple[str, str, list[dict[str, Any]]]]:
    return [
        (layout, embedder, group) for (layout, embedder), group in h.group_rows(rows, ("layout", "embedder")).items()
    ]


# -- the report ------------------------------------------------------------------------------------


def _pct(k: int, n: int) -> str:
    return f"{k} ({k / n:.1%})" if n else "0"


RULE = """## The rule (fixed before any number below)

1. **Stores.** The shipped defaults: the packaged embedder, the word arm, blocks built (the build queue drained
   after each batch of records, before any question: `Memory(..., background=False)`, then
   `memory.blocks.drain()`) and searched, the gate calibrating itself as the store grows, limit {limit}. Each store
   is built once; each question is recalled under each variant in turn, the settings swapped between recalls.
2. **Questions.** Without a time cue (propagation runs only when the caller gave none). LoCoMo: the scored
   questions (category 5 left out). Long-span: the time-cue study's generated history and its questions (all of
   them), asked without their cue.
3. **Variants.** **(off)** `cue_propagation=false` (the shipped recall); **(on)** `cue_propagation=true`
   (`propagated-v1`); **(w)** off with limit {limit} + *s*, *s* the number of rows the propagated seat held in (on)
   (0 or 1; *s* = 0 makes (w) the same recall as (off)), so extra places alone are controlled for; secondary,
   **(d)** (off)'s rows with the first *s* rows of (w) that (off) lacks appended (extra rows without any
   reordering).
4. **What it did** (from (on)'s trace and rows): *fired* when the answer's best row was a strong hit with a time,
   so the propagation stage ran (its stage entry names the source hit); *moved* when that stage lifted a row (a
   rise is one place at most, and a row that rises pushes one down; the stage's `lifted` list, which also says
   whether an evidence row rose or fell, and whether the strong hit itself, left out of what its period found,
   was pushed down); *seated* when the propagated seat (`match_reason.signal: "propagated_cue"`) held a row.
5. **Scores.** Relevant rows: the stored refs of the question's evidence turns. Over the first 10 rows: hit@10
   (any evidence), recall@10 (the share of the evidence), NDCG@10. Over the returned rows (the equal-rows
   comparison, since (w) and (d) return as many rows as (on)): hit, recall, NDCG.
6. **Up / down.** Per question, (on) is up on a score when it is higher than the control's and down when lower;
   ties left out. One-sided exact sign test: p = P(X ≥ up), X ~ Binomial(up + down, ½); "p fell" the same for down.
7. **Verdict.** Propagation *helps* on a set when, on NDCG over the returned rows, (on) beats (off) **and** beats
   (w), each at p < {alpha} with the higher mean. It *hurts* on a set when (off) or (w) beats (on) on any score of
   rule 5 at p < {alpha} with the higher mean. **On by default** only if it helps on at least one set and hurts on
   none; otherwise it stays off.
"""


def tables(rows: Sequence[dict[str, Any]]) -> dict[str, list[list[Any]]]:
    out: dict[str, list[list[Any]]] = {"fired": [], "ten": [], "equal": [], "updown": [], "verdict": []}
    for layout, embedder, group in question_sets(rows):
        c = counts(group)
        j = judge(group)
        n = c["n"]
        out["fired"].append(
            [
                layout,
                n,
                _pct(c["fired"], n),
                _pct(c["moved"], n),
                _pct(c["seated"], n),
                c["rose_gold"],
                c["fell_gold"],
                c["source_fell"],
                c["seated_gold"],
                _pct(c["changed"], n),
                c["time_limit"],
                *(f"{h.mean(r[f'rows:{v}'] for r in group):.2f}" for v in ("off", "on", "w")),
            ]
        )
        out["ten"].append(
            [
                layout,
                n,
                *(
                    " / ".join(f"{h.mean(r[f'{m}:{v}'] for r in group):.3f}" for v in ("off", "on", "w"))
                    for m in ("hit@10", "recall@10", "ndcg@10")
                ),
            ]
        )
        out["equal"].append(
            [
                layout,
                n,
                *(
                    " / ".join(f"{h.mean(r[f'{m}:{v}'] for r in group):.3f}" for v in ("off", "on", "w", "d"))
                    for m in ("hit", "recall", "ndcg")
                ),
            ]
        )
        for control in (*CONTROLS, "d"):
            out["updown"].append(
                [
                    layout,
                    f"on vs ({control})",
                    *(stats.rose_fell_text(j["tests"][(control, m)], fell_p=True) for m in HARM),
                ]
            )
        out["verdict"].append(
            [layout, embedder, f"{c['fired']} of {n}", "yes" if j["helps"] else "no", "; ".join(j["hurts"]) or "no"]
        )
    return out


def policies(rows: Sequence[dict[str, Any]]) -> str:
    names: dict[str, set[str]] = {"off": set(), "on": set()}
    for r in rows:
        names["off"].add(r["policy_off"])
        names["on"].add(r["policy_on"])
    return "; ".join(f"({k}) " + ", ".join(f"`{v}`" for v in sorted(vs)) for k, vs in names.items())


def render(
    argv: Sequence[str], args: argparse.Namespace, datasets: h.Datasets, rows: h.Rows, models: dict[str, str], png: Path
) -> str:
    t = tables(rows)
    judged = [judge(group) for _l, _e, group in question_sets(rows)]
    on = verdict(judged)
    kept = getattr(args, "commands", None)  # --merge: the runs that produced the rows, then this command
    commands = [*kept, h.command_line(PROG, argv)] if kept else [h.command_line(PROG, argv)]
    trees = sorted(set(getattr(args, "trees", None) or [h.code_tree()]))
    lines = [
        "# Cue propagation (propagated-v1) against both controls",
        "",
        *(f"Command: `{c}`" for c in commands),
        "",
        "Code: " + "; ".join(trees) + ".",
        "",
        RULE.format(limit=args.limit, alpha=stats.ALPHA),
        "## Setup",
        "",
        (
            f"- Defaults: `{args.defaults}`; fusion {args.mode}; limit {args.limit}; the environment is not read; the "
            "settings of every variant are the defaults but `cue_propagation` (and the limit of (w))."
        ),
        (
            "- Layouts: `per-conversation` (LoCoMo, one agent per conversation, history `asked`: each question sees "
            "what was stored before it was asked); `one-agent` (every LoCoMo conversation under one agent, history "
            "`all`: the whole memory stored first, each question asked at its own asked_at); `long-span` (the "
            "generated history, history `asked`)."
        ),
        "- Embedders: " + ", ".join(f"`{k}` ({v})" for k, v in models.items()) + ".",
        *h.dataset_facts(datasets),
        "- Policies the recalls ran (trace `policy.process`): " + policies(rows) + ".",
        "",
        "## What propagation did",
        "",
        *h.markdown_table(
            [
                "set",
                "n",
                "fired (strong hit)",
                "moved a row",
                "seated a row",
                "an evidence row rose",
                "an evidence row fell",
                "the strong hit fell",
                "the seat held evidence",
                "answer changed",
                "stopped by the time limit",
                "rows: off",
                "rows: on",
                "rows: (w)",
            ],
            t["fired"],
            "l" + "r" * 13,
        ),
        "",
        "## The first 10 rows (off / on / (w))",
        "",
        *h.markdown_table(["set", "n", "hit@10", "recall@10", "NDCG@10"], t["ten"], "lrrrr"),
        "",
        "## At equal rows: over the returned rows (off / on / (w) / (d))",
        "",
        *h.markdown_table(["set", "n", "hit", "recall", "NDCG"], t["equal"], "lrrrr"),
        "",
        "## Up / down per question (on against each control; one-sided sign test)",
        "",
        *h.markdown_table(["set", "compared", *HARM], t["updown"], "ll" + "r" * len(HARM)),
        "",
        "## Verdict",
        "",
        *h.markdown_table(["set", "embedder", "fired", "helps (beats off and (w))", "hurts"], t["verdict"], "lllll"),
        "",
        (
            f"**{'On by default' if on else 'Keep off'}**: propagated-v1 helps on {sum(j['helps'] for j in judged)} of "
            f"{len(judged)} sets and hurts on {sum(bool(j['hurts']) for j in judged)}."
        ),
        "",
    ]
    return "\n".join(lines)


def plot(rows: Sequence[dict[str, Any]], path: Path) -> None:
    """No chart: the tables are the result."""


def print_summary(rows: h.Rows, console: Console) -> None:
    columns = ("set", "n", "fired", "moved", "seated", "off", "on", "(w)", "on>off p", "on>(w) p")
    out = []
    for layout, _embedder, group in question_sets(rows):
        c = counts(group)
        t_off, t_w = stats.compare_on(group, "on", "off", PRIMARY), stats.compare_on(group, "on", "w", PRIMARY)
        means = (f"{t:.3f}" for t in (t_off["my"], t_off["mx"], t_w["my"]))
        out.append(
            [
                layout,
                *(c[k] for k in ("n", "fired", "moved", "seated")),
                *means,
                *map(stats.p_text, (t_off["p"], t_w["p"])),
            ]
        )
    h.print_table(console, "cue propagation (NDCG over the returned rows)", columns, out)


# -- the command line --------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = h.study_parser(PROG, __doc__.splitlines()[0], "cue-propagation.md", ["local"], ["rrf"])
    h.add_defaults_option(parser, "shipped")
    parser.add_argument("--layouts", nargs="+", choices=LAYOUTS, default=list(LAYOUTS))
    parser.add_argument("--rows", type=Path, help="also keep the rows (JSON) here, for --merge")
    parser.add_argument(
        "--merge",
        type=Path,
        nargs="+",
        metavar="ROWS",
        help="run nothing: write the report from rows kept by earlier runs (--rows)",
    )
    return parser


def run(args: argparse.Namespace, console: Console) -> tuple[list[h.Dataset], list[dict[str, Any]], dict[str, str]]:
    datasets = h.load_datasets(args.locomo, args.limit_conversations, args.long_span, args.seed)
    if args.merge:
        return datasets, *merged(args)
    args.modes = args.modes[:1]  # one fusion mode: the first asked for
    tree = h.code_tree()
    rows, models = h.ask_layouts(args, console, datasets, layouts(datasets, args.layouts), study)
    if args.rows:
        args.rows.parent.mkdir(parents=True, exist_ok=True)
        argv = sys.argv[1:]
        args.rows.write_text(
            json.dumps({"command": h.command_line(PROG, argv), "tree": tree, "models": models, "rows": rows}),
            encoding="utf-8",
        )
    return datasets, rows, models


def merged(args: argparse.Namespace) -> tuple[list[dict[str, Any]], dict[str, str]]:
    rows: list[dict[str, Any]] = []
    models: dict[str, str] = {}
    args.commands, args.trees = [], []
    for path in args.merge:
        kept = json.loads(Path(path).read_text(encoding="utf-8"))
        rows += kept["rows"]
        models.update(kept["models"])
        args.commands.append(kept["command"])
        args.trees.append(kept["tree"])
    args.mode = args.modes[0]
    return rows, models


def main(argv: Sequence[str] | None = None, console: Console | None = None) -> int:
    return h.run_study(argv, build_parser(), sys.modules[__name__], console, "no questions")


if __name__ == "__main__":
    raise SystemExit(main())
