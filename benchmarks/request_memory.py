"""Peak memory of the server for the worst request body per tool, over streamable HTTP and stdio.

Each tool gets bodies just under the HTTP body bound (16 MiB) that put one shape in one of its
arguments (its first array or object argument, else its first argument): the probe's array of
zeros, an array of empty objects, an object of many members, an array of empty strings, one long
string, one long string with a character outside the BMP (Python holds it 4 bytes a character).
The server runs in a subprocess (``cuedrecall serve``); before each request its peak RSS is reset
(``/proc/PID/clear_refs``, Linux) and after the answer ``VmHWM`` is read from ``/proc/PID/status``, so each
figure is that one request's peak. The last phase sends the worst body over HTTP from three clients at once.

    python -m benchmarks.request_memory --out benchmarks/results/request-memory.md

``--repo PATH`` serves another checkout (a worktree of an older commit) for a before/after figure;
``--append`` adds the run's section to the file instead of replacing it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import select
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from benchmarks import serving
from benchmarks.hostile import SHAPES, body_for, target_argument
from cuedrecall.tools import TOOLS

REPO = serving.REPO
TOKEN = "memory-bench"
BODY = 16 * 1024 * 1024 - 4096  # under the default HTTP body bound, room left for the call around the value
WAIT = 300.0  # seconds one answer may take before the run gives up on it


def _kib(pid: int, field: str) -> int:
    return serving.status_kib(pid, field) or 0


@dataclass
class Figure:
    tool: str
    shape: str
    before_mib: float
    peak_mib: float
    seconds: float
    answer: str


def _short(answer: bytes) -> str:
    """What the server said, in a few words: the HTTP status or JSON-RPC code and the start of the error."""
    text = answer.decode("utf-8", "replace")
    if "data: " in text:
        text = text.split("data: ", 1)[1]
    try:
        body = json.loads(text)
    except ValueError:
        return text[:60].replace("\n", " ").replace("|", "/")
    if "error" in body and isinstance(body["error"], dict):
        return f"{body['error'].get('code')}: {str(body['error'].get('message'))[:70]}".replace("|", "/")
    if isinstance(body.get("error"), str):
        return body["error"][:70].replace("|", "/")
    try:
        inner = json.loads(body["result"]["content"][0]["text"])
        return ("ok: false: " + str(inner.get("error"))[:70] if inner.get("ok") is False else "result").replace(
            "|", "/"
        )
    except (KeyError, IndexError, TypeError, ValueError):
        return text[:60].replace("|", "/")


class Server:
    """One ``cuedrecall serve`` child process (stdio or HTTP) over a fresh database."""

    def __init__(self, transport: str, repo: Path, work: Path) -> None:
        self.transport = transport
        env = serving.child_env(work, repo, CUEDRECALL_AUTH_TOKEN=TOKEN)
        args = serving.serve_command(work / f"{transport}.db", "--embedding", "hash")
        if transport == "http":
            self.port = serving.free_port()
            args += ["--http", "--port", str(self.port)]
        self._stderr = open(work / f"{transport}-stderr.log", "wb")  # noqa: SIM115 - the child writes to it until close()
        self.process = subprocess.Popen(
            args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            cwd=repo,
            env=env,
        )
        self._lines = b""
        if transport == "http":
            serving.wait_listening(self.port, self.process)
        else:
            self.send(json.dumps(serving.INIT).encode())
            self.process.stdin.write(serving.INITIALIZED + b"\n")
            self.process.stdin.flush()

    def send(self, body: bytes) -> bytes:
        """One request, its answer (an HTTP body, or one stdio line)."""
        if self.transport == "http":
            headers = {
                "Authorization": f"Bearer {TOKEN}",
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
            }
            try:
                response = httpx.post(f"http://127.0.0.1:{self.port}/mcp/", content=body, headers=headers, timeout=WAIT)
            except httpx.HTTPError as exc:
                return f"{type(exc).__name__}".encode()
            return (
                f"{response.status_code} ".encode() + response.content
                if response.status_code != 200
                else response.content
            )
        self.process.stdin.write(body + b"\n")
        self.process.stdin.flush()
        return self._line()

    def _line(self) -> bytes:
        deadline = time.monotonic() + WAIT
        fd = self.process.stdout.fileno()
        while b"\n" not in self._lines:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                return b"no answer in time"
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b"the server exited"
            self._lines += chunk
        line, self._lines = self._lines.split(b"\n", 1)
        return line

    def measure(self, tool: str, shape: str, body: bytes) -> Figure:
        pid = self.process.pid
        serving.reset_peak(pid)
        before = _kib(pid, "VmRSS")
        started = time.monotonic()
        answer = self.send(body)
        seconds = time.monotonic() - started
        peak = _kib(pid, "VmHWM")
        return Figure(tool, shape, before / 1024, peak / 1024, seconds, _short(answer))

    def close(self) -> None:
        self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=30)
        finally:
            self._stderr.close()


@contextmanager
def served(transport: str, repo: Path, work: Path) -> Iterator[Server]:
    server = Server(transport, repo, work)
    try:
        yield server
    finally:
        server.close()


def three_at_once(server: Server, body: bytes) -> tuple[float, float, float]:
    """The peak RSS (MiB) while three clients send ``body`` at once, the RSS before, and the seconds taken."""
    pid = server.process.pid
    serving.reset_peak(pid)
    before = _kib(pid, "VmRSS")
    started = time.monotonic()
    threads = [threading.Thread(target=server.send, args=(body,)) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=WAIT)
    return _kib(pid, "VmHWM") / 1024, before / 1024, time.monotonic() - started


def run(
    transports: list[str], tools: list[str], shapes: list[str], size: int, repo: Path, concurrent: bool
) -> tuple[dict[str, list[Figure]], dict[str, float], tuple[float, float, float] | None]:
    figures: dict[str, list[Figure]] = {}
    idle: dict[str, float] = {}
    together = None
    with tempfile.TemporaryDirectory(prefix="cuedrecall-reqmem-") as tmp:
        for transport in transports:
            with served(transport, repo, Path(tmp)) as server:
                server.send(body_for("recall", "zeros", 200))  # warm: the tools' modules loaded
                idle[transport] = _kib(server.process.pid, "VmRSS") / 1024
                figures[transport] = []
                for tool in tools:
                    for shape, under in ((shape, under) for shape in shapes for under in (False, True)):
                        label = f"{shape}, under the bounds" if under else shape
                        figure = server.measure(tool, label, body_for(tool, shape, size, under=under))
                        figures[transport].append(figure)
                        print(
                            f"{transport} {tool} {shape}: peak {figure.peak_mib:.0f} MiB "
                            f"(+{figure.peak_mib - figure.before_mib:.0f}) {figure.seconds:.1f} s {figure.answer}",
                            flush=True,
                        )
                if transport == "http" and concurrent:
                    worst = max(figures[transport], key=lambda f: f.peak_mib - f.before_mib)
                    shape, _, under = worst.shape.partition(", ")
                    together = three_at_once(server, body_for(worst.tool, shape, size, under=bool(under)))
    return figures, idle, together


def report(
    figures: dict[str, list[Figure]],
    idle: dict[str, float],
    together: tuple[float, float, float] | None,
    argv: list[str],
    title: str,
    seconds: float,
) -> str:
    lines = [
        f"## {title}",
        "",
        f"Command: `python -m benchmarks.request_memory {shlex.join(argv)}` ({seconds:.0f} s, "
        f"Python {platform.python_version()}, {platform.machine()}).",
        "",
    ]
    lines += ["Idle RSS after a first call: " + ", ".join(f"{t} {mib:.0f} MiB" for t, mib in idle.items()) + ".", ""]
    worst_rows = []
    for transport, rows in figures.items():
        by_tool: dict[str, Figure] = {}
        for figure in rows:
            best = by_tool.get(figure.tool)
            if best is None or figure.peak_mib - figure.before_mib > best.peak_mib - best.before_mib:
                by_tool[figure.tool] = figure
        worst_rows.append((transport, by_tool))
    lines += [
        "Worst body per tool (the shape whose request raised the peak most):",
        "",
        "| transport | tool | argument | worst shape | peak RSS MiB | over the RSS before, MiB | seconds | answer |",
        "|---|---|---|---|---:|---:|---:|---|",
    ]
    for transport, by_tool in worst_rows:
        for tool, f in by_tool.items():
            lines.append(
                f"| {transport} | {tool} | {target_argument(tool)} | {f.shape} | {f.peak_mib:.0f} | "
                f"{f.peak_mib - f.before_mib:.0f} | {f.seconds:.1f} | {f.answer} |"
            )
    lines += [
        "",
        "Per shape, the largest rise over all tools:",
        "",
        "| transport | shape | largest rise MiB | tool |",
        "|---|---|---:|---|",
    ]
    for transport, rows in figures.items():
        for shape in dict.fromkeys(f.shape for f in rows):
            f = max((f for f in rows if f.shape == shape), key=lambda f: f.peak_mib - f.before_mib)
            lines.append(f"| {transport} | {shape} | {f.peak_mib - f.before_mib:.0f} | {f.tool} |")
    if together is not None:
        peak, before, took = together
        lines += [
            "",
            f"Three clients at once, the worst body each, over HTTP: peak {peak:.0f} MiB, "
            f"{peak - before:.0f} MiB over the RSS before ({took:.1f} s).",
        ]
    return "\n".join(lines) + "\n"


HEADER = """# Request memory: peak RSS for the worst body per tool

