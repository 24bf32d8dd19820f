"""What every HTTP request passes before any handler sees it: the Host and Origin allow-lists and the body bound.

The rules:

- **DNS rebinding.** A page on an attacker's domain that re-points its name at
  127.0.0.1 reaches a loopback server with its own name in ``Host`` (and in
  ``Origin``). Only the names the server answers to are accepted: loopback names
  (``localhost``, ``127.0.0.1``, ``[::1]``, any port) by default, plus the address
  it binds when that is a specific one, plus ``CUEDRECALL_HTTP_ALLOWED_HOSTS``. A
  request naming another host is answered 421; one whose ``Origin`` is not a
  loopback origin or listed in ``CUEDRECALL_HTTP_ALLOWED_ORIGINS`` is answered 403.
- **CORS stays closed.** No response ever carries ``Access-Control-Allow-*``; a
  preflight (``OPTIONS``) is answered here and never reaches authentication or a
  tool, so a browser refuses any cross-origin call that needs one.
- **Framing.** A request with both ``Content-Length`` and ``Transfer-Encoding``, several
  or a non-numeric ``Content-Length``, or a coding other than ``chunked`` is answered
  400 before a byte of its body is read (the parser and the bound could read it apart).
- **Body bound.** A body over ``CUEDRECALL_HTTP_MAX_BODY`` bytes is answered 413:
  from ``Content-Length`` before a byte is read, else as soon as the bytes actually
  read pass the bound, whatever the headers said; at most the bound is ever held.
- **Time.** A request's head must be whole within ``HEADER_TIMEOUT`` seconds of the
  connection opening or of the previous answer (else the connection is closed, the
  slowloris rule, ``GuardedH11Protocol``); its body within ``BODY_TIMEOUT`` (else 408).
  At most ``LIMIT_CONCURRENCY`` connections are served at once (503 beyond).
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Iterable
from typing import Any

import anyio
import h11
from starlette.datastructures import Headers
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARD_BINDS = frozenset({"", "0.0.0.0", "::"})
ANY = "*"
HEADER_TIMEOUT = 10.0  # seconds for a request's head, from the connection or the previous answer (slowloris)
BODY_TIMEOUT = 60.0  # seconds for a whole body once its head is read: 16 MiB at 280 KB/s
KEEP_ALIVE = 5  # seconds an idle kept-alive connection is held (uvicorn's timeout_keep_alive)
LIMIT_CONCURRENCY = 128  # connections and requests served at once; beyond, 503 (uvicorn's limit_concurrency)
MAX_HEAD = 16 * 1024  # bytes of a request line and headers (h11_max_incomplete_event_size); beyond, 400


def split_list(raw: str) -> tuple[str, ...]:
    """A comma-separated setting as its non-empty, stripped items."""
    return tuple(item.strip() for item in raw.split(",") if item.strip())


def host_name(value: str) -> str:
    """The name of a ``Host`` header or an origin's authority, port and IPv6 brackets taken off, lower-cased."""
    value = value.strip().lower()
    if value.startswith("["):  # [::1]:8402
        return value[1 : value.find("]")] if "]" in value else value
    if value.count(":") == 1:  # name:port (a bare IPv6 address has several colons)
        return value.split(":", 1)[0]
    return value


def _is_loopback(name: str) -> bool:
    if name in LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class HostPolicy:
    """Which ``Host`` and ``Origin`` values are this server's own (the DNS-rebinding rule)."""

    def __init__(
        self, allowed_hosts: Iterable[str] = (), allowed_origins: Iterable[str] = (), bind_host: str = ""
    ) -> None:
        hosts = {host_name(h) for h in allowed_hosts}
        if bind_host not in WILDCARD_BINDS:
            hosts.add(host_name(bind_host))
        self.any_host = ANY in hosts
        self.hosts = frozenset(hosts - {ANY})
        self.origins = frozenset(o.strip().rstrip("/").lower() for o in allowed_origins)

    def host_ok(self, host: str | None) -> bool:
        """A request names a host we answer to: loopback, the bound address, or a listed one."""
        if self.any_host:
            return True
        if not host:
            return False  # HTTP/1.1 requires it; without one nothing says whom the request was meant for
        name = host_name(host)
        return _is_loopback(name) or name in self.hosts

    def origin_ok(self, origin: str | None) -> bool:
        """No ``Origin`` (not a browser, or same-origin GET), a loopback page, or a listed origin."""
        if origin is None:
            return True
        origin = origin.strip().rstrip("/").lower()
        if ANY in self.origins or origin in self.origins:
            return True
        scheme, sep, authority = origin.partition("://")
        return bool(sep) and scheme in ("http", "https") and _is_loopback(host_name(authority))


def _refusal(status: int, error: str) -> Response:
    return JSONResponse({"ok": False, "error": error}, status_code=status)


