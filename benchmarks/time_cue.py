"""The time-cue study (docs/benchmarks.md#the-time-cue-study): does a stated time beat no cue AND as many extra rows?

    python -m benchmarks.time_cue --embedders local hash --long-span large

Stores run at the shipped defaults (``--defaults shipped``: blocks built, drained
before each question, and searched; word arm; gate relief as shipped);
``--defaults no-blocks`` runs them as the figures before blocks were measured.

Over the questions that get a cue from ``benchmarks.cues.extract_cue`` (question
text and asked_at only), each question is recalled (a) without a cue, (b) with
the cue, (c) without a cue but with as many extra rows as seats (b) held, and
(w) with a deliberately wrong cue: the cue's period moved to one that holds no
evidence. Writes benchmarks/results/time_cue.md (the rule first, then the
numbers) and a PNG next to it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from rich.console import Console

from benchmarks import harness as h
from benchmarks import stats
from benchmarks.cues import explain_cue
from cuedrecall.config import Settings
from cuedrecall.recall.cue_policy import BOUND, WIDER
from cuedrecall.recall.timecue import base_period, is_recent_only, parse_time_cue, period

PROG = "benchmarks.time_cue"
# Where a wrong cue's period is moved, in days, tried in this order: four months away first.
SHIFTS = (-120, 120, -150, 150, -90, 90, -180, 180, -60, 60, -210, 210, -240, 240, -30, 30)


# -- statistics (the sign tests: benchmarks/stats.py) ----------------------------------------


def rank_score(rank: int | None) -> float:
    """A best evidence rank as a score to compare (higher is better; none returned is lowest)."""
    return 0.0 if rank is None else 1.0 / rank


# -- wrong cues --------------------------------------------------------------------------------


def searched_period(cue: dict[str, Any], now: datetime, span: Any) -> tuple[datetime, datetime] | None:
    """The period the server searches first for a cue: its own period widened by the confidence's margin."""
    parsed = parse_time_cue(cue)
    return period(parsed, parsed.confidence, now, span)


def holds(p: tuple[datetime, datetime] | None, times: Sequence[datetime]) -> bool:
    return p is not None and any(p[0] <= t < p[1] for t in times)


def wrong_cue(
    cue: dict[str, Any],
    now: datetime,
    span: tuple[datetime, datetime] | None,
    evidence_times: Sequence[datetime],
    record_times: Sequence[datetime],
) -> tuple[dict, int] | None:
    """A cue of the same confidence whose period is the correct cue's, moved so it holds no evidence.

    Returns (cue, shift in days) for the first shift in ``SHIFTS`` whose period, as
    the server widens it for the confidence and for the one wider step it searches
    when the first finds nothing (docs/recall-process.md#one-revision), holds no evidence time; whose own
    period ends no later than now and is not ignored as recent-only
    (docs/recall-process.md#a-cue-for-today-is-not-used); and which holds at least one stored memory from
    before now. None when no shift qualifies.
    """
    parsed = parse_time_cue(cue)
    base = base_period(parsed, now, span)
    if base is None:
        return None
    before_now = [t for t in record_times if t <= now]
    for shift in SHIFTS:
        start, end = base[0] + timedelta(days=shift), base[1] + timedelta(days=shift)
        candidate = {
            "after": start.date().isoformat(),
            "before": (end - timedelta(microseconds=1)).date().isoformat(),
            "confidence": parsed.confidence,
        }
        moved = parse_time_cue(candidate)
        own = base_period(moved, now, span)
        if own is None or own[1] > now or is_recent_only(moved, now, span):
            continue
        steps = [moved.confidence, WIDER[moved.confidence]]
        if any(holds(period(moved, step, now, span), evidence_times) for step in steps if step is not None):
            continue
        if not holds(own, before_now):
            continue
        return candidate, shift
    return None


# -- reading responses -------------------------------------------------------------------------


