"""Hostile-input fuzzing of every tool through the real MCP client, over stdio and streamable HTTP (issue 16).

The rule each call is checked against: **every call gets a well-formed answer** (one JSON
object; ``ok: false`` with a short error naming the problem, or a valid result; or a
JSON-RPC error for a message the transport cannot read), **the server never dies, never
answers a traceback, and never writes on a refused call** (the rows of every table a tool
writes are counted before and after each call answered ``ok: false``).

Calls are drawn by hypothesis (generation only, no shrinking, so every failure is
counted): a tool, valid arguments for it, then up to three arguments replaced by hostile
values (random types, strings up to 10 MB, nesting up to 96 deep, NUL bytes, FTS5 and SQL syntax,
path-like refs and paths, negative and huge integers, NaN, malformed cues), an argument
dropped or an unknown one added. Values the client itself cannot send (lone surrogates,
integers over 4,300 digits, nesting past the transport's bound, which the SDK's HTTP
client meets with an exception that ends its session) go as raw lines and raw HTTP
bodies in the raw phase, each of which must be answered.

The shapes phase sends what fits inside the body bound but once cost the server 1.5-1.8 GB
(the adversarial probe): arrays of millions of zeros, empty objects or empty strings, objects
of a million members, strings of 12-16 MB, each up to 16 MiB, and the same just under the
message bounds; method names the server does not have, params that do not fit the method.
Each must be answered (a JSON-RPC error, or the tool's ``ok: false``). The framing phase (HTTP)
sends every combination of Content-Length (right, short, over the bound, not a number, two
that differ) and Transfer-Encoding (none, chunked, twice, ``gzip, chunked``) over a store call:
each is answered 4xx or served, never a 5xx; one that is ambiguous is refused and writes
nothing; a request head never finished is closed within the head deadline.

    python -m benchmarks.fuzz --calls 3000 --raw 300 --shapes 60 --out benchmarks/results/fuzz.md
    python -m benchmarks.fuzz --backend postgres --calls 1500 --raw 150 --shapes 40 --out benchmarks/results/fuzz.md

``--backend postgres`` runs every server over a private PostgreSQL server (pgserver, benchmarks/pg.py), a fresh
schema each; the rows a refused call must leave alone are then counted through the store's read methods.

``tests/system/test_fuzz_mcp.py`` runs the same strategies for a few hundred calls.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import random
import shlex
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import McpError

from benchmarks import pg, serving
from benchmarks.hostile import BASE, SHAPES, TABLES, body_for
from cuedrecall.api import ERROR_MAX, Memory
from cuedrecall.clock import fixed_clock
from cuedrecall.config import Settings
from cuedrecall.server.http_guard import HEADER_TIMEOUT
from cuedrecall.server.mcp import http_app
from cuedrecall.tools import TOOLS
from cuedrecall.ui.app import running

REPO = serving.REPO
TOKEN = "fuzz-token"
HEADERS = {  # a raw JSON-RPC POST to the HTTP server
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "Authorization": f"Bearer {TOKEN}",
}
SPECIAL_STRINGS = [
    "",
    " ",
    '"',
    "*",
    "NEAR(",
    "NEAR(a b, 2)",
    "a OR b",
    "-x",
    "a:b",
    "^",
    "a AND",
    "NOT",
    "{a b}",
    "(",
    ")",
    "'; DROP TABLE memories; --",
    '" OR 1=1 --',
    "mem:1",
    "ep:1",
    "mem:0",
    "mem:-1",
    "mem:\u00b2",
    "ep:\u0663",
    f"mem:{2**63}",
    "mem:" + "9" * 30,
    "mem:",
    ":",
    "../../etc/passwd",
    "/etc/passwd",
    "..",
    ".",
    "~/.ssh/id_rsa",
    "C:\\Windows\\system32",
    "exports/../x.jsonl",
    "\x00",
    "a\x00b",
    "\x7f\x1b[31m",
    "%s%n%x",
    "\u202eevil",
    "\ufeff",
    "🙂" * 50,
    "long_ago",
    "2025-13-45",
    "2025-01-01",
    "9999-12-31T23:59:59Z",
    "0000-00-00",
    "yesterday",
    "user",
    "assistant",
    '{"a": 1}',
    "[1, 2]",
    "null",
    "NaN",
    "1e999",
]
CUES = [
    {},
    {"confidence": "sure"},
    {"after": "2025-01-01"},
    {"after": "2025-01-01", "confidence": "maybe"},
    {"ago": {"unit": "days", "value": -1}, "confidence": "sure"},
    {"ago": {"unit": "years", "value": 2}, "confidence": "vague"},
    {"ago": "long_ago", "confidence": "likely"},
    {"ago": "soon", "confidence": "likely"},
    {"after": "2025-02-01", "before": "2025-01-01", "confidence": "sure"},
    {"after": "x" * 100, "confidence": "sure"},
    {"ago": {"unit": "days", "value": 2**63}, "confidence": "sure"},
    {"ago": {"unit": "days", "value": 10**9}, "confidence": "sure"},
    {"colour": 1, "confidence": "sure"},
]


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for level in range(depth):
        value = {"x": value} if level % 2 else [value]
    return value


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, -1, 1, 2**31, 2**53 + 1, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 10**30]),
    st.floats(),
    st.sampled_from([float("nan"), float("inf"), float("-inf"), -0.0, 1e308, 5e-324]),
    st.text(st.characters(exclude_categories=("Cs",)), max_size=40),
    st.sampled_from(SPECIAL_STRINGS),
)
BIG_STRINGS = st.sampled_from([10_000_000, 1_000_001, 300_000, 20_000, 257]).map(lambda n: "x" * n)
# an argument at depth d makes a message d + 3 deep: up to 96 stays inside the transport's bound (100), so the
# argument check answers it by name; deeper nesting (to 1,000) goes in the raw phase, which the client cannot send
DEEP = st.sampled_from([5, 31, 32, 33, 60, 96]).map(nested)


def hostile_values() -> st.SearchStrategy[Any]:
    """Any value a careless or hostile client could send as one argument (and the client can serialise)."""
    containers = st.recursive(
        SCALARS,
        lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
        max_leaves=12,
    )
    return st.one_of(
        SCALARS,
        containers,
        BIG_STRINGS,
        DEEP,
        st.sampled_from(CUES),
        st.lists(st.sampled_from(SPECIAL_STRINGS), min_size=1, max_size=25),
    )


@st.composite
def tool_calls(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A tool and its arguments: valid ones with up to three replaced by hostile values, maybe one dropped
    or an unknown one added."""
    name = draw(st.sampled_from(sorted(TOOLS)))
    arguments = dict(BASE[name])
    params = sorted(TOOLS[name].params)
    if params:
        for key in draw(st.lists(st.sampled_from(params), max_size=3, unique=True)):
            arguments[key] = draw(hostile_values())
    if arguments and draw(st.integers(0, 9)) == 0:
        arguments.pop(draw(st.sampled_from(sorted(arguments))))
    if draw(st.integers(0, 19)) == 0:
        arguments[draw(st.sampled_from(["colour", "", "agent-id", "__proto__", "a" * 300]))] = 1
    return name, _one_huge(arguments)


