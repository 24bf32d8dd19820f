"""Request memory in proportion to the body (server/jsonrpc.py): the message bounds checked on the raw bytes before
any object is made, over stdio, HTTP and the explorer; a method the server does not have answered in one short,
rate-limited log line; and the refusal of an over-long argument naming the bound the tool enforces."""

from __future__ import annotations

import json
import logging
import re
import tracemalloc
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from benchmarks import serving
from cuedrecall.api import Memory
from cuedrecall.server import jsonrpc, stdio
from cuedrecall.server.http_wellformed import WellFormedBody
from cuedrecall.server.jsonrpc import (
    MAX_DEPTH,
    MAX_ITEMS,
    MAX_STRING,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    Refusal,
    bounds_problem,
    parsed,
)
from cuedrecall.tools.common import QUERY_MAX
from cuedrecall.ui.app import TOKEN_HEADER, make_app
from tests.conftest import REPO_ROOT, open_memory

REPO = REPO_ROOT
BODY = 16 * 1024 * 1024 - 4096  # the probe's bodies: just under the HTTP body bound
HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "Authorization": "Bearer t",
}


def _call(arguments: bytes, request_id: int = 7, tool: bytes = b"recall") -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":'
        + str(request_id).encode()
        + b',"method":"tools/call","params":{"name":"'
        + tool
        + b'","arguments":'
        + arguments
        + b"}}"
    )


def _zeros(size: int) -> bytes:
    """The probe's body: recall with ``exclude_contents`` an array of zeros, ``size`` bytes in all."""
    head = b'{"agent_id":"a","query":"x","exclude_contents":['
    count = (size - len(head) - 100) // 2
    return _call(head + b"0," * count + b"0]}")


