"""Hostile input (issue 16): each failure found by attacking the server is reproduced here, answered by the rule.

- A tool answers every argument ``{"ok": false, "error": ...}`` naming it, and writes nothing,
  when the argument holds a lone surrogate, NaN or Infinity, an integer outside SQLite's
  64-bit range, nesting deeper than ``bounds.MAX_DEPTH``, a NUL in an identifier or path, or
  more characters than its documented maximum; an error never echoes more than a short cut
  of the value.
- ``Memory.call`` never raises: an unexpected failure is answered ``ok: false`` without a
  traceback, a storage failure in words the caller can act on (``describe_storage_error``).
- The stdio transport answers every line (invalid UTF-8, a lone surrogate escape, an integer
  over 4,300 digits, nesting 1,000 deep, a non-request) with its id and reads on; the HTTP
  body check answers the same bytes 400 with a JSON-RPC parse error instead of a 500.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks import serving
from cuedrecall.api import ERROR_MAX, Memory
from cuedrecall.errors import StoreError, ToolArgumentError, describe_storage_error
from cuedrecall.server import stdio
from cuedrecall.server.jsonrpc import INVALID_REQUEST, MAX_DEPTH, PARSE_ERROR
from cuedrecall.tools import TOOLS
from cuedrecall.tools.bounds import MAX_DEPTH as ARGUMENT_DEPTH
from cuedrecall.tools.bounds import check_value
from cuedrecall.tools.common import NAME_MAX, QUERY_MAX
from tests.conftest import REPO_ROOT, failed, open_memory, snapshot

REPO = REPO_ROOT
A = "hostile-agent"
SURROGATE = "\ud800"
BIG = 2**63
HUGE = "x" * 10_000_000  # 10 MB, as the attack sent


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"x": value}
    return value


@pytest.fixture
def seeded(tmp_path: Path) -> Iterator[Memory]:
    with open_memory(tmp_path / "h.db") as memory:
        assert memory.store(agent_id=A, content="the ferry leaves at seven")["result"] == "stored"
        assert memory.archive_episode(agent_id=A, summary="a trip to the island")["ok"]
        yield memory


# -- arguments: refused by name, nothing written ---------------------------------------------------------

REFUSED: list[tuple[str, dict[str, Any], str]] = [
    # ids of 2**63 and above: SQLite INTEGER is 64-bit
    ("delete_memory", {"agent_id": A, "memory_id": BIG}, "memory_id"),
    ("update_memory", {"agent_id": A, "memory_id": 2**64, "content": "x"}, "memory_id"),
    ("lock_memory", {"agent_id": A, "memory_id": -BIG - 1}, "memory_id"),
    ("delete_episode", {"agent_id": A, "episode_id": BIG}, "episode_id"),
    ("get_contents", {"agent_id": A, "refs": [f"mem:{BIG}"]}, "refs"),
    ("get_contents", {"agent_id": A, "refs": [{"ref": f"ep:{BIG}", "span": [0, 5]}]}, "refs"),
    ("get_contents", {"agent_id": A, "refs": ["mem:" + "9" * 5000]}, "refs"),
    ("reconstruct", {"agent_id": A, "query": "ferry", "budget": BIG}, "budget"),
    # a NUL or 5,000 characters in a path
    ("export_memories", {"agent_id": A, "output_path": "a\x00b.jsonl"}, "output_path"),
    ("export_memories", {"agent_id": A, "output_path": "a" * 5000}, "output_path"),
    ("import_memories", {"input_path": "x\x00.jsonl"}, "input_path"),
    ("import_memories", {"input_path": "a" * 5000}, "input_path"),
    # lone surrogates in content, ids, queries, cues, metadata keys and values
    ("store", {"agent_id": A, "content": f"tea {SURROGATE}"}, "content"),
    ("store", {"agent_id": f"a{SURROGATE}", "content": "tea"}, "agent_id"),
    ("store", {"agent_id": A, "content": "tea", "id": SURROGATE}, "id"),
    ("store", {"agent_id": A, "content": "tea", "metadata": {SURROGATE: 1}}, "metadata"),
    ("store", {"agent_id": A, "message": {"content": "tea", "metadata": {"k": [SURROGATE]}}}, "message"),
    ("recall", {"agent_id": A, "query": SURROGATE}, "query"),
    ("recall", {"agent_id": A, "query": "x", "time_cue": {"after": SURROGATE, "confidence": "sure"}}, "time_cue"),
    ("update_profile", {"agent_id": A, "profile": SURROGATE}, "profile"),
    # NaN and Infinity for every number argument
    ("calibrate_threshold", {"agent_id": A, "method": "percentile", "percentile": float("nan")}, "percentile"),
    ("calibrate_threshold", {"agent_id": A, "method": "zscore", "z_factor": float("nan")}, "z_factor"),
    ("calibrate_threshold", {"agent_id": A, "method": "zscore", "z_factor": float("inf")}, "z_factor"),
    ("set_recall_precision", {"agent_id": A, "beta": float("-inf")}, "beta"),
    # nesting
    ("store", {"agent_id": A, "content": "deep", "metadata": _nested(3000)}, "metadata"),
    ("archive_episode", {"agent_id": A, "summary": "s", "history": [_nested(ARGUMENT_DEPTH + 1)]}, "history"),
    ("declare_associations", {"agent_id": A, "associations": _nested(50)}, "associations"),
    # a ref whose digits are not ASCII
    ("get_contents", {"agent_id": A, "refs": ["mem:\u00b2"]}, "refs"),
    ("get_contents", {"agent_id": A, "refs": [{"ref": "ep:\u0663"}]}, "refs"),
    # NUL in identifiers
    ("recall", {"agent_id": A, "query": "x", "source_id": "a\x00"}, "source_id"),
    ("store", {"agent_id": A, "content": "tea", "channel": "c\x00"}, "channel"),
]

TOO_LONG: list[tuple[str, dict[str, Any], str]] = [
    ("store", {"agent_id": A, "message": {"content": "tea", "id": HUGE}}, "message.id"),
    ("store", {"agent_id": A, "message": {"content": "tea", "id": "i" * (NAME_MAX + 1)}}, "message.id"),
    ("store", {"agent_id": A, "content": "tea", "project_id": HUGE}, "project_id"),
    ("store", {"agent_id": A, "content": "tea", "channel": HUGE}, "channel"),
    ("store", {"agent_id": HUGE, "content": "tea"}, "agent_id"),
    ("store", {"agent_id": A, "content": "tea", "source": {"type": "User", "id": "s" * (NAME_MAX + 1)}}, "source.id"),
    ("store", {"agent_id": A, "content": "tea", "source": "s" * (NAME_MAX + 1)}, "source"),
    ("store", {"agent_id": A, "content": HUGE}, "content"),
    ("recall", {"agent_id": A, "query": "q" * (QUERY_MAX + 1)}, "query"),
    ("recall", {"agent_id": A, "query": "q", "source_id": HUGE}, "source_id"),
    ("recall", {"agent_id": A, "query": "q", "exclude_contents": [HUGE]}, "exclude_contents"),
    ("reconstruct", {"agent_id": A, "query": "q" * (QUERY_MAX + 1)}, "query"),
    ("archive_episode", {"agent_id": A, "summary": "s", "keywords": HUGE}, "keywords"),
    ("traverse", {"agent_id": A, "entity": HUGE}, "entity"),
    ("check_health", {"checks": [HUGE]}, "checks"),
    ("get_contents", {"agent_id": A, "refs": [HUGE]}, "refs"),
    ("calibrate_threshold", {"agent_id": A, "method": HUGE}, "method"),
]


def _refused_by_name(memory: Memory, tool: str, arguments: dict[str, Any], argument: str) -> dict[str, Any]:
    before = snapshot(memory, (A,))
    answer = memory.call(tool, arguments)
    assert failed(answer, f"'{argument}") and isinstance(answer["error"], str), answer
    assert {key: answer[key] for key in TOOLS[tool].failure} == TOOLS[tool].failure
    assert snapshot(memory, (A,)) == before
    return answer


@pytest.mark.parametrize(
    ("tool", "arguments", "argument"),
    REFUSED,
    ids=[f"{tool}-{argument}-{i}" for i, (tool, _, argument) in enumerate(REFUSED)],
)
def test_a_hostile_argument_is_refused_naming_it_and_nothing_is_written(
    seeded: Memory,
    tool: str,
    arguments: dict[str, Any],
    argument: str,
) -> None:
    answer = _refused_by_name(seeded, tool, arguments, argument)
    assert "Error" not in answer["error"] and "failed inside the server" not in answer["error"]  # our words


@pytest.mark.parametrize(
    ("tool", "arguments", "argument"),
    TOO_LONG,
    ids=[f"{tool}-{argument}-{i}" for i, (tool, _, argument) in enumerate(TOO_LONG)],
)
def test_an_argument_over_its_documented_maximum_is_refused_and_the_error_never_echoes_it(
    seeded: Memory,
    tool: str,
    arguments: dict[str, Any],
    argument: str,
) -> None:
    answer = _refused_by_name(seeded, tool, arguments, argument)
    assert len(answer["error"]) < 1000


def test_the_documented_maxima_are_published_in_the_schemas() -> None:
    store, recall = TOOLS["store"].input_schema()["properties"], TOOLS["recall"].input_schema()["properties"]
    assert store["message"]["properties"]["id"]["maxLength"] == NAME_MAX
    assert store["project_id"]["maxLength"] == store["channel"]["maxLength"] == NAME_MAX
    assert recall["query"]["maxLength"] == QUERY_MAX
    for tool in TOOLS.values():
        for name, param in tool.params.items():
            if param.type == "string" and not param.enum:
                assert param.max_length is not None, f"{tool.name}.{name} has no documented maximum"


def test_a_listing_limit_far_beyond_64_bits_is_still_clamped(seeded: Memory) -> None:
    answer = seeded.call("list_memories", {"agent_id": A, "limit": 2**70})
    assert answer["count"] == 1


def test_fts_and_sql_syntax_in_a_query_is_searched_as_text(seeded: Memory) -> None:
    for query in ['"', "*", "NEAR(", "ferry OR x", "-ferry", "a:b", "'; DROP TABLE memories; --"]:
        answer = seeded.recall(agent_id=A, query=query)
        assert "messages" in answer and answer.get("ok") is not False, (query, answer)
    # a NUL is refused by name on every backend (PostgreSQL text cannot hold one): test_named_refusals.py
    answer = seeded.recall(agent_id=A, query="ferry\x00")
    assert answer["ok"] is False and "argument 'query'" in answer["error"] and answer["messages"] == []
    assert seeded.list_memories(agent_id=A)["count"] == 1


# any text but a lone surrogate and NUL (PostgreSQL text cannot hold one, so both backends refuse it by name)
_TEXT = st.characters(exclude_categories=("Cs",), exclude_characters="\x00")
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(_TEXT, max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(_TEXT, max_size=5), inner, max_size=4),
    max_leaves=30,
)
POISON = st.sampled_from([SURROGATE, "\udfff", float("nan"), float("inf"), 2**63, -(2**63) - 1, "a\x00b"])


@given(JSON_VALUES)
def test_any_json_value_within_the_bounds_passes_the_check(value: Any) -> None:
    check_value("arg", value)


@given(JSON_VALUES, POISON, st.integers(0, 3))
def test_a_poisoned_value_anywhere_inside_an_argument_is_refused_naming_it(value: Any, poison: Any, depth: int) -> None:
    for level in range(depth):
        value = [value, poison] if level % 2 else {"k": value, "p": poison}
    hidden = {"outer": [value, {"deep": poison}]}
    with pytest.raises(ToolArgumentError) as caught:
        check_value("arg", hidden)
    assert str(caught.value).startswith("argument 'arg")


# -- Memory.call never raises -----------------------------------------------------------------------------


@pytest.mark.parametrize("tool", [["store"], {"a": 1}, None, 3, SURROGATE, "x" * 1_000_000])
def test_a_tool_name_that_is_not_a_tool_is_answered_never_raised(memory: Memory, tool: Any) -> None:
    answer = memory.call(tool, {})
    assert answer["ok"] is False and "unknown tool" in answer["error"] and len(answer["error"]) < 1000
    json.dumps(answer).encode("utf-8")  # nothing unwritable in the answer


@pytest.mark.parametrize("arguments", [[1], "not json", 5, {1: "a", "b": 2}, {"agent_id": {1, 2}}])
def test_arguments_of_any_python_shape_are_answered_never_raised(memory: Memory, arguments: Any) -> None:
    answer = memory.call("recall", arguments)
    assert answer["ok"] is False and answer["messages"] == []


@pytest.mark.parametrize("exc", [RecursionError("deep"), MemoryError(), KeyError("x"), ZeroDivisionError()])
def test_a_failure_inside_a_handler_is_ok_false_without_a_traceback(
    memory: Memory,
    monkeypatch: pytest.MonkeyPatch,
    exc: Exception,
) -> None:
    def broken(*args: Any, **kwargs: Any) -> dict[str, Any]:
        raise exc

    monkeypatch.setitem(TOOLS, "recall", _with_handler(TOOLS["recall"], broken))
    answer = memory.call("recall", {"agent_id": A, "query": "x"})
    assert answer["ok"] is False and answer["messages"] == []
    assert type(exc).__name__ in answer["error"] and "Traceback" not in answer["error"]


def test_a_storage_failure_reaches_the_caller_in_words_not_as_the_drivers_error(
    memory: Memory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def readonly(*args: Any, **kwargs: Any) -> dict[str, Any]:
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setitem(TOOLS, "store", _with_handler(TOOLS["store"], readonly))
    answer = memory.call("store", {"agent_id": A, "content": "tea"})
    assert answer == {
        "ok": False,
        "result": "rejected",
        "error": describe_storage_error(sqlite3.OperationalError("attempt to write a readonly database")),
    }
    assert "read-only" in answer["error"]


def test_an_error_message_is_cut_to_its_bound(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    def chatty(*args: Any, **kwargs: Any) -> dict[str, Any]:
        raise ToolArgumentError("argument 'query' is wrong: " + HUGE)

    monkeypatch.setitem(TOOLS, "recall", _with_handler(TOOLS["recall"], chatty))
    answer = memory.call("recall", {"agent_id": A, "query": "x"})
    assert answer["error"].startswith("argument 'query'") and len(answer["error"]) <= ERROR_MAX + 20


def _with_handler(tool: Any, handler: Any) -> Any:
    from dataclasses import replace

    return replace(tool, handler=handler)


# -- describe_storage_error, on the errors SQLite really raises ------------------------------------------


def _readonly(tmp_path: Path) -> Exception:
    path = tmp_path / "ro.db"
    sqlite3.connect(path).execute("CREATE TABLE t (x)").connection.commit()
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    with pytest.raises(sqlite3.Error) as caught:
        conn.execute("INSERT INTO t VALUES (1)")
    return caught.value


def _locked(tmp_path: Path) -> Exception:
    path = tmp_path / "locked.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN IMMEDIATE")
    waiter = sqlite3.connect(path, timeout=0, isolation_level=None)
    with pytest.raises(sqlite3.Error) as caught:
        waiter.execute("INSERT INTO t VALUES (1)")
    holder.rollback()
    return caught.value


def _cannot_open(tmp_path: Path) -> Exception:
    with pytest.raises(sqlite3.Error) as caught:
        sqlite3.connect(tmp_path / "no" / "such" / "folder.db")
    return caught.value


def _not_a_database(tmp_path: Path) -> Exception:
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(sqlite3.Error) as caught:
        sqlite3.connect(path).execute("SELECT * FROM sqlite_master")
    return caught.value


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (_readonly, "read-only"),
        (_locked, "busy"),
        (_cannot_open, "cannot be opened"),
        (_not_a_database, "damaged"),
        (lambda _: sqlite3.OperationalError("database or disk is full"), "disk holding the database is full"),
        (lambda _: OSError(28, "No space left on device"), "is full"),
        (lambda _: sqlite3.OperationalError("disk I/O error"), "I/O error"),
        (lambda _: StoreError("the database is busy: another process held its write lock"), "busy"),
    ],
)
def test_each_storage_failure_is_described_in_words_the_caller_can_act_on(
    tmp_path: Path,
    make: Any,
    words: str,
) -> None:
    sentence = describe_storage_error(make(tmp_path))
    assert sentence is not None and words in sentence


@pytest.mark.parametrize("exc", [ValueError("bad"), KeyError("x"), sqlite3.IntegrityError("UNIQUE constraint")])
def test_a_failure_that_is_not_a_storage_failure_is_not_described_as_one(exc: Exception) -> None:
    assert describe_storage_error(exc) is None


# -- the stdio transport: every line is answered, the server reads on ---------------------------------------


def _call_line(request_id: Any, arguments_json: bytes, name: bytes = b"store") -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":' + json.dumps(request_id).encode() + b',"method":"tools/call","params":'
        b'{"name":"' + name + b'","arguments":' + arguments_json + b"}}"
    )


LINES: list[tuple[bytes, Any, int]] = [
    (_call_line(2, b'{"agent_id":"a","content":"caf\xe9 \xff"}'), 2, PARSE_ERROR),  # invalid UTF-8
    (_call_line("s", b'{"agent_id":"a","content":' + b"1" * 5000 + b"}"), "s", PARSE_ERROR),  # over 4,300 digits
    (_call_line(4, b'{"agent_id":"a","content":' + b"[" * 1000 + b"]" * 1000 + b"}"), 4, PARSE_ERROR),
    (
        _call_line(5, b'{"agent_id":"a","content":"x","metadata":' + b'{"a":' * 3000 + b"1" + b"}" * 3000 + b"}"),
        5,
        PARSE_ERROR,
    ),
    (b"not json at all", None, PARSE_ERROR),
    (b'{"jsonrpc":"2.0","id":6,"method":"tools/call"', 6, PARSE_ERROR),  # cut short
    (b"[1, 2, 3]", None, INVALID_REQUEST),
    (b'{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}', None, INVALID_REQUEST),
    (b'{"jsonrpc":"1.0","id":7,"method":"ping"}', 7, INVALID_REQUEST),
    (b'{"id":8,"method":"ping","note":"[[[[ \\" {"}', 8, INVALID_REQUEST),
]


@pytest.mark.parametrize(("line", "request_id", "code"), LINES, ids=[str(i) for i in range(len(LINES))])
def test_a_line_that_is_not_one_jsonrpc_message_is_answered_with_its_id(
    line: bytes, request_id: Any, code: int
) -> None:
    answer = stdio.incoming(line)
    assert isinstance(answer, bytes) and answer.endswith(b"\n") and answer.isascii()
    body = json.loads(answer)
    assert body["id"] == request_id and body["error"]["code"] == code and body["error"]["message"]


def test_the_transport_refuses_nesting_beyond_its_bound_only() -> None:
    arguments = (
        b'{"agent_id":"a","content":"x","metadata":' + b'{"a":' * (MAX_DEPTH - 5) + b"1" + b"}" * (MAX_DEPTH - 5) + b"}"
    )
    assert not isinstance(stdio.incoming(_call_line(1, arguments)), bytes)  # reaches the tool, which names it
    assert stdio.incoming(b"   ") is None


def test_a_lone_surrogate_escape_reaches_the_tool_as_a_message() -> None:
    message = stdio.incoming(_call_line(9, b'{"agent_id":"a","content":"\\ud800"}'))
    assert not isinstance(message, bytes) and message is not None


def test_a_line_over_the_size_bound_is_skipped_to_its_end_and_the_next_is_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io

    monkeypatch.setattr(stdio, "MAX_LINE", 1000)
    stream = io.BytesIO(b"x" * 5000 + b"\n" + b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    assert stdio.read_line(stream) == b""
    assert stdio.read_line(stream) == b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    assert stdio.read_line(stream) is None


def test_a_stdio_server_answers_every_hostile_line_and_stays_up(tmp_path: Path) -> None:
    """The issue's attack end to end: invalid UTF-8 once killed the server; a surrogate, a 5,000-digit integer
    and deep nesting went unanswered. Each now gets an answer with its id, and a store afterwards works."""
    lines = [
        (_call_line(100 + i, line_args), 100 + i)
        for i, line_args in enumerate(
            [
                b'{"agent_id":"a","content":"caf\xe9 \xff"}',
                b'{"agent_id":"a","content":"\\ud800"}',
                b'{"agent_id":"a","content":' + b"7" * 5000 + b"}",
                b'{"agent_id":"a","content":' + b"[" * 1000 + b"]" * 1000 + b"}",
                b'{"agent_id":"a","content":"x","metadata":' + b'{"a":' * 3000 + b"1" + b"}" * 3000 + b"}",
                b'{"agent_id":"a","query":"x","time_cue":{"after":"\\udc80","confidence":"sure"}}',
            ]
        )
    ]
    lines[-1] = (lines[-1][0].replace(b'"name":"store"', b'"name":"recall"'), lines[-1][1])
    lines.append((_call_line(200, b'{"agent_id":"a","content":"the ferry leaves at seven"}'), 200))
    done = serving.stdio_script(tmp_path / "s.db", [line for line, _ in lines], serving.child_env(tmp_path), 120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    answers = {body["id"]: body for body in map(json.loads, done.stdout.splitlines())}
    assert set(answers) == {0} | {request_id for _, request_id in lines}
    for request_id in (100, 102, 103, 104):
        assert answers[request_id]["error"]["code"] == PARSE_ERROR
    for request_id, argument in ((101, "'content'"), (105, "'time_cue.after'")):
        text = json.loads(answers[request_id]["result"]["content"][0]["text"])
        assert text["ok"] is False and argument in text["error"]
    stored = json.loads(answers[200]["result"]["content"][0]["text"])
    assert stored["result"] == "stored"
    assert b"Traceback" not in done.stdout


# -- HTTP: the same bytes are a 400 with a JSON-RPC parse error, not a 500 ---------------------------------

HTTP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "Authorization": "Bearer t",
}


@pytest.mark.parametrize(
    ("body", "request_id"),
    [
        (_call_line(2, b'{"agent_id":"a","content":"caf\xe9 \xff"}'), 2),
        (_call_line(3, b'{"agent_id":"a","content":' + b"1" * 5000 + b"}"), 3),
        (_call_line(4, b'{"agent_id":"a","content":' + b"[" * 1000 + b"]" * 1000 + b"}"), 4),
        (b"{", None),
    ],
)
def test_an_unreadable_http_body_is_a_400_parse_error_not_a_500(http_url: str, body: bytes, request_id: Any) -> None:
    response = httpx.post(http_url + "/mcp/", content=body, headers=HTTP_HEADERS, timeout=30)
    assert response.status_code == 400
    assert response.json()["id"] == request_id and response.json()["error"]["code"] == PARSE_ERROR


def test_a_surrogate_in_a_cue_over_http_is_an_ok_false_naming_it(http_url: str) -> None:
    body = _call_line(5, b'{"agent_id":"a","query":"x","time_cue":{"after":"\\ud800","confidence":"sure"}}', b"recall")
    response = httpx.post(http_url + "/mcp/", content=body, headers=HTTP_HEADERS, timeout=30)
    assert response.status_code == 200 and response.text
    data = json.loads(response.text.split("data: ", 1)[1])
    answer = json.loads(data["result"]["content"][0]["text"])
    assert answer["ok"] is False and "'time_cue.after'" in answer["error"]


def test_a_readable_http_body_passes_the_check_unchanged(http_url: str) -> None:
    body = _call_line(6, b'{"agent_id":"a","content":"the ferry"}')
    response = httpx.post(http_url + "/mcp/", content=body, headers=HTTP_HEADERS, timeout=30)
    assert response.status_code == 200
    data = json.loads(response.text.split("data: ", 1)[1])
    assert json.loads(data["result"]["content"][0]["text"])["result"] == "stored"


@settings(max_examples=30, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_on_a_line_are_answered_or_are_a_message(line: bytes) -> None:
    line = line.replace(b"\n", b" ")
    answer = stdio.incoming(line)
    if isinstance(answer, bytes):
        assert set(json.loads(answer)) == {"jsonrpc", "id", "error"}
    else:
        assert answer is None or answer.message is not None


def test_requests_still_running_at_eof_are_answered_before_the_stdio_server_exits(tmp_path: Path) -> None:
    """A client that writes its requests and closes stdin gets every answer: the SDK's session closes its answer
    stream with its input, so the transport holds the input open until the requests in flight have answered."""
    stores = [
        _call_line(10 + i, json.dumps({"agent_id": A, "content": f"note {i} about the ferry"}).encode())
        for i in range(20)
    ]
    db = tmp_path / "eof.db"
    check = _call_line(99, json.dumps({"fix": True}).encode(), b"check_health")
    done = serving.stdio_script(db, [*stores, check], serving.child_env(tmp_path), 120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    answers = {body["id"]: body for body in map(json.loads, done.stdout.splitlines())}
    assert set(answers) == {0, 99, *range(10, 30)}
    with open_memory(db) as memory:
        assert memory.list_memories(agent_id=A)["count"] == 20
