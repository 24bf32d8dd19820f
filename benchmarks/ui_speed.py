"""How responsive the explorer (``cuedrecall ui``) stays on a large store: first paint and a search.

For each size, a ``benchmarks.synthetic`` store is bulk-loaded (hash embedder, one
episode per 50 memories), the explorer's app is served on 127.0.0.1 as ``cuedrecall
ui`` serves it, and each request the page makes is timed over HTTP, ``--repeat``
times: the page, info, agents and the first page of memories (together, the first
paint's requests), deeper pages (keyset and offset), the date filter, and searches
(recall without and with a time cue, reconstruct), each answered with its trace view.
With Chromium at hand (``/usr/bin/chromium``, through Playwright) it also times the
real page: from navigation to the first rows painted, and from a search's click to its
trace view shown.

    python -m benchmarks.ui_speed --sizes 100000 --repeat 20 --out benchmarks/results/ui.md
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx

from benchmarks.harness import WITHOUT_BLOCKS
from benchmarks.synthetic import AGENT, START, bulk_load
from benchmarks.synthetic import queries as synthetic_queries
from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock
from cuedrecall.config import Settings
from cuedrecall.ui.app import TOKEN_HEADER, make_app, running

TOKEN = "ui-speed"
CUE = {"after": "2025-06-01", "before": "2025-06-30", "confidence": "likely"}
FIRST_PAINT = ("page", "info", "agents", "records: first page (50)")
CHROMIUM = os.environ.get("CUEDRECALL_CHROMIUM", "/usr/bin/chromium")


def _timed(out: dict[str, list[float]], name: str, call: Callable[[], httpx.Response]) -> None:
    started = time.perf_counter()
    response = call()
    elapsed = (time.perf_counter() - started) * 1000
    if response.status_code != 200 or (
        response.headers.get("content-type", "").startswith("application/json") and response.json().get("ok") is False
    ):
        raise RuntimeError(f"{name}: HTTP {response.status_code} {response.text[:200]}")
    out.setdefault(name, []).append(elapsed)


def http_timings(url: str, size: int, repeat: int) -> dict[str, list[float]]:
    """Every request of the page, ``repeat`` times over one keep-alive connection (as a browser tab holds)."""
    out: dict[str, list[float]] = {}
    asked = synthetic_queries(repeat + 1, seed=23)
    scope = {"agent_id": AGENT, "project_id": "*", "channel": ""}
    with httpx.Client(base_url=url, headers={TOKEN_HEADER: TOKEN}, timeout=120) as client:
        client.get("/api/agents")  # one warm-up: the connection, the scope's statistics
        for i in range(repeat):
            _timed(out, "page", lambda: client.get("/", params={"token": TOKEN}))
            _timed(out, "info", lambda: client.get("/api/info"))
            _timed(out, "agents", lambda: client.get("/api/agents"))
            _timed(
                out,
                "records: first page (50)",
                lambda: client.get("/api/records", params={"kind": "memories", "agent_id": AGENT, "limit": 50}),
            )
            _timed(
                out,
                "records: keyset page near the oldest",
                lambda: client.get(
                    "/api/records",
                    params={"kind": "memories", "agent_id": AGENT, "limit": 50, "before_id": max(2, size // 20)},
                ),
            )
            _timed(
                out,
                "records: offset 90% deep",
                lambda: client.get(
                    "/api/records",
                    params={"kind": "memories", "agent_id": AGENT, "limit": 50, "offset": int(size * 0.9)},
                ),
            )
            _timed(
                out,
                "records: one week (date filter)",
                lambda: client.get(
                    "/api/records",
                    params={
                        "kind": "memories",
                        "agent_id": AGENT,
                        "limit": 50,
                        "after": "2025-06-01",
                        "before": "2025-06-07",
                    },
                ),
            )
            _timed(
                out,
                "episodes: first page (50)",
                lambda: client.get("/api/records", params={"kind": "episodes", "agent_id": AGENT, "limit": 50}),
            )
            query = asked[i]
            _timed(
                out,
                "search: recall + trace view",
                lambda query=query: client.post(
                    "/api/search", json={**scope, "tool": "recall", "query": query, "limit": 10}
                ),
            )
            _timed(
                out,
                "search: recall with a time cue + trace view",
                lambda query=query: client.post(
                    "/api/search", json={**scope, "tool": "recall", "query": query, "limit": 10, "time_cue": CUE}
                ),
            )
            _timed(
                out,
                "search: reconstruct + trace view",
                lambda query=query: client.post(
                    "/api/search", json={**scope, "tool": "reconstruct", "query": query, "limit": 5}
                ),
            )
    out["first paint's requests, together"] = [sum(parts) for parts in zip(*(out[name] for name in FIRST_PAINT))]
    return out


def browser_timings(url: str, repeat: int) -> dict[str, list[float]] | str:
    """In headless Chromium: navigation to the first rows painted, and a search's click to its trace view shown."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return "playwright is not installed"
    if not os.path.exists(CHROMIUM):
        return f"no Chromium at {CHROMIUM}"
    out: dict[str, list[float]] = {}
    asked = synthetic_queries(repeat, seed=29)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        for i in range(repeat):
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            page = context.new_page()
            started = time.perf_counter()
            page.goto(f"{url}/?token={TOKEN}")
            page.wait_for_selector("#rows tbody tr")
            out.setdefault("browser: navigation to the first rows shown", []).append(
                (time.perf_counter() - started) * 1000
            )
            paint = page.evaluate("(performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime")
            if paint is not None:
                out.setdefault("browser: first contentful paint", []).append(float(paint))
            page.click("button[data-tab='search']")
            page.fill("#query", asked[i])
            page.fill("#cue-after", CUE["after"])
            page.fill("#cue-before", CUE["before"])
            page.select_option("#confidence", CUE["confidence"])
            started = time.perf_counter()
            page.click("#search-go")
            page.wait_for_selector("#trace .trace-view")
            out.setdefault("browser: cued recall, click to trace view shown", []).append(
                (time.perf_counter() - started) * 1000
            )
            context.close()
        browser.close()
    return out


