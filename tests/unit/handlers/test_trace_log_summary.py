"""The trace log summary (handlers/trace_stats.py, ``cuedrecall traces PATH --summary``): over a window it
counts recalls, each (stage, suspected code) with its rate per recall, the gate fallback, autocut, time cues
given, ignored and revised, gate relief, and the median and p95 of each timing; malformed lines are skipped
and counted, never raised; the rotated file is read too."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cuedrecall.api import Memory
from cuedrecall.cli import main as cli_main
from cuedrecall.clock import fixed_clock, iso
from cuedrecall.demo import CUE_QUERY, JUNE_CUE, load_sample
from cuedrecall.handlers.trace_stats import percentile, summarize, summarize_log
from tests.conftest import NOW, make_settings

T0 = datetime.fromisoformat(NOW)
CUE = {"confidence": "likely", "after": "2025-06-01T00:00:00+00:00", "before": "2025-07-01T00:00:00+00:00"}
MISS = {"stage": 0, "code": "CANDIDATE_MISS", "reason": "the period holds no candidate", "action": "widened"}
DROP = {"stage": 0, "code": "FILTER_DROP", "reason": "2 rows sit one step under", "action": "relieved"}


def trace(
    *,
    suspected: list[Any] | None = None,
    fallback: bool = False,
    autocut: bool = False,
    cue: bool = False,
    ignored: bool = False,
    cue_stages: int = 0,
    relief: int = 0,
    timing: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A recall trace holding just what the summary reads."""
    stages: list[dict[str, Any]] = [] if cue_stages else [{"stage": 0, "searched": "all arms", "next": None}]
    stages += [
        {"stage": n, "searched": "the cue period", "confidence": "likely", "found": 0} for n in range(cue_stages)
    ]
    stages.append({"stage": len(stages), "searched": "propagation", "source": "mem:1"})  # not a cue stage
    return {
        "trace_version": 1,
        "request": {"limit": 5, **({"time_cue": CUE} if cue else {})},
        "gate": {"decisions": [], "gate_fallback": fallback},
        "autocut": {"fired": autocut},
        "reservation": [{"ref": f"mem:{n}", "kind": "relief"} for n in range(relief)]
        + [{"ref": "mem:99", "kind": "cue"}],
        "stages": stages,
        "suspected": suspected or [],
        "timing_ms": timing or {},
        **({"cue_ignored": {"reason": "recent_only", "period": None}} if ignored else {}),
    }


def entry(name: str, at: datetime | str, recall: dict[str, Any] | None, tool: str = "recall") -> str:
    body: Any = recall if tool == "recall" else {"candidate_refs": [], "recall": recall}
    return (
        json.dumps(
            {
                "v": 1,
                "id": name,
                "at": at if isinstance(at, str) else iso(at),
                "tool": tool,
                "scope": {"agent_id": "a"},
                "query_sha256": "0" * 64,
                "refs": [],
                "trace": body,
            }
        )
        + "\n"
    )


@pytest.fixture
def log(tmp_path: Path) -> Path:
    """A log of known content: six recalls in the week before NOW (two in the rotated file), an older one,
    junk lines, an entry without a trace and one without a time."""
    day = timedelta(days=1)
    (tmp_path / "t.jsonl.1").write_text(
        entry("too-old", T0 - 9 * day, trace(suspected=[DROP], fallback=True, timing={"total": 999.0}))
        + entry("r1", T0 - 6 * day, trace(suspected=[DROP], relief=2, timing={"total": 10.0, "gate": 1.0}))
        + "{not json\n"
        + entry(
            "r2",
            T0 - 5 * day,
            trace(cue=True, cue_stages=2, suspected=[MISS], autocut=True, timing={"total": 20.0, "gate": 3.0}),
        ),
        encoding="utf-8",
    )
    path = tmp_path / "t.jsonl"
    path.write_text(
        entry("r3", T0 - 4 * day, trace(cue=True, ignored=True, fallback=True, timing={"total": 30.0}))
        + "[1, 2]\n"
        + "\n"
        + entry(
            "r4",
            T0 - 3 * day,
            trace(suspected=[DROP, {**DROP, "stage": 1}], relief=1, timing={"total": 40.0}),
            tool="reconstruct",
        )
        + entry("r5", T0 - 2 * day, trace(cue=True, cue_stages=1, timing={"total": 50.0, "bad": "x"}))
        + entry("untraced", T0 - day, None, tool="reconstruct")
        + entry("undated", "sometime", trace(suspected=[DROP]))
        + entry("r6", T0 - timedelta(hours=1), trace(suspected=[{"code": "ODD"}, "junk"], timing={"total": 60.0})),
        encoding="utf-8",
    )
    return path


