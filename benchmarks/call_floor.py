"""The per-call floor: what a recall over MCP stdio or HTTP costs beyond the same recall in process, and where.

    python -m benchmarks.call_floor --locomo PATH/TO/locomo10-dev.json --sizes 10000 100000

The store is the realistic corpus at the shipped defaults (benchmarks/realistic.py: blocks built and searched),
hash vectors, so the query's embedding is near zero on both sides and the difference is the transport's. Each
question is asked of a ``cuedrecall serve`` process over stdio by a plain JSON-lines client (no SDK on the client
side, so its own parsing is not counted), of a ``cuedrecall serve --http`` process by plain POSTs, and of a
``Memory`` opened on the same file in this process, taking turns query by query. Then the parts of the
difference, each timed alone in this process: reading the request line (``server.jsonrpc.message_of``),
encoding a 10-row answer as the call's text and the JSON-RPC line (``server.mcp.tool_result``,
``server.stdio.encoded``), the worker-thread hop that runs the tool, and the query's embedding by the packaged
model (what a real recall adds on both sides). Writes benchmarks/results/call_floor.md.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks import peer, realistic, serving
from benchmarks.harness import RESULTS

PROG = "benchmarks.call_floor"
WARM = 20


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m {PROG}", description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, required=True, help="LoCoMo JSON (the development split)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--workdir", type=Path, default=Path(__file__).parent / ".cache" / "realistic")
    parser.add_argument("--out", type=Path, default=RESULTS / "call_floor.md")
    return parser


class HttpClient:
    """``cuedrecall serve --http`` on loopback, driven with plain POSTs on one kept-alive connection (the stateless
    streamable HTTP endpoint answers each call as one server-sent event)."""

    TOKEN = "call-floor-token"

    def __init__(self, db: Path, home: Path) -> None:
        import http.client

        self.port = serving.free_port()
        env = serving.child_env(
            home, OPENBLAS_NUM_THREADS="1", CUEDRECALL_CALIBRATE_ON_GROWTH="false", CUEDRECALL_AUTH_TOKEN=self.TOKEN
        )
        command = serving.serve_command(db, "--embedding", "hash", "--http", "--host", serving.LOOPBACK)
        self.process = subprocess.Popen(
            [*command, "--port", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=serving.REPO,
            env=env,
        )
        serving.wait_listening(self.port, self.process, timeout=900)  # a 1,000,000-row store opens in a minute or two
        self.connection = http.client.HTTPConnection(serving.LOOPBACK, self.port)
        self.headers = {
            "Authorization": f"Bearer {self.TOKEN}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Host": f"{serving.LOOPBACK}:{self.port}",
        }
        self._ids = itertools.count(1)

    def call(self, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], float]:
        """(the tool's JSON answer, milliseconds from the request written to the response read whole)."""
        message = {"jsonrpc": "2.0", "id": next(self._ids), "method": "tools/call"}
        message["params"] = {"name": tool, "arguments": arguments}
        body = json.dumps(message)
        started = time.perf_counter()
        self.connection.request("POST", "/mcp", body, self.headers)
        data = self.connection.getresponse().read()
        elapsed = (time.perf_counter() - started) * 1000
        event = next(line for line in data.splitlines() if line.startswith(b"data:"))
        answer = json.loads(event[5:])
        return json.loads(answer["result"]["content"][0]["text"]), elapsed

    def close(self) -> None:
        self.connection.close()
        serving.stop(self.process)


class LineClient:
    """``cuedrecall serve`` over stdio, driven with one JSON line out and one back per call."""

    def __init__(self, db: Path, home: Path) -> None:
        env = serving.child_env(home, OPENBLAS_NUM_THREADS="1", CUEDRECALL_CALIBRATE_ON_GROWTH="false")
        self.process = subprocess.Popen(
            serving.serve_command(db, "--embedding", "hash"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=serving.REPO,
            env=env,
        )
        self._ids = itertools.count(1)
        self._send(serving.INIT)
        self._read()
        assert self.process.stdin is not None
        self.process.stdin.write(serving.INITIALIZED + b"\n")
        self.process.stdin.flush()

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def _read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        answer: dict[str, Any] = json.loads(self.process.stdout.readline())
        return answer

    def call(self, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], float]:
        """(the tool's JSON answer, milliseconds from the request's first byte written to the answer's last read)."""
        message = {"jsonrpc": "2.0", "id": next(self._ids), "method": "tools/call"}
        message["params"] = {"name": tool, "arguments": arguments}
        started = time.perf_counter()
        self._send(message)
        answer = self._read()
        elapsed = (time.perf_counter() - started) * 1000
        return json.loads(answer["result"]["content"][0]["text"]), elapsed

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        serving.stop(self.process)


def p50(values: Sequence[float]) -> float:
    return statistics.median(values)


def timed(action: Callable[[], Any], repeat: int) -> float:
    """p50 milliseconds of ``action`` over ``repeat`` runs."""
    out = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        out.append((time.perf_counter() - started) * 1000)
    return p50(out)


def parts(answer: dict[str, Any], arguments: dict[str, Any], query: str) -> dict[str, float]:
    """The transport's steps and the query's embedding, each timed alone (p50 ms)."""
    import anyio
    import mcp.types as types
    from mcp.shared.message import SessionMessage

    from cuedrecall.embed import make_embedder
    from cuedrecall.server.jsonrpc import message_of
    from cuedrecall.server.mcp import tool_result
    from cuedrecall.server.stdio import encoded

    request = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "recall", "arguments": arguments}}
    line = json.dumps(request).encode()

    def encode() -> bytes:
        result = tool_result(answer).model_dump(by_alias=True, exclude_none=True)
        response = types.JSONRPCResponse(jsonrpc="2.0", id=7, result=result)
        return encoded(SessionMessage(types.JSONRPCMessage(response)))

    async def hops() -> float:
        async def one() -> None:
            await anyio.to_thread.run_sync(lambda: None)

        for _ in range(50):
            await one()
        started = time.perf_counter()
        for _ in range(500):
            await one()
        return (time.perf_counter() - started) * 1000 / 500

    embedder = make_embedder("local")
    texts = iter(f"{query} {i}" for i in itertools.count())  # a new text each time: the query cache never answers
    return {
        "request line read (message_of)": timed(lambda: message_of(line), 300),
        "answer encoded (tool_result + JSON-RPC line)": timed(encode, 300),
        "worker-thread hop": anyio.run(hops),
        "query embedding, packaged model": timed(lambda: embedder.embed([next(texts)]), 50),
        "answer size (characters)": float(len(encode())),
    }


