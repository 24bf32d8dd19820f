"""Speed: recall p50/p95, ingest rate and peak memory against store size, side by side with CPersona 2.6.14.

    python -m benchmarks.speed                       # sizes 1k 10k 100k, 100 queries, the peer included
    python -m benchmarks.speed --sizes 1000 --no-peer

What it measures, per store size (a seeded synthetic store from benchmarks/synthetic.py):

1. Ours in process (``Memory.recall``), hash embedder, query vectors embedded before
   timing: the recall pipeline alone, with trace off/on and time cue off/on,
   interleaved query by query.
2. Ours in process with the local embedder (all-MiniLM-L6-v2 int8), each query a
   new text so that its embedding is part of the time. Local stores take long to
   embed (about 250 sentences/s on 2 idle cores), so this runs for ``--local-sizes``.
3. Side by side over MCP stdio (the official ``mcp`` client): ``cuedrecall serve
   --embedding http`` and CPersona 2.6.14 (installed into benchmarks/.peer/), both
   asking one ``cuedrecall embed-server`` (hash) for query vectors, so both pay one
   HTTP embedding per query. CPersona gets the same records and the same vectors
   through its ``import_memories`` (cpersona-export/1.0 with embedding_b64). Queries
   are interleaved, alternating which server goes first; each condition uses its own
   query texts so no query vector comes from a cache.
4. Agreement: Jaccard similarity of the two servers' returned ref sets per query
   (CPersona's rows mapped to ours through the stored text), with examples of disagreement and
   the reason read from each side's trace.
5. Ingest: memories/s storing one at a time (``Memory.store`` in process, and the
   ``store`` tool over MCP for both servers, interleaved) into an empty store and into
   a copy of each size's store.
6. Peak memory: the peak resident set (VmHWM) of a child process that opens the store
   and recalls, and of each MCP server process.

Writes the markdown report (``--out``, the command at the top) and a PNG plot beside it; both are drawn by
benchmarks/speed_report.py from the ``Report`` this module fills.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from benchmarks import peer as peer_mod
from benchmarks import serving
from benchmarks.harness import WITHOUT_BLOCKS

# percentile and jaccard live beside the rendering, which reads them too; imported here for the measurements
from benchmarks.speed_report import PeerStore, Report, SideBySide, plot, print_summary, render
from benchmarks.stats import jaccard, percentile
from benchmarks.synthetic import AGENT, bulk_load, queries, records
from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock
from cuedrecall.config import Settings

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "results"
CACHE = HERE / ".cache" / "speed"
NOW = "2026-01-02T00:00:00+00:00"  # the in-process clock: just after the synthetic year
LIMIT = 10
WARMUP = 5
# query seeds: one set per condition, so that no condition reuses another's query vectors
SEED_WARMUP, SEED_INPROC, SEED_MCP = 901, 300, 300  # in process: the MCP plain texts
MCP_CONDITIONS = ("plain", "cue", "trace")
INPROC_CONDITIONS = ("plain", "trace", "cue", "trace+cue")
PEAK_QUERIES = 20  # queries per condition in the peak-memory child (the peak comes from the store, not the count)


# -- small helpers (unit-tested) -----------------------------------------------------------------


def month_cue(i: int, confidence: str = "likely") -> dict[str, str]:
    """A one-month cue inside the synthetic year (2025), a different month for successive queries."""
    month = 1 + (i * 5) % 12
    after = f"2025-{month:02d}-01"
    before = "2026-01-01" if month == 12 else f"2025-{month + 1:02d}-01"
    return {"after": after, "before": before, "confidence": confidence}


def recall_arguments(condition: str, text: str, i: int) -> dict[str, Any]:
    """The recall tool's arguments for one query under a condition (plain, trace, cue, trace+cue)."""
    arguments: dict[str, Any] = {"agent_id": AGENT, "query": text, "limit": LIMIT}
    if "trace" in condition:
        arguments["trace"] = True
    if "cue" in condition:
        arguments["time_cue"] = month_cue(i)
    return arguments