def cue_seats(response: dict[str, Any]) -> list[str]:
    """Refs of rows seated for the cue (admission reservation, signal cue), best first."""
    return [
        m["ref"]
        for m in reversed(response.get("messages") or [])
        if (m.get("match_reason") or {}).get("admission") == "reservation"
        and (m.get("match_reason") or {}).get("signal") == "cue"
    ]


def places_fell(before: Sequence[str], after: Sequence[str], gold: Sequence[str]) -> int:
    """The most places any evidence row of ``before`` stands lower in ``after`` (0 when none fell)."""
    worst = 0
    for ref in gold:
        if ref in before and ref in after:
            worst = max(worst, after.index(ref) - before.index(ref))
    return worst


def appended(uncued: Sequence[str], wider: Sequence[str], extra: int) -> list[str]:
    """(a) with the first ``extra`` rows of the wider recall that (a) lacks appended, in its order."""
    return [*uncued, *[r for r in wider if r not in uncued][:extra]]


def same_rows(uncued: Sequence[str], cued: dict[str, Any]) -> bool:
    """docs/recall-process.md#invariants: the cued answer, its cue seats left out, holds exactly the uncued rows."""
    seats = set(cue_seats(cued))
    return sorted(r for r in h.best_first(cued) if r not in seats) == sorted(uncued)


# -- one question ------------------------------------------------------------------------------


def study_question(
    store: h.ConversationStore, dataset: h.Dataset, question: Any, cue: dict[str, Any], rule: str, limit: int
) -> dict[str, Any]:
    """Recalls (a), (b), (c) and (w) for one cued question, and what to compare."""
    gold = store.gold(question)
    gold_ep = store.gold(question, with_episodes=True)
    now = datetime.fromisoformat(question.asked_at)
    span = store.memory_span()
    a = store.ask(question, limit=limit, trace=True)
    b = store.ask(question, limit=limit, time_cue=cue)
    summary = b.get("time_cue") or {}
    policies = {
        "policy_a": ((a.get("trace") or {}).get("policy") or {}).get("process", "?"),
        "policy_b": summary.get("policy", "?"),
    }
    seats = int(summary.get("seated", 0))
    c = store.ask(question, limit=limit + seats) if seats else a
    ra, rb, rc = h.best_first(a), h.best_first(b), h.best_first(c)
    rd = appended(ra, rc, seats)
    evidence_times = [store.times[r] for r in gold_ep if r in store.times]
    row: dict[str, Any] = {
        "dataset": dataset.name,
        "embedder": store.memory.embedder.mode,
        "mode": store.memory.settings.recall_mode,
        "qid": question.qid,
        "category": dataset.category_label(question.category),
        "rule": rule,
        "confidence": cue["confidence"],
        "ignored": summary.get("ignored") is not None,
        "revised": bool(summary.get("revised")),
        "seats": seats,
        "gold": len(gold),
        "in_period": holds(searched_period(cue, now, span), evidence_times),
        "len_a": len(ra),
        "len_b": len(rb),
        "len_c": len(rc),
        "same_rows_b": same_rows(ra, b),
        "c_reordered": rc[: len(ra)] != ra,
        **policies,
        "relieved_b": sum(1 for m in b.get("messages") or [] if (m.get("match_reason") or {}).get("relieved")),
    }
    for name, ranked in (("a", ra), ("b", rb), ("c", rc), ("d", rd)):
        row[f"ndcg_{name}"] = h.ndcg(ranked, gold)
        row[f"ndcg_ep_{name}"] = h.ndcg(ranked, gold_ep)
        row[f"best_{name}"] = h.best_rank(ranked, gold)
    row.update(study_wrong(store, question, cue, now, span, evidence_times, gold, ra, limit))
    return row