def _peak(work: Any) -> tuple[Any, int]:
    """What ``work()`` returns and the most bytes Python (numpy included) held over what it held before."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        result = work()
        return result, tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


# -- the bounds, on the bytes ------------------------------------------------------------------------------------


def test_the_probes_16_mib_array_of_zeros_is_refused_over_stdio_in_memory_a_fraction_of_its_size() -> None:
    """The probe: 8 million zeros inside the bound once peaked at 1.56 GB over stdio (json.loads, then pydantic's
    copies, then the argument check's stack); now refused on the bytes, holding a few MiB beside them."""
    line = _zeros(BODY)
    answer, peak = _peak(lambda: stdio.incoming(line))
    body = json.loads(answer)
    assert body["id"] == 7 and body["error"]["code"] == PARSE_ERROR
    assert f"{MAX_ITEMS:,} items" in body["error"]["message"]
    assert peak < len(line) // 2, f"{peak:,} bytes held for a {len(line):,}-byte line"


def test_the_probes_body_is_refused_over_http_before_it_is_parsed() -> None:
    body = _zeros(BODY)
    reached: list[bytes] = []
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(b"")

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/mcp/", "headers": []}
    _, peak = _peak(lambda: anyio.run(WellFormedBody(app), scope, receive, send))
    assert sent[0]["status"] == 400 and not reached
    answer = json.loads(sent[1]["body"])
    assert answer["id"] == 7 and f"{MAX_ITEMS:,} items" in answer["error"]["message"]
    assert peak < len(body) // 2, f"{peak:,} bytes held for a {len(body):,}-byte body"


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (b"[" + b"{}," * (MAX_ITEMS // 2) + b"{}]", f"{MAX_ITEMS:,} items"),
        (b"{" + b",".join(b'"%d":0' % i for i in range(MAX_ITEMS // 2 + 1)) + b"}", f"{MAX_ITEMS:,} items"),
        (b'["' + b"x" * (MAX_STRING + 1) + b'"]', f"{MAX_STRING:,} bytes"),
        (b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1), f"deeper than {MAX_DEPTH}"),
    ],
)
def test_each_bound_is_named_in_the_refusal(value: bytes, said: str) -> None:
    with pytest.raises(Refusal) as refused:
        parsed(_call(b'{"agent_id":"a","query":"x","exclude_contents":' + value + b"}"))
    assert refused.value.code == PARSE_ERROR and said in refused.value.message


def test_bytes_inside_strings_do_not_count_and_a_body_just_under_the_bounds_is_parsed() -> None:
    quoted = b'"' + b",:[{" * 200_000 + b'"'  # 800,000 separators, all inside one string
    assert bounds_problem(_call(b'{"agent_id":"a","query":' + quoted + b"}")) is None
    under = b"[" + b"0," * (MAX_ITEMS - 100) + b"0]"
    assert isinstance(parsed(_call(b'{"agent_id":"a","query":"x","exclude_contents":' + under + b"}")), dict)
    escaped = b'"' + b'\\"[' * 1000 + b'"'  # escaped quotes: the brackets stay inside the string
    assert bounds_problem(b"[" + escaped + b"]" * 0 + b"]") is None


def test_the_tools_own_bounds_fit_inside_the_message_bounds() -> None:
    """Every value a tool accepts passes the transport: its largest argument (MAX_NODES values, as object members
    two items each) and its longest string (MAX_TEXT characters, each escaped as a 12-byte surrogate pair)."""
    from cuedrecall.tools.bounds import MAX_NODES, MAX_TEXT

    assert 2 * MAX_NODES < MAX_ITEMS and 12 * MAX_TEXT <= MAX_STRING
    members = b"{" + b",".join(b'"%d":0' % i for i in range(MAX_NODES)) + b"}"
    assert bounds_problem(_call(b'{"agent_id":"a","content":"x","metadata":' + members + b"}", tool=b"store")) is None


JSON_VALUES = st.recursive(
    st.none() | st.integers() | st.text(alphabet='ab"\\[]{},:\u00e9', max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(alphabet='a"\\[{', max_size=5), inner, max_size=4)
    ),
    max_leaves=30,
)


def _reference(raw: bytes) -> tuple[int, int, int]:
    """Depth, items and longest string of a JSON text, from the parsed value (the scan must agree)."""
    strings = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
    blank = strings.sub(lambda m: b'"' + b" " * (len(m[0]) - 2) + b'"', raw)
    depth = deepest = 0
    for byte in blank:
        depth += (byte in b"[{") - (byte in b"]}")
        deepest = max(deepest, depth)
    items = sum(blank.count(mark) for mark in (b",", b":", b"[", b"{"))
    return deepest, items, max((len(s) - 2 for s in strings.findall(raw)), default=0)


@settings(max_examples=200, deadline=None)
@given(JSON_VALUES, st.sampled_from([1, 2, 3, 7, 64]), st.booleans())
def test_the_chunked_scan_agrees_with_the_parsed_value_across_chunk_edges(
    value: Any, chunk: int, ascii_only: bool
) -> None:
    raw = json.dumps(value, ensure_ascii=ascii_only).encode()
    original = jsonrpc._CHUNK
    jsonrpc._CHUNK = chunk
    try:
        scan = jsonrpc._Scan(raw)
        for _ in scan.chunks():
            pass
        ids = jsonrpc.request_id(json.dumps({"x": value, "id": 5}).encode())
    finally:
        jsonrpc._CHUNK = original
    assert (scan.depth, scan.items, scan.longest) == _reference(raw)
    assert ids == 5


def test_the_explorer_reads_its_bodies_under_the_same_bounds(tmp_path: Path) -> None:
    with open_memory(tmp_path / "ui.db") as memory:
        client = TestClient(make_app(memory, "ui-token"), base_url="http://127.0.0.1")
        body = b'{"agent_id":"a","query":"x","exclude":[' + b"0," * MAX_ITEMS + b"0]}"
        answer = client.post("/api/search", headers={TOKEN_HEADER: "ui-token"}, content=body)
        assert answer.status_code == 400 and f"{MAX_ITEMS:,} items" in answer.json()["error"]


# -- a method the server does not have: answered, one short line logged ------------------------------------------


def test_bad_method_names_over_stdio_are_answered_and_logged_in_a_few_short_lines(tmp_path: Path) -> None:
    """The probe: each bad method name wrote ~3 KB of pydantic's errors to stderr. Now each is answered -32601 with
    its id, and at most ten short lines a minute are logged."""
    bad = [
        json.dumps({"jsonrpc": "2.0", "id": 100 + i, "method": f"tools/nope{i}", "params": {"x": [1] * 50}}).encode()
        for i in range(40)
    ]
    unknown = b'{"jsonrpc":"2.0","method":"notifications/nope"}'
    done = serving.stdio_script(tmp_path / "s.db", [unknown, *bad], serving.child_env(tmp_path), 120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    answers = {body["id"]: body for body in map(json.loads, done.stdout.splitlines())}
    assert set(answers) == {0} | {100 + i for i in range(40)}  # the bad notification is not answered
    assert all(answers[100 + i]["error"]["code"] == METHOD_NOT_FOUND for i in range(40))
    assert len(done.stderr) < 3000, done.stderr.decode(errors="replace")[:3000]
    assert max(map(len, done.stderr.splitlines()), default=0) < 300


def test_a_bad_method_name_over_http_is_a_jsonrpc_error_in_one_short_log_line(
    http_url: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    body = {"jsonrpc": "2.0", "id": 9, "method": "tools/nope", "params": {"x": [1] * 50}}
    response = httpx.post(http_url + "/mcp/", json=body, headers=HEADERS, timeout=30)
    assert response.status_code == 200
    assert response.json()["id"] == 9 and response.json()["error"]["code"] == METHOD_NOT_FOUND
    bad_params = {"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"arguments": {}}}
    answer = httpx.post(http_url + "/mcp/", json=bad_params, headers=HEADERS, timeout=30).json()
    assert answer["error"]["code"] == -32602 and "name" in answer["error"]["message"]
    notification = {"jsonrpc": "2.0", "method": "notifications/nope"}
    assert httpx.post(http_url + "/mcp/", json=notification, headers=HEADERS, timeout=30).status_code == 202
    assert all(len(record.getMessage()) < 300 for record in caplog.records)


def test_refusals_past_ten_a_minute_go_to_debug(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="cuedrecall")
    jsonrpc.log_refusal.window, jsonrpc.log_refusal.quiet = 0.0, 0  # a fresh minute, nothing held back
    for _ in range(25):
        stdio.incoming(b'{"jsonrpc":"2.0","id":1,"method":"nope"}')
    said = [r for r in caplog.records if "refused a message" in r.getMessage()]
    assert len(said) == 25 and sum(r.levelno == logging.WARNING for r in said) == jsonrpc.REFUSALS_LOGGED


# -- an over-long argument is refused naming the bound its tool enforces -------------------------------------------


@pytest.mark.parametrize("tool", ["recall", "reconstruct", "recall_with_context"])
def test_a_query_over_a_million_characters_is_refused_naming_the_query_bound(memory: Memory, tool: str) -> None:
    answer = memory.call(tool, {"agent_id": "a", "query": "x" * 1_000_001})
    assert answer["ok"] is False and f"{QUERY_MAX:,}" in answer["error"]
    assert "1,000,000" not in answer["error"]
