"""Held seats against the gate: ours at its defaults beside ours with a seat turned on, question by question.

    python -m benchmarks.seats --embedders hash local --variant CPERSONA_KEYWORD_SEATS=2

Each conversation is stored once; the same database is read by one ``Memory`` per
system (ours at its defaults, and one per ``--variant``, each with that one setting
changed), so every system answers the same question over the same rows at the
same moment of the replay. A seat adds rows, so every figure is given twice: over
the first ``limit`` rows of the best-first ranking (the answer, the seats after
it: equal row counts whenever the answer is full) and over every returned row.
``--extra-rows N`` adds the control the time cue's rule uses: ours at its defaults
with ``limit + N``, as many plain rows as the seats could add. Writes
``benchmarks/results/seats.md``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from benchmarks import harness as h
from benchmarks import stats
from benchmarks.recall_trace_confirm import RETURNED, confirm
from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock

PROG = "benchmarks.seats"
OURS = "ours"


def build_parser() -> argparse.ArgumentParser:
    parser = h.study_parser(PROG, __doc__.splitlines()[0], "seats.md", ["hash"], ["rrf"])
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        type=h.parse_setting,
        metavar="CPERSONA_NAME=VALUE",
        help="also answer with this one setting changed (repeatable; default: CPERSONA_KEYWORD_SEATS=2)",
    )
    parser.add_argument(
        "--extra-rows",
        type=int,
        default=0,
        metavar="N",
        help="also answer at its defaults with limit + N (the same number of plain rows)",
    )
    return parser


def variants(args: argparse.Namespace) -> list[tuple[str, dict[str, str]]]:
    chosen = args.variant or [{"CPERSONA_KEYWORD_SEATS": "2"}]
    return [
        (f"{OURS} " + ", ".join(f"{k.split('_', 1)[1].lower()}={v}" for k, v in environ.items()), environ)
        for environ in chosen
    ]


def systems(args: argparse.Namespace) -> list[str]:
    extra = [f"{OURS} limit={args.limit + args.extra_rows}"] if args.extra_rows > 0 else []
    return [OURS, *extra, *(label for label, _ in variants(args))]


# -- running ------------------------------------------------------------------------------------


def question_row(response: dict[str, Any], gold: list[str], limit: int) -> dict[str, Any]:
    """One system's figures on one question: over the first ``limit`` rows and over every returned row."""
    ranked = h.best_first(response)
    seats = {
        m["ref"]: m["match_reason"]["signal"]
        for m in response.get("messages") or []
        if "ref" in m and (m.get("match_reason") or {}).get("admission") == "reservation"
    }
    relevant = set(gold)
    return {
        "rows": len(ranked),
        "seated": len(seats),
        "ranked": ranked,
        "any@limit": h.recall_any(ranked, gold, limit),
        "ndcg@limit": h.ndcg(ranked, gold, limit),
        "any@all": h.recall_any(ranked, gold, len(ranked)),
        "all@all": h.recall_all(ranked, gold, len(ranked)),
        "seat_evidence": float(any(ref in relevant for ref in seats)),
        "code": confirm(response["trace"], gold) or RETURNED,
    }


def ask(memory: Memory, agent_id: str, question: Any, limit: int) -> dict[str, Any]:
    memory.clock = fixed_clock(question.asked_at)
    response = memory.recall(agent_id=agent_id, query=question.text, limit=limit, trace=True)
    if response.get("ok") is False:
        raise RuntimeError(f"recall failed for {question.qid}: {response.get('error')}")
    return response


def evaluate_conversation(
    dataset: h.Dataset,
    conversation: Any,
    embedder: h.PrefetchEmbedder,
    mode: str,
    args: argparse.Namespace,
    workdir: Path,
    advance: Any,
) -> list[dict[str, Any]]:
    store = h.ConversationStore(conversation, embedder, mode, workdir)
    readers = {
        label: Memory(store.path, settings=h.settings_for(embedder.mode, mode, store.path, environ), embedder=embedder)
        for label, environ in variants(args)
    }
    rows = []
    try:
        scored = [q for q in conversation.questions if dataset.scored(q)]
        for question in h.replay(store, scored, args.history):
            gold = store.gold(question)
            answers = {OURS: store.ask(question, limit=args.limit, trace=True)}
            if args.extra_rows > 0:
                answers[f"{OURS} limit={args.limit + args.extra_rows}"] = store.ask(
                    question, limit=args.limit + args.extra_rows, trace=True
                )
            for label, reader in readers.items():
                answers[label] = ask(reader, store.agent_id, question, args.limit)
            for system, response in answers.items():
                rows.append(
                    {
                        "dataset": dataset.name,
                        "embedder": embedder.mode,
                        "mode": mode,
                        "system": system,
                        "qid": question.qid,
                        "category": dataset.category_label(question.category),
                        "gold": len(gold),
                        "gold_refs": gold,
                        **question_row(response, gold, args.limit),
                    }
                )
            advance()
    finally:
        for reader in readers.values():
            reader.close()
        store.close()
    return rows


