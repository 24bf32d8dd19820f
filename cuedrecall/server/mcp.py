"""The MCP server: publishes the tool declarations and answers each call with the API's JSON.

Who is calling: stdio runs as ``LOCAL`` (or, with an ACL file, as its ``local``
client when it names one). Over HTTP the auth middleware resolves the bearer
token to a principal and puts it in the request's ASGI scope; the SDK hands each
tool call the request it came in (``request_context.request``), and ``call_tool``
reads the principal from that request's scope, so a call runs as the client that
sent it, whatever task or session runs the handler.
"""

from __future__ import annotations

import contextlib
import functools
import hmac
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from cuedrecall.access import LOCAL, OAUTH_PREFIX, Acl, Principal, load_acl
from cuedrecall.api import Memory
from cuedrecall.config import Settings
from cuedrecall.errors import SettingsError
from cuedrecall.handlers import operating_context
from cuedrecall.server.http_guard import WILDCARD_BINDS, BodyLimit, HostGuard, policy_of, server_limits
from cuedrecall.server.http_wellformed import WellFormedBody
from cuedrecall.server.oauth import OAuthGate, ResourceMetadata, TokenRefused, oauth_config, refusal
from cuedrecall.server.stdio import stdio_transport
from cuedrecall.tools import COMPACT_TOOLS, TOOLS, Tool
from cuedrecall.version import __version__

log = logging.getLogger("cuedrecall")

SERVER_NAME = "cuedrecall"
INSTRUCTIONS = (
    "Long-term memory. store what a later session should know; archive_episode at the end of a session; "
    "recall before answering anything that may depend on the past (the LAST row of the answer is the best, rank 1). "
    "Pass recall's time_cue only when the request names a time, never today's date."
)
PRINCIPAL_KEY = "cuedrecall.principal"  # the ASGI scope key the auth middleware files the caller under
NOBODY = Principal("unauthenticated")  # an HTTP request the middleware did not vouch for: no grants


def _tool_list(strict: bool = False, compact: bool = False) -> list[types.Tool]:
    """The tools as published: every tool, or only the session's (``COMPACT_TOOLS``) for a client that cannot
    afford the whole list (docs/tools.md#the-compact-tool-list)."""
    return [
        types.Tool(
            name=tool.name,
            description=tool.description,
            inputSchema=tool.input_schema(strict),
            annotations=hints(tool),
        )
        for tool in TOOLS.values()
        if not compact or tool.name in COMPACT_TOOLS
    ]


def hints(tool: Tool) -> types.ToolAnnotations:
    """The tool's annotations, each hint said where MCP's default would not say it: a read-only tool is
    ``readOnlyHint: true`` alone (the other two mean nothing then); another says ``destructiveHint`` always (its
    default is true, and a host asks a person first on it) and ``idempotentHint`` when true (default false)."""
    if tool.read_only:
        return types.ToolAnnotations(readOnlyHint=True)
    return types.ToolAnnotations(destructiveHint=tool.destructive, idempotentHint=True if tool.idempotent else None)


def compact_for(settings: Settings, client: str) -> bool:
    """Whether a client is answered the compact tool list: settings.tool_list for everyone, or (auto) when one
    of settings.compact_tool_clients is found in its name (initialize's clientInfo name, or its User-Agent)."""
    if settings.tool_list != "auto":
        return settings.tool_list == "compact"
    named = [name.strip().lower() for name in settings.compact_tool_clients.split(",") if name.strip()]
    client = client.lower()
    return any(name in client for name in named)


def instructions(settings: Settings) -> str:
    """What initialize tells every client: ours, then the operator's operating context summary when one is in
    use (read when the server is built: a client that connects later to the same process hears the same)."""
    summary = operating_context.instructions(settings)
    return f"{INSTRUCTIONS}\n\n{summary}" if summary else INSTRUCTIONS


