"""Reading one JSON-RPC message from the bytes a client sent, whatever they are (the stdio and HTTP transports).

The rule: bytes that are not one well-formed message are refused with the JSON-RPC
error a client can read, never an exception out of the transport:

- not valid UTF-8, not JSON (an integer literal over Python's 4,300-digit limit
  included), or over a bound of ``MESSAGE_BOUNDS``: ``-32700`` (parse error);
- JSON but not a JSON-RPC 2.0 message (a batch, an id that is neither a string nor
  an integer): ``-32600`` (invalid request);
- a request naming a method the server does not have: ``-32601``; a request or
  notification whose params do not fit its method: ``-32602`` (the SDK would log
  some 3 KB of validation errors for each; here one short line, rate-limited).

The bounds are checked on the raw bytes, before a Python object is made, so a message
costs memory in proportion to its size (``benchmarks/request_memory.py``): json.loads
makes some 70 bytes of objects for each 2-3 bytes of ``[{},{},...]``, and the SDK copies
a message three times more. The scan (``_Scan``) reads the bytes in 256 KiB chunks with
numpy, in a few MiB whatever the size; a message small enough to be within every bound
by its byte counts alone is not scanned at all.

The refusal carries the request's id when one can be read from the bytes, else null.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, get_args

import mcp.types as types
import numpy as np
from pydantic import ValidationError

log = logging.getLogger("cuedrecall")

MAX_DEPTH = 100  # objects and arrays within one message: above any argument's own bound (tools.bounds.MAX_DEPTH)
# Items: commas, colons and opening brackets outside strings (every value and key but the first of each
# container). tools.bounds.MAX_NODES, 100,000 values in one argument, is at most 200,000 items (object members).
MAX_ITEMS = 500_000
# Bytes inside one string's quotes: the longest string a tool takes (tools.bounds.MAX_TEXT, 1,000,000
# characters) written wholly as escaped surrogate pairs (12 bytes a character).
MAX_STRING = 12_000_000
MESSAGE_BOUNDS = {"depth": MAX_DEPTH, "items": MAX_ITEMS, "string bytes": MAX_STRING}
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
_ID = re.compile(rb'"id"\s*:\s*(-?[0-9]{1,19}(?![0-9.eE])|"[^"\\]{0,200}")')
_CHUNK = 256 * 1024  # bytes scanned at a time
_STEP = np.zeros(256, np.int32)
_STEP[[ord("["), ord("{")]] = 1
_STEP[[ord("]"), ord("}")]] = -1
_ITEM = np.zeros(256, bool)
_ITEM[[ord(","), ord(":"), ord("["), ord("{")]] = True
_SPECIAL = _ITEM.copy()
_SPECIAL[[ord("]"), ord("}"), ord('"'), ord("\\")]] = True


def _methods(union: type[Any]) -> dict[str, type[Any]]:
    """The model of each method in a union of the SDK's models (ClientRequest, ClientNotification)."""
    members = get_args(union.model_fields["root"].annotation)
    return {get_args(model.model_fields["method"].annotation)[0]: model for model in members}


REQUEST_METHODS = _methods(types.ClientRequest)
NOTIFICATION_METHODS = _methods(types.ClientNotification)


@dataclass(frozen=True)
class Refusal(Exception):
    """Bytes the transport answers itself: the JSON-RPC code and what was wrong."""

    code: int
    message: str
    answered: bool = True  # False for a notification: refused, logged, never answered