def _one_huge(arguments: dict[str, Any]) -> dict[str, Any]:
    """At most one string of a megabyte or more per call: two 10 MB strings pass the HTTP body bound (16 MiB),
    answered 413, which the SDK's HTTP client meets with an exception that ends its session."""
    huge = [key for key, value in arguments.items() if isinstance(value, str) and len(value) >= 1_000_000]
    return {key: "x" * 257 if key in huge[1:] else value for key, value in arguments.items()}


# -- checking one answer -------------------------------------------------------------------------------------


def problem_with(name: str, answer: Any, rows_before: tuple[int, ...], rows_after: tuple[int, ...]) -> str | None:
    """What is wrong with one call's answer, or None: the rule of this module, for one call."""
    if isinstance(answer, McpError):
        message = answer.error.message or ""
        return None if message and "Traceback" not in message else f"{name}: a JSON-RPC error without words"
    if isinstance(answer, BaseException):
        return f"{name}: the call raised {type(answer).__name__}: {str(answer)[:200]}"
    if len(answer.content) != 1 or answer.content[0].type != "text":
        return f"{name}: not one text content"
    text = answer.content[0].text
    if "Traceback (most recent call last)" in text:
        return f"{name}: a traceback in the answer"
    try:
        payload = json.loads(text)
    except ValueError:
        return f"{name}: the answer is not JSON: {text[:200]}"
    if not isinstance(payload, dict):
        return f"{name}: the answer is not one JSON object"
    if payload.get("ok") is False:
        error = payload.get("error")
        if not isinstance(error, str) or not error or len(error) > ERROR_MAX + 20:
            return f"{name}: ok:false without a short error ({str(error)[:200]})"
        if rows_after != rows_before:
            return f"{name}: refused ({error[:120]}) but rows changed {rows_before} -> {rows_after}"
    return None


