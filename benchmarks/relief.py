"""Gate relief (relief-v1) on and off, and stages-v1 against cued-v0.3, side by side at the shipped defaults.

    python -m benchmarks.relief --embedders local --long-span large

Each store is built once at the shipped defaults (packaged embedder, word arm,
blocks built and drained before any question, the gate calibrating itself as the
store grows) and every question is recalled under each policy in turn, the
settings swapped between recalls (``ConversationStore.using``), so the policies
see the same rows, blocks and calibration. Layouts: LoCoMo one conversation per
agent; every LoCoMo conversation under one agent; the generated long-span
history. Questions without a cue: relief off and on, and the same number of extra
rows without relief. Questions with a cue (``benchmarks.cues.extract_cue``, the
time-cue study's set): the same without and with the cue, and stages-v1
(``recall_cue_stages=3``) against cued-v0.3. Writes benchmarks/results/relief.md.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Console

from benchmarks import harness as h
from benchmarks import stats
from benchmarks.cues import explain_cue
from benchmarks.datasets import Conversation
from benchmarks.time_cue import appended

PROG = "benchmarks.relief"
LAYOUTS = ("per-conversation", "one-agent", "long-span", "small-stores")
SMALL_SIZES = (50, 100, 200)
OFF = {"gate_relief": False}
ON = {"gate_relief": True}
STAGES = 3
METRICS = ("rows", "hit@10", "all@10", "ndcg@10", "ndcg", "any")


# -- a store of every LoCoMo conversation under one agent ----------------------------------------


def one_agent(conversations: Sequence[Conversation], conv_id: str = "locomo-all") -> Conversation:
    """Every conversation's turns, session summaries and questions in one conversation (one agent).

    Sessions are numbered afresh (conversation index x 1000 + session) so no two share a number; the turns'
    msg_ids and the questions already name their conversation.
    """
    turns, sessions, questions = [], [], []
    for i, c in enumerate(conversations):
        turns += [replace(t, session=i * 1000 + t.session) for t in c.turns]
        sessions += [replace(s, session=i * 1000 + s.session) for s in c.sessions]
        questions += list(c.questions)
    ids = [t.msg_id for t in turns]
    if len(set(ids)) != len(ids):
        raise ValueError("two conversations share a msg_id")
    return Conversation(conv_id, tuple(turns), tuple(sessions), tuple(questions))


def small_stores(conversations: Sequence[Conversation], size: int) -> list[Conversation]:
    """``benchmarks.small_store``'s windows: each conversation's turns in time order cut into consecutive windows
    of ``size`` turns, each a store of its own (memories only) asked the questions whose evidence lies inside it."""
    from benchmarks.small_store import windows

    return [Conversation(w.agent_id, w.turns, (), w.questions) for c in conversations for w in windows(c, size, None)]


def layouts(
    datasets: Sequence[h.Dataset], wanted: Sequence[str], sizes: Sequence[int] = SMALL_SIZES
) -> list[tuple[str, str, list[Conversation], str]]:
    """(layout, dataset, conversations, history) for each layout asked for and present."""
    out = []
    for d in datasets:
        if d.name == "locomo":
            if "per-conversation" in wanted:
                out.append(("per-conversation", d.name, list(d.conversations), "asked"))
            if "one-agent" in wanted:
                out.append(("one-agent", d.name, [one_agent(d.conversations)], "all"))
            if "small-stores" in wanted:
                out += [(f"small-stores-{n}", d.name, small_stores(d.conversations, n), "all") for n in sizes]
        elif "long-span" in wanted:
            out.append(("long-span", d.name, list(d.conversations), "asked"))
    return out


# -- reading responses ---------------------------------------------------------------------------


def reason(message: dict[str, Any]) -> dict[str, Any]:
    return message.get("match_reason") or {}


def relieved(response: dict[str, Any]) -> list[str]:
    """Refs of the rows relief let in: answer rows (admission relief) and cue seats it filled, best first."""
    return [
        m["ref"]
        for m in reversed(response.get("messages") or [])
        if reason(m).get("admission") == "relief" or reason(m).get("relieved")
    ]


def split(response: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(answer rows, held seats), each best first; relieved answer rows count as answer rows."""
    rows = list(reversed(response.get("messages") or []))
    answer = [m["ref"] for m in rows if reason(m).get("admission") != "reservation"]
    seats = [m["ref"] for m in rows if reason(m).get("admission") == "reservation"]
    return answer, seats


