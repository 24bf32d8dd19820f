"""The markdown report of benchmarks/speed_realistic.py: one table per measurement, each naming its corpus."""

from __future__ import annotations

import os
from typing import Any

from benchmarks.speed_report import percentile

CORPUS = ("Realistic corpus (`benchmarks/realistic.py`): LoCoMo's turns and the long-span generator's (large, "
          "seeds 1 to 20: about 103,000 distinct turns), interleaved; one agent, hash vectors (384 wide), blocks off.")


def _p(values: list[float], q: float) -> str:
    return f"{percentile(values, q):.1f}"


def _mib(kib: int | None) -> str:
    return "n/a" if not kib else f"{kib / 1024:.0f}"


def render(rows: list[dict[str, Any]], peers: dict[int, dict[str, Any]], argv: str, questions: int,
           load: list[float], python: str) -> str:
    out = [f"Command: `python -m benchmarks.speed_realistic {argv}`", "",
           "# Speed on conversational text (the realistic corpus)", "",
           f"CPython {python}, 2 shared CPUs; load average {load[0]:.2f} at the start, {load[-1]:.2f} at the end "
           "(other work shares the machine: figures carry its noise). " + CORPUS + " In process with "
           f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', '(unset)')} (one BLAS thread: on 2 shared "
           "cores OpenBLAS's own threads made the vector arm's product 5 to 13 times slower); the MCP servers "
           "run with their defaults.", "",
           "## Recall in process (pipeline alone)", "",
           f"`Memory.recall`, hash embedder, query vectors computed before timing; {questions} questions (LoCoMo's "
           "and long-span's, alternating), each asked once plain and once traced, interleaved; limit 10, rrf. "
           "p99 of 150 values is the second largest (linear interpolation). Wall: elapsed time; CPU: the "
           "process's CPU time for the same plain recalls (what the recall itself costs; on a busy shared machine "
           "the wall time also holds the time other processes had the cores).", "",
           "| memories | wall p50 ms | wall p90 ms | wall p99 ms | CPU p50 ms | CPU p90 ms | CPU p99 ms | "
           "traced wall p50 ms | traced wall p99 ms |",
           "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for row in rows:
        plain, traced, cpu = row["ms"]["plain"], row["ms"]["trace"], row["ms"]["cpu"]
        out.append(f"| {row['size']:,} | {_p(plain, .5)} | {_p(plain, .9)} | {_p(plain, .99)} | {_p(cpu, .5)} | "
                   f"{_p(cpu, .9)} | {_p(cpu, .99)} | {_p(traced, .5)} | {_p(traced, .99)} |")
    out += ["", "## Build, ingest and memory", "",
            "Build: bulk insert, 1,024 memories a transaction (as an import). Ingest: 200 new turns stored one at a "
            "time with `Memory.store` into a copy of the store of that size. Memory: a child process that opens the "
            "store and runs 20 recalls; VmHWM is its peak resident set, VmRSS the resident set after the recalls.", "",
            "| memories | build s | build memories/s | database MiB | ingest memories/s | ingest p50 ms | "
            "ingest p95 ms | open s | peak MiB (VmHWM) | resident MiB (VmRSS) | of which interpreter and imports MiB |",
            "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for row in rows:
        rss, ing = row["rss"], row["ingest"]
        out.append(f"| {row['size']:,} | {row['build_s']:.1f} | {row['size'] / row['build_s']:,.0f} | "
                   f"{row['db_mib']:,.0f} | {ing['rate']:,.0f} | {ing['p50']:.2f} | {ing['p95']:.2f} | "
                   f"{rss['open_s']:.2f} | {_mib(rss['peak_kib'])} | {_mib(rss['rss_kib'])} | "
                   f"{_mib(rss['baseline_kib'])} |")
    worst = [row for row in rows if "worst" in row]
    if worst:
        row = worst[0]
        out += ["", f"## Worst inputs ({row['size']:,} memories)", "",
                "The slowest of 3 tries of each input the tools accept at their limits (query 16,000 characters, "
                "limit 100, 1,000 exclusions), in process.", "", "| input | slowest ms |", "| --- | ---: |"]
        out += [f"| {name} | {ms:.1f} |" for name, ms in row["worst"].items()]
    if peers:
        out += ["", "## Side by side with CPersona 2.6.14 over MCP stdio", "",
                "Both servers at once over the same rows and vectors (CPersona imported ours with `import_memories`), "
                "each query's vector from one `cuedrecall embed-server --embedding hash` (one HTTP call a recall on "
                "both sides), blocks off on both; every question asked of both, alternating which goes first. Times "
                "seen from the client. Peak: each server process's VmHWM after its queries.", "",
                "| memories | ours p50 ms | CPersona p50 ms | ours p90 ms | CPersona p90 ms | ours p99 ms | "
                "CPersona p99 ms | ours peak MiB | CPersona peak MiB | CPersona import s |",
                "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        notes = []
        for size, peer in peers.items():
            if "error" in peer:
                notes.append(f"- {size:,}: not measured ({peer['error']})")
                continue
            ours, theirs = peer["ms"]["ours"], peer["ms"]["cpersona"]
            out.append(f"| {size:,} | {_p(ours, .5)} | {_p(theirs, .5)} | {_p(ours, .9)} | {_p(theirs, .9)} | "
                       f"{_p(ours, .99)} | {_p(theirs, .99)} | {_mib(peer['peak_kib'].get('ours'))} | "
                       f"{_mib(peer['peak_kib'].get('cpersona'))} | {peer['import_s']:.1f} |")
            notes.append(f"- {size:,}: CPersona imported {peer['imported']:,} memories; {peer['probe']}.")
        out += ["", *notes]
    return "\n".join(out) + "\n"