def row_counts(target: Target) -> tuple[int, ...]:
    """The rows of every table a tool writes: on SQLite read from the file through a connection of our own, on
    PostgreSQL through a read-only store of our own on the same database (``isolation_fuzz.Snapshot``: the
    store's read methods, no SQL here)."""
    if target.db_url:
        tables: dict[str, int] = {}
        for rows in target.reader()().values():
            for table, held in rows.items():
                tables[table] = tables.get(table, 0) + len(held)
        return tuple(tables.get(table, 0) for table in TABLES)
    conn = sqlite3.connect(f"file:{target.db}?mode=ro", uri=True, timeout=30)
    try:
        return tuple(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in TABLES)
    finally:
        conn.close()


# -- targets: one MCP client session held open across many calls -----------------------------------------------


@dataclass
class Target:
    """One transport's server and the client session the calls go through (run in a portal's event loop)."""

    transport: str
    db: Path
    portal: BlockingPortal
    session: ClientSession
    url: str = ""  # the HTTP server's base URL ("" over stdio)
    answer_wait: timedelta = timedelta(seconds=60)
    body_bound: int = 16 * 1024 * 1024  # the HTTP server's body bound
    head_deadline: float = HEADER_TIMEOUT  # the HTTP server's deadline on a request head
    db_url: str = ""  # the PostgreSQL database the server uses ("" = the SQLite file ``db``)
    _reader: Any = None  # a read-only store of our own on ``db_url``, and its snapshot (opened on first use)

    def reader(self) -> Any:
        """The rows of ``db_url`` read through a read-only Memory of our own (opened on first use)."""
        if self._reader is None:
            from benchmarks.isolation_fuzz import Snapshot

            memory = Memory(settings=_settings(db_url=self.db_url), background=False, read_only=True)
            self._reader = (memory, Snapshot(memory.store_))
        return self._reader[1]

    def close(self) -> None:
        if self._reader is not None:
            self._reader[0].close()
            self._reader = None

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        try:
            return self.portal.call(
                lambda: self.session.call_tool(name, arguments, read_timeout_seconds=self.answer_wait)
            )
        except Exception as exc:  # McpError: the transport's own answer; anything else is a finding
            return exc

    def alive(self) -> bool:
        """The server still answers: the tools are listed and a store and a recall work."""
        try:
            for key in ("", "alive-check"):  # the fuzzing may have paused persistence: writes would be skipped
                self.call("resume_persistence", {"session_key": key})
            listed = self.portal.call(self.session.list_tools)
            stored = self.call("store", {"agent_id": "alive-check", "content": f"still here {time.time()}"})
            found = self.call("recall", {"agent_id": "alive-check", "query": "still here"})
            return (
                len(listed.tools) == len(TOOLS)
                and json.loads(stored.content[0].text)["result"] == "stored"
                and json.loads(found.content[0].text)["messages"]
            )
        except Exception:
            return False


def _settings(**overrides: Any) -> Settings:
    return Settings.from_env({}, embedding_mode="hash", **overrides)


def _server_env(home: Path, db_url: str = "") -> dict[str, str]:
    """A ``cuedrecall serve`` child's environment: HOME in the work folder, PostgreSQL when ``db_url``."""
    return serving.child_env(home, CUEDRECALL_DB_URL=db_url)