def error_body(request_id: Any, code: int, message: str) -> dict[str, Any]:
    """One JSON-RPC error answer."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def parsed(raw: bytes) -> Any:
    """The JSON value the bytes hold, or the Refusal (parse error) saying why they hold none; the bounds of
    ``MESSAGE_BOUNDS`` are checked on the bytes before any object is made."""
    problem = bounds_problem(raw)
    if problem is not None:
        raise Refusal(PARSE_ERROR, f"Parse error: {problem}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Refusal(PARSE_ERROR, f"Parse error: the message is not valid UTF-8 (byte {exc.start})") from None
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise Refusal(PARSE_ERROR, f"Parse error: {_reason(exc)}") from None


def message_of(raw: bytes) -> types.JSONRPCMessage:
    """The JSON-RPC message a line holds, or the Refusal saying why it holds none (or why the server cannot
    take it: a method it does not have, params that do not fit the method)."""
    data = parsed(raw)
    if not isinstance(data, dict):
        raise Refusal(INVALID_REQUEST, "Invalid Request: a message is one JSON object (batches are not accepted)")
    try:
        message = types.JSONRPCMessage.model_validate(data)
    except Exception:  # pydantic's ValidationError, or anything its validators raise
        message = None
    # a line with an id the request model refused would otherwise pass as a notification, and go unanswered
    if message is None or ("id" in data and isinstance(message.root, types.JSONRPCNotification)):
        raise Refusal(
            INVALID_REQUEST,
            "Invalid Request: not a JSON-RPC 2.0 request, notification or response "
            '(jsonrpc "2.0", a method or a result, an id that is a string or '
            "an integer)",
        )
    check_method(data)
    return message


def check_method(data: Any) -> None:
    """The Refusal for a request (or notification) the SDK's session would refuse with a page of validation
    errors in the log: a method the server does not have (-32601), params that do not fit it (-32602).
    Anything else (a response, a value that is not a message) is left to the caller's own checks."""
    if not isinstance(data, dict) or not isinstance(data.get("method"), str):
        return
    method, notification = data["method"], "id" not in data
    answered = not notification
    model = (NOTIFICATION_METHODS if notification else REQUEST_METHODS).get(method)
    if model is None:
        raise Refusal(METHOD_NOT_FOUND, f"Method not found: {method[:80]!r}", answered)
    try:
        model.model_validate({"method": method, **({"params": data["params"]} if "params" in data else {})})
    except ValidationError as exc:
        raise Refusal(INVALID_PARAMS, f"Invalid params for {method}: {_first_error(exc)}", answered) from None
    except Exception:  # anything a validator raises: still a refusal the caller can read
        raise Refusal(INVALID_PARAMS, f"Invalid params for {method}", answered) from None


def _first_error(exc: ValidationError) -> str:
    """The first of pydantic's errors in a few words: where and what."""
    errors = exc.errors(include_url=False, include_input=False)
    if not errors:
        return "not accepted"
    first = errors[0]
    where = ".".join(str(part) for part in first.get("loc", ()))
    return f"{where[:80] or 'params'}: {str(first.get('msg', ''))[:100]}"


def _reason(exc: Exception) -> str:
    text = str(exc)
    if "integer string conversion" in text or "digits" in text:
        return "an integer literal longer than 4,300 digits"
    return text[:200]


# -- the bounds, on the bytes --------------------------------------------------------------------------------


def bounds_problem(raw: bytes) -> str | None:
    """What bound of ``MESSAGE_BOUNDS`` the bytes break (the first one met), or None."""
    opening = raw.count(b"[") + raw.count(b"{")
    if opening <= MAX_DEPTH and opening + raw.count(b",") + raw.count(b":") <= MAX_ITEMS and len(raw) <= MAX_STRING + 2:
        return None  # within every bound even counting what sits inside strings: no scan needed
    scan = _Scan(raw)
    for _ in scan.chunks(stop_early=True):
        pass
    if scan.depth > MAX_DEPTH:
        return f"the message is nested deeper than {MAX_DEPTH} levels"
    if scan.items > MAX_ITEMS:
        return (
            f"the message holds more than {MAX_ITEMS:,} items (values and keys of its arrays and "
            "objects; no argument may hold more than 100,000 values)"
        )
    if scan.longest > MAX_STRING:
        return f"the message holds a string longer than {MAX_STRING:,} bytes"
    return None


_Chunk = tuple[int, np.ndarray, np.ndarray, np.ndarray]  # offset, real quotes, inside strings, depth after


