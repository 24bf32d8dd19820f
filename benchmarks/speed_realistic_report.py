"""The markdown report of benchmarks/speed_realistic.py: one table per measurement, each naming its corpus."""

from __future__ import annotations

import os
from typing import Any

from benchmarks.stats import percentile

CORPUS = (
    "Realistic corpus (`benchmarks/realistic.py`): LoCoMo's turns and the long-span generator's (large, "
    "seeds 1 to 20: about 103,000 distinct turns), interleaved; one agent, hash vectors (384 wide), blocks off."
)


def _corpus(rows: list[dict[str, Any]]) -> str:
    """CORPUS, or (a run with ``--blocks``) the same at the shipped defaults, with each size's block build time."""
    built = [row for row in rows if "blocks_s" in row]
    if not built:
        return CORPUS
    times = "; ".join(f"{row['size']:,}: {row['blocks_s']:.0f} s" for row in built)
    return CORPUS.replace(
        "blocks off.",
        "at the shipped defaults: every record's blocks built before timing (hash vectors, the builder drained in "
        f"one process: {times}) and the block arm searched with its held seats.",
    )


def _p(values: list[float], q: float) -> str:
    return f"{percentile(values, q):.1f}"


def _mib(kib: int | None) -> str:
    return "n/a" if not kib else f"{kib / 1024:.0f}"


