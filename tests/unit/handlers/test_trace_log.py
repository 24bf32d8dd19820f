"""The trace log (CUEDRECALL_TRACE_LOG, handlers/trace_log.py): every recall and reconstruct appends its trace and
returned refs, never stored text; the caller's response is unchanged; rotation at the size bound keeps one file; a
log that cannot be written never fails a recall."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from benchmarks.recall_trace_confirm import main as confirm_main
from cuedrecall.api import Memory
from cuedrecall.cli import main as cli_main
from cuedrecall.clock import fixed_clock
from cuedrecall.demo import CUE_QUERY, JUNE_CUE, load_sample
from cuedrecall.handlers.trace_log import TraceLog, query_hash, query_secret, read_entries
from tests.conftest import NOW, make_settings


def sample(path: Path, **settings: Any) -> Memory:
    memory = Memory(path, settings=make_settings(**settings), clock=fixed_clock(NOW))
    if not memory.list_memories(agent_id="demo", limit=1)["memories"]:
        load_sample(memory)
    return memory


def entries(path: Path) -> list[dict[str, Any]]:
    return [entry for _, entry in read_entries(path)]


def untimed(trace: Any) -> Any:
    """A trace without its timings (the only part two runs of one recall may differ in)."""
    if isinstance(trace, dict):
        return {k: untimed(v) for k, v in trace.items() if k != "timing_ms"}
    return trace


@pytest.fixture
def logged(tmp_path: Path) -> tuple[Memory, Path]:
    log = tmp_path / "traces.jsonl"
    memory = sample(tmp_path / "m.db", trace_log=str(log))
    yield memory, log
    memory.close()


def test_every_recall_and_reconstruct_appends_its_trace_and_returned_refs(logged: tuple[Memory, Path]) -> None:
    memory, log = logged
    recalled = memory.recall(agent_id="demo", query=CUE_QUERY, limit=5, time_cue=JUNE_CUE)
    rebuilt = memory.reconstruct(agent_id="demo", query=CUE_QUERY)
    first, second = entries(log)
    assert set(first) == {"v", "id", "at", "tool", "scope", "query_sha256", "refs", "trace"}
    assert (first["tool"], second["tool"]) == ("recall", "reconstruct")
    assert first["at"] == NOW and first["id"] != second["id"]
    assert first["scope"]["agent_id"] == "demo"
    assert first["query_sha256"] == query_hash(CUE_QUERY, query_secret(memory.runtime))  # keyed by the database
    assert first["refs"] == [m["ref"] for m in recalled["messages"]]
    assert first["trace"]["trace_version"] == 1 and first["trace"]["cue"]["bound"] == 2  # the cue's own section
    cited = {c["ref"] for item in rebuilt["items"] for c in item["claims"]}
    assert set(second["refs"]) == cited
    assert second["trace"]["recall"]["trace_version"] == 1 and second["trace"]["candidate_refs"]


def test_the_response_is_unchanged_by_the_log(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    plain = sample(db)
    logging_memory = sample(db, trace_log=str(tmp_path / "traces.jsonl"))
    calls = [
        ("recall", {"agent_id": "demo", "query": CUE_QUERY, "limit": 5, "time_cue": JUNE_CUE}),
        ("recall", {"agent_id": "demo", "query": "", "limit": 3}),
        ("reconstruct", {"agent_id": "demo", "query": CUE_QUERY, "mode": "lite"}),
        ("reconstruct", {"agent_id": "demo", "query": "bike shop", "time_cue": JUNE_CUE}),
    ]
    for tool, arguments in calls:
        assert logging_memory.call(tool, arguments) == plain.call(tool, arguments), (tool, arguments)
        asked = logging_memory.call(tool, {**arguments, "trace": True})
        assert untimed(asked) == untimed(plain.call(tool, {**arguments, "trace": True}))
        assert untimed(entries(tmp_path / "traces.jsonl")[-1]["trace"]) == untimed(asked["trace"])
    assert len(entries(tmp_path / "traces.jsonl")) == 2 * len(calls)
    plain.close()
    logging_memory.close()


def test_the_log_holds_no_stored_text(logged: tuple[Memory, Path]) -> None:
    memory, log = logged
    memory.recall(agent_id="demo", query=CUE_QUERY, limit=10, time_cue=JUNE_CUE)
    memory.reconstruct(agent_id="demo", query="what did the bike shop fix")
    memory.recall(agent_id="demo", query="Sintra ride bike", limit=3)
    text = log.read_text(encoding="utf-8")
    assert CUE_QUERY not in text and "Sintra ride" not in text  # the query is hashed, never written
    for row in memory.list_memories(agent_id="demo", limit=100)["memories"]:
        words = row["content"].split()
        for i in range(len(words) - 2):
            assert " ".join(words[i : i + 3]) not in text, row["ref"]


def test_rotation_at_the_bound_keeps_one_rotated_file(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    log = TraceLog(path, max_bytes=600)
    for number in range(40):
        assert log.append({"n": number, "pad": "x" * 100})
        assert path.stat().st_size <= 600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.jsonl", "t.jsonl.1"]
    kept = [entry["n"] for _, entry in read_entries(path)]
    assert kept == list(range(kept[0], 40)) and 40 - kept[0] >= 5  # the newest, in order, across both files
    big = {"n": "big", "pad": "y" * 2000}  # larger than the bound: written alone in a fresh file
    assert log.append(big)
    assert [e["n"] for _, e in read_entries(path, rotated=False)] == ["big"]


def test_rotation_through_the_setting(tmp_path: Path) -> None:
    log = tmp_path / "traces.jsonl"
    memory = sample(tmp_path / "m.db", trace_log=str(log), trace_log_max_bytes=20_000)
    for _ in range(12):
        memory.recall(agent_id="demo", query=CUE_QUERY, limit=5, time_cue=JUNE_CUE)
    assert log.stat().st_size <= 20_000 and (tmp_path / "traces.jsonl.1").exists()
    assert 0 < len(entries(log)) < 12
    memory.close()


def test_a_log_that_cannot_be_written_never_fails_a_recall(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    db = tmp_path / "m.db"
    plain = sample(db)
    broken = sample(db, trace_log=str(tmp_path / "no-such-folder" / "traces.jsonl"))
    with caplog.at_level(logging.WARNING, logger="cuedrecall"):
        for _ in range(3):
            answer = broken.recall(agent_id="demo", query=CUE_QUERY, limit=5, time_cue=JUNE_CUE)
            assert answer == plain.recall(agent_id="demo", query=CUE_QUERY, limit=5, time_cue=JUNE_CUE)
            assert broken.reconstruct(agent_id="demo", query=CUE_QUERY)["items"]
    warnings = [r for r in caplog.records if "trace log" in r.getMessage()]
    assert len(warnings) == 1 and "cannot be written" in warnings[0].getMessage()
    plain.close()
    broken.close()


def test_an_unserialisable_entry_is_dropped_not_raised(tmp_path: Path) -> None:
    log = TraceLog(tmp_path / "t.jsonl", max_bytes=10_000)
    assert log.append({"bad": float("nan")}) is False
    assert log.append({"good": 1}) is True
    assert [e for _, e in read_entries(tmp_path / "t.jsonl")] == [{"good": 1}]


def test_traces_lists_the_log_and_the_confirmation_tool_reads_it(
    logged: tuple[Memory, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    memory, log = logged
    cued = memory.recall(agent_id="demo", query=CUE_QUERY, limit=5, time_cue=JUNE_CUE)
    memory.recall(agent_id="demo", query="tomatoes on the balcony", limit=2)
    memory.reconstruct(agent_id="demo", query=CUE_QUERY)
    assert cli_main(["traces", str(log), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [row["tool"] for row in listed] == ["reconstruct", "recall", "recall"]  # newest first
    assert listed[2]["cued"] is True and listed[2]["refs"] == len(cued["messages"])
    db = memory.settings.db_path  # the query hash is keyed by this database's secret
    assert cli_main(["traces", str(log), "--query", CUE_QUERY, "--db", db, "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 2
    assert cli_main(["traces", str(log)]) == 0 and "trace log" in capsys.readouterr().out

    # after the fact: the June repair (mem:11) was the answer to the cued recall, and it was returned
    first = listed[2]["id"]
    assert "mem:11" in [m["ref"] for m in cued["messages"]]
    assert confirm_main(["--trace-log", str(log), "--entry", first, "--gold", "mem:11", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["items"] == [{"id": first, "code": None}]
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        json.dumps({"query": CUE_QUERY, "gold": ["mem:12"]})
        + "\n"
        + json.dumps({"entry": listed[1]["id"], "gold": ["mem:999"]})
        + "\n",
        encoding="utf-8",
    )
    assert confirm_main(["--trace-log", str(log), "--answers", str(answers), "--db", db, "--json"]) == 0
    codes = [item["code"] for item in json.loads(capsys.readouterr().out)["items"]]
    assert len(codes) == 3 and codes[-1] == "CANDIDATE_MISS"
    with pytest.raises(SystemExit):
        confirm_main(["--trace-log", str(log)])  # no gold, no answers