class HostGuard:
    """Refuses a request naming a foreign host (421) or sent by a foreign page (403), and answers every preflight
    itself without opening CORS; everything else goes on to ``app``."""

    def __init__(self, app: ASGIApp, policy: HostPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        refusal = self._check(headers)
        if refusal is None and scope["type"] == "http" and scope.get("method") == "OPTIONS":
            # closed CORS: the preflight is answered with no Access-Control-Allow-* header, so a browser stops here
            refusal = Response(status_code=204, headers={"Allow": "GET, POST, DELETE, OPTIONS"})
        if refusal is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        else:
            await refusal(scope, receive, send)

    def _check(self, headers: Headers) -> Response | None:
        if not self.policy.host_ok(headers.get("host")):
            return _refusal(421, "the request's Host is not one this server answers to (CUEDRECALL_HTTP_ALLOWED_HOSTS)")
        if not self.policy.origin_ok(headers.get("origin")):
            return _refusal(403, "requests from this Origin are refused (CUEDRECALL_HTTP_ALLOWED_ORIGINS)")
        return None


class BodyTooLarge(Exception):
    """The body read so far passed the bound."""


def framing_problem(headers: Headers) -> str | None:
    """Why the request's framing is ambiguous (an answer of 400 before a byte is read), or None.

    Both ``Content-Length`` and ``Transfer-Encoding`` (request smuggling: the parser reads one, a bound
    the other), several ``Content-Length`` values, one that is not a decimal number, or a transfer coding
    other than ``chunked``.
    """
    lengths = headers.getlist("content-length")
    codings = headers.getlist("transfer-encoding")
    if lengths and codings:
        return "the request has both Content-Length and Transfer-Encoding: send one"
    if len(lengths) > 1 or any("," in value for value in lengths):
        return "the request has more than one Content-Length"
    if lengths and not (lengths[0].strip().isascii() and lengths[0].strip().isdigit()):
        return "the request's Content-Length is not a decimal number"
    if len(codings) > 1 or any(value.strip().lower() != "chunked" for value in codings):
        return "the request's Transfer-Encoding is not chunked (the only coding accepted)"
    return None


class BodyLimit:
    """Answers 413 to a body over ``max_bytes`` and 400 to ambiguous framing, whatever the headers claim.

    ``Content-Length`` over the bound is refused before reading; otherwise the body is read here, the
    bytes actually received counted, and 413 answered as soon as the count passes the bound (the rest
    is never read); a body not whole within ``timeout`` seconds is answered 408. The body read is handed
    on as one message, so at most ``max_bytes`` are ever held for a request.
    """

    def __init__(self, app: ASGIApp, max_bytes: int, timeout: float = BODY_TIMEOUT) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        problem = framing_problem(headers)
        if problem is not None:
            await _closing(_refusal(400, problem))(scope, receive, send)
            return
        length = headers.get("content-length")
        if length is not None and int(length) > self.max_bytes:
            await self._too_large(scope, receive, send)
            return
        try:
            with anyio.fail_after(self.timeout):
                body = await self._read_bounded(receive)
        except BodyTooLarge:
            await self._too_large(scope, receive, send)
            return
        except TimeoutError:
            message = f"the request body did not arrive within {self.timeout:g} seconds"
            await _closing(_refusal(408, message))(scope, receive, send)
            return
        if body is not None:  # None: the client went away mid-body, nobody to answer
            await self.app(scope, replay(body, receive), send)

    async def _read_bounded(self, receive: Receive) -> bytes | None:
        parts: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                raise BodyTooLarge()
            parts.append(chunk)
            if not message.get("more_body", False):
                return b"".join(parts)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = _refusal(413, f"the request body is over {self.max_bytes} bytes (CUEDRECALL_HTTP_MAX_BODY)")
        # the unread rest of the body is never read: the connection is closed after this answer
        await _closing(response)(scope, receive, send)


def _closing(response: Response) -> Response:
    """The response, telling the client the connection ends with it (the unread rest of a body is dropped)."""
    response.headers["Connection"] = "close"
    return response


def replay(body: bytes, receive: Receive) -> Receive:
    """A receive that gives the body read already as one message, then whatever the connection says next."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


def policy_of(allowed_hosts: str, allowed_origins: str, bind_host: str = "") -> HostPolicy:
    """The policy the settings name (comma-separated lists; empty: loopback only)."""
    return HostPolicy(split_list(allowed_hosts), split_list(allowed_origins), bind_host)


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline on every request head (the slowloris rule).

    uvicorn holds a connection that sends part of a request head for as long as bytes keep coming, or
    forever before its first request. Here a connection with no request in hand is closed
    ``header_timeout`` seconds after it opened or after its last answer, whatever it sent meanwhile.
    """

    header_timeout = HEADER_TIMEOUT
    _head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm_head_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_deadline()
        super().connection_lost(exc)

    def _arm_head_deadline(self) -> None:
        self._disarm_head_deadline()
        if not self.transport.is_closing():
            self._head_deadline = self.loop.call_later(self.header_timeout, self._head_overdue)

    def _disarm_head_deadline(self) -> None:
        deadline = self._head_deadline
        if deadline is not None:
            deadline.cancel()
            self._head_deadline = None

    def _head_overdue(self) -> None:
        """Close the connection unless a request is being served (its answer arms the next deadline)."""
        self._head_deadline = None
        serving = self.cycle is not None and not self.cycle.response_complete
        if serving or self.transport.is_closing():
            return
        try:
            self.conn.send(h11.ConnectionClosed())
        except h11.LocalProtocolError:  # mid-request on their side: nothing to say, just close
            pass
        self.transport.close()


def protocol_with(header_timeout: float) -> type[GuardedH11Protocol]:
    """The guarded protocol with another head deadline (the tests' short one)."""
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"header_timeout": header_timeout})


def server_limits(header_timeout: float = HEADER_TIMEOUT) -> dict[str, Any]:
    """The uvicorn settings every HTTP server here runs with: the guarded protocol and the limits above."""
    return {
        "http": protocol_with(header_timeout) if header_timeout != HEADER_TIMEOUT else GuardedH11Protocol,
        "timeout_keep_alive": KEEP_ALIVE,
        "limit_concurrency": LIMIT_CONCURRENCY,
        "h11_max_incomplete_event_size": MAX_HEAD,
    }
