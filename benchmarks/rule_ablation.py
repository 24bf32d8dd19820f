"""One recall rule on (the defaults) and off, over every store shape the quality figures rest on.

    python -m benchmarks.rule_ablation --locomo PATH --off CUEDRECALL_TIME_CONTEXT_ENABLED=false \
        --out benchmarks/results/time_context.md

Each shape is a ``benchmarks.retrieval`` run (limit 10, rrf, the question's text as query, scored on its own
evidence): LoCoMo with one store per conversation, LoCoMo with every conversation under one agent, that store
grown with ``--grow`` distinct turns of other conversations (never asked), and the generated long-span history.
Every shape runs at our defaults and again with the ``--off`` settings; the table puts the two side by side with
the difference, per embedder. Metrics as ``benchmarks.retrieval`` defines them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from benchmarks import harness as h
from benchmarks import retrieval

PROG = "benchmarks.rule_ablation"
METRICS = ("recall_any@5", "recall_any@10", "recall_all@10", "ndcg@10", "session@10", "sessions@5", "foreign@10")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m {PROG}", description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", default=h.DEFAULT_LOCOMO, help="LoCoMo JSON file (default: $CUEDRECALL_LOCOMO)")
    parser.add_argument(
        "--off", action="append", required=True, metavar="CPERSONA_NAME=VALUE", help="the rule's settings off"
    )
    parser.add_argument("--embedders", nargs="+", choices=["local", "hash"], default=["local", "hash"])
    parser.add_argument("--grow", type=int, default=10_000, help="other turns in the grown shape (default: 10000)")
    parser.add_argument("--long-span", choices=["small", "large"], default="large", help="the long-span history's size")
    h.add_embed_cache_option(parser)
    parser.add_argument("--out", type=Path, required=True, help="markdown file")
    return parser


def shapes(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    """(label, benchmarks.retrieval's arguments) of each store shape."""
    locomo = ["--locomo", str(args.locomo), "--long-span", "none"]
    return [
        ("LoCoMo, one store per conversation", locomo),
        ("LoCoMo, every conversation in one agent", [*locomo, "--layout", "one-agent"]),
        (f"the same with {args.grow:,} other turns", [*locomo, "--layout", "one-agent", "--grow", str(args.grow)]),
        (f"long-span history ({args.long_span})", ["--locomo", "none", "--long-span", args.long_span]),
    ]


def measure(args: argparse.Namespace, console: Console) -> list[dict[str, Any]]:
    """One line per shape, embedder and side (on / off): the mean of each metric over the scored questions."""
    lines = []
    common = ["--embedders", *args.embedders, "--modes", "rrf"]
    if args.embed_cache:
        common += ["--embed-cache", str(args.embed_cache)]
    for label, shape in shapes(args):
        for side, settings in (("on", []), ("off", [arg for s in args.off for arg in ("--setting", s)])):
            parsed = retrieval.build_parser().parse_args([*shape, *common, *settings])
            _datasets, rows, _models = retrieval.run(parsed, console)
            for (embedder,), group in h.group_rows(rows, ("embedder",)).items():
                lines.append({"shape": label, "embedder": embedder, "side": side, **retrieval.summarise(group)})
    return lines


def table(lines: Sequence[dict[str, Any]]) -> list[str]:
    """On, off and on minus off, per shape and embedder."""
    out = []
    for (shape, embedder), group in h.group_rows(lines, ("shape", "embedder")).items():
        on, off = (next(line for line in group if line["side"] == side) for side in ("on", "off"))
        out.append([shape, embedder, "on (defaults)", *(f"{on[m]:.3f}" for m in METRICS), on["n"]])
        out.append([shape, embedder, "off", *(f"{off[m]:.3f}" for m in METRICS), off["n"]])
        out.append(["", "", "on − off", *(f"{on[m] - off[m]:+.3f}" for m in METRICS), ""])
    return h.markdown_table(["shape", "embedder", "rule", *METRICS, "n"], out, "lll" + "r" * (len(METRICS) + 1))


def render(argv: Sequence[str], args: argparse.Namespace, lines: Sequence[dict[str, Any]]) -> str:
    return "\n".join(
        [
            f"# Rule ablation: {', '.join(args.off)}",
            "",
            f"Command: `python -m {PROG} {' '.join(argv)}`",
            "",
            __doc__.split("\n\n", 2)[2].strip(),
            "",
            *table(lines),
            "",
        ]
    )


def main(argv: Sequence[str] | None = None, console: Console | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    console = console or Console(stderr=True)
    lines = measure(args, console)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(argv, args, lines), encoding="utf-8")
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
