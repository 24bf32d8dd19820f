"""The HTTP transport's guard (server/http_guard.py): body bound, Host/Origin allow-lists, closed CORS, loopback
bind, constant-time token check, and no tool reached without the token. The explorer (ui/app.py) sits behind the
same guard."""

from __future__ import annotations

import argparse
import hmac
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from cuedrecall.api import Memory
from cuedrecall.server import mcp
from cuedrecall.server.http_guard import HostPolicy, host_name, policy_of
from cuedrecall.ui.app import TOKEN_HEADER, make_app
from tests.conftest import make_settings, open_memory, serving

TOKEN = "guard-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
SMALL = 4096  # the body bound the tests serve with
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "guard-test", "version": "0"},
    },
}
STORE_CALL = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "store", "arguments": {"agent_id": "a", "message": {"content": "kept"}}},
}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Memory, str]]:
    settings = make_settings(
        auth_token=TOKEN,
        http_max_body=SMALL,
        http_allowed_hosts="memory.lan",
        http_allowed_origins="https://app.example",
    )
    with open_memory(tmp_path / "guard.db", settings=settings) as memory, serving(memory) as url:
        yield memory, url


def _post(url: str, body: Any = INITIALIZE, **headers: str) -> httpx.Response:
    return httpx.post(url + "/mcp/", json=body, headers={**MCP_HEADERS, **AUTH, **headers}, timeout=30)


