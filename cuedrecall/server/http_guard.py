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
- **Body bound.** A body over ``CUEDRECALL_HTTP_MAX_BODY`` bytes is answered 413:
  from ``Content-Length`` before a byte is read, or (a chunked body) as soon as
  the bytes read pass the bound; at most the bound is ever held in memory.
"""

from __future__ import annotations

import ipaddress
from typing import Iterable

from starlette.datastructures import Headers
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARD_BINDS = frozenset({"", "0.0.0.0", "::"})
ANY = "*"


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

    def __init__(self, allowed_hosts: Iterable[str] = (), allowed_origins: Iterable[str] = (),
                 bind_host: str = "") -> None:
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


class BodyLimit:
    """Answers 413 to a body over ``max_bytes``: on ``Content-Length`` before reading, else while reading."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = Headers(scope=scope).get("content-length")
        if length is not None:
            if not length.strip().isdigit() or int(length) > self.max_bytes:
                await self._too_large(scope, receive, send)
                return
            await self.app(scope, receive, send)  # the server reads exactly Content-Length bytes
            return
        try:  # chunked (no length): read up to the bound here, then hand the body on whole
            body = await self._read_bounded(receive)
        except BodyTooLarge:
            await self._too_large(scope, receive, send)
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
        # the unread rest of the body is never read: the server closes the connection after this answer
        await response(scope, receive, send)


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