@contextlib.asynccontextmanager
async def _stdio_session(db: Path, home: Path, db_url: str = "") -> AsyncIterator[ClientSession]:
    command, *args = serving.serve_command(db, "--embedding", "hash")
    params = StdioServerParameters(
        command=command,
        args=args,
        env=_server_env(home, db_url),
        cwd=str(REPO),
    )
    with open(home / "stdio-stderr.log", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


@contextlib.asynccontextmanager
async def _http_session(url: str) -> AsyncIterator[ClientSession]:
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
    async with (
        client,
        streamable_http_client(url + "/mcp", http_client=client) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@contextlib.contextmanager
def stdio_target(workdir: Path, db_url: str = "") -> Iterator[Target]:
    """A ``cuedrecall serve`` child process over a fresh database (the SQLite file, or the PostgreSQL database at
    ``db_url``), and a client session on its stdio."""
    db = workdir / "stdio.db"
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(_stdio_session(db, workdir, db_url)) as session,
    ):
        target = Target("stdio", db, portal, session, db_url=db_url)
        try:
            yield target
        finally:
            target.close()


@contextlib.contextmanager
def http_target(
    workdir: Path, body_bound: int = 16 * 1024 * 1024, head_deadline: float = HEADER_TIMEOUT, db_url: str = ""
) -> Iterator[Target]:
    """The streamable HTTP app over a fresh database (the SQLite file, or the PostgreSQL database at ``db_url``)
    under uvicorn on loopback, and a client session to it."""
    db = workdir / "http.db"
    settings = _settings(auth_token=TOKEN, http_max_body=body_bound, db_url=db_url)
    with (
        Memory(db, settings=settings, clock=fixed_clock("2025-11-01T12:00:00+00:00")) as memory,
        running(http_app(memory), lifespan="on", header_timeout=head_deadline) as url,
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(_http_session(url)) as session,
    ):
        target = Target(
            "http", db, portal, session, url, body_bound=body_bound, head_deadline=head_deadline, db_url=db_url
        )
        try:
            yield target
        finally:
            target.close()


# -- the run ---------------------------------------------------------------------------------------------------


@dataclass
class Tally:
    """What a run saw: calls per tool and how each was answered, and every failure of the rule."""

    calls: Counter[str] = field(default_factory=Counter)
    answers: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)

    def add(self, name: str, answer: Any, problem: str | None) -> None:
        self.calls[name] += 1
        if isinstance(answer, McpError):
            self.answers["JSON-RPC error"] += 1
        elif isinstance(answer, BaseException):
            self.answers["raised"] += 1
        else:
            ok = _payload_ok(answer)
            self.answers["ok: false" if ok is False else "result"] += 1
        if problem is not None:
            self.failures.append(problem)


def _payload_ok(answer: Any) -> Any:
    try:
        return json.loads(answer.content[0].text).get("ok")
    except Exception:
        return None


def one_call(target: Target, name: str, arguments: dict[str, Any], tally: Tally) -> str | None:
    """Make one call, check it against the rule, count it; the problem found, or None."""
    before = row_counts(target)
    answer = target.call(name, arguments)
    problem = problem_with(name, answer, before, row_counts(target) if _payload_ok(answer) is False else before)
    tally.add(name, answer, problem)
    return problem


def fuzz(target: Target, calls: int, seed: int) -> Tally:
    """``calls`` drawn calls through ``target``; every failure counted, none stops the run."""
    tally = Tally()

    @settings(
        max_examples=calls,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        derandomize=False,
        suppress_health_check=list(HealthCheck),
    )
    @given(tool_calls())
    def run(call: tuple[str, dict[str, Any]]) -> None:
        one_call(target, *call, tally)

    random.seed(seed)
    run()
    if not target.alive():
        tally.failures.append(f"{target.transport}: the server stopped answering")
    return tally


# -- raw lines and bodies: what the client cannot send ------------------------------------------------------------


def raw_messages(count: int, seed: int) -> list[tuple[bytes, int]]:
    """``count`` hostile raw messages with their ids: valid calls whose bytes were damaged or whose values
    the client could not send (lone surrogates, 5,000-digit integers, nesting 1,000 deep, invalid UTF-8)."""
    rng = random.Random(seed)
    poisons = [
        b'"\\ud800"',
        b'"\\udfff tail"',
        b"1" * 5000,
        b"[" * 1000 + b"]" * 1000,
        b'{"a":' * 500 + b"1" + b"}" * 500,
        b'"caf\xe9"',
        b'"\xff\xfe"',
        b"NaN",
        b"-Infinity",
        b'"\\u0000"',
        b"1e999",
        b"[1,2",
    ]
    out = []
    for number in range(count):
        request_id = 1000 + number
        name = rng.choice(sorted(BASE))
        arguments = json.dumps(BASE[name] or {"x": 1}).encode()
        key = rng.choice(list(BASE[name]) or ["x"]).encode()
        value = rng.choice(poisons)
        damaged = arguments.replace(b'"' + key + b'": ', b'"' + key + b'": ' + value + b', "_was": ', 1)
        if rng.random() < 0.2:  # a flipped byte anywhere in the arguments
            at = rng.randrange(len(damaged))
            damaged = damaged[:at] + bytes([rng.randrange(256)]) + damaged[at + 1 :]
        line = (
            b'{"jsonrpc": "2.0", "id": ' + str(request_id).encode() + b', "method": "tools/call", "params": '
            b'{"name": "' + name.encode() + b'", "arguments": ' + damaged + b"}}"
        )
        out.append((line.replace(b"\n", b" "), request_id))
    return out


