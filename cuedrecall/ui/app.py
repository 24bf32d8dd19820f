"""The explorer: ``cuedrecall ui --db PATH``, a local page to browse, search and (with ``--write``) tend memory.

The rules:

- It listens on 127.0.0.1 only, on a free port, and every request must carry the
  random token printed at start (compared with ``hmac.compare_digest``): the page
  itself may take it from the URL (``/?token=...``); every ``/api/`` call must send it
  in the ``X-CuedRecall-Token`` header, which a cross-site page cannot set (CSRF).
- Read-only by default. A change is a POST to ``/api/write`` naming one of
  ``WRITE_TOOLS``, refused (403) unless started with ``--write``; it runs through
  ``Memory.call`` as the MCP tools do (validation, locks and access rules apply), as
  the operator stdio runs as (``local_principal``). A delete also needs
  ``"confirm": true`` (the page asks first).
- Reads are bounded: pages of at most ``PAGE_MAX`` rows through ``Memory.browse``
  (no whole-table load), searches through ``Memory.call``; no SQL here.
- What the page shows is escaped (``markup.esc`` on the server, ``textContent`` in
  the page's JS); the page loads nothing from the network.
"""

from __future__ import annotations

import contextlib
import hmac
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from cuedrecall.access import LOCAL, Principal, load_acl
from cuedrecall.api import Memory
from cuedrecall.config import Settings
from cuedrecall.errors import ToolArgumentError
from cuedrecall.handlers.browse import PAGE_MAX
from cuedrecall.server.http_guard import HEADER_TIMEOUT, BodyLimit, HostGuard, policy_of, server_limits
from cuedrecall.server.jsonrpc import Refusal, parsed
from cuedrecall.ui import markup
from cuedrecall.ui.trace_html import trace_fragment
from cuedrecall.ui.traces import TraceLogReader
from cuedrecall.version import __version__

TOKEN_HEADER = "x-cuedrecall-token"
WRITE_TOOLS = frozenset({"update_memory", "delete_memory", "lock_memory", "unlock_memory", "update_profile"})
CONFIRMED = frozenset({"delete_memory"})  # tools the request must confirm ("confirm": true)
SEARCH_TOOLS = ("recall", "reconstruct")
_HEADERS = {
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}


class TokenGate:
    """Refuses (403) every request without the token: in the header for everything, or in the URL for the page."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token.encode("utf-8")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            await send({"type": "websocket.close", "code": 1008})
            return
        given = dict(scope.get("headers") or []).get(TOKEN_HEADER.encode(), b"")
        if not given and scope.get("path") == "/" and scope.get("method") in ("GET", "HEAD"):
            given = Request(scope).query_params.get("token", "").encode("utf-8")
        if not hmac.compare_digest(given, self.token):
            response = JSONResponse(
                {"ok": False, "error": "the explorer needs the token printed when it started"},
                status_code=403,
                headers=_HEADERS,
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _fail(error: str, status: int = 400) -> JSONResponse:
    return JSONResponse({"ok": False, "error": error}, status_code=status, headers=_HEADERS)


def _ok(body: dict[str, Any]) -> JSONResponse:
    return JSONResponse(body, headers=_HEADERS)


def _int(request: Request, name: str, default: int | None) -> int | None:
    raw = request.query_params.get(name, "")
    if raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ToolArgumentError(f"argument {name!r} must be an integer") from None


def _project(raw: Any) -> str | None:
    """The page's project choice: "*" (or absent) is every project, anything else that project and the global pool."""
    return None if raw in (None, "*") else str(raw)


def local_principal(memory: Memory) -> Principal:
    """Who the explorer calls the tools as: the operator on this machine, as stdio runs (the ACL file's ``local``
    client when the file names one, else ``LOCAL``)."""
    if not memory.settings.acl_file:
        return LOCAL
    return load_acl(memory.settings.acl_file).local or LOCAL


