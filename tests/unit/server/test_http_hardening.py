"""The HTTP transport's hardening against the adversarial probe: framing that could slip past the body bound,
the bound counted on the bytes read, a deadline on request heads (slowloris) and bodies, for the MCP server and
the explorer alike (server/http_guard.py)."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest
from starlette.datastructures import Headers

from cuedrecall.api import Memory
from cuedrecall.server import http_guard, mcp
from cuedrecall.server.http_guard import BodyLimit, framing_problem
from cuedrecall.server.mcp import http_app
from cuedrecall.ui.app import TOKEN_HEADER, make_app, running
from tests.conftest import make_settings, open_memory

TOKEN = "hardening-token"
SMALL = 4096  # the body bound the tests serve with
SHORT = 1.0  # the head deadline the tests serve with (seconds)


def _store_call(content: str) -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "store", "arguments": {"agent_id": "a", "content": content}},
        }
    ).encode()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Memory, str]]:
    settings = make_settings(auth_token=TOKEN, http_max_body=SMALL)
    with (
        open_memory(tmp_path / "hard.db", settings=settings) as memory,
        running(http_app(memory), lifespan="on", header_timeout=SHORT) as url,
    ):
        yield memory, url


@pytest.fixture
def explorer(tmp_path: Path) -> Iterator[str]:
    with (
        open_memory(tmp_path / "ui.db", settings=make_settings(http_max_body=SMALL)) as memory,
        running(make_app(memory, "ui-token"), header_timeout=SHORT) as url,
    ):
        yield url


def _exchange(url: str, request: bytes, wait: float = 20.0) -> bytes:
    """Send raw bytes, return everything the server answers until it closes or ``wait`` seconds pass."""
    parts = urlsplit(url)
    answer = b""
    deadline = time.monotonic() + wait
    with socket.create_connection((parts.hostname, parts.port), timeout=wait) as sock:
        try:
            sock.sendall(request)
        except OSError:  # the server closed while we were still sending: what it said is still readable
            pass
        while time.monotonic() < deadline and len(answer) < 1 << 20:
            sock.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                chunk = sock.recv(65536)
            except (TimeoutError, OSError):
                break
            if not chunk:
                break
            answer += chunk
    return answer


def _chunked(payload: bytes, size: int = 1000) -> bytes:
    out = b""
    for start in range(0, len(payload), size):
        piece = payload[start : start + size]
        out += f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    return out + b"0\r\n\r\n"


def _head(path: str, *lines: str) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\n" + "".join(f"{line}\r\n" for line in lines) + "\r\n"
    ).encode()


# -- framing: refused before a byte of the body is read ----------------------------------------------------------


def test_content_length_beside_chunked_is_refused_400_and_the_body_over_the_bound_never_reaches_a_tool(
    served: tuple[Memory, str],
) -> None:
    """The probe's bypass: Content-Length: 40 passed the bound while the parser read a chunked body 75x its size."""
    memory, url = served
    payload = _store_call("x" * (SMALL * 3))
    answer = _exchange(
        url,
        _head("/mcp/", f"Authorization: Bearer {TOKEN}", "Content-Length: 40", "Transfer-Encoding: chunked")
        + _chunked(payload),
    )
    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
    assert b"both Content-Length and Transfer-Encoding" in answer
    assert memory.list_memories(agent_id="")["count"] == 0


@pytest.mark.parametrize(
    ("headers", "said"),
    [
        ([("content-length", "40"), ("transfer-encoding", "chunked")], "both Content-Length and Transfer-Encoding"),
        ([("content-length", "5"), ("content-length", "5")], "more than one Content-Length"),
        ([("content-length", "5, 7")], "more than one Content-Length"),
        ([("content-length", "-1")], "not a decimal number"),
        ([("content-length", "0x10")], "not a decimal number"),
        ([("content-length", "\u0661")], "not a decimal number"),
        ([("transfer-encoding", "gzip, chunked")], "not chunked"),
        ([("transfer-encoding", "chunked"), ("transfer-encoding", "chunked")], "not chunked"),
    ],
)
def test_ambiguous_framing_is_named(headers: list[tuple[str, str]], said: str) -> None:
    raw = [(name.encode(), value.encode()) for name, value in headers]
    problem = framing_problem(Headers(raw=raw))
    assert problem is not None and said in problem


@pytest.mark.parametrize(
    "headers", [[], [("content-length", "12")], [("transfer-encoding", "chunked")], [("transfer-encoding", "Chunked")]]
)
def test_plain_framing_passes(headers: list[tuple[str, str]]) -> None:
    assert framing_problem(Headers(raw=[(n.encode(), v.encode()) for n, v in headers])) is None


# -- the bound counts the bytes read, whatever the headers say ---------------------------------------------------


async def _through(
    guard: BodyLimit, headers: list[tuple[bytes, bytes]], chunks: list[bytes], pause: float = 0.0
) -> tuple[int, bytes, list[bytes]]:
    """Run one request through ``guard`` with a receive that gives ``chunks``; the status, the answer body, and
    what reached the app behind it."""
    reached: list[bytes] = []
    sent: list[dict[str, Any]] = []
    queue = list(chunks)

    async def receive() -> dict[str, Any]:
        if pause:
            await anyio.sleep(pause)
        if not queue:
            return {"type": "http.disconnect"}
        chunk = queue.pop(0)
        return {"type": "http.request", "body": chunk, "more_body": bool(queue)}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        message = await receive()
        reached.append(message["body"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"served"})

    guard.app = app
    scope = {"type": "http", "method": "POST", "path": "/", "headers": headers}
    await guard(scope, receive, send)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, body, reached