def returned_refs(answer: dict[str, Any], mapping: dict[str, str] | None = None) -> list[str]:
    """The refs a recall answer returned, in its order, translated through ``mapping`` (CPersona's ids to ours).

    A ref the mapping does not know stays visibly foreign (``peer:<ref>``), so it counts as a disagreement.
    """
    out = []
    for row in answer.get("messages", []):
        ref = row.get("ref")
        if isinstance(ref, str) and ref:
            out.append(ref if mapping is None else mapping.get(ref, f"peer:{ref}"))
    return out


def _ref_list(items: Any) -> list[str]:
    out = []
    for item in items or []:
        ref = item.get("ref") if isinstance(item, dict) else item
        if isinstance(ref, str):
            out.append(ref)
    return out


def fate(trace: dict[str, Any] | None, ref: str) -> str:
    """Why a recall did not return ``ref``, as far as its trace says."""
    if not trace:
        return "no trace"
    arms = [name for name, rows in (trace.get("arms") or {}).items() if ref in _ref_list(rows)]
    if not arms:
        return "not retrieved by any arm"
    found = "found by " + "+".join(arms)
    for decision in (trace.get("gate") or {}).get("decisions", []):
        if decision.get("ref") == ref and decision.get("passed") is False:
            score, threshold = decision.get("score"), decision.get("threshold")
            numbers = (
                f" {decision.get('signal')} {score:.3f} < {threshold:.3f}"
                if isinstance(score, (int, float)) and isinstance(threshold, (int, float))
                else ""
            )
            return f"{found}; gated out ({decision.get('reason', 'below_gate')}{numbers})"
    if ref in _ref_list((trace.get("autocut") or {}).get("dropped")):
        return f"{found}; dropped by autocut"
    order = trace.get("order") or {}
    if ref in _ref_list(order.get("cut_by_count")):
        before = _ref_list(order.get("before_cut"))
        place = before.index(ref) + 1 if ref in before else "?"
        return f"{found}; cut by the limit (place {place} of {len(before)})"
    return f"{found}; not in the final order"


# -- stores ---------------------------------------------------------------------------------------


def settings_for(mode: str, db_path: Path, **extra: Any) -> Settings:
    """Settings from an empty environment (no developer CPERSONA_* leaks in)."""
    return Settings.from_env(WITHOUT_BLOCKS, embedding_mode=mode, db_path=str(db_path), **extra)


def open_memory(db_path: Path, mode: str, cache: int = 256) -> Memory:
    return Memory(settings=settings_for(mode, db_path, embedding_cache_size=cache), clock=fixed_clock(NOW))


def _remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", ".calibration.json"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    for sidecar in path.parent.glob(path.name + ".*"):
        if sidecar.is_file():
            sidecar.unlink()


def build_store(
    workdir: Path, size: int, mode: str, fresh: bool, advance: Callable[[int], None] | None = None
) -> tuple[Path, float, bool]:
    """A synthetic store of ``size`` memories (hash or local vectors): (path, build seconds, reused?).

    Built once per (size, embedder) under the work folder and reused while its marker is present.
    """
    path = workdir / f"ours-{mode}-{size}.db"
    marker = workdir / f"ours-{mode}-{size}.json"
    if marker.exists() and path.exists() and not fresh:
        return path, float(json.loads(marker.read_text())["build_s"]), True
    marker.unlink(missing_ok=True)
    _remove_db(path)
    start = time.perf_counter()
    with open_memory(path, mode) as memory:
        bulk_load(memory, size, progress=advance)
    seconds = time.perf_counter() - start
    marker.write_text(json.dumps({"size": size, "mode": mode, "build_s": seconds}))
    return path, seconds, False


def export_records(db_path: Path) -> list[peer_mod.ExportRecord]:
    """Our stored rows (id, text, timestamp, vector) in id order, for CPersona's import."""
    conn = sqlite3.connect(db_path)
    try:
        rows = conn.execute(
            "SELECT id, content, timestamp, embedding FROM memories WHERE agent_id = ? ORDER BY id", (AGENT,)
        ).fetchall()
    finally:
        conn.close()
    return [
        peer_mod.ExportRecord(i, text, stamp, None if blob is None else np.frombuffer(blob, dtype="<f4"))
        for i, text, stamp, blob in rows
    ]


