"""Per-client access: the ACL file's rules, constant-time tokens, and each HTTP client calling as itself.

Two clients over real HTTP: A may read and write agent "a" only, B may read agent "b" only.
Every tool naming an agent A was not granted is refused ``permission_denied`` and writes nothing.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import re
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

from cuedrecall.access import LOCAL, READ, WRITE, Principal, load_acl
from cuedrecall.api import Memory
from cuedrecall.errors import SettingsError
from cuedrecall.server.mcp import http_app, stdio_principal
from cuedrecall.tools import TOOLS
from tests.conftest import REPO_ROOT, make_settings, open_memory, serving, snapshot

REPO = REPO_ROOT
TOKEN_A, TOKEN_B = "token-of-a", "token-of-b"
CLIENTS = [
    {"client_id": "A", "token": TOKEN_A, "grants": {"a": "read-write"}},
    {"client_id": "B", "token": "${CUEDRECALL_TEST_TOKEN_B}", "grants": {"b": "read"}},
    {"client_id": "local", "token": None, "grants": {"a": "read"}},
]
AGENT_PARAMS = ("agent_id", "source_agent_id", "target_agent_id")


def _write(tmp_path: Path, document: Any, name: str = "acl.json") -> Path:
    path = tmp_path / name
    path.write_text(document if isinstance(document, str) else json.dumps(document), encoding="utf-8")
    return path


def _payload(result: Any) -> dict[str, Any]:
    assert len(result.content) == 1 and result.content[0].type == "text"
    return json.loads(result.content[0].text)


# -- the file's rules ---------------------------------------------------------------------------------


def test_a_valid_file_gives_each_client_its_principal(tmp_path: Path) -> None:
    acl = load_acl(_write(tmp_path, {"clients": CLIENTS}), environ={"CUEDRECALL_TEST_TOKEN_B": TOKEN_B})
    a = acl.authenticate(TOKEN_A.encode())
    b = acl.authenticate(TOKEN_B.encode())
    assert a is not None and a.client_id == "A" and dict(a.grants) == {"a": WRITE}
    assert b is not None and b.client_id == "B" and dict(b.grants) == {"b": READ}
    assert acl.authenticate(b"${CUEDRECALL_TEST_TOKEN_B}") is None  # the reference is not the token
    assert acl.authenticate(b"") is None and acl.authenticate(b"token-of-") is None
    assert acl.local is not None and dict(acl.local.grants) == {"a": READ}
    assert load_acl(_write(tmp_path, {"clients": []}, "empty.json")).local is None


def _client(**entry: Any) -> dict[str, Any]:
    return {"clients": [{"client_id": "ok", "token": "fine-token", "grants": {"x": "read"}}, entry]}


@pytest.mark.parametrize(
    ("document", "named"),
    [
        ("{not json", "not valid JSON"),
        ("[]", "clients"),
        ({"clients": {}}, "clients"),
        ({"clients": [], "admins": []}, "admins"),
        ('{"clients": [], "clients": []}', "'clients' appears twice"),
        ({"clients": ["A"]}, "clients[0]"),
        ({"clients": [{"token": "t", "grants": {}}]}, "client_id"),
        (_client(client_id="", token="t2"), "client_id"),
        (_client(client_id="C", token="t2", grants={}, per_subject={}), "'per_subject'"),
        (_client(client_id="C", token="t2", grant={"x": "read"}), "'grant'"),
        (_client(client_id="ok", token="t2"), "'ok' appears twice"),
        (_client(client_id="C", token="fine-token"), "'ok' and 'C' have the same token"),
        (_client(client_id="C", token="${SAME_AS_OK}"), "'ok' and 'C' have the same token"),
        (_client(client_id="C", token="t2", grants={"x": "write"}), "'write' is not a permission"),
        (_client(client_id="C", token="t2", grants={"x": "READ"}), "'READ' is not a permission"),
        (_client(client_id="C", token="t2", grants={"x": None}), "None is not a permission"),
        (_client(client_id="C", token="t2", grants={"": "read"}), "empty agent id"),
        (_client(client_id="C", token="t2", grants=["x"]), '"grants" must be an object'),
        (_client(client_id="C", token="tök3n"), "printable ASCII"),
        (_client(client_id="C", token="two words"), "printable ASCII"),
        (_client(client_id="C", token=""), "empty"),
        (_client(client_id="C", token="${EMPTY_VAR}"), "empty"),
        (_client(client_id="C", token=42), '"token" must be'),
        (_client(client_id="C", token="${NOT_SET_ANYWHERE}"), "${NOT_SET_ANYWHERE}"),
        (_client(client_id="local", token="t2"), "'local'"),
        (_client(client_id="local", token="${SAME_AS_OK}"), "'local'"),
    ],
)
def test_each_rule_of_the_file_stops_startup_naming_the_file_and_the_client(
    tmp_path: Path, document: Any, named: str
) -> None:
    path = _write(tmp_path, document)
    with pytest.raises(SettingsError) as caught:
        load_acl(path, environ={"SAME_AS_OK": "fine-token", "EMPTY_VAR": ""})
    message = str(caught.value)
    assert str(path) in message and named in message
    entries = document.get("clients") if isinstance(document, dict) else None
    if isinstance(entries, list) and len(entries) == 2 and entries[1].get("client_id"):
        assert repr(entries[1]["client_id"]) in message  # the client is named


def test_an_unreadable_file_stops_startup_naming_it(tmp_path: Path) -> None:
    for path in (tmp_path / "missing.json", tmp_path):
        with pytest.raises(SettingsError, match="cannot be read") as caught:
            load_acl(path)
        assert str(path) in str(caught.value)
    latin = tmp_path / "latin.json"
    latin.write_bytes('{"clients": [{"client_id": "é"}]}'.encode("latin-1"))
    with pytest.raises(SettingsError, match="cannot be read"):
        load_acl(latin)


def test_a_token_from_the_environment_is_read_from_os_environ(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUEDRECALL_TEST_TOKEN_B", TOKEN_B)
    acl = load_acl(_write(tmp_path, {"clients": CLIENTS}))
    assert acl.authenticate(TOKEN_B.encode()).client_id == "B"  # type: ignore[union-attr]
    monkeypatch.delenv("CUEDRECALL_TEST_TOKEN_B")
    with pytest.raises(SettingsError, match=r"\$\{CUEDRECALL_TEST_TOKEN_B\}.*not set"):
        load_acl(tmp_path / "acl.json")


def test_every_clients_token_is_compared_in_constant_time_whichever_matches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clients = [{"client_id": f"c{i}", "token": f"tok-{i}", "grants": {}} for i in range(5)]
    clients.append({"client_id": "local", "token": None, "grants": {}})
    acl = load_acl(_write(tmp_path, {"clients": clients}))
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def counting(a: bytes, b: bytes) -> bool:
        assert isinstance(a, bytes) and isinstance(b, bytes)
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", counting)
    for given, expected in ((b"tok-0", "c0"), (b"tok-4", "c4"), (b"tok-2", "c2"), (b"nope", None)):
        calls.clear()
        found = acl.authenticate(given)
        assert (found.client_id if found else None) == expected
        assert len(calls) == 5  # every client that has a token, not stopping at the match
        assert sorted(b for _, b in calls) == [f"tok-{i}".encode() for i in range(5)]


# -- in process: Memory.call as a principal ------------------------------------------------------------


CLIENT_A = Principal("A", {"a": WRITE})
CLIENT_B = Principal("B", {"b": READ})


def _seed_b(memory: Memory) -> dict[str, int]:
    """Agent b's memory, episode and profile (written as LOCAL), for refused calls to leave untouched."""
    stored = memory.store(agent_id="b", content="the blue notebook is in the drawer")
    episode = memory.archive_episode(agent_id="b", summary="b's first session")
    assert memory.update_profile(agent_id="b", profile="b likes tea")["ok"] is True
    return {"memory_id": stored["id"], "episode_id": episode["episode_id"]}