def build_server(memory: Memory, principal: Principal = LOCAL) -> Server:
    """A low-level MCP server whose every tool is ``memory.call``; our own validation answers bad input.

    A call that came over HTTP runs as the principal its request's scope carries; one that did
    not (stdio) runs as ``principal``.
    """
    server: Server = Server(SERVER_NAME, version=__version__, instructions=instructions(memory.settings))

    def caller() -> Principal:
        try:
            request = server.request_context.request
        except LookupError:  # not inside a request the SDK is handling
            return principal
        if request is None:  # stdio: no HTTP request behind the message
            return principal
        return request.scope.get(PRINCIPAL_KEY, NOBODY)

    def client_name() -> str:
        """Who is asking, in the client's own words: the User-Agent over HTTP (a stateless request has no
        initialize of its own), else initialize's clientInfo name; "" when neither says."""
        try:
            context = server.request_context
        except LookupError:
            return ""
        request = context.request
        agent = request.headers.get("user-agent", "") if request is not None else ""
        params = getattr(context.session, "client_params", None)
        info = getattr(params, "clientInfo", None)
        return " ".join(part for part in (agent, getattr(info, "name", "") or "") if part)

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        settings = memory.settings
        return _tool_list(settings.strict_arguments, compact_for(settings, client_name()))

    # The SDK's schema check would answer bad input with its own wording; ours names the argument
    # and keeps the tool's response shape, so validation is left to Memory.call.
    @server.call_tool(validate_input=False)
    async def call_tool(name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        call = functools.partial(memory.call, name, arguments or {}, principal=caller())
        result = await anyio.to_thread.run_sync(call)
        return tool_result(result)

    return server


def tool_result(result: dict[str, Any]) -> types.CallToolResult:
    """The tool's JSON as the call's text; a refused call (``ok: false``) also sets MCP's ``isError``, so a client
    that reads only the flag still sees the failure, and the body still names what was wrong."""
    text = types.TextContent(type="text", text=json.dumps(result, ensure_ascii=False))
    return types.CallToolResult(content=[text], isError=result.get("ok") is False)


def stdio_principal(settings: Settings) -> Principal:
    """Who stdio runs as: the ACL file's ``local`` client when there is a file naming one, else ``LOCAL``."""
    if not settings.acl_file:
        return LOCAL
    return load_acl(settings.acl_file).local or LOCAL


async def serve_stdio(memory: Memory) -> None:
    """Serve over stdin/stdout through our own transport (``server.stdio``): a malformed line is answered with
    a JSON-RPC error and the server reads on, where the SDK's ``stdio_server`` would die or never answer."""
    server = build_server(memory, stdio_principal(memory.settings))
    async with stdio_transport() as (read, write):
        await server.run(read, write, server.create_initialization_options())


Authenticate = Callable[[bytes], "Principal | None"]
OAUTH_THREADS = 8  # worker threads verifying OAuth tokens at once, apart from the tools' threads


class BearerAuth:
    """Refuses every HTTP request without ``Authorization: Bearer <token>`` of a known caller (401); files the
    caller's principal in the request's scope for the tool calls.

    ``authenticate`` maps the token (bytes as sent) to a principal, comparing in constant time; ``None`` as
    ``authenticate`` serves everyone as ``LOCAL`` (HTTP allowed without authentication). With ``oauth``, a token
    no static client holds is verified as an OAuth access token (``server/oauth.py``, in a worker thread: a
    fetch of the issuer's keys may wait on the network), and a refusal names the resource metadata.
    """

    def __init__(self, app: ASGIApp, authenticate: Authenticate | None, oauth: OAuthGate | None = None) -> None:
        self.app = app
        self.authenticate = authenticate
        self.oauth = oauth
        self._limiter: anyio.CapacityLimiter | None = None  # made on first use, inside the event loop

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan" or (scope["type"] == "http" and scope.get("method") == "OPTIONS"):
            await self.app(scope, receive, send)
            return
        if self.authenticate is None:
            scope[PRINCIPAL_KEY] = LOCAL
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # websockets (or anything else) never reach the app unauthenticated
            await send({"type": "websocket.close", "code": 1008})
            return
        header = dict(scope.get("headers") or []).get(b"authorization", b"")
        scheme, _, given = header.partition(b" ")
        bearer, given = scheme.lower() == b"bearer", given.strip()
        principal = self.authenticate(given) if bearer else None
        if principal is None and self.oauth is not None:
            principal, refused = await self._oauth_principal(given if bearer else b"")
            if principal is None:
                await refusal(self.oauth.config, refused)(scope, receive, send)
                return
        if principal is None:
            response = JSONResponse({"error": "unauthorized"}, status_code=401, headers={"WWW-Authenticate": "Bearer"})
            await response(scope, receive, send)
            return
        scope[PRINCIPAL_KEY] = principal
        await self.app(scope, receive, send)

    async def _oauth_principal(self, given: bytes) -> tuple[Principal | None, TokenRefused | None]:
        """The principal of an OAuth access token, else why not (None: no token was sent)."""
        assert self.oauth is not None
        if not given:
            return None, None
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(OAUTH_THREADS)
        try:
            principal = await anyio.to_thread.run_sync(
                self.oauth.principal, given.decode("latin-1"), limiter=self._limiter
            )
        except TokenRefused as refused:
            log.debug("oauth: a token was refused (%d %s): %s", refused.status, refused.error, refused.description)
            return None, refused
        except Exception:  # a bug must not reach the client, nor let the token in
            log.exception("oauth: a token could not be verified")
            return None, TokenRefused("the token could not be verified")
        return principal, None


def single_token(token: str) -> Authenticate:
    """The one-token check: the right token is ``LOCAL``, compared in constant time over UTF-8 bytes."""
    expected = token.encode("utf-8")

    def authenticate(given: bytes) -> Principal | None:
        return LOCAL if hmac.compare_digest(given, expected) else None

    return authenticate


def http_authentication(settings: Settings, acl: Acl | None = None, oauth: bool = False) -> Authenticate | None:
    """How HTTP callers are told apart: the ACL file's clients when one is set (``acl``, when already read),
    else the single token, else (explicitly allowed) nobody is asked; without any of these the transport refuses
    to start. ``oauth``: OAuth callers are served too (``oauth_gate``), so a file without tokens is fine."""
    if settings.acl_file:
        acl = acl or load_acl(settings.acl_file)
        if settings.auth_token:
            log.warning(
                "the ACL file %s is in use: the single HTTP token (CUEDRECALL_AUTH_TOKEN / "
                "CPERSONA_AUTH_TOKEN) is ignored",
                settings.acl_file,
            )
        if not oauth and not any(client.token is not None for client in acl.clients):
            log.warning(
                "the ACL file %s names no client with a token: every HTTP request will be refused", settings.acl_file
            )
        return acl.authenticate
    if settings.auth_token:
        return single_token(settings.auth_token)
    if settings.allow_unauthenticated_http:
        return None
    raise SettingsError(
        "the HTTP transport needs a bearer token, CUEDRECALL_AUTH_TOKEN (or CPERSONA_AUTH_TOKEN), or an ACL file, "
        "CUEDRECALL_ACL_FILE (or CPERSONA_ACL_FILE); CUEDRECALL_ALLOW_UNAUTHENTICATED_HTTP=true (or "
        "CPERSONA_ALLOW_UNAUTHENTICATED_HTTP=true) serves without authentication"
    )


def oauth_gate(settings: Settings, acl: Acl | None) -> OAuthGate | None:
    """The OAuth side of the HTTP server when it is configured (docs/security.md#oauth), else None. It needs the
    ACL file: a verified caller gets only the grants the file gives its name."""
    config = oauth_config(settings)
    if config is None:
        return None
    if acl is None:
        raise SettingsError(
            "OAuth (CUEDRECALL_OAUTH_RESOURCE / CPERSONA_OAUTH_RESOURCE) needs an ACL file, CUEDRECALL_ACL_FILE (or "
            "CPERSONA_ACL_FILE), naming each OAuth client's grants (oauth:<issuer>:<client_id>): without one a "
            "signed-in caller could reach every agent"
        )
    named = [c.principal.client_id for c in acl.clients if c.principal.client_id.startswith(OAUTH_PREFIX)]
    log.info(
        "OAuth on: resource %s, issuers %s, %d OAuth client(s) in the ACL file",
        config.resource,
        ", ".join(config.issuers),
        len(named),
    )
    return OAuthGate(config, acl)


def http_app(memory: Memory, bind_host: str = "") -> ASGIApp:
    """The streamable HTTP app (stateless), at /mcp, behind the Host/Origin guard (``http_guard``; ``bind_host``,
    the address served, is one of its names), then the bearer check (one token, or an ACL file's clients, each
    calling as its own principal), then the body bound: a request the guard or the check refuses never reaches
    a tool."""
    settings = memory.settings
    acl = load_acl(settings.acl_file) if settings.acl_file else None
    oauth = oauth_gate(settings, acl)
    authenticate = http_authentication(settings, acl, oauth=oauth is not None)
    manager = StreamableHTTPSessionManager(app=build_server(memory, NOBODY), stateless=True)

    async def handle(scope: Scope, receive: Receive, send: Send) -> None:
        await manager.handle_request(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    # /mcp is answered where it is (a Mount alone would redirect it to /mcp/ with a 307 strict clients do not follow)
    endpoint = _Endpoint(handle)
    app: ASGIApp = Starlette(routes=[Route("/mcp", endpoint=endpoint), Mount("/mcp", app=handle)], lifespan=lifespan)
    policy = policy_of(settings.http_allowed_hosts, settings.http_allowed_origins, bind_host)
    # the well-formedness check reads the body, so it sits inside the bound: at most that many bytes are read
    guarded: ASGIApp = BearerAuth(BodyLimit(WellFormedBody(app), settings.http_max_body), authenticate, oauth)
    if oauth is not None:  # the metadata document is public: it says where to get a token
        guarded = ResourceMetadata(guarded, oauth.config)
    return HostGuard(Health(guarded, memory), policy)


class _Endpoint:
    """An ASGI app as a Starlette route's endpoint (a class instance, so Starlette passes it the raw scope)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


class Health:
    """``GET /health`` without a token: the status, the version and whether the store answers a read, nothing
    of what it holds; every other request goes on to ``app``. It sits inside the Host/Origin guard."""

    PATH = "/health"

    def __init__(self, app: ASGIApp, memory: Memory) -> None:
        self.app = app
        self.memory = memory

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") != self.PATH:
            await self.app(scope, receive, send)
            return
        if scope.get("method") not in ("GET", "HEAD"):
            await JSONResponse({"error": "method not allowed"}, status_code=405, headers={"Allow": "GET"})(
                scope, receive, send
            )
            return
        reachable = await anyio.to_thread.run_sync(self._backend_answers)
        body = {
            "status": "ok" if reachable else "degraded",
            "version": __version__,
            "backend": {"kind": "postgresql" if self.memory.settings.db_url else "sqlite", "reachable": reachable},
        }
        await JSONResponse(body, status_code=200 if reachable else 503)(scope, receive, send)

    def _backend_answers(self) -> bool:
        try:
            self.memory.store_.thresholds()  # one small read: the store answers
        except Exception:
            log.warning("health: the store did not answer a read", exc_info=True)
            return False
        return True


def serve_http(memory: Memory, host: str, port: int) -> None:
    import uvicorn

    if host in WILDCARD_BINDS and not memory.settings.http_allowed_hosts:
        log.warning(
            "serving on every address (%s), but only loopback Host names are answered: set "
            "CUEDRECALL_HTTP_ALLOWED_HOSTS to the names other machines use",
            host,
        )
    # the head deadline (slowloris), keep-alive and concurrency limits of http_guard.server_limits
    uvicorn.run(http_app(memory, bind_host=host), host=host, port=port, log_level="warning", **server_limits())
