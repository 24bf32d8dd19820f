"""The servers the benchmarks start and the waits on them, written once.

A free loopback port; polling until something holds (a port answers, a queue runs down); the
``cuedrecall serve`` command line and a child's environment; a script of JSON-RPC lines through one
stdio server; stopping a child; a process's resident-set figures from ``/proc``. Used by load, faults,
fuzz, request_memory, peer and the tests that drive a server.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

REPO = Path(__file__).resolve().parents[1]
LOOPBACK = "127.0.0.1"
T = TypeVar("T")

# the MCP handshake a client opens a stdio session with (the id answered first)
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
}
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def wait_until(check: Callable[[], T], timeout: float, interval: float = 0.1) -> T | None:
    """``check()`` every ``interval`` seconds until it returns something true (that is returned) or ``timeout``
    seconds pass (None). What ``check`` raises ends the wait."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            return None
        time.sleep(interval)


def listening(port: int, process: subprocess.Popen | None = None) -> bool:
    """Whether a loopback ``port`` takes a connection; RuntimeError once ``process`` (its server) has exited."""
    try:
        socket.create_connection((LOOPBACK, port), timeout=1).close()
        return True
    except OSError:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}") from None
        return False


def wait_listening(port: int, process: subprocess.Popen | None = None, timeout: float = 60.0) -> None:
    """Until a loopback ``port`` takes a connection: RuntimeError when ``process`` exits or ``timeout`` passes."""
    if not wait_until(lambda: listening(port, process), timeout, 0.05):
        raise RuntimeError(f"nothing listened on port {port} within {timeout:.0f} s")


def stop(process: subprocess.Popen, timeout: float = 15.0) -> None:
    """SIGTERM, then SIGKILL when ``process`` is still there after ``timeout`` seconds; reaped either way."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def serve_command(db: Path | str, *extra: str, python: str = sys.executable) -> list[str]:
    """``python -m cuedrecall.cli serve --db DB EXTRA...``."""
    return [python, "-m", "cuedrecall.cli", "serve", "--db", str(db), *extra]


def child_env(home: Path, repo: Path = REPO, **settings: str) -> dict[str, str]:
    """A server child's whole environment: PATH, HOME in ``home``, the package from ``repo``, and ``settings``
    (variable name -> value; an empty value is left out)."""
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "PYTHONPATH": str(repo)}
    env.update({name: value for name, value in settings.items() if value})
    return env


def stdio_script(
    db: Path, lines: Iterable[bytes], env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[bytes]:
    """``cuedrecall serve`` (hash embedder) over ``db`` fed the handshake, then ``lines``, then EOF: the finished
    process, its stdout (one answer a line) and stderr captured."""
    script = [json.dumps(INIT).encode(), INITIALIZED, *lines]
    return subprocess.run(
        serve_command(db, "--embedding", "hash"),
        input=b"\n".join(script) + b"\n",
        capture_output=True,
        timeout=timeout,
        cwd=REPO,
        env=env,
    )


def status_kib(pid: int | None, field: str) -> int | None:
    """A ``/proc/PID/status`` figure in KiB (VmRSS: resident now, VmHWM: the peak); None where unreadable."""
    if pid is None:
        return None
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def reset_peak(pid: int) -> None:
    """The peak resident set (VmHWM) of ``pid`` back to its resident set now (Linux)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
