"""cuedrecall/ui/trace_html.py: a trace as one self-contained page (``cuedrecall view``), holding refs, ranks, scores
and reasons, never stored text, loading nothing from the network, escaping everything it shows."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

from cuedrecall.api import Memory
from cuedrecall.cli import main as cli_main
from cuedrecall.clock import fixed_clock
from cuedrecall.ui.trace_html import read_source, trace_fragment, trace_page
from tests.conftest import NOW, make_settings
from tests.ui_store import AGENT, CUE, QUESTION, ROWS, biggest_lift, cued_recall, fill


@pytest.fixture(scope="module")
def store() -> Memory:
    memory = Memory(":memory:", settings=make_settings(), clock=fixed_clock(NOW))
    fill(memory)
    return memory


@pytest.fixture(scope="module")
def cued(store: Memory) -> dict[str, Any]:
    return cued_recall(store)


def rows_of(page: str, cls: str) -> list[str]:
    table = re.search(rf'<table class="{cls}">(.*?)</table>', page, re.S)
    assert table, cls
    return re.findall(r"<tr[^>]*>.*?</tr>", table.group(1), re.S)


def test_the_page_holds_the_arms_gate_reasons_moves_seats_and_coverage(cued: dict[str, Any]) -> None:
    trace = cued["trace"]
    page = trace_page(cued, question=QUESTION)
    # the arms side by side: one column per arm with its length, every hit a followable ref
    header = rows_of(page, "arms")[0]
    for arm, hits in trace["arms"].items():
        assert html.escape(f"{arm} ({len(hits)})") in header
        for hit in hits:
            assert f'data-ref="{hit["ref"]}"' in page
    # the fusion: each arm's contribution
    assert len(rows_of(page, "fusion")) == len(trace["fusion"]) + 1
    # the gate line: every decision, a drop with its reason
    decisions = trace["gate"]["decisions"]
    gate_rows = rows_of(page, "gate")[1:]
    assert len(gate_rows) == len(decisions)
    dropped = [d for d in decisions if not d["passed"]]
    assert dropped, "the store has a row the gate drops"
    for d, row in zip(decisions, gate_rows):
        assert f'data-ref="{d["ref"]}"' in row
        assert ("passed" if d["passed"] else f"dropped: {d['reason']}") in row
    # the moved rows: from -> to (counted from 1) with the cue rank
    move = biggest_lift(trace)
    moved = next(r for r in rows_of(page, "moves") if f'data-ref="{move["ref"]}"' in r)
    cue_rank = next(h["rank"] for h in trace["arms"]["cue"] if h["ref"] == move["ref"])
    assert f">#{move['from'] + 1}<" in moved and f">#{move['to'] + 1}<" in moved and f">#{cue_rank + 1}<" in moved
    assert f"up {move['from'] - move['to']}" in moved
    # the cue's period on a timeline, the stages
    assert 'class="band given"' in page and 'class="band searched"' in page and "2025-06-01" in page
    assert rows_of(page, "stages")
    # the coverage ledger: the question with its parts marked
    ledger = trace["coverage"]
    covered = page.count('<mark class="covered"')
    uncovered = page.count('<mark class="uncovered"')
    assert covered + uncovered == len(ledger["parts"]) and uncovered == len(ledger["uncovered"])
    assert uncovered and covered
    # the journeys a click shows: every ref's stages, no text
    journeys = json.loads(html.unescape(re.search(r'data-journeys="([^"]*)"', page).group(1)))
    assert any(step.startswith("moved by the cue") for step in journeys[move["ref"]])
    assert any(step.startswith("gate: dropped") for step in journeys[dropped[0]["ref"]])


def test_the_page_holds_no_stored_text_and_loads_nothing(cued: dict[str, Any], store: Memory) -> None:
    for page in (trace_page(cued), trace_page(cued["trace"]), trace_page(cued, question=QUESTION)):
        assert "http://" not in page and "https://" not in page
        assert "Content-Security-Policy" in page and "default-src 'none'" in html.unescape(page)
        for _, text in ROWS:
            words = text.split()
            for i in range(len(words) - 2):
                run = " ".join(words[i : i + 3])
                assert run not in page and html.escape(run) not in page, run
    assert "<script>window" not in trace_page(cued)


def test_everything_shown_is_escaped() -> None:
    evil = '<img src=x onerror="alert(1)">'
    trace = {
        "trace_version": 1,
        "arms": {"vector_near": [{"ref": evil, "rank": 0, "raw": 0.5}]},
        "gate": {
            "decisions": [
                {
                    "ref": evil,
                    "signal": "cosine",
                    "score": 0.1,
                    "threshold": 0.3,
                    "origin": evil,
                    "passed": False,
                    "reason": evil,
                }
            ]
        },
        "order": {"before_cut": [evil], "limit": 1, "cut_by_count": []},
        evil: {"x": evil},
    }
    page = trace_page(trace, question=evil)
    assert "<img" not in page and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page


def test_a_reconstruct_trace_shows_its_items_and_links_into_its_recall(store: Memory) -> None:
    answer = store.reconstruct(agent_id=AGENT, query=QUESTION, time_cue=CUE, trace=True)
    page = trace_page(answer, question=QUESTION)
    assert 'href="#recall-view"' in page and 'id="recall-view"' in page
    items = rows_of(page, "items")[1:]
    assert len(items) == len(answer["items"])
    for item, row in zip(answer["items"], items):
        assert f'data-ref="{item["head_ref"]}"' in row
    recall_part = page[page.index('id="recall-view"') :]
    assert 'class="arms"' in recall_part and 'class="gate"' in recall_part
    for item in answer["items"]:
        assert html.escape(item["content"][:30]) not in page
    assert read_source(answer["trace"]).kind == "reconstruct"


@pytest.mark.parametrize(
    "trace",
    [
        {},
        None,
        [],
        {"trace_version": 1},
        {"coverage": {"error": "RuntimeError"}},
        {
            "arms": {"x": [{"ref": "mem:1"}]},
            "order": {"before_cut": [{"ref": "mem:1"}]},
            "cue": {"lifted": [{"ref": "mem:1", "from": "?", "to": None}]},
            "stages": [{"stage": 1, "period": ["bad", None]}],
            "future": {"a": 1},
        },
    ],
)
def test_odd_traces_render(trace: Any) -> None:
    page = trace_page(trace)
    assert page.startswith("<!DOCTYPE html>")
    fragment = trace_fragment(trace, question="a b")
    assert 'class="trace-view"' in fragment


def test_the_view_command_writes_the_page_and_prints_its_path(
    tmp_path: Path, cued: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "trace.json"
    source.write_text(json.dumps(cued), encoding="utf-8")
    assert cli_main(["view", str(source), "--question", QUESTION]) == 0
    written = Path(capsys.readouterr().out.strip())
    assert written == (tmp_path / "trace.html").resolve()
    assert 'class="moves"' in written.read_text(encoding="utf-8")
    log = tmp_path / "log.jsonl"
    entry = {
        "v": 1,
        "id": "abc123",
        "at": NOW,
        "tool": "recall",
        "scope": {"agent_id": AGENT},
        "refs": ["mem:4"],
        "query_sha256": "0",
        "trace": cued["trace"],
    }
    log.write_text(json.dumps(entry) + "\n", encoding="utf-8")
    assert cli_main(["view", str(log), "--entry", "abc123", "--out", str(tmp_path / "e.html")]) == 0
    assert "trace log entry abc123" in (tmp_path / "e.html").read_text(encoding="utf-8")
    assert cli_main(["view", str(log)]) == 0  # the newest entry
    assert (tmp_path / "log-abc123.html").exists()
    assert cli_main(["view", str(log), "--entry", "nope"]) == 1
    assert "no trace log entry nope" in capsys.readouterr().err
