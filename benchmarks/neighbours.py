"""A study, not a stage: would the turns recorded next to the best rows find more evidence than the tail they replace?

    python -m benchmarks.neighbours --embedders local --long-span large

The rule studied (issue 13 lists "neighbouring turns of a strong hit" among the
ideas to try): keep the first ``keep`` rows of the answer at limit 10, then add the
turns within ``reach`` places of each of the best ``top`` rows in their session
(nearest first), then the rest of the answer, up to 10 rows. It is simulated on
the answers of ``benchmarks.retrieval``'s harness (same stores, settings, no time
cue), so ``base`` reproduces that benchmark's figures. Recall does not do this:
the figures say when it would help and when it would hurt (results/neighbours.md).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from benchmarks import harness as h

RESULTS = Path(__file__).resolve().parent / "results"
# name -> (rows kept, best rows whose neighbours are added, places either side)
VARIANTS = {
    "base": (10, 0, 0),
    "keep 9, +-1 of the best": (9, 1, 1),
    "keep 8, +-1 of the best 2": (8, 2, 1),
    "keep 7, +-1 of the best 3": (7, 3, 1),
    "keep 6, +-2 of the best 2": (6, 2, 2),
}
LIMIT = 10

Place = tuple[int, list[str]]  # (index in its session, the session's refs in turn order)


def with_neighbours(
    ranked: Sequence[str], places: dict[str, Place], keep: int, top: int, reach: int, limit: int = LIMIT
) -> list[str]:
    """The first ``keep`` rows, the session neighbours (within ``reach``, nearest first) of the best ``top``
    rows, then the rest of ``ranked``; each ref once, at most ``limit``."""
    out = list(dict.fromkeys(ranked[:keep]))
    for ref in ranked[:top]:
        if ref not in places:
            continue  # an episode, or a row of no known session
        index, session = places[ref]
        for step in (d for k in range(1, reach + 1) for d in (k, -k)):
            if 0 <= index + step < len(session) and session[index + step] not in out and len(out) < limit:
                out.append(session[index + step])
    out += [ref for ref in dict.fromkeys(ranked[keep:]) if ref not in out]
    return out[:limit]


def session_places(store: h.ConversationStore) -> dict[str, Place]:
    """Each stored turn's place in its session, in the conversation's turn order."""
    sessions: dict[int, list[str]] = {}
    for turn in sorted(store.conversation.turns, key=lambda t: (t.session, t.timestamp)):
        ref = store.refs.get(turn.msg_id)
        if ref is not None and ref not in sessions.get(turn.session, []):
            sessions.setdefault(turn.session, []).append(ref)
    return {ref: (i, refs) for refs in sessions.values() for i, ref in enumerate(refs)}


def evaluate(dataset: h.Dataset, conversation: Any, embedder: h.PrefetchEmbedder, workdir: Path) -> list[dict]:
    """One row per scored question and variant: recall_any@10, NDCG@10, session@5."""
    store = h.ConversationStore(conversation, embedder, "rrf", workdir)
    rows = []
    try:
        questions = [q for q in conversation.questions if dataset.scored(q)]
        for question in h.replay(store, questions, "asked"):
            gold = store.gold(question)
            if not gold:
                continue
            ranked, places = h.best_first(store.ask(question)), session_places(store)
            for name, (keep, top, reach) in VARIANTS.items():
                answer = with_neighbours(ranked, places, keep, top, reach)
                rows.append(
                    {
                        "dataset": dataset.name,
                        "embedder": embedder.mode,
                        "variant": name,
                        "recall_any@10": h.recall_any(answer, gold, LIMIT),
                        "ndcg@10": h.ndcg(answer, gold, LIMIT),
                        "session@5": h.session_recall(
                            [store.session_of(r) for r in answer], store.gold_sessions(question), 5
                        ),
                    }
                )
    finally:
        store.close()
    return rows


def render(argv: Sequence[str], rows: list[dict]) -> str:
    lines = [
        "# Neighbouring turns of the best rows: a study (issue 13)",
        "",
        f"Command: `{' '.join(['python -m benchmarks.neighbours', *argv])}`",
        "",
        (__doc__ or "").split("\n\n")[2].strip(),
        "",
        "| dataset | embedder | variant | recall_any@10 | NDCG@10 | session@5 | n |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    keys = list(dict.fromkeys((r["dataset"], r["embedder"], r["variant"]) for r in rows))
    for key in keys:
        group = [r for r in rows if (r["dataset"], r["embedder"], r["variant"]) == key]
        figures = " | ".join(f"{h.mean(r[m] for r in group):.3f}" for m in ("recall_any@10", "ndcg@10", "session@5"))
        lines.append(f"| {' | '.join(key)} | {figures} | {len(group)} |")
    return "\n".join([*lines, "", *_changes(rows)]) + "\n"


def _changes(rows: list[dict]) -> list[str]:
    """Per dataset and embedder: the most and the least recall_any@10 a variant gives against ``base``."""
    out = []
    for dataset, embedder in dict.fromkeys((r["dataset"], r["embedder"]) for r in rows):
        means = {
            v: h.mean(
                r["recall_any@10"]
                for r in rows
                if (r["dataset"], r["embedder"], r["variant"]) == (dataset, embedder, v)
            )
            for v in VARIANTS
        }
        moves = {v: (m - means["base"]) * 100 for v, m in means.items() if v != "base"}
        best, worst = max(moves, key=moves.__getitem__), min(moves, key=moves.__getitem__)
        out.append(
            f"- {dataset}, {embedder}: recall_any@10 from {moves[worst]:+.1f} points ({worst}) to "
            f"{moves[best]:+.1f} ({best})."
        )
    return out


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.neighbours", description=__doc__.split("\n")[0])
    parser.add_argument("--locomo", default=h.DEFAULT_LOCOMO, help="LoCoMo JSON file, or 'none'")
    parser.add_argument("--long-span", choices=["small", "large", "none"], default="large")
    parser.add_argument("--embedders", nargs="+", choices=["local", "hash"], default=["local"])
    parser.add_argument("--limit-conversations", type=int, default=None)
    parser.add_argument("--workdir", type=Path, default=None, help="keep the databases here")
    parser.add_argument("--out", type=Path, default=RESULTS / "neighbours.md")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    datasets = h.load_datasets(args.locomo, args.limit_conversations, args.long_span)
    workdir, rows = h.workdir_for(args.workdir), []
    for name in args.embedders:
        embedder = h.new_embedder(name)
        for dataset in datasets:
            for conversation in dataset.conversations:
                rows += evaluate(dataset, conversation, embedder, workdir)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(argv, rows), encoding="utf-8")
    Console().print(f"report: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