def run(args: argparse.Namespace, console: Console) -> tuple[list[h.Dataset], list[dict[str, Any]], dict]:
    datasets = h.load_datasets(args.locomo, args.limit_conversations, args.long_span, args.seed)
    workdir = h.workdir_for(args.workdir)
    rows: list[dict[str, Any]] = []
    models: dict[str, str] = {}
    total = h.count_questions(datasets, lambda d, q: d.scored(q)) * len(args.embedders) * len(args.modes)
    for embedder, advance in h.each_embedder(args, console, datasets, "questions", total):
        for dataset in datasets:
            for conversation in dataset.conversations:
                for mode in args.modes:
                    rows += evaluate_conversation(dataset, conversation, embedder, mode, args, workdir, advance)
        models[embedder.mode] = embedder.model
    return datasets, rows, models


# -- reporting ----------------------------------------------------------------------------------


def paired(base: Sequence[dict[str, Any]], other: Sequence[dict[str, Any]], metric: str) -> tuple[int, int]:
    """(questions where ``other`` found evidence and ours did not, the other way round) on a 0/1 metric."""
    theirs = {r["qid"]: r[metric] for r in other}
    rose = sum(1 for r in base if theirs.get(r["qid"], 0.0) > r[metric])
    fell = sum(1 for r in base if theirs.get(r["qid"], 0.0) < r[metric])
    return rose, fell


def ndcg_at(rows: Sequence[dict[str, Any]], k: int, gold_of: dict[str, list[str]]) -> float:
    return h.mean(h.ndcg(r["ranked"], gold_of[r["qid"]], k) for r in rows)


def versus(base: Sequence[dict[str, Any]], part: Sequence[dict[str, Any]], metric: str) -> str:
    rose, fell = paired(base, part, metric)
    return f"{rose} / {fell} (p {stats.two_sided_sign_test(rose, fell):.2g})"


def table_rows(
    rows: Sequence[dict[str, Any]],
    order: Sequence[str],
    gold_of: dict[tuple, dict[str, list[str]]],
    k_all: int,
    control: str | None,
) -> list[list[Any]]:
    out = []
    for (dataset, embedder, mode), group in h.group_rows(rows, ("dataset", "embedder", "mode")).items():
        by_system = h.group_rows(group, ("system",))
        base = by_system.get((OURS,), [])
        golds = gold_of[(dataset, embedder, mode)]
        for system in order:
            part = by_system.get((system,), [])
            if not part:
                continue
            cells = [
                dataset,
                embedder,
                mode,
                system,
                len(part),
                h.mean(r["rows"] for r in part),
                h.mean(r["any@limit"] for r in part),
                h.mean(r["ndcg@limit"] for r in part),
                h.mean(r["any@all"] for r in part),
                ndcg_at(part, k_all, golds),
                h.mean(r["all@all"] for r in part),
                int(sum(r["seat_evidence"] for r in part)),
            ]
            if system == OURS:
                cells += ["-", "-"]
            else:
                cells += [versus(base, part, "any@all"), versus(base, part, "any@limit")]
            if control is not None:
                extra = by_system.get((control,), [])
                cells.append(versus(extra, part, "any@all") if system not in (OURS, control) and extra else "-")
            out.append(cells)
    return out


def code_rows(rows: Sequence[dict[str, Any]], order: Sequence[str]) -> list[list[Any]]:
    codes = ("CANDIDATE_MISS", "FILTER_DROP", "RANKING_MISS", "UNATTRIBUTED", RETURNED)
    out = []
    for (dataset, embedder, mode, system), group in sorted(
        h.group_rows(rows, ("dataset", "embedder", "mode", "system")).items(),
        key=lambda item: (item[0][:3], order.index(item[0][3])),
    ):
        counts = {code: sum(1 for r in group if r["code"] == code) for code in codes}
        out.append([dataset, embedder, mode, system, *counts.values(), len(group)])
    return out