def _state(memory: Memory) -> str:
    """What a write could change: rows, episodes, profiles, b's gate and the pause state."""
    return snapshot(memory, agents=("a", "b")) + json.dumps(
        [memory.get_recall_precision(agent_id="b"), memory.persistence_status()], sort_keys=True, default=str
    )


def _arguments(tool: str, agent: str, ids: dict[str, int], other: str = "a") -> list[dict[str, Any]]:
    """Valid arguments for ``tool`` naming ``agent`` in each agent argument it takes (merge: each way round)."""
    spec = TOOLS[tool]
    base: dict[str, Any] = {}
    for name, param in spec.params.items():
        if name in ids:
            base[name] = ids[name]
        elif param.required and name not in AGENT_PARAMS:
            base[name] = {"string": "x", "integer": 1, "number": 1, "boolean": False, "array": [], "object": {}}[
                param.type
            ]
    named = [name for name in AGENT_PARAMS if name in spec.params]
    if not named:
        return []
    if len(named) == 1:
        return [{**base, named[0]: agent}]
    return [{**base, named[0]: agent, named[1]: other}, {**base, named[0]: other, named[1]: agent}]


def test_memory_call_as_a_principal_refuses_what_it_was_not_granted_and_writes_nothing(memory: Memory) -> None:
    ids = _seed_b(memory)
    before = _state(memory)
    exercised = set()
    for tool in TOOLS:
        for arguments in _arguments(tool, "b", ids):
            exercised.add(tool)
            answer = memory.call(tool, arguments, principal=CLIENT_A)
            assert answer["ok"] is False and answer["error"] == "permission_denied", (tool, answer)
            assert answer["client_id"] == "A" and answer["tool"] == tool and answer["agent_id"] == "b"
            assert set(TOOLS[tool].failure) <= set(answer)  # the tool's collection keys are still there
    assert len(exercised) >= 20
    for tool in ("pause_persistence", "resume_persistence", "get_session_findings"):
        answer = memory.call(tool, {}, principal=CLIENT_A)
        assert answer["error"] == "permission_denied" and answer["agent_id"] == "*", tool
    assert memory.call("list_memories", {"agent_id": ""}, principal=CLIENT_A)["error"] == "permission_denied"
    assert memory.call("store", {"agent_id": "b", "content": "x"}, principal=CLIENT_B)["required"] == WRITE
    assert _state(memory) == before
    # what was granted is served
    assert memory.call("store", {"content": "a's own note"}, principal=CLIENT_A)["result"] == "stored"
    assert memory.call("recall", {"agent_id": "b", "query": ""}, principal=CLIENT_B).get("ok") is not False
    assert [m["content"] for m in memory.list_memories(agent_id="a")["memories"]] == ["a's own note"]