class _Scan:
    """One pass over a message's bytes, a chunk at a time: which bytes lie inside strings (a quote counts when
    not escaped by an odd run of backslashes), the nesting depth after each byte outside them, the items (a
    comma, colon or opening bracket outside strings) and the longest string so far."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self.depth = 0  # the deepest nesting seen
        self.items = 0
        self.longest = 0  # bytes inside the longest string's quotes
        self._level = 0  # the nesting at the end of the chunk read
        self._inside = False  # the chunk read ended inside a string
        self._opened = -1  # where that string's opening quote is
        self._slashes = 0  # backslashes ending the chunk read

    def over(self) -> bool:
        return self.depth > MAX_DEPTH or self.items > MAX_ITEMS or self.longest > MAX_STRING

    def chunks(self, stop_early: bool = False) -> Iterator[_Chunk | None]:
        """Per chunk: its offset, the real quotes, whether each byte is inside a string (an opening quote is,
        a closing one is not), and the depth after each byte; None for a chunk of plain bytes (no quote,
        backslash, bracket, comma or colon: the inside of a long string, a long number), which changes nothing
        but the length of a string it lies in."""
        for offset in range(0, len(self.raw), _CHUNK):
            codes = np.frombuffer(self.raw, np.uint8, min(_CHUNK, len(self.raw) - offset), offset)
            if not _SPECIAL[codes].any():
                self._slashes = 0
                if self._inside:
                    self.longest = max(self.longest, offset + len(codes) - self._opened - 1)
                yield None
                if stop_early and self.over():
                    return
                continue
            quotes = self._real_quotes(codes)
            inside = (np.cumsum(quotes, dtype=np.int32) + self._inside) % 2 == 1
            outside = ~inside
            levels = np.cumsum(np.where(outside, _STEP[codes], 0), dtype=np.int32) + self._level
            self.depth = max(self.depth, int(levels.max(initial=self._level)))
            self.items += int(np.count_nonzero(_ITEM[codes] & outside))
            self._strings(offset, quotes, inside, len(codes))
            self._level, self._inside = int(levels[-1]), bool(inside[-1])
            yield offset, quotes, inside, levels
            if stop_early and self.over():
                return

    def _real_quotes(self, codes: np.ndarray) -> np.ndarray:
        quotes = codes == ord('"')
        slashes = codes == ord("\\")
        if self._slashes or slashes.any():
            at = np.flatnonzero(quotes)
            index = np.arange(len(codes))
            last_other = np.maximum.accumulate(np.where(slashes, -1, index))  # the last non-backslash so far
            before = at - 1
            run = np.where(before < 0, 0, before - last_other[np.maximum(before, 0)])
            run = np.where((before >= 0) & (last_other[np.maximum(before, 0)] < 0), at + self._slashes, run)
            run = np.where(before < 0, self._slashes, run)
            quotes[at[run % 2 == 1]] = False  # escaped
            tail = len(codes) - 1 - int(last_other[-1])
            self._slashes = tail + self._slashes if last_other[-1] < 0 else tail
        else:
            self._slashes = 0
        return quotes

    def _strings(self, offset: int, quotes: np.ndarray, inside: np.ndarray, size: int) -> None:
        at = np.flatnonzero(quotes)
        opens, closes = at[inside[at]] + offset, at[~inside[at]] + offset
        if self._inside and len(closes):  # the string open at the chunk's start closes here
            self.longest = max(self.longest, int(closes[0]) - self._opened - 1)
            closes = closes[1:]
        elif self._inside:
            self.longest = max(self.longest, offset + size - self._opened - 1)
        pairs = min(len(opens), len(closes))
        if pairs:
            self.longest = max(self.longest, int((closes[:pairs] - opens[:pairs]).max()) - 1)
        if len(opens) > len(closes):  # a string still open at the chunk's end
            self._opened = int(opens[-1])
            self.longest = max(self.longest, offset + size - self._opened - 1)


def request_id(raw: bytes) -> Any:
    """The id of a line we could not read as a message, when its top-level object names one; else None.

    Read from the raw bytes (the line may be invalid UTF-8, unparseable, too deep or too large to parse):
    the first ``"id"`` key that sits in the top-level object, outside every string, in the same bounded
    scan as the bounds.
    """
    try:
        candidates = _ID.finditer(raw)
        match = next(candidates, None)
        scan = _Scan(raw)
        for chunk in scan.chunks():
            if chunk is None:  # plain bytes: no key starts here
                continue
            offset, quotes, inside, levels = chunk
            end = offset + len(quotes)
            while match is not None and match.start() < end:
                at = match.start() - offset
                if quotes[at] and inside[at] and levels[at] == 1:
                    value = match.group(1)
                    return value[1:-1].decode("utf-8", "replace") if value.startswith(b'"') else int(value)
                match = next(candidates, None)
            if match is None:
                return None
    except Exception:  # an id is a courtesy; the answer goes out with null
        log.debug("no id could be read from a refused message", exc_info=True)
    return None


# -- the log: one short line a refusal, at most REFUSALS_LOGGED a minute ---------------------------------------

REFUSALS_LOGGED = 10  # warnings a minute; the rest at debug, their number told when the minute ends


class _RefusalLog:
    def __init__(self) -> None:
        self.window = 0.0
        self.logged = 0
        self.quiet = 0

    def __call__(self, transport: str, size: int, refusal: Refusal) -> None:
        now = time.monotonic()
        if now - self.window >= 60.0:
            if self.quiet:
                log.warning("%s: %d more refused messages in the last minute were not logged", transport, self.quiet)
            self.window, self.logged, self.quiet = now, 0, 0
        if self.logged < REFUSALS_LOGGED:
            self.logged += 1
            log.warning(
                "%s: refused a message of %d bytes (%d): %s", transport, size, refusal.code, refusal.message[:160]
            )
        else:
            self.quiet += 1
            log.debug(
                "%s: refused a message of %d bytes (%d): %s", transport, size, refusal.code, refusal.message[:160]
            )


log_refusal = _RefusalLog()
