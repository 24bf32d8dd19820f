"""cuedrecall/trace_view.py: ``cuedrecall recall "query" --trace`` prints the trace as tables, no text."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from cuedrecall.api import Memory
from cuedrecall.cli import main as cli_main
from cuedrecall.clock import fixed_clock
from cuedrecall.demo import load_sample
from cuedrecall.trace_view import print_trace
from tests.conftest import NOW, make_settings


def render(trace: Any, width: int = 220) -> str:
    out = io.StringIO()
    print_trace(trace, Console(file=out, width=width, color_system=None))
    return out.getvalue()


@pytest.fixture(scope="module")
def sample() -> Memory:
    memory = Memory(
        ":memory:", settings=make_settings(recall_depth_floor=8, episode_penalty_enabled=True), clock=fixed_clock(NOW)
    )
    load_sample(memory)
    return memory


def test_every_section_is_printed(sample: Memory) -> None:
    response = sample.recall(agent_id="demo", query="bike shop brake pads", limit=3, trace=True)
    trace = response["trace"]
    text = render(trace)
    for title in (
        "recall trace v1",
        "policy, scope, request, config",
        "arms (rank: ref raw score)",
        "fusion (rrf)",
        "quality gate",
        "after the gate",
        "stages of the loop",
        "coverage (nfkc-lower)",
        "timing (ms)",
    ):
        assert title in text, title
    # arms side by side: one column per arm, with its length
    header = next(line for line in text.splitlines() if "vector_near (" in line)
    assert "episode_fts (" in header and "memory_keyword (" in header
    # every gate decision is a row, with its reason when dropped
    for d in trace["gate"]["decisions"]:
        assert d["ref"] in text
    for reason in {d["reason"] for d in trace["gate"]["decisions"] if not d["passed"]}:
        assert f"dropped: {reason}" in text
    assert "episode_penalty" in text  # the scoring column of the fusion table
    for ref in trace["order"]["before_cut"][: trace["order"]["limit"]]:
        assert ref in text


def test_no_stored_text_is_printed(sample: Memory) -> None:
    response = sample.recall(agent_id="demo", query="bike shop brake pads", limit=5, trace=True)
    text = render(response["trace"])
    for message in response["messages"]:
        words = [w for w in message["content"].split() if len(w) > 6]
        for word in words[:3]:
            assert word not in text, word


def test_a_cue_trace_shows_stages_seats_and_suspicions(sample: Memory) -> None:
    trace = sample.recall(
        agent_id="demo",
        query="bike shop",
        limit=3,
        trace=True,
        time_cue={"after": "2020-01-01", "before": "2020-01-02", "confidence": "sure"},
    )["trace"]
    text = render(trace)
    assert "cue (" in text and "cue_stage_1 (" in text
    assert "suspected during the recall" in text and "CANDIDATE_MISS" in text
    assert "widen to the likely margin" in text
    assert "time cue: bound L=" in text


def test_a_seated_row_is_shown() -> None:
    memory = Memory(":memory:", settings=make_settings(), clock=fixed_clock(NOW))
    load_sample(memory)
    trace = memory.recall(
        agent_id="demo",
        query="Sintra ride bike",
        limit=1,
        trace=True,
        time_cue={"after": "2025-03-01", "before": "2025-10-30", "confidence": "sure"},
    )["trace"]
    text = render(trace)
    assert trace["reservation"]  # the cue arm searches 50 deep, the ordinary arms only to the limit
    for seat in trace["reservation"]:
        assert seat["ref"] in text
    assert "returned by a held seat" in text


def test_blank_query_ignored_cue_and_failed_coverage_print() -> None:
    memory = Memory(":memory:", settings=make_settings(), clock=fixed_clock(NOW))
    load_sample(memory)
    blank = memory.recall(agent_id="demo", query="", limit=3, trace=True)["trace"]
    assert "newest (3)" in render(blank)
    ignored = memory.recall(
        agent_id="demo",
        query="bike",
        limit=3,
        trace=True,
        time_cue={"ago": {"unit": "days", "value": 0}, "confidence": "sure"},
    )["trace"]
    assert "time cue ignored: recent_only" in render(ignored)
    broken = dict(blank, coverage={"error": "RuntimeError"})
    assert "coverage ledger could not be built: RuntimeError" in render(broken)


@pytest.mark.parametrize(
    "trace",
    [
        {},
        {"trace_version": 1},
        None,
        [],
        {"arms": {"x": [{"ref": "mem:1"}]}, "order": {"before_cut": [{"ref": "mem:1"}]}, "future_field": {"a": 1}},
    ],
)
def test_odd_traces_do_not_crash(trace: Any) -> None:
    text = render(trace, width=80)
    if isinstance(trace, dict) and "future_field" in trace:
        assert 'future_field: {"a": 1}' in text


def test_the_cli_prints_the_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("CPERSONA_DB_PATH", "CPERSONA_EMBEDDING_MODE", "CPERSONA_FTS_ENABLED"):
        monkeypatch.delenv(name, raising=False)
    db = tmp_path / "m.db"
    with Memory(db, settings=make_settings(), clock=fixed_clock(NOW)) as memory:
        load_sample(memory)
    assert (
        cli_main(
            [
                "recall",
                "bike shop brake pads",
                "--db",
                str(db),
                "--embedding",
                "hash",
                "--agent",
                "demo",
                "--limit",
                "3",
                "--trace",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "recall trace v1" in out and "quality gate" in out and "timing (ms)" in out
