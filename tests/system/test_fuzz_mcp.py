"""Hostile-input fuzzing through the real MCP client, stdio and HTTP (issue 16): the short version of benchmarks.fuzz.

The rule: every call of every tool, whatever its arguments (random types, strings up to 10 MB,
deep nesting, NUL bytes, FTS5 and SQL syntax, path-like refs, huge and negative integers,
malformed cues), gets a well-formed answer; the server never dies, never answers a
traceback and never writes on a refused call. Bytes the client cannot send (lone
surrogates, invalid UTF-8, 5,000-digit integers, nesting 1,000 deep) go raw, and each is
answered. ``python -m benchmarks.fuzz`` runs thousands of calls and reports the figures.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings

from benchmarks import fuzz, pg
from benchmarks.hostile import BASE
from cuedrecall.tools import TOOLS

CALLS = 120  # per transport: a few seconds each


@pytest.fixture(scope="module")
def stdio_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[fuzz.Target]:
    with fuzz.stdio_target(tmp_path_factory.mktemp("fuzz-stdio")) as target:
        yield target


@pytest.fixture(scope="module")
def http_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[fuzz.Target]:
    with fuzz.http_target(tmp_path_factory.mktemp("fuzz-http")) as target:
        yield target


def test_every_tool_has_valid_base_arguments_to_mutate() -> None:
    assert set(BASE) == set(TOOLS)
    for name, arguments in BASE.items():
        assert TOOLS[name].bind(dict(arguments)) is not None


FUZZ = settings(
    max_examples=CALLS,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


@FUZZ
@given(call=fuzz.tool_calls())
def test_every_call_over_stdio_gets_a_well_formed_answer_and_writes_nothing_when_refused(
    stdio_target: fuzz.Target,
    call: tuple[str, dict[str, Any]],
) -> None:
    problem = fuzz.one_call(stdio_target, *call, fuzz.Tally())
    assert problem is None, problem


@FUZZ
@given(call=fuzz.tool_calls())
def test_every_call_over_http_gets_a_well_formed_answer_and_writes_nothing_when_refused(
    http_target: fuzz.Target,
    call: tuple[str, dict[str, Any]],
) -> None:
    problem = fuzz.one_call(http_target, *call, fuzz.Tally())
    assert problem is None, problem


def test_the_stdio_server_survives_the_fuzzing(stdio_target: fuzz.Target) -> None:
    assert stdio_target.alive()


def test_the_http_server_survives_the_fuzzing(http_target: fuzz.Target) -> None:
    assert http_target.alive()


def test_raw_hostile_lines_to_a_stdio_server_are_each_answered(tmp_path: Path) -> None:
    sent, failures = fuzz.raw_stdio(tmp_path, fuzz.raw_messages(40, seed=1))
    assert sent == 40 and failures == []


def test_raw_hostile_bodies_over_http_are_never_a_5xx(http_target: fuzz.Target) -> None:
    sent, failures = fuzz.raw_http(http_target.url, fuzz.raw_messages(40, seed=2))
    assert sent == 40 and failures == []


def test_the_rule_catches_a_refused_call_that_wrote(tmp_path: Path) -> None:
    """The checker itself: an ok:false answer whose call changed rows is a failure, a result is not."""

    class Answer:
        content: ClassVar[list[Any]] = [
            type("Text", (), {"type": "text", "text": '{"ok": false, "error": "argument \'x\' is bad"}'})()
        ]

    assert fuzz.problem_with("store", Answer(), (1, 0), (2, 0)) is not None
    assert fuzz.problem_with("store", Answer(), (1, 0), (1, 0)) is None
    Answer.content[0].text = "Traceback (most recent call last): ..."
    assert fuzz.problem_with("store", Answer(), (1, 0), (1, 0)) is not None


def test_hostile_shapes_and_method_names_over_stdio_are_each_answered(tmp_path: Path) -> None:
    """Arrays of millions of values inside the body bound (once 1.5 GB each), unknown methods (once 3 KB of log
    each), params that do not fit: each request answered with its id, the log lines short."""
    sent, failures = fuzz.shapes_stdio(tmp_path, fuzz.shape_messages(12, seed=3))
    assert sent == 12 and failures == []


def test_hostile_shapes_and_method_names_over_http_are_each_answered(http_target: fuzz.Target) -> None:
    sent, failures = fuzz.shapes_http(http_target.url, fuzz.shape_messages(12, seed=4))
    assert sent == 12 and failures == []


def test_every_framing_combination_over_http_is_refused_or_served_never_a_5xx(tmp_path: Path) -> None:
    with fuzz.http_target(tmp_path, body_bound=64 * 1024, head_deadline=1.0) as target:
        sent, failures = fuzz.framing_http(target)
    assert sent == 2 * len(fuzz.LENGTHS) * len(fuzz.CODINGS) + 1 and failures == []


@pytest.mark.skipif(
    not pg.available(), reason="pgserver is not installed (pip install -c constraints.txt '.[test,postgres]')"
)
def test_the_postgres_backend_option_runs_the_fuzzing_over_postgresql(tmp_path: Path) -> None:
    """``--backend postgres``: a stdio server over a private PostgreSQL server answers a few drawn and raw calls by
    the same rule, the results file gains a PostgreSQL section and keeps the SQLite one; an HTTP server over
    PostgreSQL too, its rows counted through the store's read methods."""
    out = tmp_path / "fuzz.md"
    out.write_text("# old\n\n<!-- sqlite -->\n## SQLite\n\nkept\n<!-- /sqlite -->\n")
    assert (
        fuzz.main(
            [
                "--backend",
                "postgres",
                "--transports",
                "stdio",
                "--calls",
                "8",
                "--raw",
                "4",
                "--shapes",
                "0",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    text = out.read_text()
    assert "## SQLite\n\nkept" in text and "## PostgreSQL" in text and "| stdio | 8 |" in text
    assert "### Failures\n\nNone." in text.split("## PostgreSQL")[1]
    try:
        with fuzz.http_target(tmp_path, db_url=pg.fresh_url()) as target:
            before = fuzz.row_counts(target)
            stored = target.call("store", {"agent_id": "pg", "content": "the ferry over postgres"})
            assert json.loads(stored.content[0].text)["ok"] is True
            assert fuzz.row_counts(target)[0] == before[0] + 1 and not (tmp_path / "http.db").exists()
            assert fuzz.fuzz(target, 8, seed=3).failures == []
    finally:
        pg.stop()
