"""The speed benchmark's report: the markdown tables, the console summary and the PNG plot.

``benchmarks/speed.py`` measures and fills a ``Report`` (declared here, with what one run is made of: its
conditions and counts travel on it); this module only reads it and imports nothing from ``speed``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from benchmarks import peer as peer_mod
from benchmarks.stats import jaccard, percentile

__all__ = [
    "PeerStore",
    "Report",
    "SideBySide",
    "plot",
    "print_summary",
    "render",
    "side_by_side_rows",
]


# -- what a run measured ---------------------------------------------------------------------------


@dataclass
class SideBySide:
    """What one size's MCP run measured for both servers."""

    ms: dict[str, dict[str, list[float]]] = field(default_factory=dict)  # system -> condition -> ms
    refs: dict[str, dict[str, list[list[str]]]] = field(default_factory=dict)  # system -> condition -> refs
    texts: dict[str, list[str]] = field(default_factory=dict)
    ids_equal: bool | None = None  # whether CPersona's row ids came out equal to ours
    msg_id_probe: tuple[str, float] | None = None  # CPersona's msg_id import probe: plan, ms
    startup_s: dict[str, float] = field(default_factory=dict)
    peak_kib: dict[str, int | None] = field(default_factory=dict)
    server_ms: dict[str, list[float]] = field(default_factory=dict)  # system -> trace timing_ms.total
    examples: list[dict[str, Any]] = field(default_factory=list)
    inproc_agreement: float | None = None  # ours over MCP vs ours in process (sanity: should be 1)


@dataclass
class PeerStore:
    """CPersona's database for one size: where it lies and how our rows went into it."""

    path: Path
    import_s: float
    imported: int
    skipped: int
    probe: str
    reused: bool


@dataclass
class Report:
    """Everything one run measured, filled by ``benchmarks.speed`` and read by the rendering below."""

    args: argparse.Namespace
    command: str
    started: str
    load_before: tuple[float, float, float]
    # what the run was made of (benchmarks/speed.py's constants), carried here for the report
    inproc_conditions: tuple[str, ...]
    mcp_conditions: tuple[str, ...]
    warmup: int
    peak_queries: int
    notes: list[str] = field(default_factory=list)
    build: dict[tuple[str, int], tuple[float, bool]] = field(default_factory=dict)
    inproc: dict[int, dict[str, list[float]]] = field(default_factory=dict)
    local: dict[int, dict[str, list[float]]] = field(default_factory=dict)
    peer_stores: dict[int, PeerStore] = field(default_factory=dict)
    sbs: dict[int, SideBySide] = field(default_factory=dict)
    peer_errors: dict[int, str] = field(default_factory=dict)
    ingest: dict[int, dict[str, float]] = field(default_factory=dict)
    ingest_mcp: dict[int, dict[str, dict[str, float]]] = field(default_factory=dict)
    peak: dict[int, dict[str, Any]] = field(default_factory=dict)
    peer_install: str = ""
    embed_rtt_ms: list[float] = field(default_factory=list)
    load_after: tuple[float, float, float] | None = None


# -- rendering -------------------------------------------------------------------------------------


def _f(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:,.{digits}f}"


def _ratio(a: float, b: float, peer: list[float]) -> str:
    """``a / b`` to three places, or n/a when the peer has no timings."""
    return f"{a / b:.3f}" if peer else "n/a"


def _mib(kib: int | None) -> str:
    return "n/a" if kib is None else f"{kib / 1024:,.0f}"


def side_by_side_rows(report: Report) -> list[dict[str, Any]]:
    """Per size and MCP condition: ours p50/p95, and CPersona's with the ratios and agreement where it ran."""
    rows = []
    for size, sbs in sorted(report.sbs.items()):
        for condition in report.mcp_conditions:
            ours = sbs.ms["ours"][condition]
            theirs = sbs.ms.get("cpersona", {}).get(condition, [])
            row: dict[str, Any] = {
                "size": size,
                "condition": condition,
                "ours_p50": percentile(ours, 0.5),
                "ours_p95": percentile(ours, 0.95),
                "peer": bool(theirs),
            }
            if theirs:
                agreement = [
                    jaccard(a, b) for a, b in zip(sbs.refs["ours"][condition], sbs.refs["cpersona"][condition])
                ]
                row.update(
                    peer_p50=percentile(theirs, 0.5),
                    peer_p95=percentile(theirs, 0.95),
                    jaccard=float(np.mean(agreement)),
                    identical=sum(a == 1.0 for a in agreement),
                    n=len(agreement),
                )
                row.update(ratio_p50=row["ours_p50"] / row["peer_p50"], ratio_p95=row["ours_p95"] / row["peer_p95"])
            rows.append(row)
    return rows