def test_a_star_grant_of_none_does_not_hide_the_one_writable_agent() -> None:
    assert Principal("x", {"a": WRITE, "*": "none"}).sole_agent(WRITE) == "a"
    assert Principal("x", {"a": WRITE, "*": READ}).sole_agent(WRITE) is None
    assert Principal("x", {"a": WRITE, "b": READ}).sole_agent(WRITE) == "a"
    assert Principal("x", {"a": WRITE, "b": READ}).sole_agent(READ) is None


# -- over HTTP -----------------------------------------------------------------------------------------


@pytest.fixture
def served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> Iterator[tuple[Memory, str, dict[str, int]]]:
    """The ACL server (the single token set too, and ignored), agent b seeded."""
    monkeypatch.setenv("CUEDRECALL_TEST_TOKEN_B", TOKEN_B)
    settings = make_settings(acl_file=str(_write(tmp_path, {"clients": CLIENTS})), auth_token="the-single-token")
    with open_memory(tmp_path / "acl.db", settings=settings) as memory:
        ids = _seed_b(memory)
        with caplog.at_level(logging.WARNING, logger="cuedrecall"), serving(memory) as url:
            assert any("ignored" in r.getMessage() and "AUTH_TOKEN" in r.getMessage() for r in caplog.records)
            yield memory, url, ids