def refused(response: dict[str, Any]) -> list[str]:
    """The rows the gate refused, in the order it judged them (the order before the gate), from the trace."""
    decisions = ((response.get("trace") or {}).get("gate") or {}).get("decisions") or []
    return [d["ref"] for d in decisions if not d.get("passed")]


def with_extra_rows(response: dict[str, Any], extra: int) -> list[str]:
    """The equal-rows control of relief: the unrelieved answer, then its next ``extra`` refused rows in the
    order before the gate (any closeness, any reason), where relief puts its rows: after the answer's last
    row, before the held seats."""
    answer, seats = split(response)
    present = set(answer) | set(seats)
    more = [r for r in refused(response) if r not in present][:extra]
    return [*answer, *more, *seats]


def policy(response: dict[str, Any]) -> str:
    return ((response.get("trace") or {}).get("policy") or {}).get("process", "?")


def metrics(ranked: Sequence[str], gold: Sequence[str]) -> dict[str, float]:
    return {
        "rows": float(len(ranked)),
        "hit@10": h.recall_any(ranked, gold, 10),
        "all@10": h.recall_all(ranked, gold, 10),
        "ndcg@10": h.ndcg(ranked, gold, 10),
        "ndcg": h.ndcg(ranked, gold),
        "any": float(any(r in set(gold) for r in ranked)),
    }


def put(row: dict[str, Any], name: str, ranked: Sequence[str], gold: Sequence[str]) -> None:
    for metric, value in metrics(ranked, gold).items():
        row[f"{metric}:{name}"] = value


# -- one question ----------------------------------------------------------------------------------


def study_uncued(
    store: h.ConversationStore, question: Any, gold: Sequence[str], limit: int, row: dict[str, Any], prefix: str = ""
) -> None:
    """Relief off (cued-v0.3's single pass), relief on, and the two equal-rows controls, without a cue."""
    with store.using(**OFF):
        off = store.ask(question, limit=limit, trace=True)
    with store.using(**ON):
        on = store.ask(question, limit=limit, trace=True)
    added = relieved(on)
    r = len(added)
    with store.using(**OFF):
        wider = store.ask(question, limit=limit + r) if r else off
    put(row, prefix + "off", h.best_first(off), gold)
    put(row, prefix + "on", h.best_first(on), gold)
    put(row, prefix + "wider", h.best_first(wider), gold)
    put(row, prefix + "extra", with_extra_rows(off, r), gold)
    row[prefix + "relieved"] = r
    row[prefix + "relieved_gold"] = any(ref in set(gold) for ref in added)
    control = [x for x in with_extra_rows(off, r) if x not in set(h.best_first(off))]
    row[prefix + "extra_gold"] = any(ref in set(gold) for ref in control)
    row[prefix + "policy_off"], row[prefix + "policy_on"] = policy(off), policy(on)


def study_cued(
    store: h.ConversationStore, question: Any, cue: dict[str, Any], gold: Sequence[str], limit: int, row: dict[str, Any]
) -> None:
    """The cued question: without a cue (relief off, on), with it (cued-v0.3, +relief-v1, +stages-v1)."""
    study_uncued(store, question, gold, limit, row, "a_")
    responses = {}
    for name, overrides in (
        ("b_off", OFF),
        ("b_on", ON),
        ("s_off", {**OFF, "recall_cue_stages": STAGES}),
        ("s_on", {**ON, "recall_cue_stages": STAGES}),
    ):
        with store.using(**overrides):
            responses[name] = store.ask(question, limit=limit, time_cue=cue, trace=True)
        put(row, name, h.best_first(responses[name]), gold)
        row[f"policy_{name}"] = policy(responses[name])
        row[f"seats_{name}"] = int((responses[name].get("time_cue") or {}).get("seated", 0))
    b_off = responses["b_off"]
    # relief with the cue against the same number of extra rows without relief
    added = relieved(responses["b_on"])
    row["b_relieved"] = len(added)
    row["b_relieved_gold"] = any(ref in set(gold) for ref in added)
    with store.using(**OFF):
        wider = store.ask(question, limit=limit + len(added), time_cue=cue) if added else b_off
    put(row, "b_wider", h.best_first(wider), gold)
    put(row, "b_extra", with_extra_rows(b_off, len(added)), gold)
    # stages-v1 against cued-v0.3 and against as many extra rows without a cue (the time-cue study's (d))
    extra = max(0, len(h.best_first(responses["s_off"])) - len(h.best_first(b_off)))
    with store.using(**OFF):
        uncued = store.ask(question, limit=limit + extra) if extra else None
    rows_b = h.best_first(b_off)
    put(row, "s_extra", appended(rows_b, h.best_first(uncued), extra) if uncued else rows_b, gold)
    row["s_changed"] = h.best_first(responses["s_off"]) != rows_b
    row["s_stages"] = len([s for s in (responses["s_off"].get("trace") or {}).get("stages") or []])
    row["b_stages"] = len([s for s in (b_off.get("trace") or {}).get("stages") or []])