def make_app(
    memory: Memory, token: str, *, write: bool = False, traces: str | Path | None = None, principal: Principal = LOCAL
) -> ASGIApp:
    """The explorer's ASGI app over ``memory``, behind the token; ``traces``: a trace log it may open; every tool
    runs as ``principal`` (its grants apply)."""
    reader = TraceLogReader(traces) if traces else None

    def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return memory.call(tool, arguments, principal=principal)

    def page(request: Request) -> Response:
        nonce = secrets.token_urlsafe(16)
        body = markup.asset("explorer.html")
        html = markup.document(
            "cuedrecall explorer",
            body,
            css=("trace.css", "explorer.css"),
            js=("trace.js", "explorer.js"),
            nonce=nonce,
            connect=True,
        )
        return HTMLResponse(html, headers={**_HEADERS, "Content-Security-Policy": markup.csp(nonce, connect=True)})

    def info(request: Request) -> Response:
        return _ok(
            {
                "ok": True,
                "write": write,
                "version": __version__,
                "db": _store_name(memory.settings),
                "traces": reader is not None,
                "page_max": PAGE_MAX,
                "write_tools": sorted(WRITE_TOOLS),
            }
        )

    def agents(request: Request) -> Response:
        return _ok({"ok": True, **memory.agents()})

    def records(request: Request) -> Response:
        q = request.query_params
        answer = memory.browse(
            q.get("kind", "memories"),
            q.get("agent_id", ""),
            project_id=_project(q.get("project_id")),
            channel=q.get("channel", ""),
            limit=_int(request, "limit", 50),
            before_id=_int(request, "before_id", None),
            offset=_int(request, "offset", 0),
            after=q.get("after") or None,
            before=q.get("before") or None,
        )
        return _ok({"ok": True, **answer})

    def contents(request: Request) -> Response:
        q = request.query_params
        return _ok(call("get_contents", {"agent_id": q.get("agent_id", ""), "refs": [q.get("ref", "")]}))

    def profile(request: Request) -> Response:
        return _ok(call("get_profile", {"agent_id": request.query_params.get("agent_id", "")}))

    async def search(request: Request) -> Response:
        body = await _json(request)
        tool = body.get("tool", "recall")
        if tool not in SEARCH_TOOLS:
            return _fail(f"tool must be one of {', '.join(SEARCH_TOOLS)}")
        arguments = _search_arguments(tool, body)
        answer = await _thread(lambda: call(tool, arguments))
        if answer.get("ok") is False:
            return _ok({"ok": False, "error": answer.get("error"), "tool": tool})
        scope = (arguments["agent_id"], arguments.get("project_id"), arguments.get("channel", ""))
        span = await _thread(lambda: memory.scope_span(*scope))
        fragment = trace_fragment(answer, question=str(arguments.get("query", "")), span=span)
        shown = {key: value for key, value in answer.items() if key != "trace"}
        return _ok({"ok": True, "tool": tool, "answer": shown, "trace_html": fragment})

    def trace_list(request: Request) -> Response:
        if reader is None:
            return _fail("no trace log: start with --traces PATH or set CUEDRECALL_TRACE_LOG", 404)
        offset, limit = _int(request, "offset", 0) or 0, _int(request, "limit", 50) or 50
        return _ok({"ok": True, **reader.page(max(0, offset), max(1, min(limit, PAGE_MAX)))})

    def trace_entry(request: Request) -> Response:
        entry = reader.entry(request.path_params["entry_id"]) if reader is not None else None
        if entry is None:
            return _fail("no such trace log entry", 404)
        return _ok(
            {
                "ok": True,
                "id": entry.get("id"),
                "tool": entry.get("tool"),
                "at": entry.get("at"),
                "trace_html": trace_fragment(entry),
            }
        )

    async def change(request: Request) -> Response:
        if not write:
            return _fail("the explorer is read-only: start it with --write to change memory", 403)
        body = await _json(request)
        tool, arguments = body.get("tool"), body.get("arguments")
        if tool not in WRITE_TOOLS:
            return _fail(f"tool must be one of {', '.join(sorted(WRITE_TOOLS))}")
        if not isinstance(arguments, dict):
            return _fail("arguments must be an object")
        if tool in CONFIRMED and body.get("confirm") is not True:
            return _fail(f'{tool} needs "confirm": true')
        return _ok(await _thread(lambda: call(tool, arguments)))

    routes = [
        Route("/", page),
        Route("/api/info", info),
        Route("/api/agents", agents),
        Route("/api/records", records),
        Route("/api/contents", contents),
        Route("/api/profile", profile),
        Route("/api/search", search, methods=["POST"]),
        Route("/api/traces", trace_list),
        Route("/api/traces/{entry_id}", trace_entry),
        Route("/api/write", change, methods=["POST"]),
    ]
    app = Starlette(routes=routes, exception_handlers={ToolArgumentError: _refused, ValueError: _refused})
    # the MCP server's guard (server/http_guard.py): a rebound name or a foreign page is refused before the token
    # check, and a body over the bound before it is read
    settings = memory.settings
    policy = policy_of(settings.http_allowed_hosts, settings.http_allowed_origins)
    return HostGuard(TokenGate(BodyLimit(app, settings.http_max_body), token), policy)


