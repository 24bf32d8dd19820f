"""The growth ladder: LoCoMo's questions asked of one agent's store that also holds other conversations.

    python -m benchmarks.growth --sizes 0 10000 30000 100000 --embedders local hash --peer-sizes 0 10000

Every dev conversation is stored under one agent (the merged store, ``benchmarks.retrieval_peer --layout
one-agent``), and beside it ``size`` distinct turns of other conversations with their session summaries (the
long-span generator's histories, seeds 1 and up; ``benchmarks.datasets.other_conversations``), never a copy of an
asked turn; each question is asked of the whole store and scored on its own evidence. Ours at its defaults at
every size; CPersona 2.6.14 at its defaults, fed the same records and vectors, at the ``--peer-sizes``. Writes the
ladder's table (benchmarks/results/growth.md, the command at the top) and each size's full report beside it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from benchmarks import harness as h
from benchmarks import retrieval_peer as rp

PROG = "benchmarks.growth"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m {PROG}", description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", default=h.DEFAULT_LOCOMO, help="LoCoMo JSON file (default: $CUEDRECALL_LOCOMO)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[0, 10_000, 30_000, 100_000])
    parser.add_argument("--peer-sizes", type=int, nargs="*", default=[0, 10_000], help="sizes CPersona is asked at")
    parser.add_argument("--embedders", nargs="+", choices=["local", "hash"], default=["local", "hash"])
    parser.add_argument(
        "--ours-variant", action="append", default=[], metavar="CPERSONA_NAME=VALUE", help="as retrieval_peer's"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        help="seconds one CPersona tool call may take, an import ten times that (default: %(default)s)",
    )
    parser.add_argument(
        "--queue-timeout",
        type=float,
        default=1800.0,
        help="seconds CPersona's block build may take after its import (default: %(default)s)",
    )
    parser.add_argument("--workdir", type=Path, help="keep the databases and logs here (default: a temporary folder)")
    h.add_embed_cache_option(parser)
    parser.add_argument(
        "--out", type=Path, default=h.RESULTS / "growth.md", help="markdown file (default: %(default)s)"
    )
    return parser


def size_args(args: argparse.Namespace, size: int) -> list[str]:
    """retrieval_peer's command line for one rung of the ladder."""
    argv = ["--layout", "one-agent", "--grow", str(size), "--embedders", *args.embedders]
    argv += ["--timeout", str(args.timeout), "--queue-timeout", str(args.queue_timeout)]
    if args.locomo:
        argv += ["--locomo", str(args.locomo)]
    if size not in args.peer_sizes:
        argv.append("--skip-peer")
    for setting in args.ours_variant:
        argv += ["--ours-variant", setting]
    if args.workdir:
        argv += ["--workdir", str(args.workdir / f"grow-{size}")]
    if args.embed_cache:
        argv += ["--embed-cache", str(args.embed_cache)]
    return [*argv, "--out", str(rung_path(args.out, size))]


def rung_path(out: Path, size: int) -> Path:
    return out.with_name(f"{out.stem}-{size}{out.suffix}")


def ladder_rows(size: int, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One line per embedder and system at this size: the first-10 and equal-row figures and foreign@10."""
    out = []
    counts = rp.peer_counts(rows)
    for (embedder,), group in h.group_rows(rows, ("embedder",)).items():
        for system in rp.systems_in(group):
            mine = [r for r in group if r["system"] == system]
            s = rp.summarise(mine, counts)
            foreign = h.mean(r.get("foreign@10", 0.0) for r in mine)
            out.append({"size": size, "embedder": embedder, "system": system, "foreign": foreign, **s})
    return out


def render(argv: Sequence[str], lines: Sequence[dict[str, Any]], facts: dict[int, dict[str, Any]]) -> str:
    merged = {(x["embedder"], x["system"]): x for x in lines if x["size"] == 0}  # the merged store, when asked
    out = [
        "# The growth ladder: LoCoMo's questions in one agent's store that also holds other conversations",
        "",
        f"Command: `python -m {PROG} {' '.join(argv)}`",
        "",
        "Every dev conversation stored under one agent, and beside them `other turns` distinct turns of other "
        "conversations with their session summaries (the long-span generator's histories, seeds 1 and up, each "
        "text once, never an asked turn's), never asked. Each question asked of the whole store at limit 10 and "
        "scored on its own evidence; `foreign@10`: the share of the first 10 rows from another conversation than "
        "the question's (the other conversations included). Ours at its defaults (as `benchmarks.retrieval_peer`: "
        "blocks off in the harness), CPersona 2.6.14 at its defaults, the same records and vectors, at the sizes "
        "it was run at. `equal rows`: each system read on as many rows as CPersona returned (sizes with CPersona "
        "only). Each size's full report: `growth-<size>.md` beside this file.",
        "",
        "| other turns | memories | embedder | system | recall_any@10 | NDCG@10 | rows (first 10) | recall_any (equal "
        "rows) | NDCG (equal rows) | foreign@10 | recall_any@10 against the merged store | n |",
        "| ---: | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for x in lines:
        base = merged.get((x["embedder"], x["system"]))
        delta = f"{100 * (x['any@10'] - base['any@10']):+.1f}" if base else "—"
        out.append(
            f"| {x['size']:,} | {facts[x['size']]['memories']:,} | {x['embedder']} | {x['system']} | "
            f"{x['any@10']:.3f} | {x['ndcg@10']:.3f} | {x['rows@10']:.2f} | {_figure(x['any_eq'])} | "
            f"{_figure(x['ndcg_eq'])} | {x['foreign']:.3f} | {delta} | {x['n']} |"
        )
    out += ["", "## Lead at each size (first 10 rows, recall_any@10 / NDCG@10 points, ours minus CPersona)", ""]
    for x in lines:
        if x["system"] != rp.OURS:
            continue
        peer = next(
            (y for y in lines if (y["size"], y["embedder"], y["system"]) == (x["size"], x["embedder"], rp.PEER)), None
        )
        if peer:
            out.append(
                f"- {x['size']:,} other turns, `{x['embedder']}`: {100 * (x['any@10'] - peer['any@10']):+.1f} / "
                f"{100 * (x['ndcg@10'] - peer['ndcg@10']):+.1f}"
            )
    return "\n".join(out) + "\n"


def _figure(value: float) -> str:
    return "—" if value != value else f"{value:.3f}"


def main(argv: Sequence[str] | None = None, console: Console | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.locomo:  # the ladder asks LoCoMo's questions: without them every rung would score nothing
        parser.error("no LoCoMo file: pass --locomo PATH or set CUEDRECALL_LOCOMO")
    console = console or Console(stderr=True)
    lines: list[dict[str, Any]] = []
    facts: dict[int, dict[str, Any]] = {}
    for size in args.sizes:
        rung_argv = size_args(args, size)
        rung = rp.build_parser().parse_args(rung_argv)
        datasets, rows, info = rp.run(rung, console)
        rung.out.parent.mkdir(parents=True, exist_ok=True)
        rung.out.write_text(rp.render(rung_argv, rung, datasets, rows, info), encoding="utf-8")
        memories = max((o["memories"] for o in info["ours"]), default=0)
        facts[size] = {"memories": memories}
        lines += ladder_rows(size, rows)
        args.out.write_text(render(argv, lines, facts), encoding="utf-8")  # each rung as it lands
        console.print(f"size {size:,}: wrote {rung.out}")
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