def study_wrong(
    store: h.ConversationStore,
    question: Any,
    cue: dict[str, Any],
    now: datetime,
    span: Any,
    evidence_times: Sequence[datetime],
    gold: Sequence[str],
    ra: Sequence[str],
    limit: int,
) -> dict[str, Any]:
    memory_times = [t for ref, t in store.times.items() if ref.startswith("mem:")]
    made = wrong_cue(cue, now, span, evidence_times, memory_times)
    if made is None:
        return {"wrong": False}
    wrong, shift = made
    w = store.ask(question, limit=limit, time_cue=wrong)
    rw = h.best_first(w)
    summary = w.get("time_cue") or {}
    step = summary.get("confidence", wrong["confidence"])
    return {
        "wrong": True,
        "wrong_shift": shift,
        "wrong_cue": wrong,
        "ndcg_w": h.ndcg(rw, gold),
        "best_w": h.best_rank(rw, gold),
        "fell_w": places_fell(ra, rw, gold),
        "bound_w": BOUND[step],
        "seats_w": int(summary.get("seated", 0)),
        "revised_w": bool(summary.get("revised")),
        "same_rows_w": same_rows(ra, w),
        "lost_w": any(r in ra and r not in rw for r in gold),
    }


def run_dataset(
    dataset: h.Dataset, embedder: h.PrefetchEmbedder, mode: str, args: argparse.Namespace, workdir: Path, advance: Any
) -> list[dict[str, Any]]:
    rows = []
    for conversation in dataset.conversations:
        cued = {q.qid: explain_cue(q.text, q.asked_at) for q in conversation.questions}
        questions = [q for q in conversation.questions if cued[q.qid] is not None]
        with h.ConversationStore(conversation, embedder, mode, workdir, h.DEFAULTS[args.defaults]) as store:
            for question in h.replay(store, questions, args.history):
                rule, cue = cued[question.qid]
                rows.append(study_question(store, dataset, question, cue, rule, args.limit))
                advance()
            embedder.save()
    return rows


# -- summaries ---------------------------------------------------------------------------------


def compare(rows: Sequence[dict[str, Any]], x: str, y: str, prefix: str = "ndcg_") -> dict[str, Any]:
    return stats.compare_rows(rows, x, y, lambda v: prefix + v)


def compare_ranks(rows: Sequence[dict[str, Any]], x: str, y: str) -> dict[str, Any]:
    return stats.compare_rows(rows, x, y, lambda v: f"best_{v}", rank_score)