`benchmarks/request_memory.py` sends each tool bodies just under the 16 MiB HTTP body bound that put one
shape in one argument (the probe's array of zeros, empty objects, many object members, empty strings, one
long string, one long string with a character outside the BMP), and the same shapes "under the bounds":
as large as the message bounds of `cuedrecall/server/jsonrpc.py` let through (499,000 items, a string of
11,999,000 bytes), the largest bodies the server parses. It reads the server process's peak RSS (`VmHWM`,
reset before each request through `/proc/PID/clear_refs`). Over stdio the same bodies go as lines.

"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.request_memory", description=__doc__.split("\n\n")[0])
    parser.add_argument("--transports", nargs="+", default=["http", "stdio"], choices=["http", "stdio"])
    parser.add_argument("--tools", nargs="+", default=sorted(TOOLS), choices=sorted(TOOLS))
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    parser.add_argument("--bytes", type=int, default=BODY, help="size of each body")
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout to serve (default: this one)")
    parser.add_argument("--title", default="This checkout")
    parser.add_argument("--no-concurrent", action="store_true", help="skip the three-clients-at-once phase")
    parser.add_argument("--append", action="store_true", help="add this run's section to --out")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/results/request-memory.md")
    args = parser.parse_args(argv)
    started = time.monotonic()
    figures, idle, together = run(
        args.transports, args.tools, args.shapes, args.bytes, args.repo.resolve(), not args.no_concurrent
    )
    section = report(
        figures, idle, together, argv if argv is not None else sys.argv[1:], args.title, time.monotonic() - started
    )
    if args.append and args.out.exists():
        args.out.write_text(args.out.read_text().rstrip("\n") + "\n\n" + section)
    else:
        args.out.write_text(HEADER + section)
    print(section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