def measure(size: int, repeat: int, workdir: Path, use_browser: bool) -> dict[str, Any]:
    db = workdir / f"ui-{size}.db"
    for stale in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        stale.unlink(missing_ok=True)  # a fresh store each run
    settings = Settings.from_env(WITHOUT_BLOCKS, embedding_mode="hash", db_path=str(db))
    with Memory(settings=settings, clock=fixed_clock(START + timedelta(days=366)), background=False) as memory:
        started = time.perf_counter()
        episodes = bulk_load(memory, size, episode_every=50)
        load_s = time.perf_counter() - started
        with running(make_app(memory, TOKEN)) as url:
            timings = http_timings(url, size, repeat)
            browser = browser_timings(url, min(repeat, 5)) if use_browser else "not asked (--no-browser)"
    if isinstance(browser, dict):
        timings.update(browser)
    return {
        "size": size,
        "episodes": episodes,
        "load_s": load_s,
        "timings": timings,
        "browser": None if isinstance(browser, dict) else browser,
    }


def _q(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def markdown(results: list[dict[str, Any]], command: str, repeat: int) -> str:
    lines = [
        "# The explorer on a large store",
        "",
        f"Command: `{command}`",
        "",
        f"Python {platform.python_version()} on {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} CPUs; hash embedder; `cuedrecall ui`'s app under uvicorn on 127.0.0.1, timed from "
        f"an HTTP client on one keep-alive connection, {repeat} times each (the browser rows: up to 5 times, "
        "in headless Chromium, a fresh tab each). A search's time includes rendering its trace view.",
        "",
    ]
    for result in results:
        lines += [
            f"## {result['size']:,} memories, {result['episodes']:,} episodes (bulk load {result['load_s']:.0f} s)",
            "",
            "| request | p50 ms | p90 ms | max ms |",
            "|---|---:|---:|---:|",
        ]
        for name, values in result["timings"].items():
            lines.append(f"| {name} | {statistics.median(values):.1f} | {_q(values, 0.9):.1f} | {max(values):.1f} |")
        if result["browser"]:
            lines += ["", f"Browser timings not taken: {result['browser']}."]
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ui_speed", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--no-browser", action="store_true", help="HTTP timings only")
    parser.add_argument("--workdir", help="where the stores are built (default: a temporary folder)")
    parser.add_argument("--out", help="write the markdown report here")
    args = parser.parse_args(argv)
    command = "python -m benchmarks.ui_speed " + shlex.join(list(argv if argv is not None else sys.argv[1:]))
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(args.workdir or tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        results = [measure(size, args.repeat, workdir, not args.no_browser) for size in args.sizes]
    report = markdown(results, command, args.repeat)
    if args.out:
        Path(args.out).write_text(report, encoding="utf-8")
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