# -- measurements in process ---------------------------------------------------------------------


def time_in_process(
    memory: Memory, conditions: dict[str, list[str]], embed_first: bool, advance: Callable[[int], None] | None = None
) -> dict[str, list[float]]:
    """Milliseconds per recall per condition, interleaved query by query with a rotating order.

    ``conditions`` maps a condition to its query texts (all the same length). With ``embed_first``
    every query vector is computed (and cached) before timing, so the time is the pipeline's alone.
    """
    names = list(conditions)
    count = len(next(iter(conditions.values())))
    if embed_first:
        for texts in conditions.values():
            for text in texts:
                memory.queries.embed_query(text)
    for text in queries(WARMUP, seed=SEED_WARMUP):
        memory.recall(agent_id=AGENT, query=text, limit=LIMIT)
    out: dict[str, list[float]] = {name: [] for name in names}
    for i in range(count):
        for k in range(len(names)):
            name = names[(i + k) % len(names)]
            arguments = recall_arguments(name, conditions[name][i], i)
            start = time.perf_counter()
            answer = memory.recall(**arguments)
            out[name].append((time.perf_counter() - start) * 1000)
            if answer.get("ok") is False:
                raise RuntimeError(f"recall failed: {answer}")
        if advance:
            advance(1)
    return out


def time_ingest(memory: Memory, count: int, seed: int) -> dict[str, float]:
    """Store ``count`` new memories one by one through ``Memory.store``: rate and per-call percentiles."""
    fresh = list(records(count, seed=seed))
    ms = []
    start = time.perf_counter()
    for text, stamp in fresh:
        t0 = time.perf_counter()
        result = memory.store(agent_id=AGENT, message={"content": text, "timestamp": stamp})
        ms.append((time.perf_counter() - t0) * 1000)
        if not result.get("ok"):
            raise RuntimeError(f"store failed: {result}")
    seconds = time.perf_counter() - start
    return {"rate": count / seconds, "p50": percentile(ms, 0.5), "p95": percentile(ms, 0.95)}


def peak_child(db_path: str, mode: str, count: int) -> dict[str, Any]:
    """Run in a child process: open the store, recall every condition, report the peak resident set (KiB).

    The peak is the child's own VmHWM from /proc/self/status. Not ru_maxrss: Linux carries the
    high-water mark of the process image an exec replaced into ru_maxrss, so a child forked from
    this (large) benchmark process would report the parent's size. ru_maxrss is the fallback where
    /proc is missing.
    """
    baseline = _own_peak_kib()
    start = time.perf_counter()
    memory = open_memory(Path(db_path), mode)
    opened = time.perf_counter() - start
    texts = queries(min(count, PEAK_QUERIES), seed=SEED_INPROC)
    for i, text in enumerate(texts):
        for condition in INPROC_CONDITIONS:
            memory.recall(**recall_arguments(condition, text, i))
    memory.close()
    return {"baseline_kib": baseline, "peak_kib": _own_peak_kib(), "open_s": opened}