def verdict(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The rule: (b) must beat (a) and (c) by the sign test at ALPHA, with the higher mean."""
    means = {k: h.mean(r[f"ndcg_{k}"] for r in rows) for k in "abc"}
    vs_a, vs_c = compare(rows, "b", "a"), compare(rows, "b", "c")
    passed = vs_a["p"] < stats.ALPHA and vs_c["p"] < stats.ALPHA and means["b"] > means["a"] and means["b"] > means["c"]
    return {"n": len(rows), "means": means, "vs_a": vs_a, "vs_c": vs_c, "passed": passed}


def wrong_summary(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    made = [r for r in rows if r["wrong"]]
    if not made:
        return {"n": 0}
    fell = compare(made, "w", "a")
    return {
        "n": len(made),
        "of": len(rows),
        "mean_a": h.mean(r["ndcg_a"] for r in made),
        "mean_w": h.mean(r["ndcg_w"] for r in made),
        "rose": fell["rose"],
        "fell": fell["fell"],
        "rank_fell": sum(1 for r in made if rank_score(r["best_w"]) < rank_score(r["best_a"])),
        "max_fell": max(r["fell_w"] for r in made),
        "max_bound": max(r["bound_w"] for r in made),
        "over_bound": sum(1 for r in made if r["fell_w"] > r["bound_w"]),
        "max_extra": max(r["seats_w"] for r in made),
        "seats_over_bound": sum(1 for r in made if r["seats_w"] > r["bound_w"]),
        "rows_changed": sum(1 for r in made if not r["same_rows_w"]),
        "lost": sum(1 for r in made if r["lost_w"]),
        "revised": sum(1 for r in made if r["revised_w"]),
        "fell_by": {k: sum(1 for r in made if r["fell_w"] == k) for k in range(0, max(r["fell_w"] for r in made) + 1)},
    }


# -- report ------------------------------------------------------------------------------------


RULE = """## The rule (fixed before any number below)

1. **Questions.** Every question of the dataset for which `benchmarks.cues.extract_cue(question.text,
   question.asked_at)` returns a cue. The extractor is rule-based and reads only the question's text and the
   date it was asked, never the answer or the evidence. LoCoMo: all categories (5 included); long-span: all
   questions.
2. **Three recalls per question**, limit {limit}, the question's text as query and its asked_at as now:
   (a) no cue; (b) the cue; (c) no cue, with limit {limit} + *s*, where *s* is the number of seats (b) held
   for the cue (`time_cue.seated`); when *s* = 0, (c) is (a).
3. **Score: NDCG over the returned rows.** Relevant rows: the stored refs of the question's evidence turns
   (binary). DCG over the whole returned list, best first, held seats included, divided by the ideal DCG of
   min(|evidence|, length of the list) relevant rows first. A list without evidence scores 0.
4. **Rose and fell.** Per question, (b) rose over (a) when its score is higher and fell when it is lower;
   ties are left out. One-sided exact sign test: p = P(X ≥ rose), X ~ Binomial(rose + fell, ½). The same
   for (b) against (c).
5. **Verdict.** The cue passes on a dataset only if p < {alpha} against (a) **and** p < {alpha} against (c),
   with the mean score of (b) above both. One verdict per dataset and embedder; the primary one is the
   first embedder listed in the command.
6. **Secondary, no verdict:** rises and falls of the best evidence rank; questions with any evidence
   returned; the scores when the evidence session's episode also counts as relevant (it tells the same
   event); per cue confidence, category and extractor rule; and a second control (d): the rows of (a) with
   the first *s* rows of (c) that (a) lacks appended after them. (c) is a recall with a larger limit, and
   the arms search as deep as the limit, so (c) may also reorder (a)'s rows; (d) adds the rows without
   reordering any.