def render(report: Report) -> str:
    args = report.args
    lines = [f"Command: `{report.command}`", "", "# Speed: recall, ingest and memory against store size", ""]
    cpus = os.cpu_count()
    lines += [
        f"Run {report.started} on {platform.python_implementation()} {platform.python_version()}, "
        f"{platform.system()} {platform.machine()}, {cpus} CPUs; load average "
        f"{report.load_before[0]:.2f} at the start, "
        f"{_f(report.load_after[0] if report.load_after else None, 2)} at the end (the machine is shared: "
        "figures carry its noise). Synthetic store: `benchmarks/synthetic.py` (seed 7), dated English "
        "sentences spread over 2025, one agent; 384-wide vectors; limit 10; rrf; "
        f"{args.queries} timed queries per condition after {report.warmup} warm-up queries. "
        "p50/p95: linear interpolation between order statistics.",
        "",
    ]
    lines += _render_inproc(report) + _render_local(report) + _render_mcp(report) + _render_agreement(report)
    lines += _render_ingest(report) + _render_peak(report) + _render_builds(report) + _render_peer_settings(report)
    if report.notes:
        lines += ["## Notes", ""] + [f"- {note}" for note in report.notes] + [""]
    png = args.out.with_suffix(".png").name
    lines += [f"![recall p50/p95, ingest and peak memory against store size]({png})", ""]
    return "\n".join(lines)


def _render_inproc(report: Report) -> list[str]:
    lines = [
        "## Ours in process: the recall pipeline alone",
        "",
        "`Memory.recall` called directly; hash embedder, every query vector computed before timing (query "
        "embedding excluded). The four conditions are interleaved query by query. Cue: a one-month "
        "`{after, before, confidence: likely}` inside 2025, a different month per query.",
        "",
        *_condition_table(report, report.inproc),
    ]
    lines += [
        "",
        "Trace cost (p50 traced / p50 untraced): "
        + ", ".join(
            f"{size:,}: {percentile(ms['trace'], 0.5) / percentile(ms['plain'], 0.5):.2f}"
            for size, ms in sorted(report.inproc.items())
        )
        + ".",
        "",
    ]
    return lines


def _render_local(report: Report) -> list[str]:
    if not report.local:
        return [
            "## Ours in process with the local embedder",
            "",
            "Not run (`--local-sizes` was empty or the local model is unavailable).",
            "",
        ]
    sizes = ", ".join(f"{s:,}" for s in sorted(report.local))
    built = [(size, seconds) for (mode, size), (seconds, _) in report.build.items() if mode == "local"]
    rate = max(built)[0] / max(built)[1] if built else 250.0
    lines = [
        "## Ours in process with the local embedder: query embedding included",
        "",
        f"all-MiniLM-L6-v2 int8 ONNX in process; every timed query is a new text, so each recall embeds it. "
        f"Run at {sizes} only (`--local-sizes`): a local store embeds every memory, {rate:,.0f} sentences/s "
        f"when this one was built (about 250/s on 2 idle cores), so a 100k local store would take "
        f"{100_000 / rate / 60:,.0f} minutes more to build; the pipeline's cost at 100k is the hash table "
        "above, and the embedding adds about the same per query at any size.",
        "",
        *_condition_table(report, report.local),
    ]
    return [*lines, ""]