@pytest.mark.anyio
async def test_bytes_past_the_bound_are_refused_413_even_under_a_small_content_length() -> None:
    """The bound holds on the bytes received: a server that read more than Content-Length announced (the
    probe's 300 MiB under 'Content-Length: 40') is stopped at the bound."""
    guard = BodyLimit(None, 100)  # type: ignore[arg-type]
    status, body, reached = await _through(guard, [(b"content-length", b"40")], [b"x" * 60] * 50)
    assert status == 413 and b"over 100 bytes" in body and reached == []


@pytest.mark.anyio
async def test_a_body_at_the_bound_is_handed_on_whole() -> None:
    guard = BodyLimit(None, 100)  # type: ignore[arg-type]
    status, _, reached = await _through(guard, [(b"content-length", b"100")], [b"x" * 60, b"y" * 40])
    assert status == 200 and reached == [b"x" * 60 + b"y" * 40]


@pytest.mark.anyio
async def test_a_body_that_does_not_arrive_in_time_is_answered_408() -> None:
    guard = BodyLimit(None, 100, timeout=0.3)  # type: ignore[arg-type]
    status, body, reached = await _through(guard, [], [b"x"] * 50, pause=0.05)
    assert status == 408 and b"0.3 seconds" in body and reached == []


def test_the_explorer_refuses_ambiguous_framing_and_a_body_over_the_bound(explorer: str) -> None:
    search = json.dumps({"agent_id": "a", "query": "x" * (SMALL * 3)}).encode()
    auth = f"{TOKEN_HEADER}: ui-token"
    both = _exchange(
        explorer, _head("/api/search", auth, "Content-Length: 40", "Transfer-Encoding: chunked") + _chunked(search)
    )
    assert both.startswith(b"HTTP/1.1 400") and b"Transfer-Encoding" in both
    chunked = _exchange(explorer, _head("/api/search", auth, "Transfer-Encoding: chunked") + _chunked(search))
    assert chunked.startswith(b"HTTP/1.1 413")
    # two lengths that differ: refused by the parser itself (identical ones it reads as one)
    write = _exchange(explorer, _head("/api/write", auth, "Content-Length: 10", "Content-Length: 2") + b"{}")
    assert write.startswith(b"HTTP/1.1 400")


# -- time: a head that never ends, a body that never ends -------------------------------------------------------


def _held_for(url: str, request_head: bytes, limit: float = 12.0) -> float:
    """Seconds until the server closes a connection that sends ``request_head`` one line at a time and never
    finishes it (``limit`` when it is still open then)."""
    parts = urlsplit(url)
    started = time.monotonic()
    lines = request_head.split(b"\r\n")
    with socket.create_connection((parts.hostname, parts.port), timeout=limit) as sock:
        sock.settimeout(0.2)
        sent = 0
        while time.monotonic() - started < limit:
            if sent < len(lines):
                try:
                    sock.sendall(lines[sent] + b"\r\n" if sent < len(lines) - 1 else lines[sent])
                except OSError:
                    return time.monotonic() - started
                sent += 1
            try:
                if sock.recv(4096) == b"":
                    return time.monotonic() - started
            except TimeoutError:
                continue
            except OSError:
                return time.monotonic() - started
    return limit


def test_a_connection_that_never_finishes_its_head_is_closed_within_the_deadline(served: tuple[Memory, str]) -> None:
    """The slowloris probe: a head sent a line at a time, never ended, was held 15 s and more."""
    _, url = served
    head = b"POST /mcp/ HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"".join(b"X-Slow-%d: 1\r\n" % i for i in range(60))
    assert _held_for(url, head) < SHORT + 2.0


def test_an_idle_connection_and_one_idle_after_an_answer_are_closed(served: tuple[Memory, str]) -> None:
    _, url = served
    assert _held_for(url, b"") < SHORT + 2.0
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(b"GET /nothing HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        started = time.monotonic()
        sock.sendall(b"GET /mcp/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Part")  # the next head, never finished
        answer = b""
        while time.monotonic() - started < 10:
            chunk = sock.recv(4096)
            if not chunk:
                break
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 ") and time.monotonic() - started < SHORT + 2.0


def test_the_explorer_closes_a_head_that_never_ends(explorer: str) -> None:
    head = b"GET /api/info HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"".join(b"X-Slow-%d: 1\r\n" % i for i in range(60))
    assert _held_for(explorer, head) < SHORT + 2.0


def test_a_request_served_slower_than_the_head_deadline_is_not_cut(served: tuple[Memory, str]) -> None:
    """The deadline is on the head, not the answer: a call that takes longer than it is answered."""
    memory, url = served
    import httpx

    original = memory.call

    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(SHORT + 0.5)
        return original(*args, **kwargs)

    memory.call = slow  # type: ignore[method-assign]
    try:
        response = httpx.post(
            url + "/mcp/",
            content=_store_call("kept"),
            timeout=30,
            headers={
                "Authorization": f"Bearer {TOKEN}",
                "Accept": "application/json, text/event-stream",
                "Content-Type": "application/json",
            },
        )
    finally:
        memory.call = original  # type: ignore[method-assign]
    assert response.status_code == 200 and "stored" in response.text


def test_the_served_http_transport_runs_with_the_limits(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import uvicorn

    seen: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: seen.update(kwargs))
    with open_memory(tmp_path / "s.db", settings=make_settings(auth_token=TOKEN)) as memory:
        mcp.serve_http(memory, "127.0.0.1", 8402)
    assert seen["http"] is http_guard.GuardedH11Protocol and seen["http"].header_timeout == http_guard.HEADER_TIMEOUT
    assert seen["timeout_keep_alive"] == http_guard.KEEP_ALIVE
    assert seen["limit_concurrency"] == http_guard.LIMIT_CONCURRENCY
    assert seen["h11_max_incomplete_event_size"] == http_guard.MAX_HEAD
