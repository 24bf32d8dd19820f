"""Reading one JSON-RPC message from the bytes a client sent, whatever they are (the stdio and HTTP transports).

The rule: bytes that are not one well-formed message are refused with the JSON-RPC
error a client can read, never an exception out of the transport:

- not valid UTF-8, not JSON (an integer literal over Python's 4,300-digit limit
  included) or nested deeper than ``MAX_DEPTH``: ``-32700`` (parse error);
- JSON but not a JSON-RPC 2.0 message (a batch, an id that is neither a string nor
  an integer): ``-32600`` (invalid request).

The refusal carries the request's id when one can be read from the bytes, else null.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Any

import mcp.types as types
import numpy as np

log = logging.getLogger("cuedrecall")

MAX_DEPTH = 100  # objects and arrays within one message: above any argument's own bound (tools.bounds.MAX_DEPTH)
PARSE_ERROR, INVALID_REQUEST = -32700, -32600
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_ID = re.compile(rb'"id"\s*:\s*(-?[0-9]{1,19}(?![0-9.eE])|"[^"\\]{0,200}")')


@dataclass(frozen=True)
class Refusal(Exception):
    """Bytes the transport answers itself: the JSON-RPC code and what was wrong."""

    code: int
    message: str


def error_body(request_id: Any, code: int, message: str) -> dict[str, Any]:
    """One JSON-RPC error answer."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def parsed(raw: bytes) -> Any:
    """The JSON value the bytes hold, or the Refusal (parse error) saying why they hold none."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Refusal(PARSE_ERROR, f"Parse error: the message is not valid UTF-8 (byte {exc.start})") from None
    if _depth(raw) > MAX_DEPTH:
        raise Refusal(PARSE_ERROR, f"Parse error: the message is nested deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise Refusal(PARSE_ERROR, f"Parse error: {_reason(exc)}") from None


def message_of(raw: bytes) -> types.JSONRPCMessage:
    """The JSON-RPC message a line holds, or the Refusal saying why it holds none."""
    data = parsed(raw)
    if not isinstance(data, dict):
        raise Refusal(INVALID_REQUEST, "Invalid Request: a message is one JSON object (batches are not accepted)")
    try:
        message = types.JSONRPCMessage.model_validate(data)
    except Exception:  # pydantic's ValidationError, or anything its validators raise
        message = None
    # a line with an id the request model refused would otherwise pass as a notification, and go unanswered
    if message is None or ("id" in data and isinstance(message.root, types.JSONRPCNotification)):
        raise Refusal(INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 request, notification or response "
                                       "(jsonrpc \"2.0\", a method or a result, an id that is a string or "
                                       "an integer)")
    return message


def _reason(exc: Exception) -> str:
    text = str(exc)
    if "integer string conversion" in text or "digits" in text:
        return "an integer literal longer than 4,300 digits"
    return text[:200]


def _depth(raw: bytes) -> int:
    """The deepest nesting of objects and arrays in the line, brackets inside strings not counted."""
    if raw.count(b"{") + raw.count(b"[") <= MAX_DEPTH:
        return 0  # cannot be deeper than the brackets it holds: no scan needed
    return int(_depths(_blanked(raw)).max(initial=0))


def _blanked(raw: bytes) -> bytes:
    """The line with every string's inside replaced by spaces, its quotes kept: the same length, no brackets
    or keys hiding in strings."""
    return _STRING.sub(lambda m: b'"' + b" " * (len(m[0]) - 2) + b'"', raw)


def _depths(blanked: bytes) -> np.ndarray:
    """The nesting depth after each byte of a blanked line."""
    codes = np.frombuffer(blanked, dtype=np.uint8)
    steps = np.isin(codes, (ord("{"), ord("["))).astype(np.int32) - np.isin(codes, (ord("}"), ord("]")))
    return np.cumsum(steps)


def request_id(raw: bytes) -> Any:
    """The id of a line we could not read as a message, when its top-level object names one; else None.

    Read from the raw bytes (the line may be invalid UTF-8, unparseable or too deep to parse): the
    first ``"id"`` key that sits in the top-level object, outside every string.
    """
    try:
        blanked = _blanked(raw)
        depths = _depths(blanked)
        for match in _ID.finditer(raw):
            start = match.start()
            if depths[start] == 1 and blanked[start:start + 4] == b'"  "':
                value = match.group(1)
                return value[1:-1].decode("utf-8", "replace") if value.startswith(b'"') else int(value)
    except Exception:  # an id is a courtesy; the answer goes out with null
        log.debug("stdio: no id could be read from a refused line", exc_info=True)
    return None


