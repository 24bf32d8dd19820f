"""The stdio transport: newline-delimited JSON-RPC on stdin and stdout that no input can kill or leave unanswered.

The MCP SDK's ``stdio_server`` reads stdin as strict UTF-8 text (one invalid byte ends the
process) and drops a line pydantic cannot parse without answering it, so the client waits
for its own timeout. Here the rule is: **every line that is not blank gets a well-formed
answer, and the server reads on.** Each line is read as bytes, at most ``MAX_LINE`` of
them held (a longer line is skipped to its end and answered ``-32700``); a line that is
not one JSON-RPC message is answered with the error ``server.jsonrpc`` names (parse error,
invalid request), with its id when one can be read. A lone surrogate escape
(``"\\ud800"``) is valid JSON and reaches the tool, whose argument check refuses it by
name. Answers are written as ASCII JSON, so nothing a caller sent can make one unwritable.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, BinaryIO

import anyio
import mcp.types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from cuedrecall.server.jsonrpc import PARSE_ERROR, Refusal, error_body, log_refusal, message_of, request_id

log = logging.getLogger("cuedrecall")

MAX_LINE = 32 * 1024 * 1024  # bytes of one message: room for a 10 MB argument escaped as JSON
INLINE_PARSE = 64 * 1024  # bytes of a line parsed on the event loop; a longer one goes to a worker thread
DRAIN_WAIT = 120.0  # seconds the requests still running at EOF have to answer (an import may take a while)

Incoming = SessionMessage | bytes  # a message for the session, or an answer the transport writes itself
Streams = tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]


def answer_line(request_id: Any, code: int, message: str) -> bytes:
    """One JSON-RPC error answer, ASCII, newline-terminated."""
    return json.dumps(error_body(request_id, code, message), ensure_ascii=True).encode("ascii") + b"\n"


_too_large = answer_line(None, PARSE_ERROR, f"Parse error: the message is larger than {MAX_LINE} bytes")


def read_line(stream: BinaryIO) -> bytes | None:
    """The next line (without its newline), ``b""`` for one over MAX_LINE (the rest of it skipped), None at EOF."""
    line = stream.readline(MAX_LINE + 1)
    if not line:
        return None
    if len(line) > MAX_LINE and not line.endswith(b"\n"):
        while (rest := stream.readline(1024 * 1024)) and not rest.endswith(b"\n"):
            pass  # skipped to the end of the oversized line, never held whole
        return b""
    return line.rstrip(b"\r\n")


def incoming(raw: bytes) -> Incoming | None:
    """What one line is: a message for the session, an answer to write back, or None (a blank line)."""
    if not raw.strip():
        return None
    try:
        return SessionMessage(message_of(raw))
    except Refusal as refusal:
        log_refusal("stdio", len(raw), refusal)
        if not refusal.answered:
            return None  # a notification is never answered, not even when refused
        return answer_line(request_id(raw), refusal.code, refusal.message)


def encoded(message: SessionMessage) -> bytes:
    """The session's message as one ASCII JSON line (a lone surrogate in it is escaped, never unwritable)."""
    try:
        body = message.message.model_dump(by_alias=True, exclude_none=True, mode="json")
        return json.dumps(body, ensure_ascii=True).encode("ascii") + b"\n"
    except Exception:  # a value JSON cannot carry: the request still gets an answer
        log.exception("stdio: an answer could not be encoded")
        answer_id = getattr(message.message.root, "id", None)
        return answer_line(answer_id, types.INTERNAL_ERROR, "Internal error: the answer could not be encoded")


@asynccontextmanager
async def stdio_transport(stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> AsyncIterator[Streams]:
    """The (read, write) streams ``Server.run`` takes, over the process's stdin and stdout (or the given binary
    files). Lines the transport answers itself go out between the session's answers, one whole line at a time."""
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    to_session, from_stdin = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    from_session, to_stdout = anyio.create_memory_object_stream[SessionMessage](0)
    lines_in, lines_out = anyio.create_memory_object_stream[bytes](16)

    in_flight = _InFlight()

    async def read() -> None:
        async with to_session, lines_in:
            while (raw := await anyio.to_thread.run_sync(read_line, stdin, abandon_on_cancel=True)) is not None:
                # a long line is read off the event loop (a 10 MB line takes a while to parse, and answers keep going
                # out); a short one is parsed here, which saves a worker thread's round trip on every call
                if not raw:
                    item: Incoming | None = _too_large
                elif len(raw) <= INLINE_PARSE:
                    item = incoming(raw)
                else:
                    item = await anyio.to_thread.run_sync(incoming, raw)
                if isinstance(item, SessionMessage):
                    in_flight.started(item)
                    await to_session.send(item)
                elif item is not None:
                    await lines_in.send(item)
            with anyio.move_on_after(DRAIN_WAIT):  # EOF: what is running still answers before the session ends
                await in_flight.idle.wait()

    async def forward(answers: MemoryObjectSendStream[bytes]) -> None:
        async with to_stdout, answers:
            async for message in to_stdout:
                await answers.send(encoded(message))
                in_flight.answered(message)

    async def write() -> None:
        async with lines_out:
            async for line in lines_out:
                await anyio.to_thread.run_sync(_write, stdout, line)

    async with anyio.create_task_group() as group:
        reading = anyio.CancelScope()

        async def read_until_done() -> None:
            with reading:
                await read()

        group.start_soon(read_until_done)
        group.start_soon(forward, lines_in.clone())
        group.start_soon(write)
        try:
            yield from_stdin, from_session
        finally:
            reading.cancel()  # the session is over: stop waiting on stdin; answers already made still go out
            from_session.close()


class _InFlight:
    """The requests handed to the session and not answered yet. The SDK's session closes its answer stream as
    soon as its input ends, so a request still running at EOF (a store, say) could not answer and the process
    would exit 1: at EOF the input is held open until these are answered (at most DRAIN_WAIT)."""

    def __init__(self) -> None:
        self.ids: set[Any] = set()
        self.idle = anyio.Event()
        self.idle.set()

    def started(self, message: SessionMessage) -> None:
        root = message.message.root
        if isinstance(root, types.JSONRPCRequest):
            if self.idle.is_set():
                self.idle = anyio.Event()
            self.ids.add(root.id)

    def answered(self, message: SessionMessage) -> None:
        root = message.message.root
        if isinstance(root, (types.JSONRPCResponse, types.JSONRPCError)):
            self.ids.discard(root.id)
            if not self.ids:
                self.idle.set()


def _write(stream: BinaryIO, line: bytes) -> None:
    stream.write(line)
    stream.flush()