def _through_stdio(
    workdir: Path, phase: str, messages: list[tuple[bytes, int | None]], db_url: str, timeout: float
) -> tuple[subprocess.CompletedProcess[bytes], list[dict[str, Any]], list[str]]:
    """The messages as lines to one ``cuedrecall serve`` process over ``PHASE.db``, then EOF: the finished process,
    its answers, and the failure of an exit other than 0."""
    lines = [line for line, _ in messages]
    done = serving.stdio_script(workdir / f"{phase}.db", lines, _server_env(workdir, db_url), timeout)
    failures = [] if done.returncode == 0 else [f"stdio {phase}: the server exited {done.returncode}"]
    return done, [json.loads(line) for line in done.stdout.splitlines()], failures


def raw_stdio(workdir: Path, messages: list[tuple[bytes, int]], db_url: str = "") -> tuple[int, list[str]]:
    """The raw messages as lines to a ``cuedrecall serve`` process: each must be answered (its id, or null when
    unreadable), the process must exit cleanly at EOF, nothing may carry a traceback."""
    done, answers, failures = _through_stdio(workdir, "raw", messages, db_url, 600)
    answered = {body.get("id") for body in answers}
    unanswered = [request_id for _, request_id in messages if request_id not in answered]
    nulls = sum(1 for body in answers if body.get("id") is None)
    if len(unanswered) > nulls:
        failures.append(f"stdio raw: {len(unanswered) - nulls} lines never answered (ids {unanswered[:10]})")
    if b"Traceback" in done.stdout:
        failures.append("stdio raw: a traceback in an answer")
    return len(messages), failures


def raw_http(url: str, messages: list[tuple[bytes, int]]) -> tuple[int, list[str]]:
    """The raw messages as HTTP bodies: each answered 200 (a tool's answer) or 4xx with a JSON-RPC error,
    never a 5xx or an empty body."""
    failures = []
    with httpx.Client(timeout=60) as client:
        for body, request_id in messages:
            response = client.post(url + "/mcp/", content=body, headers=HEADERS)
            if response.status_code >= 500 or not response.content:
                failures.append(f"http raw: id {request_id} answered {response.status_code} {response.text[:120]!r}")
    return len(messages), failures


# -- shapes inside the body bound, and method names: what once cost 1.5 GB or 3 KB of log each --------------------

SIZES = (1024 * 1024, 4 * 1024 * 1024, 16 * 1024 * 1024 - 4096)  # bytes of one body, all under the HTTP bound


def shape_messages(count: int, seed: int) -> list[tuple[bytes, int | None]]:
    """``count`` messages with their ids (None: a notification, never answered): a tool call whose argument
    is a hostile shape (``benchmarks.hostile``) of 1, 4 or 16 MiB or just under the message bounds, or a
    method the server does not have, or a ``tools/call`` whose params do not fit it."""
    rng = random.Random(seed)
    out: list[tuple[bytes, int | None]] = []
    for number in range(count):
        request_id = 5000 + number
        kind = rng.random()
        if kind < 0.7:
            tool, shape = rng.choice(sorted(BASE)), rng.choice(sorted(SHAPES))
            out.append((body_for(tool, shape, rng.choice(SIZES), request_id, under=rng.random() < 0.4), request_id))
        elif kind < 0.8:
            method = rng.choice(
                [
                    "tools/nope",
                    "",
                    "TOOLS/CALL",
                    "tools/call/",
                    "\u0000",
                    "x" * 300,
                    "notifications/initialized",
                    "rpc.discover",
                ]
            )
            out.append(
                (
                    json.dumps(
                        {
                            "jsonrpc": "2.0",
                            "id": request_id,
                            "method": method,
                            "params": {"x": [1] * rng.randrange(200)},
                        }
                    ).encode(),
                    request_id,
                )
            )
        elif kind < 0.9:
            params = rng.choice(
                [{}, {"arguments": {}}, {"name": 5}, {"name": "recall", "arguments": [1, 2]}, {"name": ["recall"]}]
            )
            out.append(
                (
                    json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}).encode(),
                    request_id,
                )
            )
        else:
            method = rng.choice(["notifications/nope", "notifications/cancelled", "tools/call"])
            out.append((json.dumps({"jsonrpc": "2.0", "method": method, "params": {"x": 1}}).encode(), None))
    return out