def _condition_table(report: Report, timings: dict[int, dict[str, list[float]]]) -> list[str]:
    """A markdown table: one row per store size, p50 and p95 of each in-process condition."""
    lines = [
        "| memories | " + " | ".join(f"{c} p50 ms | {c} p95 ms" for c in report.inproc_conditions) + " |",
        "| ---: |" + " ---: | ---: |" * len(report.inproc_conditions),
    ]
    for size, ms in sorted(timings.items()):
        cells = [f"{_f(percentile(ms[c], 0.5))} | {_f(percentile(ms[c], 0.95))}" for c in report.inproc_conditions]
        lines.append(f"| {size:,} | " + " | ".join(cells) + " |")
    return lines


def _render_mcp(report: Report) -> list[str]:
    args = report.args
    lines = ["## Side by side over MCP stdio: ours and CPersona 2.6.14", ""]
    if args.no_mcp:
        return [*lines, "Not run (`--no-mcp`).", ""]
    lines += [
        "Both servers run at once, each a subprocess spoken to with the official `mcp` client "
        "(`mcp.client.stdio`, mcp 1.26.0): `cuedrecall serve --embedding http` and CPersona (`python -m "
        "cpersona` in `benchmarks/.peer/`). Both take their query vectors from one `cuedrecall embed-server "
        "--embedding hash`, the same vectors as the stores hold, so each recall pays one HTTP embedding on "
        "both sides; each condition has its own query texts, so no query vector comes from a cache. "
        "Every query is asked of both in turn, alternating which goes first. Times are seen from the "
        "client (JSON-RPC over pipes included). Ratio = ours / CPersona (below 1: ours is faster).",
        "",
    ]
    if args.no_peer:
        lines += ["CPersona left out (`--no-peer`).", ""]
    rows = side_by_side_rows(report)
    if rows:
        lines += [
            "| memories | condition | ours p50 ms | CPersona p50 ms | ratio p50 | ours p95 ms | "
            "CPersona p95 ms | ratio p95 | ours in process p50 ms (hash) |",
            "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for row in rows:
            inproc = report.inproc.get(row["size"], {}).get(row["condition"])
            peer = row["peer"]
            lines.append(
                "| "
                + " | ".join(
                    [
                        f"{row['size']:,}",
                        row["condition"],
                        _f(row["ours_p50"]),
                        _f(row["peer_p50"]) if peer else "n/a",
                        f"{row['ratio_p50']:.3f}" if peer else "n/a",
                        _f(row["ours_p95"]),
                        _f(row["peer_p95"]) if peer else "n/a",
                        f"{row['ratio_p95']:.3f}" if peer else "n/a",
                        _f(percentile(inproc, 0.5)) if inproc else "n/a",
                    ]
                )
                + " |"
            )
        lines.append("")
        server = [(size, sbs) for size, sbs in sorted(report.sbs.items()) if sbs.server_ms.get("ours")]
        if server:
            lines += [
                "Inside the servers: `timing_ms.total` of each side's recall trace in the trace condition, "
                "from the start of the recall to its answer (the query's HTTP embedding included on both sides, "
                "the MCP transport left out). One `POST /embed` of one query text costs "
                f"{_f(percentile(report.embed_rtt_ms, 0.5), 2)} ms p50 seen from a client.",
                "",
                "| memories | ours p50 ms | CPersona p50 ms | ratio p50 | ours p95 ms | CPersona p95 ms | ratio p95 |",
                "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
            ]
            for size, sbs in server:
                o, t = sbs.server_ms["ours"], sbs.server_ms.get("cpersona") or []
                o50, o95 = percentile(o, 0.5), percentile(o, 0.95)
                t50, t95 = (percentile(t, 0.5), percentile(t, 0.95)) if t else (math.nan, math.nan)
                lines.append(
                    f"| {size:,} | {_f(o50)} | {_f(t50)} | {_ratio(o50, t50, t)} | {_f(o95)} | {_f(t95)} | "
                    f"{_ratio(o95, t95, t)} |"
                )
            lines.append("")
        starts = "; ".join(
            ", ".join(f"{'ours' if n == 'ours' else 'CPersona'} {t:.1f} s" for n, t in sbs.startup_s.items())
            + f" at {s:,}"
            for s, sbs in sorted(report.sbs.items())
        )
        lines += [f"Server start to MCP `initialize` answered: {starts}.", ""]
        bar = [r for r in rows if r["condition"] == "plain" and r["peer"]]
        if bar:
            biggest = bar[-1]
            verdict = "meets" if biggest["ratio_p50"] <= 0.2 else "does not meet"
            sbs = report.sbs[biggest["size"]]
            inside = ""
            if sbs.server_ms.get("ours") and sbs.server_ms.get("cpersona"):
                ratio = percentile(sbs.server_ms["ours"], 0.5) / percentile(sbs.server_ms["cpersona"], 0.5)
                met = ratio <= 0.2
                # "too" / "either" only when both readings agree
                tail = (" too" if met else " either") if met == (verdict == "meets") else ""
                inside = (
                    f"; inside the servers (trace condition, `timing_ms.total`) it is {ratio:.3f}, which "
                    f"{'meets' if met else 'does not meet'} it{tail}"
                )
            lines += [
                "Bar of docs/benchmarks.md#the-bars (recall p50 at 100k at most a fifth of CPersona's): at "
                f"{biggest['size']:,} the plain p50 ratio over MCP is {biggest['ratio_p50']:.3f}, which {verdict} it "
                f"(query embedding included on both sides, one HTTP call each){inside}.",
                "",
            ]
    for size, error in sorted(report.peer_errors.items()):
        lines.append(f"- CPersona at {size:,}: {error}")
    if report.peer_errors:
        done = sorted(report.sbs)
        lines += ["", f"Largest size CPersona completed: {done[-1]:,}." if done else "CPersona completed no size.", ""]
    return lines


def _render_agreement(report: Report) -> list[str]:
    rows = [row for row in side_by_side_rows(report) if row["peer"]]
    if not rows:
        return []
    lines = [
        "## Agreement",
        "",
        "Jaccard similarity of the ref sets the two servers returned for the same query (CPersona's rows "
        "mapped to ours through the stored text, unique in these stores), mean over the queries; "
        "'identical' counts queries with the same set.",
        "",
        "| memories | condition | mean Jaccard | identical sets |",
        "| ---: | --- | ---: | ---: |",
    ]
    for row in rows:
        lines.append(f"| {row['size']:,} | {row['condition']} | {row['jaccard']:.3f} | {row['identical']}/{row['n']} |")
    sanity = [
        f"{s:,}: {sbs.inproc_agreement:.3f}"
        for s, sbs in sorted(report.sbs.items())
        if sbs.inproc_agreement is not None
    ]
    equal = [
        f"{s:,}: {'yes' if sbs.ids_equal else 'no'}"
        for s, sbs in sorted(report.sbs.items())
        if sbs.ids_equal is not None
    ]
    if equal:
        lines += [
            "",
            "CPersona's row ids equal ours after the import (so both traces name the same rows): "
            + ", ".join(equal)
            + ".",
        ]
    if sanity:
        lines += [
            "",
            "Sanity check, ours over MCP (vectors from the embed server) against ours in process (hash "
            "embedder) on the plain queries, mean Jaccard: " + ", ".join(sanity) + ".",
        ]
    lines += [
        "",
        "### Examples of disagreement",
        "",
        "The queries where the two differ most, asked again of both with `trace: true`; for each row "
        "only one side returned, what the other side's trace says happened to it.",
        "",
    ]
    if not any(sbs.examples for sbs in report.sbs.values()):
        lines.append("None: the two returned the same ref set for every query at every size.")
    for size, sbs in sorted(report.sbs.items()):
        for ex in sbs.examples:
            cue = f", cue {ex['cue']['after']}..{ex['cue']['before']}" if ex.get("cue") else ""
            lines.append(
                f'- {size:,} memories, {ex["condition"]}{cue}: "{ex["query"]}" — Jaccard '
                f"{ex['jaccard']:.2f}; ours returned {ex['ours']}, CPersona {ex['cpersona']}."
            )
            if ex.get("peer_remainder"):
                lines.append(
                    f"  - CPersona's cue stage notes `remainder: {json.dumps(ex['peer_remainder'])}`: its cue "
                    "arm's vector half read only the newest 10,000 rows of the period "
                    "(`CPERSONA_MAX_MEMORIES`) "
                    "and, with no coarse index built, left the older rest of the period out; ours searches "
                    "every row of the period."
                )
            for row in ex["rows"]:
                other = "CPersona" if row["returned_by"] == "ours" else "ours"
                by = "ours" if row["returned_by"] == "ours" else "CPersona"
                lines.append(
                    f"  - `{row['ref']}` returned by {by} ({row['why_returned']}); {other}: {row['other_side']}"
                )
    return [*lines, ""]


def _render_ingest(report: Report) -> list[str]:
    args = report.args
    lines = [
        "## Ingest: storing one memory at a time",
        "",
        f"{args.ingest_count} new memories stored one by one, into an empty store and into a copy of each "
        "size's store. In process: `Memory.store` (hash embedder, embedding included). Over MCP: the `store` "
        "tool of each server, interleaved, each call embedding through the shared embed-server. "
        "Bar of docs/benchmarks.md#the-bars: storing stays as fast at 100k as at 1k.",
        "",
        "| memories before | ours in process /s | per call p50 ms | p95 ms | ours MCP /s | CPersona MCP /s | "
        "ours MCP p50 ms | CPersona MCP p50 ms |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for size in sorted(set(report.ingest) | set(report.ingest_mcp)):
        own = report.ingest.get(size, {})
        mcp = report.ingest_mcp.get(size, {})
        ours, theirs = mcp.get("ours", {}), mcp.get("cpersona", {})
        lines.append(
            f"| {size:,} | {_f(own.get('rate'), 0)} | {_f(own.get('p50'), 2)} | {_f(own.get('p95'), 2)} | "
            f"{_f(ours.get('rate'), 0)} | {_f(theirs.get('rate'), 0)} | {_f(ours.get('p50'), 2)} | "
            f"{_f(theirs.get('p50'), 2)} |"
        )
    sized = sorted(s for s in report.ingest if s > 0)
    if sized and 0 in report.ingest:
        first, last = report.ingest[sized[0]]["rate"], report.ingest[sized[-1]]["rate"]
        verdict = "holds" if last >= 0.8 * first else "does not hold"
        lines += [
            "",
            f"Ours in process stores {last:,.0f}/s after {sized[-1]:,} memories against {first:,.0f}/s after "
            f"{sized[0]:,}: the bar {verdict}.",
        ]
    return [*lines, ""]


def _render_peak(report: Report) -> list[str]:
    lines = [
        "## Peak memory",
        "",
        "In process: the peak resident set (`VmHWM` from `/proc/self/status`) of a child process that imports "
        f"cuedrecall, opens the store (hash) and runs {report.peak_queries} queries under each in-process "
        "condition. "
        "Not `ru_maxrss`: on Linux it keeps the high-water mark of the image that exec replaced, so a child of "
        "this benchmark process would report the benchmark's own size. "
        "Servers: `VmHWM` (peak resident set) of each MCP server process from `/proc/<pid>/status`, read "
        "after its timed queries.",
        "",
        "| memories | in process peak MiB | of which the interpreter and imports | store open s | ours MCP server "
        "MiB | CPersona MCP server MiB |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for size in sorted(report.peak):
        peak = report.peak[size]
        sbs = report.sbs.get(size)
        lines.append(
            f"| {size:,} | {_mib(peak['peak_kib'])} | {_mib(peak['baseline_kib'])} | {peak['open_s']:.2f} | "
            f"{_mib(sbs.peak_kib.get('ours')) if sbs else 'n/a'} | "
            f"{_mib(sbs.peak_kib.get('cpersona')) if sbs else 'n/a'} |"
        )
    return [*lines, ""]


def _render_builds(report: Report) -> list[str]:
    lines = ["## Building the stores", ""]
    for (mode, size), (seconds, reused) in sorted(report.build.items()):
        state = "reused from an earlier run, built in" if reused else "built in"
        lines.append(
            f"- ours, {mode} vectors, {size:,} memories: {state} {seconds:.1f} s (`bulk_load`: batched "
            f"embedding, large transactions)."
        )
    for size, store in sorted(report.peer_stores.items()):
        state = "reused from an earlier run, imported in" if store.reused else "imported in"
        lines.append(
            f"- CPersona, {size:,} memories: {state} {store.import_s:.1f} s through `import_memories` "
            f"({store.imported:,} imported, {store.skipped:,} skipped as duplicates); vectors kept: "
            f"{store.probe}."
        )
    return [*lines, ""]


def _render_peer_settings(report: Report) -> list[str]:
    if report.args.no_peer or report.args.no_mcp:
        return []
    lines = [
        "## CPersona set-up",
        "",
        f"CPersona {peer_mod.PEER_VERSION} from PyPI in its own virtual environment (`benchmarks/.peer/`; "
        f"{report.peer_install or 'not installed'}), launched as `python -m cpersona` (its console script "
        "`cpersona` runs the same `cpersona.server:run`) with a clean environment: the mcp client passes only "
        "HOME/PATH/USER and the variables below. HOME is a folder beside its database, so it reads and "
        "writes nothing in the real home directory. Records go in as `cpersona-export/1.0` JSONL "
        f"({peer_mod.RECORDS_PER_IMPORT_FILE:,} records a file, under its 100 MiB import cap) with our ids "
        "as record ids and no msg_id (see below), our timestamps, created_at = the timestamp (its "
        "newest-first scan order reads created_at, "
        "ours reads the id, so both scan the same rows in the same order), and `embedding_b64` = our vectors "
        "as little-endian float32. Settings changed from its defaults:",
        "",
        "| variable | value | why |",
        "| --- | --- | --- |",
    ]
    for name, (value, why) in peer_mod.PEER_SETTINGS.items():
        lines.append(f"| `{name}` | `{value}` | {why} |")
    probes = [
        f"{s:,}: {sbs.msg_id_probe[1]:.2f} ms ({sbs.msg_id_probe[0]})"
        for s, sbs in sorted(report.sbs.items())
        if sbs.msg_id_probe
    ]
    lines += [
        "| `CPERSONA_EMBEDDING_URL` | `http://127.0.0.1:<port>/embed` | the shared embed-server |",
        "| `CPERSONA_DB_PATH` | a file under the work folder | its own database per size |",
        "",
        "Our server runs with `CPERSONA_BLOCK_BUILD_ENABLED=false` and `CPERSONA_BLOCK_RETRIEVAL_ENABLED=false` "
        "(`peer.our_server`): the same variant on both sides, block arms off. Both servers at their defaults, "
        "block arms on, are `benchmarks.speed_realistic_peer`'s headline. It serves a copy of the store whose "
        "vectors carry the embed server's label (`peer.served_copy`): the same vectors, which it would "
        "otherwise take for another model's (left out of its vector arms and re-embedded in the background "
        "while the queries are timed).",
        "",
        "Left at their defaults: the scan window (`CPERSONA_MAX_MEMORIES` 10000, the same as ours), "
        "rrf fusion, autocut, the keyword arm, the coarse cue index (auto: not built, so not read), no "
        "contiguous vector index file (an operator builds it with `python -m cpersona.vector_index build`; "
        "not built here, as a default install has none).",
        "",
        "Why no msg_id: a first attempt imported every record with our id as msg_id. CPersona's import "
        "probes each non-empty msg_id for a duplicate with `" + peer_mod.MSG_ID_PROBE + "`, and SQLite plans "
        "it on `idx_memories_isolation (agent_id, project_id, created_at)` rather than a msg_id index, so "
        "every record scans the agent's rows: at 100k the first 20,000-record file took 3 min 40 s (about 90 "
        "records/s) and the second had not finished 6 minutes later, when it was stopped (the probe's cost "
        "grows with every row, so the whole import would take hours). Without msg_id that probe is skipped; "
        "the content "
        "probe uses its unique index. The same probe timed on the finished databases (plan; no match): "
        + (", ".join(probes) if probes else "n/a")
        + ".",
        "",
    ]
    return lines


def print_summary(report: Report, console: Console) -> None:
    table = Table(title="recall p50 ms (in process, hash; query embedding excluded)")
    table.add_column("memories", justify="right")
    for c in report.inproc_conditions:
        table.add_column(c, justify="right")
    for size, ms in sorted(report.inproc.items()):
        table.add_row(f"{size:,}", *[_f(percentile(ms[c], 0.5)) for c in report.inproc_conditions])
    console.print(table)
    rows = side_by_side_rows(report)
    if rows:
        side = Table(title="over MCP: ours vs CPersona 2.6.14 (p50/p95 ms)")
        for column in ("memories", "condition", "ours p50", "CPersona p50", "ratio p50", "ratio p95", "Jaccard"):
            side.add_column(column, justify="right")
        for row in rows:
            peer = row["peer"]
            side.add_row(
                f"{row['size']:,}",
                row["condition"],
                _f(row["ours_p50"]),
                _f(row["peer_p50"]) if peer else "n/a",
                f"{row['ratio_p50']:.3f}" if peer else "n/a",
                f"{row['ratio_p95']:.3f}" if peer else "n/a",
                f"{row['jaccard']:.3f}" if peer else "n/a",
            )
        console.print(side)
    console.print(f"report: {report.args.out}")


def plot(report: Report, path: Path) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
    ax = axes[0]
    sizes = sorted(report.inproc)
    for condition, style in (("plain", "o-"), ("trace+cue", "s-")):
        if sizes:
            ax.plot(
                sizes,
                [percentile(report.inproc[s][condition], 0.5) for s in sizes],
                style,
                label=f"ours in process, {condition} p50",
            )
    side = side_by_side_rows(report)
    plain = [r for r in side if r["condition"] == "plain"]
    if plain:
        xs = [r["size"] for r in plain]
        ax.plot(xs, [r["ours_p50"] for r in plain], "o-", color="tab:green", label="ours over MCP p50")
        ax.plot(xs, [r["ours_p95"] for r in plain], "o--", color="tab:green", alpha=0.6, label="ours over MCP p95")
        peer = [r for r in plain if r["peer"]]
        if peer:
            xs = [r["size"] for r in peer]
            ax.plot(xs, [r["peer_p50"] for r in peer], "^-", color="tab:red", label="CPersona over MCP p50")
            ax.plot(xs, [r["peer_p95"] for r in peer], "^--", color="tab:red", alpha=0.6, label="CPersona over MCP p95")
    ax.set(xscale="log", yscale="log", xlabel="memories", ylabel="ms per recall", title="recall latency")
    ax.legend(fontsize=7)
    ax = axes[1]
    points = sorted(set(report.ingest) | set(report.ingest_mcp))
    where = {size: i for i, size in enumerate(points)}
    series = [("ours in process", "o-", "tab:blue", {s: v for s, v in report.ingest.items()})]
    for name, style, color in (("ours", "o-", "tab:green"), ("cpersona", "^-", "tab:red")):
        series.append(
            (
                f"{'ours' if name == 'ours' else 'CPersona'} over MCP",
                style,
                color,
                {s: v[name] for s, v in report.ingest_mcp.items() if name in v},
            )
        )
    for label, style, color, values in series:
        xs = sorted(values)
        if xs:
            ax.plot([where[s] for s in xs], [values[s]["rate"] for s in xs], style, color=color, label=label)
    ax.set_xticks(range(len(points)), ["empty" if s == 0 else f"{s:,}" for s in points])
    ax.set(yscale="log", xlabel="memories already stored", ylabel="memories/s", title="storing one at a time")
    ax.legend(fontsize=7)
    ax = axes[2]
    peak = sorted(report.peak)
    if peak:
        ax.plot(peak, [report.peak[s]["peak_kib"] / 1024 for s in peak], "o-", label="ours in process (VmHWM)")
    for name, style, color in (("ours", "o-", "tab:green"), ("cpersona", "^-", "tab:red")):
        xs = [s for s in sorted(report.sbs) if report.sbs[s].peak_kib.get(name)]
        if xs:
            ax.plot(
                xs,
                [report.sbs[s].peak_kib[name] / 1024 for s in xs],
                style,
                color=color,
                label=f"{'ours' if name == 'ours' else 'CPersona'} MCP server (VmHWM)",
            )
    ax.set(xscale="log", xlabel="memories", ylabel="MiB", title="peak resident memory")
    ax.legend(fontsize=7)
    fig.suptitle(f"cuedrecall speed ({report.started})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