def _raw(url: str, request: bytes) -> bytes:
    """Send raw bytes, return what the server answers before closing (or the first 64 KiB)."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(request)
        answer = b""
        while len(answer) < 65536:
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
            if b"\r\n\r\n" in answer and b'"error"' in answer:
                break
    return answer


# -- body bound ------------------------------------------------------------------------------------------------


def test_a_body_whose_length_is_over_the_bound_is_answered_413_before_it_is_sent(served: tuple[Memory, str]) -> None:
    _, url = served
    head = (
        f"POST /mcp/ HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {100 * 1024 * 1024}\r\n\r\n"
    ).encode()
    answer = _raw(url, head + b"{")  # 100 MB announced, one byte sent: the answer cannot wait for the rest
    assert answer.startswith(b"HTTP/1.1 413")
    assert b"CUEDRECALL_HTTP_MAX_BODY" in answer


def test_a_chunked_body_over_the_bound_is_answered_413_and_nothing_is_written(served: tuple[Memory, str]) -> None:
    memory, url = served
    call = {
        **STORE_CALL,
        "params": {"name": "store", "arguments": {"agent_id": "a", "message": {"content": "x" * (SMALL * 2)}}},
    }
    payload = json.dumps(call).encode()

    def chunks() -> Iterator[bytes]:  # no Content-Length: the guard counts while reading
        for start in range(0, len(payload), 1000):
            yield payload[start : start + 1000]

    response = httpx.post(url + "/mcp/", content=chunks(), headers={**MCP_HEADERS, **AUTH}, timeout=30)
    assert response.status_code == 413 and response.json()["ok"] is False
    assert memory.list_memories(agent_id="")["count"] == 0


def test_a_body_within_the_bound_is_served_whole_chunked_or_not(served: tuple[Memory, str]) -> None:
    _, url = served
    assert _post(url).status_code == 200
    payload = json.dumps(INITIALIZE).encode()
    response = httpx.post(
        url + "/mcp/", content=iter([payload[:20], payload[20:]]), headers={**MCP_HEADERS, **AUTH}, timeout=30
    )
    assert response.status_code == 200 and "cuedrecall" in response.text


def test_the_body_bound_defaults_to_16_mib() -> None:
    assert make_settings().http_max_body == 16 * 1024 * 1024


# -- DNS rebinding: Host and Origin ---------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8402", "127.0.0.1.evil.example", "10.0.0.7"])
def test_a_request_naming_a_foreign_host_is_answered_421_even_with_the_token(
    served: tuple[Memory, str], host: str
) -> None:
    _, url = served
    response = _post(url, Host=host)
    assert response.status_code == 421 and "Host" in response.json()["error"]


@pytest.mark.parametrize("host", ["localhost", "localhost:8402", "127.0.0.1:9", "[::1]:8402", "memory.lan:8402"])
def test_loopback_names_and_listed_hosts_are_served(served: tuple[Memory, str], host: str) -> None:
    _, url = served
    assert _post(url, Host=host).status_code == 200


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "https://evil.example:8402", "null", "http://127.0.0.1.evil.example"]
)
def test_a_request_from_a_foreign_origin_is_answered_403(served: tuple[Memory, str], origin: str) -> None:
    memory, url = served
    response = _post(url, STORE_CALL, Origin=origin)
    assert response.status_code == 403 and "Origin" in response.json()["error"]
    assert memory.list_memories(agent_id="")["count"] == 0


@pytest.mark.parametrize("origin", ["http://localhost:3000", "http://127.0.0.1", "https://app.example"])
def test_loopback_pages_and_listed_origins_are_served(served: tuple[Memory, str], origin: str) -> None:
    _, url = served
    assert _post(url, Origin=origin).status_code == 200


@settings(max_examples=200, deadline=None)
@given(
    st.from_regex(r"[a-z][a-z0-9-]{0,20}(\.[a-z][a-z0-9-]{0,10}){1,3}", fullmatch=True),
    st.none() | st.integers(1, 65535),
)
def test_no_name_outside_the_allow_list_passes_the_host_check(name: str, port: int | None) -> None:
    policy = HostPolicy(allowed_hosts=("memory.lan",))
    host = name if port is None else f"{name}:{port}"
    allowed = name in ("memory.lan",) or name == "localhost" or name.endswith(".localhost")
    assert policy.host_ok(host) is allowed
    assert policy.origin_ok(f"http://{host}") is allowed or name == "memory.lan"  # hosts are not origins


def test_the_bound_address_is_one_of_the_servers_names_but_a_wildcard_bind_is_not() -> None:
    assert policy_of("", "", "192.168.1.5").host_ok("192.168.1.5:8402")
    assert not policy_of("", "", "0.0.0.0").host_ok("0.0.0.0:8402")
    assert not policy_of("", "").host_ok(None)
    assert policy_of("*", "").host_ok("anything.example")
    assert host_name("[::1]:8402") == "::1" and host_name("LocalHost:1") == "localhost"


# -- CORS stays closed ------------------------------------------------------------------------------------------


def test_cors_is_closed_no_response_allows_another_origin(served: tuple[Memory, str]) -> None:
    _, url = served
    preflight = {
        "Origin": "https://evil.example",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type",
    }
    foreign = httpx.options(url + "/mcp/", headers=preflight, timeout=30)
    own = httpx.options(url + "/mcp/", headers={**preflight, "Origin": "http://localhost:5173"}, timeout=30)
    served_post = _post(url, Origin="http://localhost:5173")
    assert foreign.status_code == 403
    for response in (foreign, own, served_post):
        assert not [name for name in response.headers if name.lower().startswith("access-control-allow")]


# -- binding, token compare, no tool without the token ---------------------------------------------------------


def test_the_http_server_binds_loopback_unless_told_otherwise(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cuedrecall import cli, server

    bound: list[tuple[str, int]] = []
    monkeypatch.setattr(server, "serve_http", lambda memory, host, port: bound.append((host, port)))
    for name, value in {
        "EMBEDDING_MODE": "hash",
        "BLOCK_BUILD_ENABLED": "false",
        "BLOCK_RETRIEVAL_ENABLED": "false",
        "CALIBRATE_ON_GROWTH": "false",
    }.items():
        monkeypatch.setenv("CUEDRECALL_" + name, value)
    for variable in ("CUEDRECALL_HTTP_HOST", "CPERSONA_HTTP_HOST"):
        monkeypatch.delenv(variable, raising=False)
    args = argparse.Namespace(db=str(tmp_path / "bind.db"), embedding=None, http=True, host=None, port=None)
    assert cli.cmd_serve(args) == 0
    assert bound == [("127.0.0.1", 8402)]
    assert cli.build_parser().parse_args(["serve", "--http"]).host is None  # the CLI leaves it to the setting


def test_the_token_is_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(mcp.hmac, "compare_digest", spy)
    check = mcp.single_token(TOKEN)
    assert check(TOKEN.encode()) is not None and check(b"guard-tokeX") is None and check(b"") is None
    assert compared == [(TOKEN.encode(), TOKEN.encode()), (b"guard-tokeX", TOKEN.encode()), (b"", TOKEN.encode())]


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}, {"Authorization": f"Bearer {TOKEN}x"}],
)
def test_a_request_without_the_token_never_reaches_a_tool(
    served: tuple[Memory, str], monkeypatch: pytest.MonkeyPatch, headers: dict[str, str]
) -> None:
    memory, url = served
    calls: list[str] = []
    real = memory.call
    monkeypatch.setattr(memory, "call", lambda tool, *a, **k: calls.append(tool) or real(tool, *a, **k))
    response = httpx.post(url + "/mcp/", json=STORE_CALL, headers={**MCP_HEADERS, **headers}, timeout=30)
    assert response.status_code == 401 and calls == []
    assert _post(url, STORE_CALL).status_code == 200 and calls == ["store"]  # the same call with the token does


# -- the explorer behind the same guard -------------------------------------------------------------------------


def test_the_explorer_refuses_a_foreign_host_or_origin_and_an_oversized_body(tmp_path: Path) -> None:
    with open_memory(tmp_path / "ui.db", settings=make_settings(http_max_body=SMALL)) as memory:
        client = TestClient(make_app(memory, "ui-token"), base_url="http://127.0.0.1")
        auth = {TOKEN_HEADER: "ui-token"}
        assert client.get("/api/info", headers=auth).status_code == 200
        assert client.get("/api/info", headers={**auth, "Host": "evil.example"}).status_code == 421
        assert client.get("/api/info", headers={**auth, "Origin": "http://evil.example"}).status_code == 403
        big = client.post("/api/search", headers=auth, json={"query": "x" * (SMALL * 2)})
        assert big.status_code == 413
