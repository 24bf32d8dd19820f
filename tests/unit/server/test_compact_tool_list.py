"""A tool list a client can afford (docs/tools.md#the-compact-tool-list).

The full tools/list stays within 25,000 characters and the compact one (the session's tools) within 10,000,
every schema still complete; a client named in CUEDRECALL_COMPACT_TOOL_CLIENTS (Codex by default) is answered
the compact list, found by initialize's clientInfo name over stdio and by the User-Agent over HTTP, and
CUEDRECALL_TOOL_LIST chooses one list for everyone. Every tool stays callable whichever list was published.
"""

from __future__ import annotations

import json
from pathlib import Path

import mcp.types as types
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.memory import create_connected_server_and_client_session

from cuedrecall.api import Memory
from cuedrecall.config import Settings
from cuedrecall.server.mcp import _tool_list, build_server, compact_for
from cuedrecall.tools import COMPACT_TOOLS, TOOLS
from tests.conftest import make_settings, open_memory, serving

FULL_MOST = 25_000
COMPACT_MOST = 10_000
SESSION_TOOLS = {
    "recall",
    "reconstruct",
    "store",
    "get_contents",
    "archive_episode",
    "update_memory",
    "lock_memory",
    "unlock_memory",
    "pause_persistence",
    "resume_persistence",
}


def sizes(compact: bool) -> tuple[int, int]:
    """The tools/list result in characters: as the server sends it (the SDK's JSON, no spaces, nulls left out:
    what a client receives and keeps), and, for the record, as json.dumps writes it with its default spaces."""
    result = types.ListToolsResult(tools=_tool_list(compact=compact))
    sent = result.model_dump_json(by_alias=True, exclude_none=True)
    spaced = json.dumps(result.model_dump(by_alias=True, exclude_none=True, mode="json"))
    return len(sent), len(spaced)


def test_the_full_list_fits_in_25000_characters_and_the_compact_one_in_10000() -> None:
    full, compact = sizes(compact=False), sizes(compact=True)
    print(f"tools/list: full {full[0]:,} ({full[1]:,} spaced), compact {compact[0]:,} ({compact[1]:,} spaced)")
    assert full[0] <= FULL_MOST, full
    assert compact[0] <= COMPACT_MOST, compact


def test_the_compact_list_is_the_session_tools_with_their_schemas_whole() -> None:
    assert set(COMPACT_TOOLS) == SESSION_TOOLS
    listed = {tool.name: tool for tool in _tool_list(compact=True)}
    assert set(listed) == SESSION_TOOLS
    for name, tool in listed.items():
        assert tool.inputSchema == TOOLS[name].input_schema() and tool.description == TOOLS[name].description


@pytest.mark.parametrize(
    ("overrides", "client", "compact"),
    [
        ({}, "codex-mcp-client", True),
        ({}, "codex_cli_rs/0.42.0 (Mac OS 15.5.0; arm64)", True),
        ({}, "Codex", True),
        ({}, "claude-code", False),
        ({}, "", False),
        ({"compact_tool_clients": "cursor, Zed"}, "zed-editor", True),
        ({"compact_tool_clients": "cursor, Zed"}, "codex-mcp-client", False),
        ({"compact_tool_clients": ""}, "codex-mcp-client", False),
        ({"tool_list": "compact"}, "claude-code", True),
        ({"tool_list": "full"}, "codex-mcp-client", False),
    ],
)
def test_who_is_answered_the_compact_list(overrides: dict[str, str], client: str, compact: bool) -> None:
    assert compact_for(make_settings(**overrides), client) is compact


def test_cpersonas_setting_names_the_clients_too() -> None:
    settings = Settings.from_env({"CPERSONA_COMPACT_TOOL_CLIENTS": "goose"})
    assert compact_for(settings, "goose/1.0") and not compact_for(settings, "codex-mcp-client")
    assert Settings.from_env({"CPERSONA_TOOL_LIST": "compact"}).tool_list == "compact"


async def _listed_over_stdio(memory: Memory, client: str) -> set[str]:
    info = types.Implementation(name=client, version="1.0")
    async with create_connected_server_and_client_session(build_server(memory), client_info=info) as session:
        listed = {tool.name for tool in (await session.list_tools()).tools}
        # a tool left out of the list is still answered
        status = await session.call_tool("get_queue_status", {})
        assert json.loads(status.content[0].text)["pending"] == 0  # type: ignore[union-attr]
    return listed


@pytest.mark.anyio
async def test_a_named_client_is_answered_the_compact_list_by_its_initialize_name(memory: Memory) -> None:
    assert await _listed_over_stdio(memory, "codex-mcp-client") == SESSION_TOOLS
    assert await _listed_over_stdio(memory, "claude-code") == set(TOOLS)


@pytest.mark.anyio
async def test_the_setting_chooses_one_list_for_everyone(tmp_path: Path) -> None:
    with open_memory(tmp_path / "c.db", settings=make_settings(tool_list="compact")) as memory:
        assert await _listed_over_stdio(memory, "claude-code") == SESSION_TOOLS
    with open_memory(tmp_path / "f.db", settings=make_settings(tool_list="full")) as memory:
        assert await _listed_over_stdio(memory, "codex-mcp-client") == set(TOOLS)


async def _listed_over_http(url: str, agent: str) -> set[str]:
    client = create_mcp_http_client(headers={"User-Agent": agent})
    async with (
        client,
        streamable_http_client(url + "/mcp", http_client=client) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return {tool.name for tool in (await session.list_tools()).tools}


@pytest.mark.anyio
async def test_over_stateless_http_a_named_client_is_found_by_its_user_agent(tmp_path: Path) -> None:
    settings = make_settings(allow_unauthenticated_http=True)
    with open_memory(tmp_path / "h.db", settings=settings) as memory, serving(memory) as url:
        assert await _listed_over_http(url, "codex_cli_rs/0.42.0") == SESSION_TOOLS
        assert await _listed_over_http(url, "python-httpx/0.28") == set(TOOLS)