def _own_peak_kib() -> int:
    found = serving.status_kib(os.getpid(), "VmHWM")
    if found is not None:
        return found
    import resource

    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def measure_peak(db_path: Path, mode: str, count: int, timeout: float = 1200) -> dict[str, Any]:
    code = (
        "import json, sys; from benchmarks.speed import peak_child; "
        f"print(json.dumps(peak_child({str(db_path)!r}, {mode!r}, {count})))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"peak-memory child failed: {done.stderr[-500:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- measurements over MCP -------------------------------------------------------------------------


async def prepare_peer_store(
    size: int, ours_db: Path, workdir: Path, embed_url: str, fresh: bool, timeout: float, deadline: float
) -> PeerStore:
    """CPersona's database for ``size``: import our records and vectors, then check the vectors are used."""
    folder = workdir / f"peer-{size}"
    db = folder / "cpersona.db"
    marker = folder / "ready.json"
    if marker.exists() and db.exists() and not fresh:
        info = json.loads(marker.read_text())
        return PeerStore(db, info["import_s"], info["imported"], info["skipped"], info["probe"], True)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    rows = export_records(ours_db)
    files = peer_mod.write_cpersona_export(rows, folder / "export", AGENT)
    imported = skipped = 0
    async with peer_mod.peer_server(db, embed_url, workdir / "logs" / f"peer-{size}-import.log") as server:
        start = time.perf_counter()
        for path in files:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"CPersona import of {size:,} did not finish within the budget")
            answer, _ms = await server.call("import_memories", {"input_path": str(path)}, min(timeout * 10, left))
            if not answer.get("ok"):
                raise RuntimeError(f"CPersona import failed: {json.dumps(answer)[:400]}")
            imported += int(answer.get("imported_memories", 0))
            skipped += int(answer.get("skipped_memories", 0))
            if answer.get("errors"):
                raise RuntimeError(f"CPersona import reported errors: {answer['errors'][:3]}")
        seconds = time.perf_counter() - start
        probe = await vector_probe(server, rows, timeout)
    shutil.rmtree(folder / "export", ignore_errors=True)
    marker.write_text(json.dumps({"import_s": seconds, "imported": imported, "skipped": skipped, "probe": probe}))
    return PeerStore(db, seconds, imported, skipped, probe, False)


async def vector_probe(server: peer_mod.ToolServer, rows: list[peer_mod.ExportRecord], timeout: float) -> str:
    """Recall a stored text verbatim: its row must come back by the vector arm with cosine 1 (vectors kept).

    The text is one of the newest: the vector arm scans the newest 10,000 rows only (the default window).
    """
    target = rows[max(0, len(rows) - 7)]
    answer, _ = await server.call(
        "recall", {"agent_id": AGENT, "query": target.content, "limit": LIMIT, "trace": True}, timeout
    )
    near = {row["ref"]: row.get("raw") for row in (answer.get("trace") or {}).get("arms", {}).get("vector_near", [])}
    hit = [row for row in answer.get("messages", []) if row.get("content") == target.content]
    cosine = (hit[0].get("match_reason") or {}).get("cosine") if hit else None
    if not near or not hit or cosine is None or cosine < 0.999:
        raise RuntimeError(
            f"CPersona's import did not keep the vectors: vector arm {len(near)} rows, "
            f"target returned {bool(hit)}, cosine {cosine}"
        )
    return f"a stored text recalled verbatim comes back from the vector arm with cosine {cosine:.4f}"


def mcp_texts(count: int) -> dict[str, list[str]]:
    """The MCP conditions' query texts: a set of its own for each, so no query vector is ever cached."""
    return {name: queries(count, seed=SEED_MCP + k) for k, name in enumerate(MCP_CONDITIONS)}


async def run_side_by_side(
    size: int,
    ours_db: Path,
    peer_db: Path | None,
    workdir: Path,
    embed_url: str,
    count: int,
    timeout: float,
    budget: float,
    inproc_plain: list[list[str]] | None,
    advance: Callable[[int], None],
) -> SideBySide:
    """Both servers at once (ours alone without a peer database); every query asked of both, alternating."""
    result = SideBySide()
    mapping = peer_mod.peer_ref_map(peer_db, ours_db, AGENT) if peer_db is not None else {}
    result.ids_equal = all(a == b for a, b in mapping.items()) if mapping else None
    result.msg_id_probe = peer_mod.msg_id_probe(peer_db, AGENT) if peer_db is not None else None
    maps = {"ours": None, "cpersona": mapping}
    logs = workdir / "logs"
    conditions = mcp_texts(count)
    result.texts = conditions
    deadline = time.monotonic() + budget
    async with AsyncExitStack() as stack:
        served = peer_mod.served_copy(ours_db, workdir / "scratch" / f"ours-served-{size}.db", embed_url)
        servers = {
            "ours": await stack.enter_async_context(
                peer_mod.our_server(served, embed_url, logs / f"ours-{size}.log", WITHOUT_BLOCKS)
            )
        }
        if peer_db is not None:
            servers["cpersona"] = await stack.enter_async_context(
                peer_mod.peer_server(peer_db, embed_url, logs / f"peer-{size}.log")
            )
        for name, server in servers.items():
            result.startup_s[name] = server.startup_s or math.nan
            result.ms[name] = {c: [] for c in conditions}
            result.refs[name] = {c: [] for c in conditions}
            result.server_ms[name] = []
            for text in queries(WARMUP, seed=SEED_WARMUP):  # first calls list tools and fill caches
                await server.call("recall", {"agent_id": AGENT, "query": text, "limit": LIMIT}, timeout)
        for i in range(count):
            for c, condition in enumerate(conditions):
                arguments = recall_arguments(condition, conditions[condition][i], i)
                order = list(servers) if (i + c) % 2 == 0 else list(servers)[::-1]
                for name in order:
                    if time.monotonic() > deadline:
                        raise TimeoutError(
                            f"the side-by-side queries at {size:,} ran past the time budget "
                            f"({budget:.0f} s), at query {i + 1} of {count}"
                        )
                    answer, ms = await servers[name].call("recall", arguments, timeout)
                    if answer.get("ok") is False or "error" in answer:
                        raise RuntimeError(f"{name} recall failed: {json.dumps(answer)[:300]}")
                    result.ms[name][condition].append(ms)
                    result.refs[name][condition].append(returned_refs(answer, maps[name]))
                    total = ((answer.get("trace") or {}).get("timing_ms") or {}).get("total")
                    if isinstance(total, (int, float)):
                        result.server_ms[name].append(float(total))
            advance(1)
        if "cpersona" in servers:
            result.examples = await disagreement_examples(servers, conditions, result.refs, mapping, timeout)
        for name, server in servers.items():
            result.peak_kib[name] = server.peak_rss_kib()
    if inproc_plain is not None:
        pairs = zip(result.refs["ours"]["plain"], inproc_plain)
        result.inproc_agreement = float(np.mean([jaccard(a, b) for a, b in pairs]))
    return result


async def disagreement_examples(
    servers: dict[str, peer_mod.ToolServer],
    conditions: dict[str, list[str]],
    refs: dict[str, dict[str, list[list[str]]]],
    mapping: dict[str, str],
    timeout: float,
    wanted: int = 3,
) -> list[dict[str, Any]]:
    """The plain and cue queries where the two disagree most, re-asked with a trace to read why."""
    scored = []
    for condition in ("plain", "cue"):
        for i, (a, b) in enumerate(zip(refs["ours"][condition], refs["cpersona"][condition])):
            if set(a) != set(b):
                scored.append((jaccard(a, b), condition, i))
    scored.sort()
    picked = scored[: wanted - 1]
    picked += [s for s in scored if s[1] == "cue" and s not in picked][:1]
    back = {ours: theirs for theirs, ours in mapping.items()}  # our ref -> CPersona's, to read its trace
    examples = []
    for score, condition, i in picked:
        text = conditions[condition][i]
        arguments = recall_arguments(condition + "+trace", text, i)
        answers = {name: (await server.call("recall", arguments, timeout))[0] for name, server in servers.items()}
        ours_refs = returned_refs(answers["ours"])
        theirs_refs = returned_refs(answers["cpersona"], mapping)
        rows: list[dict[str, str]] = []
        for ref in [r for r in ours_refs if r not in theirs_refs][:3]:
            rows.append(
                {
                    "ref": ref,
                    "returned_by": "ours",
                    "why_returned": _reason(answers["ours"], ref),
                    "other_side": fate(answers["cpersona"].get("trace"), back.get(ref, ref)),
                }
            )
        for ref in [r for r in theirs_refs if r not in ours_refs][:3]:
            rows.append(
                {
                    "ref": ref,
                    "returned_by": "cpersona",
                    "other_side": fate(answers["ours"].get("trace"), ref),
                    "why_returned": _reason(answers["cpersona"], back.get(ref, ref)),
                }
            )
        stages = (answers["cpersona"].get("trace") or {}).get("stages") or []
        remainder = next((st["remainder"] for st in stages if isinstance(st, dict) and st.get("remainder")), None)
        examples.append(
            {
                "condition": condition,
                "query": text,
                "jaccard": score,
                "cue": arguments.get("time_cue"),
                "ours": len(ours_refs),
                "cpersona": len(theirs_refs),
                "rows": rows,
                "peer_remainder": remainder,
            }
        )
    return examples


def _reason(answer: dict[str, Any], ref: str) -> str:
    """How a returned row says it got in (its match_reason)."""
    for row in answer.get("messages", []):
        if row.get("ref") == ref:
            reason = row.get("match_reason") or {}
            score = reason.get("score", reason.get("cosine"))
            extra = f" {score:.3f}" if isinstance(score, (int, float)) else ""
            admission = f" ({reason['admission']})" if "admission" in reason else ""
            return f"{reason.get('signal', '?')}{extra}{admission}"
    return "?"


async def run_ingest_mcp(
    size: int,
    ours_src: Path | None,
    peer_src: Path | None,
    workdir: Path,
    embed_url: str,
    count: int,
    timeout: float,
    with_peer: bool,
) -> dict[str, dict[str, float]]:
    """Store ``count`` new memories one by one through each server's ``store`` tool, interleaved, on copies."""
    scratch = workdir / "ingest"
    shutil.rmtree(scratch, ignore_errors=True)
    (scratch / "peer").mkdir(parents=True)
    ours_db, peer_db = scratch / "ours.db", scratch / "peer" / "cpersona.db"
    if ours_src is not None:
        peer_mod.served_copy(ours_src, ours_db, embed_url)
    if with_peer and peer_src is not None:
        peer_mod.db_copy(peer_src, peer_db)
    fresh = list(records(count, seed=5000 + size % 997))
    ms: dict[str, list[float]] = {"ours": [], "cpersona": []}
    logs = workdir / "logs"
    try:
        async with AsyncExitStack() as stack:
            servers = {
                "ours": await stack.enter_async_context(
                    peer_mod.our_server(ours_db, embed_url, logs / f"ours-ingest-{size}.log", WITHOUT_BLOCKS)
                )
            }
            if with_peer:
                servers["cpersona"] = await stack.enter_async_context(
                    peer_mod.peer_server(peer_db, embed_url, logs / f"peer-ingest-{size}.log")
                )
            for name, server in servers.items():  # the first call lists the tools and learns the vector width
                text, stamp = next(iter(records(1, seed=4999)))
                await server.call(
                    "store",
                    {"agent_id": AGENT, "message": {"content": f"{text} warm {name}", "timestamp": stamp}},
                    timeout,
                )
            for i, (text, stamp) in enumerate(fresh):
                for name in list(servers) if i % 2 == 0 else list(servers)[::-1]:
                    answer, took = await servers[name].call(
                        "store", {"agent_id": AGENT, "message": {"content": text, "timestamp": stamp}}, timeout
                    )
                    if answer.get("result") != "stored":
                        raise RuntimeError(f"{name} store did not store: {json.dumps(answer)[:300]}")
                    ms[name].append(took)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return {
        name: {"rate": 1000 * len(v) / sum(v), "p50": percentile(v, 0.5), "p95": percentile(v, 0.95)}
        for name, v in ms.items()
        if v
    }


# -- the run ----------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.speed",
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Stores are built once and kept in --workdir (reused on the next run unless --fresh).",
    )
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[1000, 10000, 100000], help="store sizes (default 1000 10000 100000)"
    )
    parser.add_argument("--queries", type=int, default=100, help="timed queries per condition (default 100)")
    parser.add_argument(
        "--local-sizes",
        type=int,
        nargs="*",
        default=[1000, 10000],
        help="sizes timed with the local embedder, query embedding included (default 1000 10000; none to skip)",
    )
    parser.add_argument(
        "--ingest-count", type=int, default=300, help="memories stored one by one per ingest measurement (default 300)"
    )
    parser.add_argument(
        "--no-peer", action="store_true", help="leave CPersona out (nothing installed; ours alone over MCP)"
    )
    parser.add_argument("--no-mcp", action="store_true", help="skip the MCP side-by-side entirely")
    parser.add_argument(
        "--peer-timeout",
        type=float,
        default=120.0,
        help="seconds any one tool call may take (default 120; an import file gets ten times that)",
    )
    parser.add_argument(
        "--peer-budget",
        type=float,
        default=900.0,
        help="seconds CPersona may spend per size on its import, and again on the timed queries (default 900)",
    )
    parser.add_argument(
        "--workdir", type=Path, default=CACHE, help=f"stores and logs (default {CACHE.relative_to(REPO)})"
    )
    parser.add_argument("--fresh", action="store_true", help="rebuild the stores even when present")
    parser.add_argument("--out", type=Path, default=RESULTS / "speed.md", help="markdown report (PNG beside it)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    shown = list(sys.argv[1:] if argv is None else argv)
    report = Report(
        args=args,
        command="python -m benchmarks.speed" + ("" if not shown else " " + shlex.join(shown)),
        started=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        load_before=os.getloadavg(),
        inproc_conditions=INPROC_CONDITIONS,
        mcp_conditions=MCP_CONDITIONS,
        warmup=WARMUP,
        peak_queries=PEAK_QUERIES,
    )
    args.workdir.mkdir(parents=True, exist_ok=True)
    console = Console(stderr=True)
    sizes = sorted(set(args.sizes))
    local_sizes = sorted(set(args.local_sizes))
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    ) as progress:
        run_in_process(report, sizes, local_sizes, progress)
        if not args.no_mcp:
            run_mcp(report, sizes, progress)
    report.load_after = os.getloadavg()
    text = render(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    png = plot(report, args.out.with_suffix(".png"))
    if png is None:
        report.notes.append("matplotlib is not installed: no plot was drawn")
        args.out.write_text(render(report), encoding="utf-8")
    print_summary(report, Console())
    return 0


def _task(progress: Progress, label: str, total: int) -> Callable[[int], None]:
    task = progress.add_task(label, total=total)
    return lambda n=1: progress.advance(task, n)


def run_in_process(report: Report, sizes: list[int], local_sizes: list[int], progress: Progress) -> None:
    args = report.args
    workdir = args.workdir
    cache = max(256, 4 * args.queries + 2 * WARMUP)
    advance = _task(progress, "ingest into an empty store (in process)", args.ingest_count)
    with tempfile.TemporaryDirectory() as tmp, open_memory(Path(tmp) / "empty.db", "hash") as memory:
        report.ingest[0] = time_ingest(memory, args.ingest_count, seed=4000)
    advance(args.ingest_count)
    for size in sizes:
        path, seconds, reused = build_store(
            workdir, size, "hash", args.fresh, _task(progress, f"build {size:,} (hash)", size)
        )
        report.build[("hash", size)] = (seconds, reused)
        texts = {c: queries(args.queries, seed=SEED_INPROC) for c in INPROC_CONDITIONS}
        with open_memory(path, "hash", cache) as memory:
            report.inproc[size] = time_in_process(
                memory, texts, True, _task(progress, f"recall {size:,} in process (hash)", args.queries)
            )
        report.peak[size] = measure_peak(path, "hash", args.queries)
        scratch = workdir / "ingest-inproc.db"
        peer_mod.db_copy(path, scratch)
        with open_memory(scratch, "hash") as memory:
            report.ingest[size] = time_ingest(memory, args.ingest_count, seed=4000 + size % 997)
        _remove_db(scratch)
        _task(progress, f"ingest after {size:,} (in process)", 1)(1)
    for size in local_sizes:
        try:
            path, seconds, reused = build_store(
                workdir, size, "local", args.fresh, _task(progress, f"build {size:,} (local embedder)", size)
            )
        except Exception as exc:  # the local model is an optional install in some environments
            report.notes.append(f"local embedder at {size:,}: {type(exc).__name__}: {exc}")
            continue
        report.build[("local", size)] = (seconds, reused)
        texts = {c: queries(args.queries, seed=SEED_INPROC + 50 + k) for k, c in enumerate(INPROC_CONDITIONS)}
        with open_memory(path, "local", cache) as memory:
            memory.recall(agent_id=AGENT, query="load the model", limit=1)
            report.local[size] = time_in_process(
                memory, texts, False, _task(progress, f"recall {size:,} in process (local)", args.queries)
            )


def run_mcp(report: Report, sizes: list[int], progress: Progress) -> None:
    import anyio

    args = report.args
    workdir = args.workdir
    with_peer = not args.no_peer
    if with_peer:
        try:
            report.peer_install = peer_mod.ensure_peer(log=workdir / "logs" / "peer-install.log")
        except Exception as exc:
            report.notes.append(f"CPersona could not be installed ({type(exc).__name__}: {exc}); ours alone over MCP")
            with_peer = False
    with peer_mod.EmbedServer("hash", workdir / "logs" / "embed-server.log") as embed:
        report.embed_rtt_ms = embed_round_trips(embed.url, queries(50, seed=SEED_WARMUP + 1))
        report.ingest_mcp[0] = anyio.run(
            run_ingest_mcp, 0, None, None, workdir, embed.url, args.ingest_count, args.peer_timeout, with_peer
        )
        _task(progress, "ingest into empty stores (MCP)", 1)(1)
        for size in sizes:
            ours_db = workdir / f"ours-hash-{size}.db"
            store = None
            if with_peer and any(s < size and "time budget" in e for s, e in report.peer_errors.items()):
                report.peer_errors[size] = "not tried: a smaller size already ran past the time budget"
            elif with_peer:
                try:
                    store = anyio.run(
                        prepare_peer_store,
                        size,
                        ours_db,
                        workdir,
                        embed.url,
                        args.fresh,
                        args.peer_timeout,
                        time.monotonic() + args.peer_budget,
                    )
                    report.peer_stores[size] = store
                    _task(progress, f"CPersona import {size:,}", 1)(1)
                except Exception as exc:
                    report.peer_errors[size] = _failure(exc, "import")
            peer_db = store.path if store else None
            inproc = _inproc_refs(ours_db, mcp_texts(args.queries)["plain"])
            # what the side by side and ours alone (its fallback) both take
            rest = (workdir, embed.url, args.queries, args.peer_timeout, args.peer_budget, inproc)
            try:
                label = f"recall {size:,} over MCP"
                report.sbs[size] = anyio.run(
                    run_side_by_side, size, ours_db, peer_db, *rest, _task(progress, label, args.queries)
                )
            except Exception as exc:
                if peer_db is None:
                    raise
                report.peer_errors[size] = _failure(exc, "side by side")
                peer_db = None  # ours alone, so that its MCP figures are still there
                label = f"recall {size:,} over MCP (ours alone)"
                report.sbs[size] = anyio.run(
                    run_side_by_side, size, ours_db, None, *rest, _task(progress, label, args.queries)
                )
            try:
                report.ingest_mcp[size] = anyio.run(
                    run_ingest_mcp,
                    size,
                    ours_db,
                    peer_db,
                    workdir,
                    embed.url,
                    args.ingest_count,
                    args.peer_timeout,
                    peer_db is not None,
                )
                _task(progress, f"ingest after {size:,} (MCP)", 1)(1)
            except Exception as exc:
                report.peer_errors[size] = _failure(exc, "ingest over MCP")


def embed_round_trips(url: str, texts: list[str]) -> list[float]:
    """Milliseconds of one POST /embed of one short text, as each server's query embedding costs it."""
    import httpx

    out = []
    with httpx.Client(timeout=30) as client:
        client.post(url, json={"texts": ["warm up"]}).raise_for_status()
        for text in texts:
            start = time.perf_counter()
            client.post(url, json={"texts": [text]}).raise_for_status()
            out.append((time.perf_counter() - start) * 1000)
    return out


def _failure(exc: BaseException, stage: str) -> str:
    kind = "time budget" if isinstance(exc, TimeoutError) else type(exc).__name__
    detail = str(exc) or "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return f"{stage}: {kind}: {detail}"[:400]


def _inproc_refs(db_path: Path, texts: list[str]) -> list[list[str]]:
    """Our in-process answers to the MCP plain queries (hash vectors, same store): the over-MCP sanity check."""
    with open_memory(db_path, "hash") as memory:
        return [returned_refs(memory.recall(agent_id=AGENT, query=t, limit=LIMIT)) for t in texts]


if __name__ == "__main__":
    sys.exit(main())