7. **Wrong cues.** For each cued question, the cue's own period (as the server reads it) is moved by the
   first of {shifts} days whose period, widened by the same confidence's margin and by the next wider one
   (the one revision, docs/recall-process.md#one-revision), holds no evidence turn and no evidence session's
   episode, ends no later than now, is not a recent-only cue (docs/recall-process.md#a-cue-for-today-is-not-used),
   and holds at least one stored memory from before now. The moved cue is absolute, day-aligned, with the same
   confidence. Questions where no shift qualifies have no wrong cue. Reported against (a): mean score change, questions
   where the evidence fell, the most places any evidence row fell in the returned list, against the bound
   L of the confidence searched (a row rises at most L places, so the evidence can fall at most L places,
   and the seats add at most L rows); whether the returned rows, seats aside, stayed those of (a).
"""


def setup_lines(args: argparse.Namespace, models: dict[str, str], datasets: Sequence[h.Dataset]) -> list[str]:
    history = (
        "`asked`: each question sees only what was stored before its asked_at (the turns are replayed "
        "in time order and the questions asked in between; LoCoMo's questions all come after the last "
        "session)"
        if args.history == "asked"
        else "`all`: the whole conversation is stored first, so a long-span question may see records from "
        "after its asked_at; relative cues are read from its asked_at"
    )
    defaults = (
        "the shipped defaults: blocks built (the build queue drained after each batch of records, before "
        "any question) and searched, the word arm, gate relief as shipped "
        f"({'on' if Settings().gate_relief else 'off'})"
        if args.defaults == "shipped"
        else "the defaults with the block build and arm off (`--defaults no-blocks`), as before blocks existed"
    )
    return [
        "## Setup",
        "",
        f"- Fusion mode(s): {', '.join(args.modes)}; limit {args.limit}; {defaults} (the environment is not "
        "read); the gate calibrates itself as the store grows (at 50, 200 and 1,000 memories, the queue drained "
        "before the next question).",
        "- One store per conversation; turns stored with `Memory.store`, session summaries archived as episodes "
        "over the session's time (see `benchmarks/harness.py`).",
        f"- History: {history}.",
        "- Embedders: " + ", ".join(f"`{k}` ({v})" for k, v in models.items()) + ".",
        *h.dataset_facts(datasets),
        "",
    ]


def verdict_table(rows: Sequence[dict[str, Any]]) -> list[str]:
    out = []
    for (dataset, embedder, mode), group in h.group_rows(rows, ("dataset", "embedder", "mode")).items():
        v = verdict(group)
        m = v["means"]
        out.append(
            [
                dataset,
                embedder,
                mode,
                v["n"],
                m["a"],
                m["b"],
                m["c"],
                f"{v['vs_a']['rose']} / {v['vs_a']['fell']}",
                stats.p_text(v["vs_a"]["p"]),
                f"{v['vs_c']['rose']} / {v['vs_c']['fell']}",
                stats.p_text(v["vs_c"]["p"]),
                "**pass**" if v["passed"] else "**no claim**",
            ]
        )
    header = [
        "dataset",
        "embedder",
        "mode",
        "n",
        "NDCG (a) no cue",
        "NDCG (b) cue",
        "NDCG (c) extra rows",
        "b vs a rose / fell",
        "p",
        "b vs c rose / fell",
        "p",
        "verdict",
    ]
    return h.markdown_table(header, out, "lll" + "r" * 8 + "l")


def secondary_table(rows: Sequence[dict[str, Any]]) -> list[str]:
    out = []
    for (dataset, embedder, mode), group in h.group_rows(rows, ("dataset", "embedder", "mode")).items():
        ra, rc = compare_ranks(group, "b", "a"), compare_ranks(group, "b", "c")
        ea, ec = compare(group, "b", "a", "ndcg_ep_"), compare(group, "b", "c", "ndcg_ep_")
        returned = [sum(1 for r in group if r[f"best_{k}"] is not None) for k in "abc"]
        vd = compare(group, "b", "d")
        out.append(
            [
                dataset,
                embedder,
                mode,
                sum(r["in_period"] for r in group),
                sum(r["ignored"] for r in group),
                sum(r["revised"] for r in group),
                h.mean(r["seats"] for r in group),
                sum(r["c_reordered"] for r in group),
                h.mean(r["ndcg_d"] for r in group),
                stats.rose_fell_text(vd),
                " / ".join(map(str, returned)),
                stats.rose_fell_text(ra),
                stats.rose_fell_text(rc),
                " / ".join(f"{h.mean(r[f'ndcg_ep_{k}'] for r in group):.3f}" for k in "abc"),
                stats.rose_fell_text(ea),
                stats.rose_fell_text(ec),
            ]
        )
    header = [
        "dataset",
        "embedder",
        "mode",
        "cue period holds evidence",
        "cue ignored (recent only)",
        "revised",
        "mean seats",
        "(c) reordered (a)'s rows",
        "NDCG (d): (a) + extra rows appended",
        "b vs d rose / fell",
        "any evidence returned a / b / c",
        "best rank b vs a rose / fell",
        "best rank b vs c rose / fell",
        "NDCG with episodes a / b / c",
        "with episodes b vs a",
        "with episodes b vs c",
    ]
    return h.markdown_table(header, out, "lll" + "r" * 13)


def breakdown_table(rows: Sequence[dict[str, Any]], key: str) -> list[str]:
    out = []
    for (dataset, embedder, mode, value), group in sorted(
        h.group_rows(rows, ("dataset", "embedder", "mode", key)).items()
    ):
        va, vc = compare(group, "b", "a"), compare(group, "b", "c")
        out.append(
            [
                dataset,
                embedder,
                mode,
                value,
                len(group),
                *(h.mean(r[f"ndcg_{k}"] for r in group) for k in "abc"),
                f"{va['rose']} / {va['fell']}",
                f"{vc['rose']} / {vc['fell']}",
            ]
        )
    header = [
        "dataset",
        "embedder",
        "mode",
        key,
        "n",
        "NDCG a",
        "NDCG b",
        "NDCG c",
        "b vs a rose / fell",
        "b vs c rose / fell",
    ]
    return h.markdown_table(header, out, "llll" + "r" * 6)


def wrong_table(rows: Sequence[dict[str, Any]]) -> list[str]:
    out = []
    for (dataset, embedder, mode), group in h.group_rows(rows, ("dataset", "embedder", "mode")).items():
        s = wrong_summary(group)
        if not s["n"]:
            out.append([dataset, embedder, mode, f"0 of {len(group)}", *["n/a"] * 9])
            continue
        dist = ", ".join(f"{k}: {v}" for k, v in s["fell_by"].items())
        out.append(
            [
                dataset,
                embedder,
                mode,
                f"{s['n']} of {s['of']}",
                s["mean_a"],
                s["mean_w"],
                f"{s['mean_w'] - s['mean_a']:+.3f}",
                f"{s['fell']} / {s['rose']}",
                s["rank_fell"],
                f"{s['max_fell']} (L ≤ {s['max_bound']}; over L: {s['over_bound']})",
                dist,
                f"{s['max_extra']} (over L: {s['seats_over_bound']})",
                f"{s['rows_changed']} changed, {s['lost']} lost evidence",
            ]
        )
    header = [
        "dataset",
        "embedder",
        "mode",
        "questions with a wrong cue",
        "NDCG (a)",
        "NDCG wrong cue",
        "change",
        "evidence fell / rose (NDCG)",
        "best rank fell",
        "most places any evidence fell",
        "questions by places fell",
        "most seats added",
        "returned rows vs (a)",
    ]
    return h.markdown_table(header, out, "llll" + "r" * 9)


def render(
    argv: Sequence[str], args: argparse.Namespace, datasets: h.Datasets, rows: h.Rows, models: dict[str, str], png: Path
) -> str:
    rule = RULE.format(limit=args.limit, alpha=stats.ALPHA, shifts=", ".join(f"{s:+d}" for s in SHIFTS))
    b_changed = sum(1 for r in rows if not r["same_rows_b"])
    lines = [
        "# The time-cue study",
        "",
        f"Command: `{h.command_line(PROG, argv)}`",
        "",
        rule,
        *setup_lines(args, models, datasets),
        "## Verdict",
        "",
        *verdict_table(rows),
        "",
        f"Invariant check (docs/recall-process.md#invariants): in {b_changed} of {len(rows)} cued recalls the rows "
        "of (b), its cue seats aside, differed from those of (a).",
        "",
        "Policies the recalls ran (`policy.process` of (a)'s trace, `time_cue.policy` of (b)): "
        + "; ".join(
            f"{dataset}, {embedder}, {mode}: (a) "
            + ", ".join(f"`{p}`" for p in sorted({r["policy_a"] for r in g}))
            + "; (b) "
            + ", ".join(f"`{p}`" for p in sorted({r["policy_b"] for r in g}))
            + f"; rows gate relief let in with the cue: {sum(r['relieved_b'] for r in g)}"
            for (dataset, embedder, mode), g in h.group_rows(rows, ("dataset", "embedder", "mode")).items()
        )
        + ".",
        "",
        "## Secondary (no verdict)",
        "",
        *secondary_table(rows),
        "",
        "### By cue confidence",
        "",
        *breakdown_table(rows, "confidence"),
        "",
        "### By category",
        "",
        *breakdown_table(rows, "category"),
        "",
        "### By extractor rule",
        "",
        *breakdown_table(rows, "rule"),
        "",
        "## Wrong cues: what they cost against no cue",
        "",
        *wrong_table(rows),
        "",
        f"![mean NDCG over the returned rows, and places the evidence fell under wrong cues]({png.name})",
        "",
    ]
    return "\n".join(lines)


def plot(rows: Sequence[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = h.group_rows(rows, ("dataset", "embedder", "mode"))
    fig, axes = plt.subplots(len(groups), 2, figsize=(10, 3.6 * len(groups)), squeeze=False)
    for (left, right), ((dataset, embedder, mode), group) in zip(axes, groups.items()):
        labels = ["(a) no cue", "(b) cue", "(c) extra rows"]
        values = [h.mean(r[f"ndcg_{k}"] for r in group) for k in "abc"]
        made = [r for r in group if r["wrong"]]
        if made:
            labels += ["(a) on wrong-cue qs", "(w) wrong cue"]
            values += [h.mean(r["ndcg_a"] for r in made), h.mean(r["ndcg_w"] for r in made)]
        bars = left.bar(
            range(len(values)), values, color=["grey", "tab:blue", "tab:orange", "silver", "tab:red"][: len(values)]
        )
        left.bar_label(bars, fmt="%.3f", fontsize=8)
        left.set_xticks(range(len(labels)), labels, fontsize=8, rotation=15)
        left.set_title(f"{dataset}, {embedder}, {mode}: mean NDCG over returned rows (n={len(group)})", fontsize=9)
        if made:
            top = max(max(r["fell_w"] for r in made), max(r["bound_w"] for r in made))
            counts = [sum(1 for r in made if r["fell_w"] == k) for k in range(top + 1)]
            right.bar(range(top + 1), counts, color="tab:red")
            right.axvline(max(r["bound_w"] for r in made) + 0.5, color="black", linestyle="--", label="max L")
            right.set_xticks(range(top + 1))
            right.set_xlabel("most places any evidence fell (wrong cue vs no cue)")
            right.set_ylabel("questions")
            right.legend(fontsize=8)
        right.set_title(f"wrong cues: {len(made)} questions", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


# -- command -----------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = h.study_parser(PROG, __doc__.splitlines()[0], "time_cue.md", ["local"], ["rrf"])
    h.add_defaults_option(parser, "shipped")
    return parser


def run(args: argparse.Namespace, console: Console) -> tuple[list[h.Dataset], list[dict[str, Any]], dict[str, str]]:
    datasets = h.load_datasets(args.locomo, args.limit_conversations, args.long_span, args.seed)
    workdir = h.workdir_for(args.workdir)
    cued = h.count_questions(datasets, lambda d, q: explain_cue(q.text, q.asked_at) is not None)
    rows: list[dict[str, Any]] = []
    models: dict[str, str] = {}
    total = cued * len(args.embedders) * len(args.modes)
    for embedder, advance in h.each_embedder(args, console, datasets, "cued questions", total):
        for dataset in datasets:
            for mode in args.modes:
                rows += run_dataset(dataset, embedder, mode, args, workdir, advance)
        models[embedder.mode] = embedder.model
    return datasets, rows, models


def print_summary(rows: h.Rows, console: Console) -> None:
    columns = ("dataset", "embedder", "mode", "n", "a", "b", "c", "b>a p", "b>c p", "verdict")
    out = []
    for (dataset, embedder, mode), group in h.group_rows(rows, ("dataset", "embedder", "mode")).items():
        v = verdict(group)
        means = (f"{v['means'][k]:.3f}" for k in "abc")
        ps = (stats.p_text(v[k]["p"]) for k in ("vs_a", "vs_c"))
        out.append([dataset, embedder, mode, v["n"], *means, *ps, "pass" if v["passed"] else "no claim"])
    h.print_table(console, "time cue (NDCG over the returned rows)", columns, out)


def main(argv: Sequence[str] | None = None, console: Console | None = None) -> int:
    return h.run_study(argv, build_parser(), sys.modules[__name__], console, "no cued questions")


if __name__ == "__main__":
    raise SystemExit(main())