def study(args: argparse.Namespace, layout: str, dataset: str, conversation: Conversation) -> tuple[list[Any], Any]:
    """A store's questions (scored ones, and those that get a cue) and the row of each: relief on and off,
    without a cue and, where one is extracted, with it."""
    locomo = dataset == "locomo"
    cues = {q.qid: explain_cue(q.text, q.asked_at) for q in conversation.questions}
    scored = {q.qid for q in conversation.questions if not (locomo and q.category in h.LOCOMO_EXCLUDED)}
    wanted = scored | {qid for qid, c in cues.items() if c is not None}

    def row_of(store: h.ConversationStore, question: Any, row: dict[str, Any]) -> dict[str, Any]:
        gold = store.gold(question)
        row.update(gold=len(gold), scored=question.qid in scored, cued=cues[question.qid] is not None)
        if row["scored"]:
            study_uncued(store, question, gold, args.limit, row)
        if row["cued"]:
            rule, cue = cues[question.qid]
            row["rule"], row["confidence"] = rule, cue["confidence"]
            study_cued(store, question, cue, gold, args.limit, row)
        return row

    return [q for q in conversation.questions if q.qid in wanted], row_of


# -- summaries --------------------------------------------------------------------------------------


def question_sets(rows: Sequence[dict[str, Any]]) -> list[tuple[str, str, list[dict[str, Any]], str, str]]:
    """(label, embedder, rows, off, on): each set relief is judged on, with the variant names to compare."""
    out = []
    for (layout, _dataset, embedder), group in h.group_rows(rows, ("layout", "dataset", "embedder")).items():
        scored = [r for r in group if r["scored"]]
        cued = [r for r in group if r["cued"]]
        if scored:
            out.append((f"{layout}: scored questions, no cue", embedder, scored, "off", "on"))
        if cued:
            out.append((f"{layout}: cued questions, no cue", embedder, cued, "a_off", "a_on"))
            out.append((f"{layout}: cued questions, with the cue", embedder, cued, "b_off", "b_on"))
    return out


def _controls(off: str) -> tuple[str, str]:
    """The equal-rows controls of a relief-off variant: (the next refused rows, a recall with a larger limit)."""
    if off == "b_off":
        return "b_extra", "b_wider"
    prefix = off[: -len("off")]
    return prefix + "extra", prefix + "wider"


def relieved_key(off: str) -> str:
    return {"off": "relieved", "a_off": "a_relieved", "b_off": "b_relieved"}[off]


