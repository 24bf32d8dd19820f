"""The packaged local embedders side by side on LoCoMo: cosine ranking alone, the whole recall pipeline, timings.

    python -m benchmarks.embedders --models minilm-l6-int8 paraphrase-minilm-l3 multilingual-e5-small

Cosine study: for each model and each conversation of the LoCoMo development
split, every turn (as the store keeps it) is embedded as a stored text, each
scored question (with evidence msg_ids; category 5 left out, as
``benchmarks.retrieval`` does) as a query, and the conversation's turns are
ranked by cosine with it (ties: the earlier turn). The ranking is scored with
``benchmarks.harness.retrieval_metrics`` against the evidence msg_ids.

Pipeline study (``--pipeline``, on by default): the same questions through
``Memory.recall`` at default settings (rrf, blocks off, limit 10), every turn
stored and every session archived as ``benchmarks.retrieval`` does
(``harness.ConversationStore``, history "asked"), the vectors embedded ahead
(stored texts as passages, questions as queries).

Each difference between two models is the mean over the same questions, with a
95% paired bootstrap interval (2,000 resamples of the questions, seed 0).

Timings, side by side in one run (``--rounds`` rounds, the models taking turns
in each, every model loaded and warmed up first): query latency, one question
embedded alone as a query (milliseconds, median and 95th percentile over the
first ``--timed-questions`` scored questions, every round); ingest, the first
``--timed-turns`` turns embedded as stored texts in batches of 32 (turns per
second: what import, the block build and the re-embedding pay); one stored text
alone costs about what one query does (what ``store`` pays). Writes
benchmarks/results/embedders.md with the command at the top.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import harness as h
from benchmarks.datasets import Conversation, Question
from cuedrecall.config import Settings
from cuedrecall.embed import MODEL_NAMES, MODELS, Embedder, embed_queries, local_embedder
from cuedrecall.text.sanitise import sanitise

PROG = "benchmarks.embedders"
METRICS = ("recall_any@5", "recall_any@10", "ndcg@10", "mrr")
BATCH = 32  # stored texts per embedding call, as import and the background work embed them


def scored_questions(conversation: Conversation) -> list[Question]:
    """The questions that count: with evidence msg_ids, LoCoMo category 5 left out."""
    return [q for q in conversation.questions if q.evidence and q.category not in h.LOCOMO_EXCLUDED]


def turn_texts(conversation: Conversation) -> list[str]:
    """Each turn's text as the store keeps it (sanitised at the default cap)."""
    cap = Settings().max_content_length
    return [sanitise(turn.content, cap)[0] for turn in conversation.turns]


def ranked_by_cosine(ids: Sequence[str], vectors: np.ndarray, query: np.ndarray) -> list[str]:
    """The ids best first by dot product with the (unit) query; ties keep the earlier id first."""
    scores = vectors @ np.asarray(query, dtype=np.float32)
    return [ids[i] for i in np.argsort(-scores, kind="stable")]


def cosine_study(conversations: Sequence[Conversation], embedder: Embedder, name: str) -> list[dict[str, Any]]:
    """One row of metrics per scored question: the conversation's turns ranked by cosine with the question."""
    rows: list[dict[str, Any]] = []
    for conversation in conversations:
        ids = [turn.msg_id for turn in conversation.turns]
        texts = turn_texts(conversation)
        if not texts:
            continue
        vectors = np.concatenate([embedder.embed(texts[i : i + BATCH]) for i in range(0, len(texts), BATCH)])
        scored = scored_questions(conversation)
        queries = embed_queries(embedder, [q.text for q in scored]) if scored else []
        for question, query in zip(scored, queries):
            rows.append(
                {
                    "model": name,
                    "conversation": conversation.conv_id,
                    "qid": question.qid,
                    **h.retrieval_metrics(ranked_by_cosine(ids, vectors, query), list(question.evidence)),
                }
            )
    return rows


def timing_study(
    embedders: dict[str, Embedder],
    turns: Sequence[str],
    questions: Sequence[str],
    rounds: int,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, dict[str, Any]]:
    """Per model: {"turns", "ingest_s", "query_ms"}, the models taking turns in each round, each warmed up first."""
    out: dict[str, dict[str, Any]] = {name: {"turns": 0, "ingest_s": 0.0, "query_ms": []} for name in embedders}
    for embedder in embedders.values():
        embedder.embed(["warm up"])  # load the model and take its first-call costs before timing
        embed_queries(embedder, ["warm up"])
    for _ in range(rounds):
        for name, embedder in embedders.items():
            timing = out[name]
            started = clock()
            for i in range(0, len(turns), BATCH):
                embedder.embed(turns[i : i + BATCH])
            timing["ingest_s"] += clock() - started
            timing["turns"] += len(turns)
            for text in questions:
                started = clock()
                embed_queries(embedder, [text])
                timing["query_ms"].append(1000.0 * (clock() - started))
    return out


