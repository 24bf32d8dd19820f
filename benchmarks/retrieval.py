"""Retrieval quality on LoCoMo and the long-span generator: recall_any@k, recall_all@k, NDCG@10, MRR, session@k.

    python -m benchmarks.retrieval --embedders local hash --modes rrf rsf --long-span large

Each conversation gets a store of its own; every question is recalled with limit 10
and no time cue, and its evidence turns' refs are the relevant rows. LoCoMo
category 5 (adversarial) is left out. ``--layout one-agent`` stores every LoCoMo
conversation under one agent instead (the whole history first) and asks each
question of that whole store, scored on its own evidence: a real agent's memory
holds many conversations; ``foreign@10`` is then the share of the first 10 rows
that come from a conversation other than the question's, and ``--attribution``
writes, from each recall's trace, the arms, fusion votes and gate decision that
brought each such row. Writes benchmarks/results/retrieval.md (the
command at the top) and a PNG chart next to it; ``--dump-traces`` writes one
``{id, gold, ranked, sessions, gold_sessions, trace}`` line per recall (``benchmarks.recall_trace_confirm``
reads it).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from benchmarks import harness as h

try:  # the confirmation tool, when present: why the evidence was missed
    from benchmarks.recall_trace_confirm import (
        CANDIDATE_MISS,
        FILTER_DROP,
        RANKING_MISS,
        RETURNED,
        UNATTRIBUTED,
        confirm,
    )

    CODES: tuple[str, ...] = (CANDIDATE_MISS, FILTER_DROP, RANKING_MISS, UNATTRIBUTED)  # the recall-stage codes
except ImportError:  # pragma: no cover - the tool ships with the project
    confirm = None
    CODES, RETURNED = (), "returned"

PROG = "benchmarks.retrieval"
METRICS = (
    "recall_any@5",
    "recall_any@10",
    "recall_all@10",
    "ndcg@10",
    "mrr",
    "session@5",
    "session@10",
    "sessions@5",
    "foreign@10",
)
LAYOUTS = ("per-conversation", "one-agent")
# one_agent numbers a merged store's sessions conversation index x SESSION_BLOCK + session (benchmarks.relief)
SESSION_BLOCK = 1000


def build_parser() -> argparse.ArgumentParser:
    parser = h.study_parser(PROG, __doc__.splitlines()[0], "retrieval.md", ["local", "hash"], ["rrf", "rsf"])
    parser.add_argument(
        "--dump-traces",
        type=Path,
        metavar="PATH.jsonl",
        help="write one {id, gold, ranked, sessions, gold_sessions, trace} line per recall",
    )
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        type=h.parse_setting,
        metavar="CPERSONA_NAME=VALUE",
        help="run every store with this setting changed (repeatable; e.g. CPERSONA_KEYWORD_SEATS=2)",
    )
    parser.add_argument(
        "--layout",
        choices=LAYOUTS,
        default="per-conversation",
        help="per-conversation: one store (one agent) per LoCoMo conversation; one-agent: every conversation "
        "under one agent, the whole history stored first, each question asked of it (default: %(default)s)",
    )
    parser.add_argument(
        "--grow",
        type=int,
        default=0,
        metavar="TURNS",
        help="one-agent: also store this many distinct turns of other conversations (the long-span generator's "
        "histories, seeds 1..), never asked (default: %(default)s)",
    )
    parser.add_argument(
        "--attribution",
        action="store_true",
        help="attribute each foreign row of the first 10 (one-agent) to its arms, votes and gate decision",
    )
    h.add_embed_cache_option(parser)
    return parser


def laid_out(datasets: Sequence[h.Dataset], layout: str, grow: int = 0) -> list[h.Dataset]:
    """The datasets as the layout stores them: under ``one-agent`` LoCoMo's conversations become one, with
    ``grow`` distinct turns of other conversations (and their session summaries) stored beside them, never asked."""
    if layout != "one-agent":
        if grow:
            raise ValueError("--grow needs --layout one-agent")
        return list(datasets)
    from benchmarks.datasets import other_conversations
    from benchmarks.relief import one_agent

    out = []
    for d in datasets:
        if d.name != "locomo":
            out.append(d)
            continue
        asked = {turn.content for c in d.conversations for turn in c.turns}
        others = other_conversations(grow, asked) if grow else []
        out.append(h.Dataset(d.name, [one_agent([*d.conversations, *others])]))
    return out


def history_for(dataset: h.Dataset, args: argparse.Namespace) -> str:
    """A merged store is asked whole: every conversation's questions come after its own last session only."""
    return "all" if args.layout == "one-agent" and dataset.name == "locomo" else args.history