def relief_tables(rows: Sequence[dict[str, Any]]) -> tuple[list[str], list[str], list[str], list[dict[str, Any]]]:
    rows_out, eq_out, ten_out, judged = [], [], [], []
    for label, embedder, group, off, on in question_sets(rows):
        extra, wider = _controls(off)
        key = relieved_key(off)
        fired = [r for r in group if r[key]]
        n = len(group)
        rows_out.append(
            [
                label,
                embedder,
                n,
                f"{len(fired)} ({len(fired) / n:.1%})",
                h.mean(r[key] for r in fired) if fired else 0.0,
                sum(r[f"{key}_gold"] for r in group),
                *(h.mean(r[f"rows:{v}"] for r in group) for v in (off, on, extra, wider)),
            ]
        )
        t_off, t_extra, t_wider = (
            stats.compare_on(group, on, off, "ndcg"),
            stats.compare_on(group, on, extra, "ndcg"),
            stats.compare_on(group, on, wider, "ndcg"),
        )
        eq_out.append(
            [
                label,
                embedder,
                n,
                *(h.mean(r[f"ndcg:{v}"] for r in group) for v in (off, on, extra, wider)),
                stats.rose_fell_text(t_off),
                stats.rose_fell_text(t_extra),
                stats.rose_fell_text(t_wider),
                " / ".join(f"{h.mean(r[f'any:{v}'] for r in group):.3f}" for v in (off, on, extra)),
            ]
        )
        t10, h10 = stats.compare_on(group, on, off, "ndcg@10"), stats.compare_on(group, on, off, "hit@10")
        ten_out.append(
            [
                label,
                embedder,
                n,
                *(
                    f"{h.mean(r[f'{m}:{off}'] for r in group):.3f} / {h.mean(r[f'{m}:{on}'] for r in group):.3f}"
                    for m in ("hit@10", "all@10", "ndcg@10")
                ),
                f"{h10['rose']} / {h10['fell']}",
                stats.rose_fell_text(t10),
            ]
        )
        judged.append(
            {
                "label": label,
                "embedder": embedder,
                "helps": stats.beats(t_off) and stats.beats(t_extra),
                "hurts": stats.beaten(t10) or stats.beaten(h10),
                "fired": len(fired),
                "n": n,
            }
        )
    return rows_out, eq_out, ten_out, judged


def stage_table(rows: Sequence[dict[str, Any]]) -> tuple[list[list[Any]], list[dict[str, Any]]]:
    out, judged = [], []
    for (layout, _dataset, embedder), group in h.group_rows(rows, ("layout", "dataset", "embedder")).items():
        cued = [r for r in group if r["cued"]]
        if not cued:
            continue
        for base, stages, name in (
            ("b_off", "s_off", "cued-v0.3 vs +stages-v1"),
            ("b_on", "s_on", "+relief-v1 vs +relief-v1+stages-v1"),
        ):
            t_b = stats.compare_on(cued, stages, base, "ndcg")
            t_x = stats.compare_on(cued, stages, "s_extra", "ndcg") if base == "b_off" else None
            changed = sum(
                1 for r in cued if r["ndcg:" + stages] != r["ndcg:" + base] or r["rows:" + stages] != r["rows:" + base]
            )
            more = sum(1 for r in cued if r["s_stages"] > r["b_stages"]) if base == "b_off" else None
            out.append(
                [
                    layout,
                    embedder,
                    name,
                    len(cued),
                    more if more is not None else "",
                    changed,
                    *(h.mean(r[f"rows:{v}"] for r in cued) for v in (base, stages)),
                    *(h.mean(r[f"ndcg:{v}"] for r in cued) for v in (base, stages)),
                    h.mean(r["ndcg:s_extra"] for r in cued) if t_x else "",
                    stats.rose_fell_text(t_b),
                    stats.rose_fell_text(t_x) if t_x else "",
                    f"{h.mean(r[f'hit@10:{base}'] for r in cued):.3f} / "
                    f"{h.mean(r[f'hit@10:{stages}'] for r in cued):.3f}",
                ]
            )
            if t_x:
                t10 = stats.compare_on(cued, stages, base, "ndcg@10")
                judged.append(
                    {
                        "label": layout,
                        "embedder": embedder,
                        "helps": stats.beats(t_b) and stats.beats(t_x),
                        "hurts": stats.beaten(t10),
                        "changed": changed,
                        "n": len(cued),
                    }
                )
    return out, judged


def policies(rows: Sequence[dict[str, Any]]) -> list[str]:
    names: dict[str, set[str]] = {}
    for r in rows:
        for k, v in r.items():
            if k.startswith(("policy_", "a_policy_")):
                names.setdefault(k.replace("a_", "").replace("policy_", ""), set()).add(v)
    return [f"`{k}`: " + ", ".join(f"`{v}`" for v in sorted(vs)) for k, vs in sorted(names.items())]