def shapes_stdio(workdir: Path, messages: list[tuple[bytes, int | None]], db_url: str = "") -> tuple[int, list[str]]:
    """The shape messages as lines to a ``cuedrecall serve`` process: each request answered with its id, the
    process alive to the end and exiting 0, its log a few short lines."""
    done, answers, failures = _through_stdio(workdir, "shapes", messages, db_url, 1200)
    answered = {body.get("id") for body in answers}
    unanswered = [request_id for _, request_id in messages if request_id is not None and request_id not in answered]
    if unanswered:
        failures.append(f"stdio shapes: {len(unanswered)} requests never answered (ids {unanswered[:10]})")
    longest = max(map(len, done.stderr.splitlines()), default=0)
    if longest > 400:
        failures.append(f"stdio shapes: a log line of {longest} bytes")
    return len(messages), failures


def shapes_http(url: str, messages: list[tuple[bytes, int | None]]) -> tuple[int, list[str]]:
    """The shape messages as HTTP bodies: each request answered with a JSON-RPC error or the tool's answer
    (never a 5xx, never empty), each notification 202."""
    failures = []
    with httpx.Client(timeout=300) as client:
        for body, request_id in messages:
            response = client.post(url + "/mcp/", content=body, headers=HEADERS)
            if request_id is None:
                if response.status_code != 202:
                    failures.append(f"http shapes: a notification answered {response.status_code}")
            elif response.status_code >= 500 or str(request_id) not in response.text:
                failures.append(f"http shapes: id {request_id} answered {response.status_code} {response.text[:120]!r}")
    return len(messages), failures


# -- framing: every Content-Length x Transfer-Encoding combination -------------------------------------------------

LENGTHS = ("none", "right", "short", "over the bound", "not a number", "two that differ")
CODINGS = ("none", "chunked", "chunked twice", "gzip, chunked")


def _framed(length: str, coding: str, payload: bytes, bound: int) -> bytes:
    """A POST of ``payload`` with the given Content-Length and Transfer-Encoding headers."""
    lines = [
        "POST /mcp/ HTTP/1.1",
        "Host: 127.0.0.1",
        f"Authorization: Bearer {TOKEN}",
        "Content-Type: application/json",
        "Accept: application/json, text/event-stream",
    ]
    lines += {
        "none": [],
        "right": [f"Content-Length: {len(payload)}"],
        "short": [f"Content-Length: {len(payload) // 2}"],
        "over the bound": [f"Content-Length: {bound + 1}"],
        "not a number": ["Content-Length: 12abc"],
        "two that differ": [f"Content-Length: {len(payload)}", f"Content-Length: {len(payload) + 1}"],
    }[length]
    lines += {
        "none": [],
        "chunked": ["Transfer-Encoding: chunked"],
        "chunked twice": ["Transfer-Encoding: chunked", "Transfer-Encoding: chunked"],
        "gzip, chunked": ["Transfer-Encoding: gzip, chunked"],
    }[coding]
    if coding == "none":
        body = payload
    else:
        body = (
            b"".join(
                b"%x\r\n%s\r\n" % (len(payload[i : i + 65536]), payload[i : i + 65536])
                for i in range(0, len(payload), 65536)
            )
            + b"0\r\n\r\n"
        )
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def _exchange(url: str, request: bytes, wait: float) -> tuple[bytes, float]:
    """The bytes the server answers until it closes or ``wait`` seconds pass, and the seconds taken."""
    host, port = url.split("//", 1)[1].split(":")
    started, answer = time.monotonic(), b""
    with socket.create_connection((host, int(port)), timeout=wait) as sock:
        with contextlib.suppress(OSError):
            sock.sendall(request)
        while time.monotonic() - started < wait:
            sock.settimeout(max(0.05, wait - (time.monotonic() - started)))
            try:
                chunk = sock.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            answer += chunk
            if answer.startswith(b"HTTP/1.1 4") and b"\r\n\r\n" in answer:
                break  # a refusal: what follows is its short body
    return answer, time.monotonic() - started


