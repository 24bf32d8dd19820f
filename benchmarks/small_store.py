"""Retrieval in small stores (10 to 200 memories) built from LoCoMo: the gates before and the defaults, side by side.

    python -m benchmarks.small_store --embedders local hash

A new user's store is small and uncalibrated, where the full-size figures say
nothing about the gate. Each LoCoMo conversation's turns, in time order, are cut
into consecutive windows of N turns (N in ``--sizes``); each window is a store of
its own, asked the conversation's questions whose evidence lies wholly inside it
(category 5 left out). Every window is stored twice: once with no calibration, and
once as a server at its defaults stores it, calibrating by itself as it grows (at
50 and 200 memories, run as the queue's runner would, after each write). Each
system then reads one of the two databases with its own settings, so all answer
the same question over the same rows:

- ``gate-v0``: the gate before issue 13 (``recall_gate=gate-v0``, which has no relief), uncalibrated: the
  figures before the change;
- ``gate-v0 +cal``: the same gate, calibrated as the store grew;
- ``gate-v1 +cal``: gate-v1 (before issue 27's rule for a row that repeats the query), calibrated;
- ``defaults`` and ``defaults +cal``: every setting at its default, uncalibrated and calibrated (the last is
  what a new user runs: gate-v2, calibration on growth, gate relief off);
- ``defaults +cal +relief``: the defaults with gate relief on.

recall_any@10 and NDCG@10 are read on the first 10 rows of the best-first ranking;
``rows`` is the mean number returned, ``empty`` the share of answers with none.
Writes ``benchmarks/results/small_store.md``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress

from benchmarks import harness as h
from benchmarks.datasets import Conversation, Question, Turn, load_locomo
from benchmarks.recall_trace_confirm import FILTER_DROP, confirm
from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock

PROG = "benchmarks.small_store"
SIZES = (10, 25, 50, 100, 200)
CALIBRATED = "calibrated"
PLAIN = "plain"
# label -> (which database it reads, the settings it changes)
SYSTEMS: dict[str, tuple[str, dict[str, str]]] = {
    "gate-v0": (PLAIN, {"CPERSONA_RECALL_GATE": "gate-v0"}),
    "gate-v0 +cal": (CALIBRATED, {"CPERSONA_RECALL_GATE": "gate-v0"}),
    "gate-v1 +cal": (CALIBRATED, {"CPERSONA_RECALL_GATE": "gate-v1"}),
    "defaults": (PLAIN, {}),
    "defaults +cal": (CALIBRATED, {}),  # what a new user runs
    "defaults +cal +relief": (CALIBRATED, {"CPERSONA_GATE_RELIEF": "true"}),
}
METRICS = ("recall_any@10", "ndcg@10", "rows", "empty", "filter_drop")


@dataclass(frozen=True)
class Window:
    """One small store: N consecutive turns of a conversation, and the questions they hold the evidence of."""

    conversation: str
    size: int
    index: int
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]

    @property
    def agent_id(self) -> str:
        return f"{self.conversation}-{self.size}-{self.index}"


def windows(conversation: Conversation, size: int, most: int | None) -> list[Window]:
    """The conversation's turns in time order cut into windows of ``size`` (the last, shorter one dropped), each
    with its scored questions; windows without a question are left out; at most ``most`` of them."""
    turns = sorted(conversation.turns, key=lambda t: (datetime.fromisoformat(t.timestamp), t.msg_id))
    out = []
    for index, start in enumerate(range(0, len(turns) - size + 1, size)):
        chunk = tuple(turns[start : start + size])
        held = {t.msg_id for t in chunk}
        asked = tuple(
            q
            for q in conversation.questions
            if q.category not in h.LOCOMO_EXCLUDED and q.evidence and set(q.evidence) <= held
        )
        if asked:
            out.append(Window(conversation.conv_id, size, index, chunk, asked))
    return out if most is None else out[:most]


def settings(embedder: str, path: Path, environ: dict[str, str]) -> Any:
    return h.settings_for(embedder, "rrf", path, environ)


def build(window: Window, embedder: h.PrefetchEmbedder, path: Path, calibrate: bool) -> dict[str, str]:
    """Store the window's turns (one at a time, as a client would), running the queue after each write when
    calibrating (a milestone's calibration runs then, as a server's runner would); msg_id -> ref."""
    for stale in path.parent.glob(path.name + "*"):
        stale.unlink()
    environ = {"CPERSONA_CALIBRATE_ON_GROWTH": "true" if calibrate else "false"}
    refs: dict[str, str] = {}
    with Memory(path, settings=settings(embedder.mode, path, environ), embedder=embedder, background=False) as memory:
        for turn in window.turns:
            ref = h.stored_ref(h.store_turn(memory, window.agent_id, turn))
            if ref is not None:
                refs[turn.msg_id] = ref
            if memory.blocks is not None:
                memory.blocks.drain()
    return refs


def evaluate(window: Window, embedder: h.PrefetchEmbedder, workdir: Path, limit: int) -> list[dict[str, Any]]:
    """One row per question and system."""
    paths = {kind: workdir / f"{window.agent_id}-{embedder.mode}-{kind}.db" for kind in (PLAIN, CALIBRATED)}
    refs = {kind: build(window, embedder, path, kind == CALIBRATED) for kind, path in paths.items()}
    rows = []
    for label, (kind, environ) in SYSTEMS.items():
        with Memory(
            paths[kind],
            settings=settings(embedder.mode, paths[kind], {"CPERSONA_CALIBRATE_ON_GROWTH": "false", **environ}),
            embedder=embedder,
            background=False,
        ) as memory:
            calibration = memory.calibration.record(window.agent_id)
            for question in window.questions:
                gold = [refs[kind][m] for m in question.evidence if m in refs[kind]]
                memory.clock = fixed_clock(question.asked_at)
                response = memory.recall(agent_id=window.agent_id, query=question.text, limit=limit, trace=True)
                ranked = h.best_first(response)
                rows.append(
                    {
                        "embedder": embedder.mode,
                        "model": embedder.model,
                        "system": label,
                        "size": window.size,
                        "store": window.agent_id,
                        "qid": question.qid,
                        "recall_any@10": h.recall_any(ranked, gold, 10),
                        "ndcg@10": h.ndcg(ranked, gold, 10),
                        "rows": len(ranked),
                        "empty": float(not ranked),
                        "filter_drop": float(confirm(response["trace"], gold) == FILTER_DROP),
                        "calibrated": calibration["origin"] != "none",
                    }
                )
    return rows


def run(args: argparse.Namespace, console: Console) -> list[dict[str, Any]]:
    conversations = load_locomo(args.locomo, limit_conversations=args.limit_conversations)
    plan = [w for c in conversations for size in args.sizes for w in windows(c, size, args.most)]
    workdir = h.workdir_for(args.workdir)
    rows: list[dict[str, Any]] = []
    with Progress(console=console, transient=False) as progress:
        for name in args.embedders:
            embedder = h.new_embedder(name)
            texts = [t.content for w in plan for t in w.turns] + [q.text for w in plan for q in w.questions]
            task = progress.add_task(f"embedding ({name})", total=embedder.pending(texts))
            embedder.prefetch(texts, lambda n, task=task: progress.advance(task, n))
            stores = progress.add_task(f"stores ({name})", total=len(plan))
            for window in plan:
                rows += evaluate(window, embedder, workdir, args.limit)
                progress.advance(stores)
    return rows


# -- reporting ----------------------------------------------------------------------------------


def table(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Per embedder and size (then all sizes), one line per system."""
    lines = [
        "| embedder | memories | system | recall_any@10 | NDCG@10 | rows | empty | FILTER_DROP | calibrated | n |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for embedder in dict.fromkeys(r["embedder"] for r in rows):
        sizes = sorted({r["size"] for r in rows if r["embedder"] == embedder})
        for size in [*sizes, None]:
            for system in SYSTEMS:
                picked = [
                    r
                    for r in rows
                    if r["embedder"] == embedder and r["system"] == system and (size is None or r["size"] == size)
                ]
                if not picked:
                    continue
                cells = [f"{h.mean(r[m] for r in picked):.3f}" for m in METRICS]
                calibrated = f"{h.mean(float(r['calibrated']) for r in picked):.2f}"
                label = "**all**" if size is None else str(size)
                lines.append(
                    f"| {embedder} | {label} | {system} | {' | '.join(cells)} | {calibrated} | {len(picked)} |"
                )
    return lines


def render(argv: Sequence[str], args: argparse.Namespace, rows: Sequence[dict[str, Any]]) -> str:
    first = rows[0]["embedder"]
    stores = {
        size: len({r["store"] for r in rows if r["size"] == size and r["embedder"] == first})
        for size in sorted({r["size"] for r in rows})
    }
    asked = {
        size: sum(1 for r in rows if r["size"] == size and r["embedder"] == first and r["system"] == "gate-v0")
        for size in stores
    }
    sizes = ", ".join(f"{size}: {stores[size]} stores, {asked[size]} questions" for size in stores)
    return "\n".join(
        [
            "# Retrieval in small stores (issue 13)",
            "",
            f"Command: `{' '.join(['python -m', PROG, *argv])}`",
            "",
            "## Setup",
            "",
            f"- LoCoMo ({args.locomo}), each conversation's turns in time order cut into consecutive windows of "
            f"{', '.join(map(str, args.sizes))} turns; each window a store of its own (one agent, memories only, "
            "fusion rrf, blocks off), asked the conversation's questions whose evidence turns all lie inside it "
            "(category 5 left out), limit 10, no time cue, the question's asked_at as now.",
            f"- Per window size: {sizes}.",
            "- Embedders: "
            + ", ".join(f"`{e}` ({m})" for e, m in dict.fromkeys((r["embedder"], r["model"]) for r in rows))
            + ".",
            "- Each window stored twice: `plain` (no calibration) and as the defaults store it (calibration on growth: "
            "a calibration at 50 and 200 memories, run after the write that reached it). Systems:",
            *[
                f"  - `{label}`: reads the {kind} store; settings changed: "
                f"{', '.join(f'`{k}={v}`' for k, v in environ.items()) or 'none'}"
                for label, (kind, environ) in SYSTEMS.items()
            ],
            "  `gate-v0` is the recall before issue 13; `defaults +cal` what a new user runs today.",
            "- recall_any@10 / NDCG@10 on the first 10 rows of the best-first ranking; `rows`: mean rows returned; "
            "`empty`: share of answers with no row; `FILTER_DROP`: share of questions whose evidence the gate or "
            "autocut removed (`benchmarks.recall_trace_confirm`); `calibrated`: share of questions asked of a store "
            "that held a calibration.",
            "",
            "## Results",
            "",
            *table(rows),
            "",
        ]
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m {PROG}", description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", default=h.DEFAULT_LOCOMO, help="LoCoMo JSON file (default: $CUEDRECALL_LOCOMO)")
    parser.add_argument("--embedders", nargs="+", choices=["local", "hash"], default=["local", "hash"])
    parser.add_argument("--sizes", nargs="+", type=int, default=list(SIZES), help="window sizes (memories)")
    parser.add_argument("--most", type=int, default=None, help="at most this many windows per conversation and size")
    parser.add_argument("--limit-conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--limit", type=int, default=h.LIMIT, help="recall limit (default: %(default)s)")
    parser.add_argument("--workdir", type=Path, help="keep the databases here (default: a temporary folder)")
    parser.add_argument("--out", type=Path, default=h.RESULTS / "small_store.md", help="markdown file")
    return parser


def main(argv: Sequence[str] | None = None, console: Console | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    console = console or Console(stderr=True)
    rows = run(args, console)
    if not rows:
        console.print("no window held the evidence of a question")
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(argv, args, rows), encoding="utf-8")
    console.print("\n".join(table(rows)))
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