def measure(size: int, args: argparse.Namespace, queries: list[str]) -> dict[str, Any]:
    source, _build_s, _blocks_s = realistic.build_blocks(args.workdir, args.locomo, size)
    db = peer.db_copy(source, args.workdir / "floor" / f"floor-{size}.db")
    home = args.workdir / "floor"
    sides: dict[str, Any] = {"stdio": LineClient(db, home), "http": HttpClient(db, home)}
    memory = realistic.open_store(db, blocks=True)

    def in_process(tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], float]:
        started = time.perf_counter()
        answer = memory.call(tool, arguments)
        return answer, (time.perf_counter() - started) * 1000

    calls: dict[str, Callable[[str, dict[str, Any]], tuple[dict[str, Any], float]]] = {
        "local": in_process,
        **{name: client.call for name, client in sides.items()},
    }
    recall: dict[str, list[float]] = {name: [] for name in calls}
    trivial: dict[str, list[float]] = {name: [] for name in calls}
    try:
        for query in queries[:WARM]:
            for call in calls.values():
                call("recall", {"agent_id": realistic.AGENT, "query": query, "limit": 10})
        names = list(calls)
        for i, query in enumerate(queries[WARM:]):
            arguments = {"agent_id": realistic.AGENT, "query": query, "limit": 10}
            for name in names[i % 3 :] + names[: i % 3]:  # each side first in turn
                recall[name].append(calls[name]("recall", arguments)[1])
                trivial[name].append(calls[name]("persistence_status", {"session_key": "floor"})[1])
        arguments = {"agent_id": realistic.AGENT, "query": queries[0], "limit": 10}
        answer = memory.call("recall", arguments)
    finally:
        for client in sides.values():
            client.close()
        memory.close()
    return {
        "size": size,
        **{name: p50(values) for name, values in recall.items()},
        **{f"floor_{name}": p50([a - b for a, b in zip(recall[name], recall["local"])]) for name in sides},
        **{f"trivial_{name}": p50(values) for name, values in trivial.items()},
        "rows": len(answer.get("messages", [])),
        "parts": parts(answer, arguments, queries[0]),
    }


def report(results: list[dict[str, Any]], args: argparse.Namespace, started_load: float) -> str:
    command = f"python -m {PROG} --locomo {args.locomo} --sizes {' '.join(map(str, args.sizes))}"
    lines = [
        f"Command: `{command}`",
        "",
        "# The per-call floor over MCP stdio and HTTP",
        "",
        f"CPython {sys.version.split()[0]}, {os.cpu_count()} CPUs; load average {started_load:.2f} at the start, "
        f"{os.getloadavg()[0]:.2f} at the end. {args.queries} questions (LoCoMo's and long-span's), limit 10, at the "
        "shipped defaults (blocks built and searched), hash vectors. stdio: a `cuedrecall serve` process driven by a "
        "plain JSON-lines client (the time from writing the request to reading the answer's line); in process: "
        "`Memory.call` on the same file in the benchmark's process (validation, dispatch, the recall, the answer's "
        "dict); HTTP: a `cuedrecall serve --http` process on loopback, plain POSTs on one kept-alive connection. The "
        "three take turns query by query, each first in turn. Floor: the median of each question's time over the "
        "transport minus its time in process. A tool that reads nothing (`persistence_status`) gives the transport "
        "alone.",
        "",
        "| memories | in process p50 ms | stdio p50 ms | stdio floor p50 ms | HTTP p50 ms | HTTP floor p50 ms | "
        "trivial tool in process / stdio / HTTP ms | rows |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        lines.append(
            f"| {r['size']:,} | {r['local']:.2f} | {r['stdio']:.2f} | {r['floor_stdio']:.2f} | {r['http']:.2f} | "
            f"{r['floor_http']:.2f} | {r['trivial_local']:.3f} / {r['trivial_stdio']:.2f} / {r['trivial_http']:.2f} | "
            f"{r['rows']} |"
        )
    lines += ["", "## Where the floor goes (each part timed alone in the benchmark's process, p50 ms)", ""]
    names = list(results[0]["parts"])
    lines.append("| part | " + " | ".join(f"{r['size']:,}" for r in results) + " |")
    lines.append("| --- |" + " ---: |" * len(results))
    for name in names:
        cells = " | ".join(
            f"{r['parts'][name]:,.0f}" if name.startswith("answer size") else f"{r['parts'][name]:.3f}" for r in results
        )
        lines.append(f"| {name} | {cells} |")
    lines += [
        "",
        "The rest of the floor is the pipe's two crossings, the event loop's wake-ups and the MCP SDK's session "
        "(the request and result models it validates).",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    load = os.getloadavg()[0]
    queries = realistic.questions(args.locomo, args.queries + WARM)
    results = [measure(size, args, queries) for size in args.sizes]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report(results, args, load))
    print(args.out.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
