"""The MCP server over both transports, driven by the official ``mcp`` client: stdio and streamable HTTP."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from cuedrecall.api import Memory
from cuedrecall.errors import SettingsError
from cuedrecall.server.mcp import http_app
from cuedrecall.tools import TOOLS
from cuedrecall.version import __version__
from tests.conftest import REPO_ROOT, make_settings, open_memory, serving

REPO = REPO_ROOT
AGENT = "mcp-agent"
TOKEN = "s3cret"
TEXT = "the ferry to the island leaves at seven fifteen"


def _payload(result: Any) -> dict[str, Any]:
    """The one JSON object a tool answers, from the single TextContent of the MCP result."""
    assert len(result.content) == 1 and result.content[0].type == "text"
    return json.loads(result.content[0].text)


async def _exercise(session: ClientSession) -> None:
    """What both transports must do: initialise, list the tools, store, recall, get_contents, refuse bad input."""
    init = await session.initialize()
    assert init.serverInfo.name == "cuedrecall"
    assert "recall" in (init.instructions or "")

    listed = (await session.list_tools()).tools
    by_name = {tool.name: tool for tool in listed}
    assert set(by_name) == set(TOOLS)
    for name in ("store", "recall", "get_contents", "archive_episode", "list_memories", "export_memories"):
        schema = by_name[name].inputSchema
        # an unknown argument is ignored and reported unless CUEDRECALL_STRICT_ARGUMENTS: no additionalProperties
        assert schema["type"] == "object" and "additionalProperties" not in schema
        assert set(schema["properties"]) == set(TOOLS[name].params)
        assert by_name[name].description
    assert by_name["recall"].annotations.readOnlyHint is True
    assert by_name["delete_memory"].annotations.destructiveHint is True
    assert "agent_id" in by_name["recall"].inputSchema["required"]
    assert "agent_id" not in by_name["store"].inputSchema.get("required", [])  # omittable: access names one agent

    stored = _payload(await session.call_tool("store", {"agent_id": AGENT, "message": {"content": TEXT, "id": "f1"}}))
    assert stored["ok"] is True and stored["result"] == "stored" and stored["embedded"] is True
    skipped = _payload(await session.call_tool("store", {"agent_id": AGENT, "message": {"content": TEXT, "id": "f1"}}))
    assert skipped["result"] == "skipped" and skipped["id"] == stored["id"]

    listing = _payload(await session.call_tool("recall", {"agent_id": AGENT, "query": ""}))
    assert [row["content"] for row in listing["messages"] if "ref" in row] == [TEXT]
    found = _payload(await session.call_tool("recall", {"agent_id": AGENT, "query": TEXT, "limit": 3}))
    assert found["messages"][-1]["ref"] == stored["ref"] and found["messages"][-1]["content"] == TEXT

    contents = _payload(
        await session.call_tool("get_contents", {"agent_id": AGENT, "refs": [stored["ref"], "mem:999"]})
    )
    assert [item["content"] for item in contents["items"]] == [TEXT]
    assert contents["missing"] == ["mem:999"]

    # bad arguments come back as our ok:false JSON naming the argument, not as the SDK's schema error
    bad = _payload(await session.call_tool("recall", {"agent_id": AGENT, "query": "x", "limit": "ten"}))
    assert bad["ok"] is False and "'limit'" in bad["error"] and bad["messages"] == []
    bad = _payload(await session.call_tool("store", {"agent_id": AGENT, "message": {"content": 5}, "colour": 5}))
    assert bad["ok"] is False and "'message.content'" in bad["error"] and bad["result"] == "rejected"
    # an argument the tool does not take is ignored and named (CUEDRECALL_STRICT_ARGUMENTS refuses it)
    extra = _payload(await session.call_tool("recall", {"agent_id": AGENT, "query": "x", "colour": 1}))
    assert extra["ignored_arguments"] == ["colour"] and extra.get("ok") is not False
    bad = _payload(await session.call_tool("get_contents", {"agent_id": AGENT}))
    assert bad["ok"] is False and "'refs'" in bad["error"]
    bad = _payload(await session.call_tool("no_such_tool", {}))
    assert bad["ok"] is False and "no_such_tool" in bad["error"]
    after = _payload(await session.call_tool("list_memories", {"agent_id": ""}))
    assert after["count"] == 1  # nothing the refused calls carried was written


# -- stdio -------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_stdio_server_lists_tools_stores_recalls_and_reads_contents(tmp_path: Path) -> None:
    db = tmp_path / "stdio.db"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "cuedrecall.cli", "serve", "--db", str(db), "--embedding", "hash"],
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "PYTHONPATH": str(REPO)},
        cwd=str(REPO),
    )
    with open(tmp_path / "stderr.log", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await _exercise(session)
    # what the server wrote is in the file, for anyone who opens it afterwards
    with open_memory(db) as memory:
        assert [m["content"] for m in memory.list_memories(agent_id=AGENT)["memories"]] == [TEXT]


# -- streamable HTTP ---------------------------------------------------------------------------------


@pytest.fixture
def authed(tmp_path: Path) -> Iterator[tuple[Memory, str]]:
    with open_memory(tmp_path / "http.db", settings=make_settings(auth_token=TOKEN)) as memory, serving(memory) as url:
        yield memory, url


@pytest.mark.anyio
async def test_http_server_with_the_token_lists_tools_stores_recalls_and_reads_contents(
    authed: tuple[Memory, str],
) -> None:
    memory, url = authed
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
    async with (
        client,
        streamable_http_client(url + "/mcp", http_client=client) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await _exercise(session)
    assert [m["content"] for m in memory.list_memories(agent_id=AGENT)["memories"]] == [TEXT]


_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}},
}
_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong", "Bearer", "Basic czNjcmV0", f"Bearer {TOKEN}x", TOKEN, f"Token {TOKEN}"],
)
def test_http_requests_without_the_right_bearer_token_get_401(
    authed: tuple[Memory, str], authorization: str | None
) -> None:
    memory, url = authed
    headers = dict(_HEADERS)
    if authorization is not None:
        headers["Authorization"] = authorization
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "store", "arguments": {"agent_id": AGENT, "message": {"content": "sneaky"}}},
    }
    for body, path in ((_INITIALIZE, "/mcp"), (_INITIALIZE, "/mcp/"), (call, "/mcp"), (call, "/elsewhere")):
        response = httpx.post(url + path, json=body, headers=headers, timeout=10)
        assert response.status_code == 401
        assert response.json() == {"error": "unauthorized"}
        assert response.headers["www-authenticate"] == "Bearer"
    assert httpx.get(url + "/mcp/", headers=headers, timeout=10).status_code == 401
    assert memory.list_memories(agent_id="")["count"] == 0


def test_the_bearer_scheme_is_case_insensitive_and_the_right_token_is_served(authed: tuple[Memory, str]) -> None:
    _, url = authed
    for scheme in ("Bearer", "bearer", "BEARER"):
        response = httpx.post(
            url + "/mcp/", json=_INITIALIZE, headers={**_HEADERS, "Authorization": f"{scheme} {TOKEN}"}, timeout=10
        )
        assert response.status_code == 200, response.text


def test_http_app_without_a_token_refuses_to_start(memory: Memory) -> None:
    assert memory.settings.auth_token == "" and memory.settings.allow_unauthenticated_http is False
    with pytest.raises(SettingsError) as caught:
        http_app(memory)
    assert "CPERSONA_AUTH_TOKEN" in str(caught.value)
    assert "CPERSONA_ALLOW_UNAUTHENTICATED_HTTP" in str(caught.value)


def test_serve_http_without_a_token_exits_with_a_message(tmp_path: Path) -> None:
    import subprocess

    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "cuedrecall.cli",
            "serve",
            "--http",
            "--port",
            "1",
            "--db",
            str(tmp_path / "x.db"),
            "--embedding",
            "hash",
        ],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "CPERSONA_AUTH_TOKEN" in done.stderr


def test_a_malformed_setting_stops_serve_naming_the_variable(tmp_path: Path) -> None:
    import subprocess

    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "PYTHONPATH": str(REPO),
        "CPERSONA_MAX_CONTENT_LENGTH": "huge",
    }
    done = subprocess.run(
        [sys.executable, "-m", "cuedrecall.cli", "serve", "--db", str(tmp_path / "x.db"), "--embedding", "hash"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode != 0
    assert "CPERSONA_MAX_CONTENT_LENGTH" in done.stderr and "an integer" in done.stderr


@pytest.mark.anyio
async def test_http_app_allowed_unauthenticated_serves_without_a_token(tmp_path: Path) -> None:
    settings = make_settings(allow_unauthenticated_http=True)
    with open_memory(tmp_path / "open.db", settings=settings) as memory, serving(memory) as url:
        async with streamable_http_client(url + "/mcp") as (read, write, _), ClientSession(read, write) as session:
            await session.initialize()
            stored = _payload(await session.call_tool("store", {"agent_id": AGENT, "message": {"content": TEXT}}))
            assert stored["result"] == "stored"
            answer = _payload(await session.call_tool("recall", {"agent_id": AGENT, "query": ""}))
            assert [row["content"] for row in answer["messages"] if "ref" in row] == [TEXT]


def test_a_websocket_is_closed_unauthenticated_before_it_reaches_the_app(tmp_path: Path) -> None:
    from starlette.testclient import TestClient
    from starlette.websockets import WebSocketDisconnect

    with (
        open_memory(tmp_path / "ws.db", settings=make_settings(auth_token=TOKEN)) as memory,
        TestClient(http_app(memory), base_url="http://127.0.0.1") as client,
    ):
        with pytest.raises(WebSocketDisconnect) as caught, client.websocket_connect("/mcp/"):
            pass
        assert caught.value.code == 1008


@pytest.mark.anyio
async def test_concurrent_http_clients_lose_no_write(authed: tuple[Memory, str]) -> None:
    import anyio

    memory, url = authed

    async def client(number: int) -> None:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
        async with (
            http,
            streamable_http_client(url + "/mcp", http_client=http) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            for i in range(8):
                message = {"content": f"client {number} note {i}", "id": f"{number}-{i}"}
                stored = _payload(await session.call_tool("store", {"agent_id": AGENT, "message": message}))
                assert stored["result"] == "stored"

    async with anyio.create_task_group() as group:
        for number in range(4):
            group.start_soon(client, number)
    contents = {m["content"] for m in memory.list_memories(agent_id=AGENT)["memories"]}
    assert contents == {f"client {n} note {i}" for n in range(4) for i in range(8)}


# -- the front door: /mcp without a redirect, /health, isError (issue 25) -------------------------------------


def test_post_to_mcp_is_answered_in_place_without_a_redirect(authed: tuple[Memory, str]) -> None:
    _, url = authed
    headers = {**_HEADERS, "Authorization": f"Bearer {TOKEN}"}
    for path in ("/mcp", "/mcp/"):
        response = httpx.post(url + path, json=_INITIALIZE, headers=headers, timeout=10, follow_redirects=False)
        assert response.status_code == 200, (path, response.status_code, response.headers.get("location"))
        assert "serverInfo" in response.text


def test_health_needs_no_token_and_says_status_version_and_backend_only(authed: tuple[Memory, str]) -> None:
    memory, url = authed
    memory.store(agent_id=AGENT, message={"content": "a private note about the harbour"})
    response = httpx.get(url + "/health", timeout=10)
    assert response.status_code == 200
    body = response.json()
    assert body == {"status": "ok", "version": __version__, "backend": {"kind": "sqlite", "reachable": True}}
    assert "harbour" not in response.text and AGENT not in response.text  # no data, no agent ids
    assert httpx.post(url + "/health", timeout=10).status_code == 405
    # the Host guard still applies: a foreign Host name is refused before /health answers
    assert httpx.get(url + "/health", headers={"Host": "evil.example"}, timeout=10).status_code != 200


def test_health_says_degraded_when_the_store_does_not_answer(
    authed: tuple[Memory, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    memory, url = authed

    def down() -> None:
        raise OSError("the disk went away")

    monkeypatch.setattr(memory.store_, "thresholds", down)
    response = httpx.get(url + "/health", timeout=10)
    assert response.status_code == 503
    assert response.json()["status"] == "degraded" and response.json()["backend"]["reachable"] is False


@pytest.mark.anyio
async def test_a_failed_call_sets_is_error_and_keeps_the_ok_false_body(authed: tuple[Memory, str]) -> None:
    _, url = authed
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
    async with (
        client,
        streamable_http_client(url + "/mcp", http_client=client) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        refused = await session.call_tool("recall", {"agent_id": AGENT, "query": "x", "limit": "ten"})
        served = await session.call_tool("recall", {"agent_id": AGENT, "query": "x"})
    assert refused.isError is True
    body = _payload(refused)
    assert body["ok"] is False and "limit" in body["error"]
    assert served.isError is False and _payload(served).get("ok") is not False