def golds(rows: Sequence[dict[str, Any]]) -> dict[tuple, dict[str, list[str]]]:
    return {
        key: {r["qid"]: r["gold_refs"] for r in group}
        for key, group in h.group_rows(rows, ("dataset", "embedder", "mode")).items()
    }


def render(
    argv: Sequence[str], args: argparse.Namespace, datasets: h.Datasets, rows: h.Rows, models: dict[str, str]
) -> str:
    order = systems(args)
    k_all = max(r["rows"] for r in rows)
    limit = args.limit
    control = f"{OURS} limit={limit + args.extra_rows}" if args.extra_rows > 0 else None
    header = [
        "dataset",
        "embedder",
        "mode",
        "system",
        "n",
        "mean rows",
        f"recall_any@{limit}",
        f"ndcg@{limit}",
        "recall_any (all rows)",
        f"ndcg@{k_all}",
        "recall_all (all rows)",
        "evidence in a seat",
        "any (all rows): rose / fell vs ours",
        f"any@{limit}: rose / fell vs ours",
    ]
    if control is not None:
        header.append(f"any (all rows): rose / fell vs {control}")
    lines = [
        "# Held seats against the gate",
        "",
        f"Command: `{h.command_line(PROG, argv)}`",
        "",
        "## Setup",
        "",
        "- One store per conversation (one agent), written once; every system reads that same database through "
        "its own `Memory` with default settings (the environment is not read) except the one it names, so all "
        "answer each question over the same rows. No calibration (the heuristic gate), no time cue.",
        f"- Systems: {', '.join(f'`{s}`' for s in order)}.",
        f"- History: `{args.history}`. Recall: limit {limit}, the question's text as query, its asked_at as now. "
        "Relevant rows: the stored refs of the evidence turns. Ranking: the returned rows best first (the "
        "reversed `messages`): the answer, then the held seats.",
        f"- Over the first {limit} rows: equal row counts whenever the answer is full (the seats then sit below "
        f"it). Over all rows: what the caller is given. ndcg@{k_all}: the most rows any system returned, so every "
        "system is scored against the same ideal. recall_all: every evidence row among the returned ones.",
        "- rose / fell: questions where the system returned some evidence and ours did not, and the other way "
        "round; p: two-sided sign test. Evidence in a seat: questions where a held seat (any kind) held evidence."
        + (
            f" `{control}` is the control for extra rows: as many plain rows as the seats can add (the recall "
            "depth follows the limit, so its first rows can differ from ours)."
            if control
            else ""
        ),
        "- LoCoMo category 5 (adversarial) is left out.",
        "- Embedders: " + ", ".join(f"`{k}` ({v})" for k, v in models.items()) + ".",
        *h.dataset_facts(datasets),
        "",
        "## Results",
        "",
        *h.markdown_table(
            header, table_rows(rows, order, golds(rows), k_all, control), "llll" + "r" * (len(header) - 4)
        ),
        "",
        "## Why the evidence was missed",
        "",
        "Confirmed failure codes from each recall's trace (`benchmarks.recall_trace_confirm.confirm`).",
        "",
        *h.markdown_table(
            [
                "dataset",
                "embedder",
                "mode",
                "system",
                "CANDIDATE_MISS",
                "FILTER_DROP",
                "RANKING_MISS",
                "UNATTRIBUTED",
                RETURNED,
                "n",
            ],
            code_rows(rows, order),
            "llll" + "r" * 6,
        ),
        "",
    ]
    return "\n".join(lines)


def print_summary(rows: h.Rows, console: Console) -> None:
    columns = ("dataset", "embedder", "mode", "system", "rows", "any@limit", "ndcg@limit", "any@all", "n")
    out = []
    for key, group in h.group_rows(rows, ("dataset", "embedder", "mode", "system")).items():
        means = (f"{h.mean(r[m] for r in group):.3f}" for m in ("any@limit", "ndcg@limit", "any@all"))
        out.append([*key, f"{h.mean(r['rows'] for r in group):.2f}", *means, len(group)])
    h.print_table(console, "held seats against the gate", columns, out)


def main(argv: Sequence[str] | None = None, console: Console | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    console = console or Console(stderr=True)
    datasets, rows, models = run(args, console)
    if not rows:
        console.print("no questions to evaluate")
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(argv, args, datasets, rows, models), encoding="utf-8")
    print_summary(rows, console)
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
