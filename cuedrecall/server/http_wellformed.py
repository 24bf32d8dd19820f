"""The HTTP side of the hostile-bytes rule: a POST body that is not one readable JSON value is answered 400.

The SDK's streamable HTTP transport parses the body with ``json.loads`` and answers any
exception with a 500 naming Python's own error (invalid UTF-8, an integer over 4,300
digits, nesting ~1,000 deep). This middleware reads the body first, with the same rules
as the stdio transport (``server.jsonrpc.parsed``: the message bounds checked on the bytes
before any object is made), and answers what it refuses with the JSON-RPC parse error,
status 400, the request's id when it can be read. A request naming a method the server
does not have, or params that do not fit its method, is answered here too (status 200,
-32601 or -32602, one short log line; a notification 202) where the SDK's session would
log a page of validation errors. A body it accepts is handed on unchanged. It sits inside
the body bound (``http_guard.BodyLimit``), so at most that many bytes are ever read.
"""

from __future__ import annotations

from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from cuedrecall.server.http_guard import replay
from cuedrecall.server.jsonrpc import PARSE_ERROR, Refusal, check_method, error_body, log_refusal, parsed, request_id


class WellFormedBody:
    """Answers 400 (a JSON-RPC parse error) to a POST body that is not one readable JSON value."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        body = await _body(receive)
        if body is None:  # the client went away mid-body: nobody to answer
            return
        try:
            check_method(parsed(body))
        except Refusal as refusal:
            log_refusal("http", len(body), refusal)
            await _answer(body, refusal)(scope, receive, send)
            return
        await self.app(scope, replay(body, receive), send)


def _answer(body: bytes, refusal: Refusal) -> Response:
    """A parse error is the transport's 400; a refused method or params is the JSON-RPC answer to a request
    (200) and nothing to a notification (202), as the SDK answers a message it takes."""
    if not refusal.answered:
        return Response(status_code=202)
    answer = error_body(request_id(body), refusal.code, refusal.message)
    return JSONResponse(answer, status_code=400 if refusal.code == PARSE_ERROR else 200)


async def _body(receive: Receive) -> bytes | None:
    parts: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(parts)