RULE = """## The rule (fixed before any number below)

1. **Stores.** Shipped defaults: the packaged embedder, the word arm, blocks built (the build queue drained
   after each batch of records, before any question) and searched, the gate calibrating itself as the store
   grows, limit {limit}. Each store is built once; each question is recalled under each policy in turn.
2. **Relief off and on.** Relief off is `gate_relief=false` (policy `single-pass-v0`, with a cue `cued-v0.3`);
   relief on adds `relief-v1`. *r* is the number of rows relief let in (answer rows with
   `admission: "relief"` and cue seats marked `relieved`); relief *fired* when *r* > 0.
3. **Equal rows.** Relief adds rows, so it is also compared with the relief-off answer given *r* extra rows
   another way: **(x)** the next *r* rows the gate refused, in the order before the gate whatever their
   closeness or reason, placed where relief places its rows (after the answer's last row, before the held
   seats); and **(w)** the relief-off recall with limit {limit} + *r*.
4. **Scores.** Relevant rows: the stored refs of the question's evidence turns. NDCG over the returned rows
   (the time-cue study's score), hit@10 (any evidence in the first 10 rows), all@10, NDCG@10.
5. **Sets.** LoCoMo one conversation per agent and every LoCoMo conversation under one agent: the scored
   questions (category 5 left out), without a cue; the cued questions (the time-cue study's set: every question
   `benchmarks.cues.extract_cue` gives a cue, all categories) without and with their cue; the long-span history:
   its questions (all cued) without and with the cue; and small stores, the pools relief was made for
   (`small-stores-N`: `benchmarks.small_store`'s windows of N LoCoMo turns, each a store of its own, asked the
   questions whose evidence lies inside it), without a cue and, where the question gives one, with it.
6. **Verdict on relief.** Relief *helps* on a set when, on NDCG over the returned rows, relief on beats relief
   off **and** beats (x), each by the one-sided sign test at p < {alpha} with the higher mean. It *hurts* on a set
   when relief off beats relief on in hit@10 or NDCG@10 over the first 10 rows at p < {alpha}. **Keep on** only
   if it helps on at least one set of the primary embedder (the first listed) and hurts on none; otherwise
   **turn off**: `cued-v0.3` alone is the simpler, exactly specified process.
7. **Stages.** stages-v1 (`recall_cue_stages={stages}`) against cued-v0.3 (both relief off) on the cued
   questions: the same test against cued-v0.3 and against cued-v0.3's answer with as many extra rows, without
   a cue, as stages-v1 returned beyond it (the time-cue study's (d)). It would ship only if it helps on a set
   and hurts on none, as above.
"""