def environ_of(args: argparse.Namespace) -> dict[str, str]:
    """The settings ``--setting`` changed, as the environment the stores read them from."""
    out: dict[str, str] = {}
    for environ in args.setting:
        out.update(environ)
    return out


# -- running ----------------------------------------------------------------------------------


def failure_code(trace: dict[str, Any], gold: Sequence[str]) -> str:
    """The confirmed code of one recall ("returned" when evidence came back), or "n/a" without the tool."""
    if confirm is None:
        return "n/a"
    return confirm(trace, gold) or RETURNED


def _session_metrics(store: h.ConversationStore, question: Any, ranked: Sequence[str]) -> dict[str, float]:
    """Session recall at 5 and 10 (a session holding evidence among the sessions of the first rows), at the first 5
    distinct sessions, and the share of the first 10 rows from another conversation than the question's (0 outside
    a merged store)."""
    sessions = [store.session_of(ref) for ref in ranked]
    gold = store.gold_sessions(question)
    out = {f"session@{k}": h.session_recall(sessions, gold, k) for k in (5, 10)}
    out["sessions@5"] = h.distinct_session_recall(sessions, gold, 5)
    homes = {s // SESSION_BLOCK for s in gold}
    first = sessions[:10]
    out["foreign@10"] = (
        sum(1 for s in first if s is not None and s // SESSION_BLOCK not in homes) / len(first) if first else 0.0
    )
    return out


def foreign_rows(store: h.ConversationStore, question: Any, ranked: Sequence[str]) -> list[tuple[int, str]]:
    """(place, ref) of each of the first 10 rows from another conversation than the question's."""
    homes = {s // SESSION_BLOCK for s in store.gold_sessions(question)}
    out = []
    for place, ref in enumerate(ranked[:10]):
        session = store.session_of(ref)
        if session is not None and session // SESSION_BLOCK not in homes:
            out.append((place, ref))
    return out


def evaluate_conversation(
    dataset: h.Dataset,
    conversation: Any,
    embedder: h.PrefetchEmbedder,
    mode: str,
    args: argparse.Namespace,
    workdir: Path,
    dump: IO[str] | None,
    advance: Any,
    attributed: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """One row per scored question of one conversation, under one embedder and fusion mode; ``attributed``
    gathers one entry per foreign row of the first 10 (``--attribution``)."""
    store = h.ConversationStore(conversation, embedder, mode, workdir, environ_of(args))
    rows = []
    try:
        scored = [q for q in conversation.questions if dataset.scored(q)]
        for question in h.replay(store, scored, history_for(dataset, args)):
            gold = store.gold(question)
            response = store.ask(question, limit=args.limit, trace=True)
            ranked = h.best_first(response)
            row = {
                "dataset": dataset.name,
                "embedder": embedder.mode,
                "mode": mode,
                "conversation": conversation.conv_id,
                "qid": question.qid,
                "category": dataset.category_label(question.category),
                "gold": len(gold),
                **h.retrieval_metrics(ranked, gold),
                **_session_metrics(store, question, ranked),
                "code": failure_code(response["trace"], gold),
            }
            rows.append(row)
            if attributed is not None:
                from benchmarks.attribution import attribute

                for place, ref in foreign_rows(store, question, ranked):
                    attributed.append(
                        {"embedder": embedder.mode, "mode": mode, **attribute(response["trace"], ref, place)}
                    )
            if dump is not None:
                item = {
                    "id": f"{dataset.name}/{embedder.mode}/{mode}/{question.qid}",
                    "gold": gold,
                    "ranked": ranked,
                    "sessions": [store.session_of(ref) for ref in ranked],
                    "gold_sessions": sorted(store.gold_sessions(question)),
                    "trace": response["trace"],
                }
                dump.write(json.dumps(item) + "\n")
            advance()
    finally:
        store.close()
    return rows


def run(args: argparse.Namespace, console: Console) -> tuple[list[h.Dataset], list[dict[str, Any]], dict]:
    loaded = h.load_datasets(args.locomo, args.limit_conversations, args.long_span, args.seed)
    datasets = laid_out(loaded, args.layout, args.grow)
    args.attributed = [] if args.attribution else None
    workdir = h.workdir_for(args.workdir)
    if args.dump_traces:
        args.dump_traces.parent.mkdir(parents=True, exist_ok=True)
    dump = args.dump_traces.open("w", encoding="utf-8") if args.dump_traces else None
    rows: list[dict[str, Any]] = []
    facts: dict[str, Any] = {}
    total = h.count_questions(datasets, lambda d, q: d.scored(q)) * len(args.embedders) * len(args.modes)
    try:
        with Progress(console=console, transient=False) as progress:
            asked = progress.add_task("recalls", total=total)
            for name in args.embedders:
                embedder = h.prefetched_embedder(name, datasets, progress, args.embed_cache)
                for dataset in datasets:
                    for conversation in dataset.conversations:
                        for mode in args.modes:
                            rows += evaluate_conversation(
                                dataset,
                                conversation,
                                embedder,
                                mode,
                                args,
                                workdir,
                                dump,
                                lambda: progress.advance(asked),
                                args.attributed,
                            )
                facts[name] = embedder.model
    finally:
        if dump is not None:
            dump.close()
    return datasets, rows, facts


# -- reporting ----------------------------------------------------------------------------------


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    out = {m: h.mean(r[m] for r in rows) for m in METRICS}
    out["n"] = len(rows)
    return out


def metric_rows(rows: Sequence[dict[str, Any]]) -> list[list[Any]]:
    """Per dataset, embedder, mode: one line for all questions, then one per category."""
    out = []
    for (dataset, embedder, mode), group in h.group_rows(rows, ("dataset", "embedder", "mode")).items():
        s = summarise(group)
        out.append([dataset, embedder, mode, "**all**", *(s[m] for m in METRICS), s["n"]])
        for (category,), part in sorted(h.group_rows(group, ("category",)).items()):
            s = summarise(part)
            out.append([dataset, embedder, mode, category, *(s[m] for m in METRICS), s["n"]])
    return out


def code_rows(rows: Sequence[dict[str, Any]]) -> list[list[Any]]:
    codes = [*CODES, RETURNED]
    out = []
    for (dataset, embedder, mode), group in h.group_rows(rows, ("dataset", "embedder", "mode")).items():
        counts = Counter(r["code"] for r in group)
        out.append([dataset, embedder, mode, *(counts.get(c, 0) for c in codes), len(group)])
    return out


def store_facts(datasets: Sequence[h.Dataset]) -> list[str]:
    lines = h.dataset_facts(datasets)
    for d in datasets:
        scored = sum(1 for c in d.conversations for q in c.questions if d.scored(q))
        total = sum(len(c.questions) for c in d.conversations)
        lines.append(f"- {d.name}: {scored} of {total} questions scored.")
    return lines


def render(
    argv: Sequence[str],
    args: argparse.Namespace,
    datasets: Sequence[h.Dataset],
    rows: Sequence[dict[str, Any]],
    models: dict[str, str],
    png: Path,
) -> str:
    header = ["dataset", "embedder", "mode", "category", *METRICS, "n"]
    lines = [
        "# Retrieval quality",
        "",
        f"Command: `{h.command_line(PROG, argv)}`",
        "",
        "## Setup",
        "",
        (
            "- Layout `one-agent`: every LoCoMo conversation stored under ONE agent (the whole history first), "
            "each question asked of that store and scored on its own evidence; `foreign@10`: the share of the first "
            "10 rows from another conversation than the question's. "
            if args.layout == "one-agent"
            else ""
        )
        + "- One store per conversation (one agent), default settings (the environment is not read), no time cue. "
        "The gate calibrates itself as the store grows, as at the defaults: the write that brings the store to 50, "
        "200 or 1,000 memories queues its calibration, and the replay runs the queue after each batch of records "
        "(`Memory.blocks.drain()`), so a question finds the calibration of every milestone stored before it "
        "(`CPERSONA_CALIBRATE_ON_GROWTH=false`: none, the heuristic gate)."
        + (
            " Changed: " + ", ".join(f"`{k}={v}`" for k, v in environ_of(args).items()) + "."
            if environ_of(args)
            else ""
        ),
        "- Every turn is stored with `Memory.store` (its session's time plus its index in seconds for LoCoMo, "
        "its msg_id, the speaker as source); every session summary is archived with `Memory.archive_episode` "
        "over the session's time. The store skips a turn whose exact text is already stored; such a turn's "
        "ref is the row it repeats.",
        f"- History: `{args.history}` "
        + (
            "(each question sees only what was stored before its asked_at: the turns are replayed in time "
            "order and the questions asked in between; for LoCoMo every question comes after the last "
            "session, so this is the whole conversation)."
            if args.history == "asked"
            else "(the whole conversation is stored first; a long-span question may see records from after its "
            "asked_at, and relative times are read from its asked_at)."
        ),
        f"- Recall: limit {args.limit}, the question's text as query, its asked_at as now. Relevant rows: the "
        "stored refs of the evidence turns (binary). Ranking: the returned rows best first (the reversed "
        "`messages`), held seats included.",
        "- recall_any@k: any evidence in the first k; recall_all@10: all of it in the first 10; NDCG@10 with "
        "the ideal of min(|evidence|, 10) relevant rows first; MRR: 1 / rank of the first evidence "
        "(0 when none is returned); session@k (LongMemEval's session recall): a session holding evidence is "
        "among the sessions of the first k rows (a turn's session, or the session an episode summarises); "
        "sessions@5: a session holding evidence is among the first 5 distinct sessions the rows name, in order "
        "(engram-search's session recall@5).",
        "- LoCoMo category 5 (adversarial) is left out. Categories: 1 multi-hop, 2 temporal, 3 open-domain, "
        "4 single-hop.",
        "- Embedders: " + ", ".join(f"`{k}` ({v})" for k, v in models.items()) + ".",
        *store_facts(datasets),
        "",
        "## Results",
        "",
        *h.markdown_table(header, metric_rows(rows), "llll" + "r" * (len(METRICS) + 1)),
        "",
    ]
    if confirm is not None:
        codes = [*CODES, RETURNED]
        lines += [
            "## Why the evidence was missed",
            "",
            "Confirmed failure codes from each recall's trace (`benchmarks.recall_trace_confirm.confirm`): "
            "CANDIDATE_MISS, no arm reached any evidence; FILTER_DROP, the gate or autocut removed it; "
            "RANKING_MISS, admitted but below the count cut (or on a seat arm with no seat held); returned, "
            "some evidence came back. (The reader codes do not apply to a recall.)",
            "",
            *h.markdown_table(
                ["dataset", "embedder", "mode", *codes, "n"], code_rows(rows), "lll" + "r" * (len(codes) + 1)
            ),
            "",
        ]
    attributed = getattr(args, "attributed", None)
    if attributed is not None:
        from benchmarks.attribution import tables

        lines += ["## Where the foreign rows come from", ""]
        for (embedder, mode), group in h.group_rows(attributed, ("embedder", "mode")).items():
            lines += [
                f"### `{embedder}`, `{mode}`: {len(group):,} foreign rows in the first 10",
                "",
                *tables(group),
                "",
            ]
    lines += [f"![recall_any@10 and NDCG@10]({png.name})", ""]
    return "\n".join(lines)


def plot(rows: Sequence[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_dataset = h.group_rows(rows, ("dataset",))
    fig, axes = plt.subplots(1, len(by_dataset), figsize=(5.5 * len(by_dataset), 4.2), squeeze=False)
    for ax, ((dataset,), group) in zip(axes[0], by_dataset.items()):
        configs = h.group_rows(group, ("embedder", "mode"))
        labels = [f"{e}\n{m}" for e, m in configs]
        width = 0.38
        for i, metric in enumerate(("recall_any@10", "ndcg@10")):
            values = [h.mean(r[metric] for r in part) for part in configs.values()]
            xs = [x + (i - 0.5) * width for x in range(len(labels))]
            bars = ax.bar(xs, values, width, label=metric)
            ax.bar_label(bars, fmt="%.2f", fontsize=8)
        ax.set_xticks(range(len(labels)), labels)
        ax.set_ylim(0, 1)
        n = len(next(iter(configs.values())))
        ax.set_title(f"{dataset} ({n} questions)")
        ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def print_summary(rows: Sequence[dict[str, Any]], console: Console) -> None:
    table = Table(title="retrieval (all scored questions)")
    for column in ("dataset", "embedder", "mode", *METRICS, "n"):
        table.add_column(column, justify="left" if column in ("dataset", "embedder", "mode") else "right")
    for (dataset, embedder, mode), group in h.group_rows(rows, ("dataset", "embedder", "mode")).items():
        s = summarise(group)
        table.add_row(dataset, embedder, mode, *(f"{s[m]:.3f}" for m in METRICS), str(s["n"]))
    console.print(table)


def main(argv: Sequence[str] | None = None, console: Console | None = None) -> int:
    return h.run_study(argv, build_parser(), sys.modules[__name__], console, "no questions to evaluate")


if __name__ == "__main__":
    raise SystemExit(main())