def framing_http(target: Target) -> tuple[int, list[str]]:
    """Every framing combination over a store call (a small one, and one past the body bound), then a head never
    finished. Ambiguous framing must be refused (4xx) and write nothing; nothing may be a 5xx or go unanswered."""
    failures, sent, bound = [], 0, target.body_bound
    for size in ("small", "past the bound"):
        for length in LENGTHS:
            for coding in CODINGS:
                marker = f"framing-{size}-{length}-{coding}".replace(" ", "_")
                content = marker if size == "small" else marker + " " + "x" * bound
                payload = json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "tools/call",
                        "params": {"name": "store", "arguments": {"agent_id": "framing", "content": content}},
                    }
                ).encode()
                before = row_counts(target)
                answer, _ = _exchange(target.url, _framed(length, coding, payload, bound), 30.0)
                sent += 1
                status = answer[9:12].decode("ascii", "replace")
                where = f"framing {size}, Content-Length {length}, Transfer-Encoding {coding}"
                ambiguous = (
                    (coding != "none" and length != "none")
                    or coding in ("chunked twice", "gzip, chunked")
                    or length in ("not a number", "two that differ", "over the bound")
                    or size != "small"
                )
                if not status.isdigit() or status.startswith("5"):
                    failures.append(f"{where}: answered {answer[:60]!r}")
                elif ambiguous and not status.startswith("4"):
                    failures.append(f"{where}: served ({status}), not refused")
                elif ambiguous and row_counts(target) != before:
                    failures.append(f"{where}: refused but a row was written")
    head = b"POST /mcp/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Never-Ends: 1"
    _, held = _exchange(target.url, head, target.head_deadline + 10)
    sent += 1
    if held > target.head_deadline + 3:
        failures.append(f"framing: a head never finished was held {held:.0f} s (deadline {target.head_deadline:g} s)")
    return sent, failures


# -- the report ------------------------------------------------------------------------------------------------


HEAD = [
    "# Hostile-input fuzzing (issue 16)",
    "",
    (
        "Every tool called through the real MCP client (`mcp` ClientSession) with arguments drawn by hypothesis "
        "(`benchmarks/fuzz.py`), and raw damaged lines and bodies the client cannot send. The rule: every call gets a "
        "well-formed answer, the server never dies, never answers a traceback, never writes on a refused call. "
        "`--backend postgres` runs every server over a private PostgreSQL 16 + pgvector server (pgserver), a fresh "
        "schema per server; the rows are then counted through a read-only store of the fuzzer's own "
        "(`isolation_fuzz.Snapshot`, the store's read methods), on SQLite from the file."
    ),
    "",
]