def test_the_summary_counts_a_constructed_log_exactly(log: Path) -> None:
    stats = summarize_log(log, since=T0 - timedelta(days=7), until=T0)
    assert stats["recalls"] == 6 and stats["tools"] == {"recall": 5, "reconstruct": 1}
    assert stats["suspected"] == [
        {"stage": 0, "code": "FILTER_DROP", "count": 2, "rate": round(2 / 6, 4)},
        {"stage": 0, "code": "CANDIDATE_MISS", "count": 1, "rate": round(1 / 6, 4)},
        {"stage": 1, "code": "FILTER_DROP", "count": 1, "rate": round(1 / 6, 4)},
        {"stage": None, "code": "ODD", "count": 1, "rate": round(1 / 6, 4)},
    ]
    counts = {name: event["count"] for name, event in stats["events"].items()}
    assert counts == {
        "gate_fallback": 1,
        "autocut": 1,
        "time_cue_given": 3,
        "time_cue_ignored": 1,
        "time_cue_revised": 1,
        "relief": 2,
    }
    assert stats["events"]["time_cue_given"]["rate"] == 0.5 and stats["relief_rows"] == 3
    assert stats["timing_ms"] == {
        "gate": {"n": 2, "median": 2.0, "p95": 3.0},
        "total": {"n": 6, "median": 35.0, "p95": 60.0},
    }
    assert stats["skipped"] == {"malformed_lines": 2, "no_trace": 1, "undated": 1}
    assert stats["outside_window"] == 1  # too-old: its fallback and 999 ms are not counted
    assert stats["window"]["first"] == iso(T0 - timedelta(days=6)) and stats["window"]["last"] == iso(
        T0 - timedelta(hours=1)
    )


def test_the_window_bounds_are_half_open_and_an_empty_window_has_zero_rates(log: Path) -> None:
    at_r1 = T0 - timedelta(days=6)
    assert summarize_log(log, since=at_r1, until=at_r1 + timedelta(seconds=1))["recalls"] == 1
    assert summarize_log(log, since=at_r1 - timedelta(hours=1), until=at_r1)["recalls"] == 0
    empty = summarize_log(log, since=T0 + timedelta(days=1))
    assert empty["recalls"] == 0 and empty["suspected"] == [] and empty["timing_ms"] == {}
    assert all(event == {"count": 0, "rate": 0.0} for event in empty["events"].values())


def test_a_malformed_line_is_skipped_and_counted_not_raised(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(
        b"\xff\xfe garbage\n"
        + entry("ok", T0, trace()).encode()
        + b'{"cut": "in half\n'
        + b'"a string"\n'
        + b'{"at": 5, "trace": []}\n'
    )
    stats = summarize_log(path)
    assert stats["recalls"] == 1 and stats["skipped"] == {"malformed_lines": 3, "no_trace": 1, "undated": 0}
    assert summarize([(1, {"trace": {"timing_ms": {"total": float("nan")}}, "at": NOW})])["timing_ms"] == {}


def test_percentiles_are_nearest_rank() -> None:
    values = [float(v) for v in range(1, 21)]  # 1 .. 20
    assert percentile(values, 0.95) == 19.0 and percentile(values, 0.5) == 10.0
    assert percentile([7.0], 0.95) == 7.0 and percentile([3.0, 1.0], 0.95) == 3.0


def test_the_cli_prints_the_summary_as_tables_and_as_json(log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["traces", str(log), "--summary", "--until", NOW, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == {**summarize_log(log, since=T0 - timedelta(days=7), until=T0), "path": str(log)}
    assert cli_main(["traces", str(log), "--summary", "--since", "2025-10-25", "--until", NOW]) == 0
    out = capsys.readouterr().out
    for shown in (
        "6 recalls",
        "FILTER_DROP",
        "CANDIDATE_MISS",
        "33.3%",
        "gate_fallback",
        "time_cue_revised",
        "relief (3 rows)",
        "timing_ms",
        "2 malformed lines",
        "1 outside the window",
    ):
        assert shown in out, shown
    assert cli_main(["traces", str(log), "--summary", "--days", "2", "--until", NOW, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["recalls"] == 2  # r5 and r6


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--summary", "--since", "last week"], "--since 'last week' is not an ISO-8601 date or time"),
        (["--summary", "--days", "0"], "--days 0 must be above 0"),
        (["--summary", "--since", NOW, "--until", "2025-10-01"], "--until must come after"),
    ],
)
def test_a_bad_window_is_refused_with_a_clear_message(
    log: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert cli_main(["traces", str(log), *argv]) == 1
    assert message in capsys.readouterr().err


def test_a_live_log_is_summarised(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "traces.jsonl"
    memory = Memory(tmp_path / "m.db", settings=make_settings(trace_log=str(path)), clock=fixed_clock(NOW))
    load_sample(memory)
    memory.recall(agent_id="demo", query=CUE_QUERY, limit=5, time_cue=JUNE_CUE)
    memory.recall(agent_id="demo", query="tomatoes on the balcony", limit=10)
    memory.reconstruct(agent_id="demo", query=CUE_QUERY)
    memory.close()
    stats = summarize_log(path, since=T0 - timedelta(days=1))
    assert stats["recalls"] == 3 and stats["tools"] == {"recall": 2, "reconstruct": 1}
    assert stats["events"]["time_cue_given"]["count"] == 1 and stats["timing_ms"]["total"]["n"] == 3
    assert stats["skipped"] == {"malformed_lines": 0, "no_trace": 0, "undated": 0}


@pytest.mark.parametrize(
    "argv",
    [
        ["--summary", "--days", "1e12"],
        ["--summary", "--days", "nan"],
        ["--prune-days", "inf"],
        ["--summary", "--until", "0001-01-01"],
    ],
)
def test_a_window_beyond_the_calendar_is_refused_not_raised(
    log: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    assert cli_main(["traces", str(log), *argv]) == 1
    assert capsys.readouterr().err.startswith("cuedrecall: ")
