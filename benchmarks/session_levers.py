"""What re-ordering a recall's own candidates can do for session recall (sessions@5), read from its traces.

    python -m benchmarks.retrieval --locomo PATH --embedders local --modes rrf --long-span none --dump-traces T.jsonl
    python -m benchmarks.session_levers --traces T.jsonl

Each dumped recall's trace holds the fused list (every candidate's fused score) and the rows the gate passed in
their final order. This study re-ranks those passed rows by rules that could only move rows the recall already
holds, and scores each rule's first 10 rows as ``benchmarks.retrieval`` does: sessions@5 (a session holding
evidence among the first 5 distinct sessions the rows name), session@10, recall_any@10 and NDCG@10. The rules:

- ``support``: a row's fused score plus beta times what the other candidates of its session score (the best one,
  the best three, or all of them): a session the arms reach many times lends its rows weight;
- ``cap``: at most c rows of one session before any row of a session already seen c times (diversity);
- ``rows 12``: the answer read on 12 rows, the count CPersona returns.

It tells whether session recall is a matter of order among what the first stage finds, or of what it finds.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import harness as h

PROG = "benchmarks.session_levers"
BETAS = (0.1, 0.2, 0.5, 1.0)
CAPS = (1, 2, 3)


@dataclass(frozen=True)
class Recall:
    """One dumped recall: its evidence, its evidence sessions, the passed rows in order and their fused scores."""

    gold: frozenset[str]
    gold_sessions: frozenset[int]
    passed: tuple[str, ...]
    fused: dict[str, float]
    session: dict[str, int]


def load(path: Path) -> list[Recall]:
    """The dump's recalls; a row's session from the dumped answers of the same conversation (each names its rows'
    sessions), else from the episode that lent it context."""
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    known: dict[str, dict[str, int]] = defaultdict(dict)
    for line in lines:
        for ref, session in zip(line["ranked"], line["sessions"], strict=True):
            if session is not None:
                known[_conversation(line)][ref] = session
    out = []
    for line in lines:
        trace = line["trace"]
        sessions = dict(known[_conversation(line)])
        for ref, episode in (trace.get("scoring", {}).get("episode_context") or {}).items():
            if ref not in sessions and episode in sessions:
                sessions[ref] = sessions[episode]
        out.append(
            Recall(
                gold=frozenset(line["gold"]),
                gold_sessions=frozenset(line["gold_sessions"]),
                passed=tuple(trace["order"]["before_cut"]),
                fused={row["ref"]: float(row["score"]) for row in trace["fusion"]},
                session=sessions,
            )
        )
    return out


def _conversation(line: dict[str, Any]) -> str:
    return str(line["id"]).rsplit(":", 1)[0]


def unchanged(recall: Recall) -> list[str]:
    return list(recall.passed)


def support(beta: float, take: int | None) -> Callable[[Recall], list[str]]:
    """Passed rows by fused score + beta x the sum of the best ``take`` (None: all) other fused scores of their
    session among the candidates."""

    def order(recall: Recall) -> list[str]:
        by_session: dict[int, list[float]] = defaultdict(list)
        for ref, score in recall.fused.items():
            if ref in recall.session:
                by_session[recall.session[ref]].append(score)
        for scores in by_session.values():
            scores.sort(reverse=True)

        def lent(ref: str) -> float:
            if ref not in recall.session:
                return 0.0
            others = list(by_session[recall.session[ref]])
            if ref in recall.fused:
                others.remove(recall.fused[ref])
            return sum(others[:take] if take is not None else others)

        return sorted(recall.passed, key=lambda ref: -(recall.fused.get(ref, 0.0) + beta * lent(ref)))

    return order


def cap(most: int) -> Callable[[Recall], list[str]]:
    """Passed rows in order, a session's rows past its first ``most`` moved after every other row (in order)."""

    def order(recall: Recall) -> list[str]:
        seen: dict[int, int] = defaultdict(int)
        first, rest = [], []
        for ref in recall.passed:
            session = recall.session.get(ref)
            if session is None or seen[session] < most:
                first.append(ref)
                if session is not None:
                    seen[session] += 1
            else:
                rest.append(ref)
        return first + rest

    return order


def score(recalls: Sequence[Recall], order: Callable[[Recall], list[str]], rows: int = h.LIMIT) -> dict[str, float]:
    """The rule's figures over its first ``rows`` rows (recall_any and NDCG on the first 10)."""
    figures: dict[str, list[float]] = defaultdict(list)
    for recall in recalls:
        ranked = order(recall)[:rows]
        sessions = [recall.session.get(ref) for ref in ranked]
        figures["sessions@5"].append(h.distinct_session_recall(sessions, recall.gold_sessions, 5))
        figures["session@10"].append(h.session_recall(sessions, recall.gold_sessions, 10))
        figures["recall_any@10"].append(h.recall_any(ranked, recall.gold, 10))
        figures["ndcg@10"].append(h.ndcg(ranked, recall.gold, 10))
    return {name: h.mean(values) for name, values in figures.items()}


def rules() -> list[tuple[str, Callable[[Recall], list[str]], int]]:
    out: list[tuple[str, Callable[[Recall], list[str]], int]] = [("unchanged", unchanged, h.LIMIT)]
    for name, take in (("best", 1), ("best three", 3), ("all", None)):
        out += [(f"support, {name}, beta {beta}", support(beta, take), h.LIMIT) for beta in BETAS]
    out += [(f"cap {most} a session", cap(most), h.LIMIT) for most in CAPS]
    out.append(("rows 12", unchanged, 12))
    return out


def render(argv: Sequence[str], recalls: Sequence[Recall]) -> list[str]:
    lines = [
        "# Session recall: re-ordering what a recall already holds",
        "",
        f"Command: `python -m {PROG} {' '.join(argv)}`, on the traces of `python -m benchmarks.retrieval --locomo "
        "PATH --embedders local --modes rrf --long-span none --dump-traces T.jsonl` (any run with `--dump-traces`).",
        "",
        (__doc__ or "").split("\n\n", 2)[2].strip(),
        "",
        f"Recalls: {len(recalls)} with evidence in a known session.",
        "",
        "| rule | sessions@5 | session@10 | recall_any@10 | NDCG@10 |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, order, rows in rules():
        s = score(recalls, order, rows)
        cells = " | ".join(f"{s[m]:.3f}" for m in ("sessions@5", "session@10", "recall_any@10", "ndcg@10"))
        lines.append(f"| {name} | {cells} |")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog=f"python -m {PROG}", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--traces", type=Path, required=True, help="a benchmarks.retrieval --dump-traces file")
    parser.add_argument("--out", type=Path, default=h.RESULTS / "session_levers.md", help="(default: %(default)s)")
    args = parser.parse_args(argv)
    recalls = [r for r in load(args.traces) if r.gold_sessions]
    h.write_report(args.out, render(argv, recalls))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