def report(
    tallies: dict[str, Tally],
    raw: dict[str, tuple[int, list[str]]],
    argv: list[str],
    seconds: float,
    backend: str = "sqlite",
) -> str:
    """This backend's section of the results file."""
    lines = [
        f"## {pg.BACKEND_TITLES[backend]}",
        "",
        f"Command: `python -m benchmarks.fuzz {shlex.join(argv)}` ({seconds:.0f} s, Python "
        f"{platform.python_version()}, {platform.machine()}).",
        "",
        "| transport | calls | result | ok: false | JSON-RPC error | raised | failures |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for transport, tally in tallies.items():
        a = tally.answers
        lines.append(
            f"| {transport} | {sum(tally.calls.values())} | {a['result']} | {a['ok: false']} | "
            f"{a['JSON-RPC error']} | {a['raised']} | {len(tally.failures)} |"
        )
    for phase, (sent, failures) in raw.items():
        lines.append(f"| {phase} | {sent} | | | | | {len(failures)} |")
    lines += [
        "",
        "Calls per tool (both transports): "
        + ", ".join(f"{name} {sum(t.calls[name] for t in tallies.values())}" for name in sorted(TOOLS)),
        "",
    ]
    found = [f for tally in tallies.values() for f in tally.failures] + [f for _, fs in raw.values() for f in fs]
    lines += ["### Failures", ""] + ([f"- {failure}" for failure in found[:50]] or ["None."]) + [""]
    return "\n".join(lines)


def _columns() -> str:
    """What the columns and phases of each section mean."""
    lines = [
        "Columns: *result* a tool's valid answer, *ok: false* a refusal naming the problem (rows counted before "
        "and after: unchanged), *JSON-RPC error* the transport's own answer to a message it cannot read, "
        "*raised* the client call failed (a finding). Raw bytes: valid calls with one argument replaced by a "
        "lone surrogate escape, a 5,000-digit integer, nesting 500 or 1,000 deep, invalid UTF-8, NaN, 1e999 "
        "or a cut-off array, a fifth with one byte flipped; over stdio each line must be answered (its id, or "
        "null when unreadable) and the process must exit 0 at EOF, over HTTP no answer may be a 5xx or empty. "
        "The HTTP server is `http_app` with the body check (`server.http_wellformed`) inside or, until it is "
        "wired there, around it. The SDK's HTTP client ends its session on any 4xx (a 413 or a parse "
        "error), so the client phase keeps each call under the body bound and the transport's nesting bound; "
        "the raw phase sends what lies beyond. *Shapes*: a tool call whose argument is an array of zeros, empty "
        "objects or empty strings, an object of many members or a string of 12-16 MB (1, 4 or 16 MiB bodies, "
        "or just under the message bounds of `server/jsonrpc.py`), a method the server does not have, params "
        "that do not fit `tools/call`, notifications of unknown methods: every request answered with its id "
        "(never a 5xx), every notification 202 over HTTP, no stdio log line over 400 bytes. *Framing*: each "
        "Content-Length (none, right, short, over the bound, not a number, two that differ) with each "
        "Transfer-Encoding (none, chunked, twice, `gzip, chunked`) over a small store call and one past the "
        "body bound: never a 5xx, ambiguous framing or a body past the bound refused 4xx with no row "
        "written; then a request head never finished, which must be closed within the head deadline.",
        "",
    ]
    return "\n".join(lines)


def _guarded_run(transport: str, opened: Any, calls: int, seed: int, then: Any = None) -> Tally:
    """``fuzz`` over one target; a session that ends in an exception is a failure of the run, not its end."""
    tally = Tally()
    try:
        with opened() as target:
            tally = fuzz(target, calls, seed)
            if then is not None:
                then(target)
    except Exception as exc:
        tally.failures.append(f"{transport}: the client session ended with {type(exc).__name__}: {str(exc)[:200]}")
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000, help="drawn calls per transport")
    parser.add_argument("--raw", type=int, default=100, help="raw damaged messages per transport")
    parser.add_argument("--shapes", type=int, default=30, help="hostile shapes and method names per transport")
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--transports", nargs="+", default=["stdio", "http"], choices=["stdio", "http"])
    pg.add_options(
        parser,
        "every server over a private PostgreSQL server (pgserver), a fresh schema each",
        REPO / "benchmarks/results/fuzz.md",
    )
    args = parser.parse_args(argv)
    started = time.monotonic()
    tallies: dict[str, Tally] = {}
    raw: dict[str, tuple[int, list[str]]] = {}
    messages = raw_messages(args.raw, args.seed)
    shapes = shape_messages(args.shapes, args.seed)

    def http_phases(target: Target) -> None:
        raw["http raw bytes"] = raw_http(target.url, messages)
        raw["http shapes"] = shapes_http(target.url, shapes)
        raw["http framing"] = framing_http(target)

    def url() -> str:
        return pg.db_url(args.backend)  # a fresh database for each server

    try:
        with tempfile.TemporaryDirectory(prefix="cuedrecall-fuzz-") as tmp:
            work = Path(tmp)
            if "stdio" in args.transports:
                tallies["stdio"] = _guarded_run("stdio", lambda: stdio_target(work, url()), args.calls, args.seed)
                raw["stdio raw bytes"] = raw_stdio(work, messages, url())
                raw["stdio shapes"] = shapes_stdio(work, shapes, url())
            if "http" in args.transports:
                tallies["http"] = _guarded_run(
                    "http", lambda: http_target(work, db_url=url()), args.calls, args.seed, http_phases
                )
    finally:
        pg.stop()
    section = report(tallies, raw, argv if argv is not None else sys.argv[1:], time.monotonic() - started, args.backend)
    pg.write_section(args.out, args.backend, section, "\n".join(HEAD).strip() + "\n\n" + _columns())
    print(section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