def render(
    rows: list[dict[str, Any]],
    peers: dict[int, dict[str, Any]],
    argv: str,
    questions: int,
    load: list[float],
    python: str,
    tree: str = "",
) -> str:
    out = [
        f"Command: `python -m benchmarks.speed_realistic {argv}`",
        "",
        "# Speed on conversational text (the realistic corpus)",
        "",
        f"CPython {python}, 2 shared CPUs; load average {load[0]:.2f} at the start, {load[-1]:.2f} at the end "
        "(other work shares the machine: figures carry its noise). " + _corpus(rows) + " In process with "
        f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', '(unset)')} (one BLAS thread: on 2 shared "
        "cores OpenBLAS's own threads made the vector arm's product 5 to 13 times slower); the MCP servers "
        "run with their defaults." + (f" {tree}" if tree else ""),
        "",
        "## Recall in process (pipeline alone)",
        "",
        f"`Memory.recall`, hash embedder, query vectors computed before timing; {questions} questions (LoCoMo's "
        "and long-span's, alternating), each asked once plain and once traced, interleaved; limit 10, rrf. "
        "p99 of 150 values is the second largest (linear interpolation). Wall: elapsed time; CPU: the "
        "process's CPU time for the same plain recalls (what the recall itself costs; on a busy shared machine "
        "the wall time also holds the time other processes had the cores).",
        "",
        "| memories | wall p50 ms | wall p90 ms | wall p99 ms | CPU p50 ms | CPU p90 ms | CPU p99 ms | "
        "traced wall p50 ms | traced wall p99 ms |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        plain, traced, cpu = row["ms"]["plain"], row["ms"]["trace"], row["ms"]["cpu"]
        out.append(
            f"| {row['size']:,} | {_p(plain, 0.5)} | {_p(plain, 0.9)} | {_p(plain, 0.99)} | {_p(cpu, 0.5)} | "
            f"{_p(cpu, 0.9)} | {_p(cpu, 0.99)} | {_p(traced, 0.5)} | {_p(traced, 0.99)} |"
        )
    out += [
        "",
        "## Build, ingest and memory",
        "",
        "Build: bulk insert, 1,024 memories a transaction (as an import). Ingest: 200 new turns stored one at a "
        "time with `Memory.store` into a copy of the store of that size, each followed by a recall (an agent's "
        "turn; the questions asked once first, as before the timed recalls); the recall right after a store is "
        "timed apart. Memory: a child process that opens the "
        "store and runs 20 recalls; VmHWM is its peak resident set, VmRSS the resident set after the recalls.",
        "",
        "| memories | build s | build memories/s | database MiB | ingest memories/s | ingest p50 ms | "
        "ingest p95 ms | recall after a store p50 ms | p99 ms | open s | peak MiB (VmHWM) | resident MiB (VmRSS) | "
        "of which interpreter and imports MiB |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        rss, ing = row["rss"], row["ingest"]
        out.append(
            f"| {row['size']:,} | {row['build_s']:.1f} | {row['size'] / row['build_s']:,.0f} | "
            f"{row['db_mib']:,.0f} | {ing['rate']:,.0f} | {ing['p50']:.2f} | {ing['p95']:.2f} | "
            f"{ing.get('after_p50', float('nan')):.1f} | {ing.get('after_p99', float('nan')):.1f} | "
            f"{rss['open_s']:.2f} | {_mib(rss['peak_kib'])} | {_mib(rss['rss_kib'])} | "
            f"{_mib(rss['baseline_kib'])} |"
        )
    worst = [row for row in rows if "worst" in row]
    if worst:
        row = worst[0]
        out += [
            "",
            f"## Worst inputs ({row['size']:,} memories)",
            "",
            "The slowest of 3 tries of each input the tools accept at their limits (query 16,000 characters, "
            "limit 100, 1,000 exclusions), in process.",
            "",
            "| input | slowest ms |",
            "| --- | ---: |",
        ]
        out += [f"| {name} | {ms:.1f} |" for name, ms in row["worst"].items()]
    if peers:
        out += ["", *render_peers(peers)]
    return "\n".join(out) + "\n"


PEER_MODES = {
    "defaults": "Headline: both at their defaults (CPersona: block arm and held seats on, task queue on, startup "
    "calibration on; ours: blocks built through its queue, calibration on growth). Before the first "
    "timed query each server's queue tool (`get_queue_status` on both) was polled every 2 s until it "
    "answered nothing pending 3 times running, and CPersona's log had recorded the end of its startup "
    "calibration (it runs beside its queue). CPersona's two derived files were then brought current with "
    "its own operator commands, `python -m cpersona.block_index build` and `python -m "
    "cpersona.vector_index build` (its server never starts the vector index build, and rebuilds the "
    "block index only once it is far behind; recall reads both when present).",
    "blocks-off": "Variant: blocks off on both, CPersona's task queue and startup calibration off "
    "(benchmarks/peer.py's PEER_SETTINGS), ours without calibration on growth; no vector index file.",
}


def _build_note(size: int, figures: dict[str, Any]) -> str:
    """How long each side's background work took, and whether it finished before the timing."""
    parts = []
    for name, label in (("ours", "ours"), ("cpersona", "CPersona")):
        row = figures["background"][name]
        state = "finished" if row["finished"] else "NOT finished (timed anyway)"
        parts.append(f"{label} {state} after {row['s']:.0f} s ({row['polls']} polls of `{row['tool']}`)")
    for name, label in (("ours", "ours"), ("cpersona", "CPersona")):
        cover = (figures.get("blocks") or {}).get(name)
        if cover:
            parts.append(
                f"{label}'s blocks then: {cover['records_with_rows']:,} of {cover['memories']:,} records "
                f"with block rows, {cover['embedded_blocks']:,} blocks embedded"
            )
    before = figures.get("block_index_before") or {}
    if before:
        parts.append(
            f"CPersona's block index file when its queue emptied: {before.get('rows', 0):,} blocks, "
            f"{before.get('changes_since_build', 0):,} changes behind (current by its own rule: "
            f"{before.get('current')})"
        )
    for module, label in (("block_index", "block index"), ("vector_index", "vector index")):
        built = (figures.get(module) or {}).get("built") or {}
        status = figures.get(f"{module}_status") or {}
        if module in figures:
            parts.append(
                f"its {label} file rebuilt by its command in {figures[module]['s']:.1f} s "
                f"({built.get('count', built.get('rows', '?'))} rows; built: {built.get('built')}), "
                f"usable after the queries: {status.get('usable')}"
            )
    return f"- {size:,}, background work: " + "; ".join(parts) + "."


def render_peers(peers: dict[int, dict[str, Any]]) -> list[str]:
    """The side by side with CPersona: one table, a row per size and mode, the defaults first."""
    out = [
        "## Side by side with CPersona 2.6.14 over MCP stdio",
        "",
        "Both servers at once over the same rows and vectors (CPersona imported ours with `import_memories`), "
        "each query's vector from one `cuedrecall embed-server --embedding hash` (one HTTP call a recall on both "
        "sides); every question asked of both, alternating which goes first, limit 10. Times seen from the "
        "client. Rows: the mean number of rows a recall returned (its `messages`). Peak: each server process's "
        "VmHWM after its queries (the background builds included); resident: its VmRSS after the queries.",
        "",
        *[f"- {text}" for text in PEER_MODES.values()],
        "",
        "| memories | mode | ours p50 ms | CPersona p50 ms | ours p90 ms | CPersona p90 ms | ours p99 ms | "
        "CPersona p99 ms | ours rows | CPersona rows | ours peak MiB | CPersona peak MiB | ours resident MiB | "
        "CPersona resident MiB |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    notes = []
    for mode in PEER_MODES:
        for size, peer in peers.items():
            figures = (peer.get("modes") or {}).get(mode)
            if "error" in peer or figures is None:
                continue
            if "error" in figures:
                notes.append(f"- {size:,} {mode}: not measured ({figures['error']})")
                continue
            ours, theirs = figures["ms"]["ours"], figures["ms"]["cpersona"]
            rows = {name: sum(v) / len(v) if v else 0.0 for name, v in figures["rows"].items()}
            out.append(
                f"| {size:,} | {mode} | {_p(ours, 0.5)} | {_p(theirs, 0.5)} | {_p(ours, 0.9)} | "
                f"{_p(theirs, 0.9)} | {_p(ours, 0.99)} | {_p(theirs, 0.99)} | {rows['ours']:.1f} | "
                f"{rows['cpersona']:.1f} | {_mib(figures['peak_kib'].get('ours'))} | "
                f"{_mib(figures['peak_kib'].get('cpersona'))} | {_mib(figures['rss_kib'].get('ours'))} | "
                f"{_mib(figures['rss_kib'].get('cpersona'))} |"
            )
            if "background" in figures:
                notes.append(_build_note(size, figures))
    for size, peer in peers.items():
        if "error" in peer:
            notes.append(f"- {size:,}: not measured ({peer['error']})")
        else:
            notes.append(
                f"- {size:,}: CPersona imported {peer['imported']:,} memories in {peer['import_s']:.1f} s "
                f"(cached import, benchmarks/speed.py); {peer['probe']}."
            )
    return [*out, "", *notes]