class _Session:
    """An MCP client session over HTTP with one bearer token."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token

    async def __aenter__(self) -> ClientSession:
        from contextlib import AsyncExitStack

        self.stack = AsyncExitStack()
        http = await self.stack.enter_async_context(
            create_mcp_http_client(headers={"Authorization": f"Bearer {self.token}"})
        )
        read, write, _ = await self.stack.enter_async_context(
            streamable_http_client(self.url + "/mcp", http_client=http)
        )
        session = await self.stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        return session

    async def __aexit__(self, *exc: object) -> None:
        await self.stack.aclose()


async def _call(session: ClientSession, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return _payload(await session.call_tool(tool, arguments))


@pytest.mark.anyio
async def test_over_http_each_client_calls_as_itself_and_is_refused_every_tool_naming_another_agent(
    served: tuple[Memory, str, dict[str, int]],
) -> None:
    memory, url, ids = served
    before = _state(memory)
    async with _Session(url, TOKEN_A) as a, _Session(url, TOKEN_B) as b:
        # A: every tool that names agent b is refused, whatever else it would do
        exercised: set[str] = set()
        for tool in TOOLS:
            for arguments in _arguments(tool, "b", ids):
                exercised.add(tool)
                answer = await _call(a, tool, arguments)
                assert answer["ok"] is False and answer["error"] == "permission_denied", (tool, answer)
                assert (answer["client_id"], answer["tool"], answer["agent_id"]) == ("A", tool, "b")
        # the tools naming no agent: a sweep of every agent is refused, the harmless reads answer
        no_agent = set(TOOLS) - exercised
        assert {
            "pause_persistence",
            "resume_persistence",
            "get_session_findings",
            "get_queue_status",
            "persistence_status",
        } <= no_agent
        for tool in sorted(no_agent):
            answer = await _call(a, tool, {})
            if TOOLS[tool].demands({}):
                assert answer["error"] == "permission_denied" and answer["agent_id"] == "*", (tool, answer)
            elif tool == "get_operating_context":  # no file configured here: the dormant answer, said by name
                assert answer["dormant"] == "not_configured", (tool, answer)
            else:
                assert answer.get("ok") is not False, (tool, answer)
        for session, client in ((a, "A"), (b, "B")):
            for tool in ("pause_persistence", "resume_persistence"):
                answer = await _call(session, tool, {"ttl_seconds": 60} if tool.startswith("pause") else {})
                assert (answer["error"], answer["client_id"], answer["required"]) == (
                    "permission_denied",
                    client,
                    WRITE,
                )
        answer = await _call(a, "list_memories", {"agent_id": ""})
        assert (answer["error"], answer["agent_id"], answer["memories"]) == ("permission_denied", "*", [])
        assert _state(memory) == before

        # A reads and writes a; leaving out agent_id on store means a, the one agent A can write
        stored = await _call(a, "store", {"agent_id": "a", "content": "the red kettle is on the stove"})
        assert stored["result"] == "stored"
        omitted = await _call(a, "store", {"content": "the green lamp is in the hall"})
        assert omitted["result"] == "stored"
        found = await _call(a, "recall", {"agent_id": "a", "query": "red kettle"})
        assert found["messages"][-1]["ref"] == stored["ref"]
        assert sorted(m["content"] for m in memory.list_memories(agent_id="a")["memories"]) == [
            "the green lamp is in the hall",
            "the red kettle is on the stove",
        ]

        # B reads b but may not write it, nor read a
        listing = await _call(b, "recall", {"agent_id": "b", "query": ""})
        assert [row["content"] for row in listing["messages"] if row.get("ref", "").startswith("mem:")] == [
            "the blue notebook is in the drawer"
        ]
        refused = await _call(b, "store", {"agent_id": "b", "content": "sneaky"})
        assert (refused["error"], refused["client_id"], refused["required"], refused["result"]) == (
            "permission_denied",
            "B",
            WRITE,
            "rejected",
        )
        refused = await _call(b, "store", {"content": "sneaky"})  # no agent B can write: agent_id is required
        assert refused["ok"] is False and "'agent_id'" in refused["error"]
        assert (await _call(b, "recall", {"agent_id": "a", "query": ""}))["error"] == "permission_denied"
    assert [m["content"] for m in memory.list_memories(agent_id="b")["memories"]] == [
        "the blue notebook is in the drawer"
    ]


@pytest.mark.anyio
async def test_concurrent_clients_each_keep_their_own_principal(served: tuple[Memory, str, dict[str, int]]) -> None:
    import anyio

    memory, url, _ = served
    seen: dict[str, set[str]] = {"A": set(), "B": set()}

    async def run(token: str, client: str, agent: str) -> None:
        async with _Session(url, token) as session:
            for i in range(6):
                answer = await _call(
                    session, "store", {"agent_id": "b" if client == "A" else agent, "content": f"{client} {i}"}
                )
                seen[client].add(answer["client_id"])  # refused either way: A may not write b, B not at all
                answer = await _call(session, "list_memories", {"agent_id": agent})
                assert answer.get("ok") is not False, (client, answer)

    async with anyio.create_task_group() as group:
        for _ in range(2):
            group.start_soon(run, TOKEN_A, "A", "a")
            group.start_soon(run, TOKEN_B, "B", "b")
    assert seen == {"A": {"A"}, "B": {"B"}}
    assert memory.list_memories(agent_id="")["count"] == 1  # b's seeded memory only


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "Bearer",
        "Bearer wrong",
        f"Bearer {TOKEN_A}x",
        f"Bearer {TOKEN_A[:-1]}",
        TOKEN_A,
        f"Basic {TOKEN_A}",
        "Bearer the-single-token",
        "Bearer ${CUEDRECALL_TEST_TOKEN_B}",
    ],
)
def test_a_request_without_a_clients_token_gets_401(
    served: tuple[Memory, str, dict[str, int]], authorization: str | None
) -> None:
    memory, url, _ = served
    before = _state(memory)
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if authorization is not None:
        headers["Authorization"] = authorization
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "store", "arguments": {"agent_id": "a", "content": "sneaky"}},
    }
    for path in ("/mcp", "/mcp/", "/elsewhere"):
        response = httpx.post(url + path, json=call, headers=headers, timeout=10)
        assert response.status_code == 401
        assert response.json() == {"error": "unauthorized"}
        assert response.headers["www-authenticate"] == "Bearer"
    assert _state(memory) == before


def test_the_right_token_with_any_case_of_scheme_is_served(served: tuple[Memory, str, dict[str, int]]) -> None:
    _, url, _ = served
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "0"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    for authorization in (f"Bearer {TOKEN_A}", f"bearer {TOKEN_B}", f"BEARER  {TOKEN_A}"):
        response = httpx.post(
            url + "/mcp/", json=initialize, headers={**headers, "Authorization": authorization}, timeout=10
        )
        assert response.status_code == 200, (authorization, response.text)


def test_a_bad_acl_file_stops_the_http_app_before_it_serves(tmp_path: Path) -> None:
    settings = make_settings(
        acl_file=str(_write(tmp_path, {"clients": [{"client_id": "A", "token": "t", "grants": {"a": "all"}}]}))
    )
    with (
        open_memory(tmp_path / "bad.db", settings=settings) as memory,
        pytest.raises(SettingsError, match="'all' is not a permission"),
    ):
        http_app(memory)
    with (
        open_memory(tmp_path / "none.db", settings=make_settings(acl_file=str(tmp_path / "nope.json"))) as memory,
        pytest.raises(SettingsError, match=re.escape("nope.json")),
    ):
        http_app(memory)


# -- stdio ---------------------------------------------------------------------------------------------


def test_stdio_runs_as_local_or_as_the_files_local_client(tmp_path: Path) -> None:
    assert stdio_principal(make_settings()) is LOCAL
    with_local = _write(tmp_path, {"clients": [{"client_id": "local", "grants": {"a": "read"}}]})
    principal = stdio_principal(make_settings(acl_file=str(with_local)))
    assert principal.client_id == "local" and dict(principal.grants) == {"a": READ}
    without = _write(tmp_path, {"clients": [{"client_id": "A", "token": "t", "grants": {}}]}, "without.json")
    assert stdio_principal(make_settings(acl_file=str(without))) is LOCAL


@pytest.mark.anyio
async def test_the_stdio_server_calls_as_the_acl_files_local_client(tmp_path: Path) -> None:
    acl = _write(tmp_path, {"clients": [{"client_id": "local", "token": None, "grants": {"a": "read-write"}}]})
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "cuedrecall.cli", "serve", "--db", str(tmp_path / "stdio.db"), "--embedding", "hash"],
        env={
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(tmp_path),
            "PYTHONPATH": str(REPO),
            "CUEDRECALL_ACL_FILE": str(acl),
        },
        cwd=str(REPO),
    )
    with open(tmp_path / "stderr.log", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            assert (await _call(session, "store", {"content": "mine"}))["result"] == "stored"  # a, the one agent
            refused = await _call(session, "store", {"agent_id": "b", "content": "not mine"})
            assert (refused["error"], refused["client_id"]) == ("permission_denied", "local")
            assert (await _call(session, "list_memories", {"agent_id": ""}))["error"] == "permission_denied"
    with open_memory(tmp_path / "stdio.db") as memory:
        assert [(m["agent_id"], m["content"]) for m in memory.list_memories(agent_id="")["memories"]] == [("a", "mine")]
