"""The MCP server: publishes the tool declarations and answers each call with the API's JSON."""

from __future__ import annotations

import contextlib
import hmac
import json
from typing import Any, AsyncIterator

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Mount
from starlette.types import ASGIApp, Receive, Scope, Send

from cuedrecall.version import __version__
from cuedrecall.api import Memory
from cuedrecall.errors import SettingsError
from cuedrecall.tools import TOOLS

SERVER_NAME = "cuedrecall"
INSTRUCTIONS = (
    "Long-term memory. store what a later session should know; archive_episode at the end of a session; "
    "recall before answering anything that may depend on the past (the LAST row of the answer is the best). "
    "Pass recall's time_cue only when the request names a time, never today's date."
)


def _tool_list() -> list[types.Tool]:
    return [
        types.Tool(
            name=tool.name,
            description=tool.description,
            inputSchema=tool.input_schema(),
            annotations=types.ToolAnnotations(
                readOnlyHint=tool.read_only, destructiveHint=tool.destructive, idempotentHint=tool.idempotent
            ),
        )
        for tool in TOOLS.values()
    ]


def build_server(memory: Memory) -> Server:
    """A low-level MCP server whose every tool is ``memory.call``; our own validation answers bad input."""
    server: Server = Server(SERVER_NAME, version=__version__, instructions=INSTRUCTIONS)

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        return _tool_list()

    # The SDK's schema check would answer bad input with its own wording; ours names the argument
    # and keeps the tool's response shape, so validation is left to Memory.call.
    @server.call_tool(validate_input=False)
    async def call_tool(name: str, arguments: dict[str, Any] | None) -> list[types.TextContent]:
        result = await anyio.to_thread.run_sync(memory.call, name, arguments or {})
        return [types.TextContent(type="text", text=json.dumps(result, ensure_ascii=False))]

    return server


async def serve_stdio(memory: Memory) -> None:
    server = build_server(memory)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


class BearerAuth:
    """Refuses every HTTP request without ``Authorization: Bearer <token>`` (401), comparing in constant time."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token.encode("utf-8")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan" or (scope["type"] == "http" and scope.get("method") == "OPTIONS"):
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # websockets (or anything else) never reach the app unauthenticated
            await send({"type": "websocket.close", "code": 1008})
            return
        header = dict(scope.get("headers") or []).get(b"authorization", b"")
        scheme, _, given = header.partition(b" ")
        if scheme.lower() != b"bearer" or not hmac.compare_digest(given.strip(), self.token):
            response = JSONResponse({"error": "unauthorized"}, status_code=401,
                                    headers={"WWW-Authenticate": "Bearer"})
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def http_app(memory: Memory) -> ASGIApp:
    """The streamable HTTP app (stateless), at /mcp, behind the bearer check when a token is set."""
    settings = memory.settings
    if not settings.auth_token and not settings.allow_unauthenticated_http:
        raise SettingsError(
            "the HTTP transport needs CPERSONA_AUTH_TOKEN (or CPERSONA_ALLOW_UNAUTHENTICATED_HTTP=true to serve "
            "without authentication)"
        )
    manager = StreamableHTTPSessionManager(app=build_server(memory), stateless=True)

    async def handle(scope: Scope, receive: Receive, send: Send) -> None:
        await manager.handle_request(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    app: ASGIApp = Starlette(routes=[Mount("/mcp", app=handle)], lifespan=lifespan)
    return BearerAuth(app, settings.auth_token) if settings.auth_token else app


def serve_http(memory: Memory, host: str, port: int) -> None:
    import uvicorn

    uvicorn.run(http_app(memory), host=host, port=port, log_level="warning")