def render(
    argv: Sequence[str], args: argparse.Namespace, datasets: h.Datasets, rows: h.Rows, models: dict[str, str], png: Path
) -> str:
    counts, equal, ten, judged = relief_tables(rows)
    stages, stage_judged = stage_table(rows)
    primary = args.embedders[0]
    mine = [j for j in judged if j["embedder"] == primary]
    keep = any(j["helps"] for j in mine) and not any(j["hurts"] for j in mine)
    stage_mine = [j for j in stage_judged if j["embedder"] == primary]
    stages_ship = any(j["helps"] for j in stage_mine) and not any(j["hurts"] for j in stage_mine)
    lines = [
        "# Gate relief and stages-v1, side by side",
        "",
        f"Command: `{h.command_line(PROG, argv)}`",
        "",
        RULE.format(limit=args.limit, alpha=stats.ALPHA, stages=STAGES),
        "## Setup",
        "",
        f"- Defaults: `{args.defaults}`; fusion {args.mode}; the environment is not read.",
        "- Layouts: `per-conversation` (LoCoMo, one agent per conversation, history `asked`: every question "
        "comes after its conversation's last session); `one-agent` (every LoCoMo conversation stored under one "
        "agent, history `all`: the whole memory is stored first, the conversations' times interleave, and each "
        "question is asked at its own asked_at); `long-span` (the generated history, history `asked`); "
        "`small-stores-N` (`benchmarks.small_store`'s windows: each LoCoMo conversation's turns in time order cut "
        "into consecutive windows of N turns, each a store of its own holding those memories only, asked the "
        "questions whose evidence lies wholly inside it, history `all`).",
        "- Embedders: " + ", ".join(f"`{k}` ({v})" for k, v in models.items()) + ".",
        *h.dataset_facts(datasets),
        "- Policies the recalls ran (trace `policy.process`): " + "; ".join(policies(rows)) + ".",
        "",
        "## How often relief fired, and the rows returned",
        "",
        *h.markdown_table(
            [
                "set",
                "embedder",
                "n",
                "relief fired",
                "rows relief added when it fired",
                "questions whose relieved rows hold evidence",
                "rows: off",
                "rows: on",
                "rows: (x) next refused",
                "rows: (w) larger limit",
            ],
            counts,
            "ll" + "r" * 8,
        ),
        "",
        "## At equal rows: NDCG over the returned rows",
        "",
        *h.markdown_table(
            [
                "set",
                "embedder",
                "n",
                "off",
                "on",
                "(x) off + next refused rows",
                "(w) off, limit + r",
                "on vs off rose / fell",
                "on vs (x)",
                "on vs (w)",
                "any evidence returned off / on / (x)",
            ],
            equal,
            "ll" + "r" * 9,
        ),
        "",
        "## The first 10 rows",
        "",
        *h.markdown_table(
            [
                "set",
                "embedder",
                "n",
                "hit@10 off / on",
                "all@10 off / on",
                "NDCG@10 off / on",
                "hit@10 on vs off rose / fell",
                "NDCG@10 on vs off",
            ],
            ten,
            "ll" + "r" * 6,
        ),
        "",
        "## Verdict on relief",
        "",
        *h.markdown_table(
            ["set", "embedder", "fired", "helps", "hurts"],
            [
                [
                    j["label"],
                    j["embedder"],
                    f"{j['fired']} of {j['n']}",
                    "yes" if j["helps"] else "no",
                    "yes" if j["hurts"] else "no",
                ]
                for j in judged
            ],
            "lllll",
        ),
        "",
        f"**{'Keep on' if keep else 'Turn off'}** (primary embedder `{primary}`).",
        "",
        "## stages-v1 against cued-v0.3 (cued questions)",
        "",
        *h.markdown_table(
            [
                "layout",
                "embedder",
                "compared",
                "n",
                "stages-v1 ran more stages",
                "answers changed",
                "rows: base",
                "rows: stages",
                "NDCG: base",
                "NDCG: stages",
                "NDCG: base + extra uncued rows",
                "stages vs base rose / fell",
                "stages vs base + extra",
                "hit@10 base / stages",
            ],
            stages,
            "lll" + "r" * 11,
        ),
        "",
        f"stages-v1: **{'ships' if stages_ship else 'stays off'}** (it helps on "
        f"{sum(j['helps'] for j in stage_mine)} of {len(stage_mine)} sets and hurts on "
        f"{sum(j['hurts'] for j in stage_mine)}, primary embedder).",
        "",
    ]
    return "\n".join(lines)


def plot(rows: Sequence[dict[str, Any]], path: Path) -> None:
    """No chart: the tables are the result."""


def print_summary(rows: h.Rows, console: Console) -> None:
    columns = ("set", "embedder", "n", "fired", "off", "on", "(x)", "on>off p", "on>(x) p")
    out = []
    for label, embedder, group, off, on in question_sets(rows):
        extra, _wider = _controls(off)
        fired = sum(1 for r in group if r[relieved_key(off)])
        t_off, t_x = stats.compare_on(group, on, off, "ndcg"), stats.compare_on(group, on, extra, "ndcg")
        means = (f"{t:.3f}" for t in (t_off["my"], t_off["mx"], t_x["my"]))
        out.append([label, embedder, len(group), fired, *means, stats.p_text(t_off["p"]), stats.p_text(t_x["p"])])
    h.print_table(console, "gate relief (NDCG over the returned rows)", columns, out)


def build_parser() -> argparse.ArgumentParser:
    parser = h.study_parser(PROG, __doc__.splitlines()[0], "relief.md", ["local"], ["rrf"])
    h.add_defaults_option(parser, "shipped")
    parser.add_argument("--layouts", nargs="+", choices=LAYOUTS, default=list(LAYOUTS))
    parser.add_argument(
        "--small-sizes",
        nargs="+",
        type=int,
        default=list(SMALL_SIZES),
        help="window sizes of the small-stores layout (default: %(default)s)",
    )
    return parser


def run(args: argparse.Namespace, console: Console) -> tuple[list[h.Dataset], list[dict[str, Any]], dict[str, str]]:
    datasets = h.load_datasets(args.locomo, args.limit_conversations, args.long_span, args.seed)
    plan = layouts(datasets, args.layouts, args.small_sizes)
    return datasets, *h.ask_layouts(args, console, datasets, plan, study)


def main(argv: Sequence[str] | None = None, console: Console | None = None) -> int:
    return h.run_study(argv, build_parser(), sys.modules[__name__], console, "no questions")


if __name__ == "__main__":
    raise SystemExit(main())