def paired_difference(
    a: Sequence[float], b: Sequence[float], resamples: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """Mean of b - a over the same questions, with a 95% paired bootstrap interval (low, high)."""
    diff = np.asarray(b, dtype=np.float64) - np.asarray(a, dtype=np.float64)
    if diff.size == 0:
        return float("nan"), float("nan"), float("nan")
    picks = np.random.default_rng(seed).integers(0, diff.size, size=(resamples, diff.size))
    means = diff[picks].mean(axis=1)
    return float(diff.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def differences(
    rows: dict[str, list[dict[str, Any]]], metrics: Sequence[str] = ("recall_any@10", "ndcg@10")
) -> list[list[Any]]:
    """For each pair of models (in order), each metric's mean difference (second - first) and its interval."""
    names = list(rows)
    out = []
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            cells: list[Any] = [f"{second} - {first}"]
            for metric in metrics:
                mean, low, high = paired_difference([r[metric] for r in rows[first]], [r[metric] for r in rows[second]])
                cells.append(f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]")
            out.append(cells)
    return out


class PrefetchQueries(h.PrefetchEmbedder):
    """The harness's prefetching embedder, with questions embedded ahead as queries (``embed_queries``)."""

    def __init__(self, base: Any, batch: int = 64) -> None:
        super().__init__(base, batch)
        self._queries: dict[str, np.ndarray] = {}

    def prefetch_queries(self, texts: Iterable[str]) -> None:
        missing = list(dict.fromkeys(t for t in texts if t not in self._queries))
        for start in range(0, len(missing), self.batch):
            chunk = missing[start : start + self.batch]
            for text, vector in zip(chunk, embed_queries(self.base, chunk)):
                self._queries[text] = vector

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        items = list(texts)
        self.prefetch_queries(items)
        return np.stack([self._queries[t] for t in items]) if items else embed_queries(self.base, items)


def pipeline_study(
    conversations: Sequence[Conversation], embedder: Embedder, name: str, workdir: Path
) -> list[dict[str, Any]]:
    """One row of metrics per scored question, recalled through the whole pipeline at default settings."""
    prefetch = PrefetchQueries(embedder)
    rows: list[dict[str, Any]] = []
    for conversation in conversations:
        scored = scored_questions(conversation)
        prefetch.prefetch_queries(q.text for q in scored)
        store = h.ConversationStore(conversation, prefetch, "rrf", workdir)
        try:
            for question in h.replay(store, scored, "asked"):
                ranked = h.best_first(store.ask(question))
                rows.append(
                    {
                        "model": name,
                        "conversation": conversation.conv_id,
                        "qid": question.qid,
                        **h.retrieval_metrics(ranked, store.gold(question)),
                    }
                )
        finally:
            store.close()
    return rows


def summary(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    """The mean of each metric, and the number of questions."""
    return {**{m: h.mean(r[m] for r in rows) for m in METRICS}, "n": len(rows)}


def timing_summary(timing: dict[str, Any]) -> dict[str, float]:
    """Median and 95th-percentile milliseconds per query, and stored texts embedded per second."""
    ms = np.asarray(timing["query_ms"], dtype=np.float64)
    return {
        "query_ms_p50": float(np.median(ms)) if ms.size else float("nan"),
        "query_ms_p95": float(np.percentile(ms, 95)) if ms.size else float("nan"),
        "turns_per_s": timing["turns"] / timing["ingest_s"] if timing["ingest_s"] else float("nan"),
    }


def render(
    argv: Sequence[str],
    facts: Sequence[str],
    cosine: dict[str, list[dict[str, Any]]],
    pipeline: dict[str, list[dict[str, Any]]],
    timings: dict[str, dict[str, float]],
) -> str:
    """The report: setup, the cosine table, the pipeline table, the differences, the timings."""
    header = ["model", "label", *METRICS, "n"]
    lines = [
        "# Packaged embedders",
        "",
        f"Command: `{h.command_line(PROG, argv)}`",
        "",
        "## Setup",
        "",
        *facts,
        "- Cosine alone: each conversation's turns embedded as stored texts, each question as a query, the turns "
        "ranked by cosine; relevant: the evidence turns.",
        "- Whole pipeline: `Memory.recall` at default settings (rrf, blocks off, limit 10) over a store filled "
        "as `benchmarks.retrieval` fills it (history asked); vectors embedded ahead, so these figures are quality "
        "only (the pipeline's own time does not depend on the model: every model is 384 wide).",
        "- LoCoMo category 5 (adversarial) and questions without evidence are left out.",
        "- Differences: mean over the same questions (second model minus first), 95% paired bootstrap interval.",
        "",
        "## Cosine ranking alone",
        "",
        *h.markdown_table(
            header,
            [
                [name, f"`{MODELS[name].label}`", *(summary(rows)[m] for m in METRICS), len(rows)]
                for name, rows in cosine.items()
            ],
            "ll" + "r" * (len(header) - 2),
        ),
        "",
    ]
    if len(cosine) > 1:
        lines += [*h.markdown_table(["difference", "recall_any@10", "ndcg@10"], differences(cosine), "lrr"), ""]
    if pipeline:
        lines += [
            "## Whole pipeline",
            "",
            *h.markdown_table(
                ["model", *METRICS, "n"],
                [[name, *(summary(rows)[m] for m in METRICS), len(rows)] for name, rows in pipeline.items()],
            ),
            "",
        ]
        if len(pipeline) > 1:
            lines += [*h.markdown_table(["difference", "recall_any@10", "ndcg@10"], differences(pipeline), "lrr"), ""]
    if timings:
        lines += [
            "## Timings",
            "",
            *h.markdown_table(
                ["model", "query ms p50", "query ms p95", "turns/s (batches of 32)"],
                [
                    [name, f"{t['query_ms_p50']:.1f}", f"{t['query_ms_p95']:.1f}", f"{t['turns_per_s']:.0f}"]
                    for name, t in timings.items()
                ],
            ),
            "",
        ]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m {PROG}", description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", default=h.DEFAULT_LOCOMO, help="LoCoMo JSON file (default: $CUEDRECALL_LOCOMO)")
    parser.add_argument("--models", nargs="+", choices=MODEL_NAMES, default=list(MODEL_NAMES))
    parser.add_argument("--limit-conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument(
        "--pipeline",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also run the whole recall pipeline (default: on)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="timing rounds (default: %(default)s)")
    parser.add_argument("--timed-questions", type=int, default=150, help="default: %(default)s")
    parser.add_argument("--timed-turns", type=int, default=320, help="default: %(default)s")
    parser.add_argument("--workdir", type=Path, help="keep the pipeline's databases here (default: a temporary folder)")
    parser.add_argument("--out", type=Path, default=h.RESULTS / "embedders.md", help="default: %(default)s")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    conversations = h.load_locomo(args.locomo, limit_conversations=args.limit_conversations)
    turns = sum(len(c.turns) for c in conversations)
    asked = sum(len(scored_questions(c)) for c in conversations)
    embedders = {name: local_embedder(name) for name in args.models}
    cosine, pipeline = {}, {}
    for name, embedder in embedders.items():
        cosine[name] = cosine_study(conversations, embedder, name)
        print(f"{name}: cosine {summary(cosine[name])}", file=sys.stderr)
        if args.pipeline:
            pipeline[name] = pipeline_study(conversations, embedder, name, h.workdir_for(args.workdir))
            print(f"{name}: pipeline {summary(pipeline[name])}", file=sys.stderr)
    timed_turns = [text for c in conversations for text in turn_texts(c)][: args.timed_turns]
    timed_questions = [q.text for c in conversations for q in scored_questions(c)][: args.timed_questions]
    load = os.getloadavg()
    timings = {
        name: timing_summary(t)
        for name, t in timing_study(embedders, timed_turns, timed_questions, args.rounds).items()
    }
    print(f"timings {timings}", file=sys.stderr)
    facts = [
        f"- LoCoMo: {len(conversations)} conversations, {turns:,} turns, {asked} scored questions.",
        f"- Timings: {args.rounds} rounds, the models taking turns; {len(timed_questions)} questions and "
        f"{len(timed_turns)} turns a round; {os.cpu_count()} cores, load average {load[0]:.1f} when they "
        f"began, {os.getloadavg()[0]:.1f} when they ended (on a busy machine, upper bounds).",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(argv, facts, cosine, pipeline, timings), encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