async def _refused(request: Request, exc: Exception) -> Response:
    return _fail(str(exc))


async def _json(request: Request) -> dict[str, Any]:
    """The body as a JSON object, read with the MCP transports' rules (``server.jsonrpc.parsed``: the message
    bounds checked on the bytes before an object is made, so a body costs memory in proportion to its size)."""
    try:
        body = parsed(await request.body())
    except Refusal as refusal:
        raise ToolArgumentError(f"the request body must be a JSON object ({refusal.message})") from None
    if not isinstance(body, dict):
        raise ToolArgumentError("the request body must be a JSON object")
    return body


async def _thread(call: Callable[[], Any]) -> Any:
    import anyio

    return await anyio.to_thread.run_sync(call)


def _search_arguments(tool: str, body: dict[str, Any]) -> dict[str, Any]:
    """The tool's arguments from the page's form: the scope, the query, the limit (reconstruct's count), the cue."""
    arguments: dict[str, Any] = {
        "agent_id": body.get("agent_id", ""),
        "query": body.get("query", ""),
        "channel": body.get("channel") or "",
        "trace": True,
    }
    project = _project(body.get("project_id"))
    if project is not None:
        arguments["project_id"] = project
    if body.get("limit") is not None:
        arguments["limit" if tool == "recall" else "count"] = body["limit"]
    cue = body.get("time_cue")
    if isinstance(cue, dict) and cue.get("confidence"):
        arguments["time_cue"] = {k: v for k, v in cue.items() if k in ("after", "before", "confidence") and v}
    return arguments


@contextlib.contextmanager
def running(
    app: ASGIApp,
    port: int = 0,
    lifespan: Literal["auto", "on", "off"] = "off",  # uvicorn's LifespanType; uvicorn is imported when used
    header_timeout: float = HEADER_TIMEOUT,
) -> Iterator[str]:
    """``app`` under uvicorn on 127.0.0.1 (a free port when 0) in a background thread; yields the base URL.
    ``lifespan="on"`` for an app that starts work in its lifespan (the MCP HTTP app's session manager). The
    server keeps the limits of ``http_guard.server_limits`` (head deadline, keep-alive, concurrency)."""
    import uvicorn

    # proto IPPROTO_TCP, not 0: asyncio turns Nagle off (TCP_NODELAY) only on sockets that say they are TCP, and a
    # keep-alive request would otherwise wait ~40 ms for a delayed ACK
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", lifespan=lifespan, **server_limits(header_timeout))
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the explorer's server did not start")
            time.sleep(0.02)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


def serve(
    memory: Memory,
    *,
    port: int = 0,
    write: bool = False,
    traces: str | None = None,
    announce: Callable[[str], None] = print,
) -> None:
    """Run the explorer until interrupted; ``announce`` is told the URL (with its token) once it listens."""
    token = secrets.token_urlsafe(24)
    app = make_app(memory, token, write=write, traces=traces, principal=local_principal(memory))
    with running(app, port) as url:
        mode = "read and write (--write)" if write else "read-only (start with --write to edit)"
        announce(f"cuedrecall explorer, {mode}: {url}/?token={token}")
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


def _store_name(settings: Settings) -> str:
    """What the page calls the store: the SQLite file's name, or the PostgreSQL database's (never the URL, which
    may carry a password)."""
    if settings.db_url:
        return "postgresql:" + urlsplit(settings.db_url).path.lstrip("/")
    return Path(settings.db_path).name
