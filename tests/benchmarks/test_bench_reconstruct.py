"""benchmarks/reconstruct.py: how it reads a reconstruct answer, scores it and reports it.

The scoring runs on answers written by hand, in our shape and in CPersona's (whose refs are mapped to ours).
The one end-to-end run is ours only (no CPersona), on the small long-span history with the hash embedder; it
asserts on the report's structure, so it holds whether our reconstruct answers ``ok: false`` or answers.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np
import pytest

from benchmarks import reconstruct as rc
from benchmarks import retrieval_peer as rp
from benchmarks.datasets import Conversation, Question, SessionSummary, Turn
from benchmarks.harness import Dataset

TEXTS = {
    "mem:1": "The dentist visit is done. She found a small cavity in my upper right premolar and filled it.",
    "mem:2": "The filling cost 210 dollars after insurance.",
    "mem:3": "We talked about the weather all afternoon, nothing else.",
}


def item(head: str, content: str, claims: list[str], excerpts: list[tuple[str, str]] = ()) -> dict:
    out = {
        "content": content,
        "head_ref": head,
        "claims": [{"ref": r, "as_of": "2025-01-01", "why": "seed"} for r in claims],
    }
    if excerpts:
        out["excerpts"] = [{"ref": r, "content": c} for r, c in excerpts]
    return out


def answer(*items: dict) -> dict:
    return {"items": list(items), "effective_count": 10, "returned_count": len(items)}


def test_normalized_quotes_hold_a_span_of_the_evidence_or_all_of_a_short_one() -> None:
    assert rc.normalize("  The\tDentist \n visit ") == "the dentist visit"
    evidence = TEXTS["mem:1"]
    assert rc.holds_part(evidence, evidence)
    assert rc.holds_part("… SHE FOUND A SMALL CAVITY IN MY UPPER   RIGHT premolar …", evidence)  # 40 chars, anywhere
    assert not rc.holds_part("The dentist visit is done.", evidence)  # 26 chars: the first block only
    assert rc.holds_part("Note: the filling cost 210 dollars after insurance. Ok", TEXTS["mem:2"])
    assert rc.holds_part("short one", "Short  one")  # shorter than the span: all of it
    assert not rc.holds_part("", evidence) and not rc.holds_part("anything", "")


def test_a_head_quote_of_the_evidence_counts_and_its_text_is_checked() -> None:
    response = answer(item("mem:3", TEXTS["mem:3"], ["mem:3"]), item("mem:1", TEXTS["mem:1"], ["mem:1", "mem:2"]))
    s = rc.score(response, ["mem:1", "mem:2"], TEXTS)
    assert s["quoted"] == 1.0 and s["quoted_text"] == 1.0 and s["cited"] == 1.0
    assert s["all_quoted"] == 0.0  # mem:2 is a claim without a quote
    assert s["first_item"] == 0.0  # the first item quotes mem:3
    assert s["items"] == 2 and s["returned_count"] == 2 and s["error"] is None
    assert s["quoted_chars"] == len(TEXTS["mem:3"]) + len(TEXTS["mem:1"])
    assert s["size_chars"] == len(json.dumps(response, ensure_ascii=False))


def test_an_excerpt_counts_and_a_short_block_of_the_evidence_is_not_its_text() -> None:
    response = answer(
        item(
            "mem:3",
            TEXTS["mem:3"],
            ["mem:3", "mem:1", "mem:2"],
            [("mem:1", "The dentist visit is done."), ("mem:2", TEXTS["mem:2"])],
        )
    )
    s = rc.score(response, ["mem:1"], TEXTS)
    assert s["quoted"] == 1.0 and s["quoted_text"] == 0.0 and s["all_quoted"] == 1.0 and s["text_anywhere"] == 0.0
    both = rc.score(response, ["mem:1", "mem:2"], TEXTS)
    assert both["quoted_text"] == 1.0 and both["all_quoted"] == 1.0 and both["first_item"] == 1.0


def test_cited_is_not_quoted_and_an_empty_quote_is_no_quote() -> None:
    response = answer(item("mem:3", TEXTS["mem:3"], ["mem:3", "mem:1"], [("mem:1", "")]))
    s = rc.score(response, ["mem:1"], TEXTS)
    assert s["cited"] == 1.0 and s["quoted"] == 0.0 and s["quoted_text"] == 0.0 and s["all_quoted"] == 0.0


def test_a_quote_attributed_elsewhere_is_not_evidence_quoted_but_is_text_anywhere() -> None:
    response = answer(item("mem:3", TEXTS["mem:2"], ["mem:3"]))
    s = rc.score(response, ["mem:2"], TEXTS)
    assert s["quoted"] == 0.0 and s["cited"] == 0.0 and s["text_anywhere"] == 1.0


def test_cpersona_refs_are_mapped_to_ours_and_unknown_ones_never_count() -> None:
    # CPersona's ids differ from ours; the table maps them (msg_id for memories, summary for episodes)
    table = {"mem:11": "mem:1", "mem:12": "mem:2", "ep:4": "ep:1"}
    response = answer(
        item("mem:99", "What did the vet say?", ["mem:99"]),
        item(
            "mem:11",
            TEXTS["mem:1"],
            ["mem:12", "mem:11", "ep:4"],
            [("mem:12", TEXTS["mem:2"]), ("ep:4", "[Episode] the dentist")],
        ),
    )
    s = rc.score(response, ["mem:1", "mem:2"], TEXTS, table)
    assert s["quoted"] == 1.0 and s["quoted_text"] == 1.0 and s["all_quoted"] == 1.0 and s["cited"] == 1.0
    assert [ref for _i, ref, _t in rc.passages(response, table)] == ["peer:mem:99", "mem:1", "mem:2", "ep:1"]
    assert rc.cited_refs(response, table) == {"peer:mem:99", "mem:1", "mem:2", "ep:1"}
    # read without the table, CPersona's own ids match nothing of ours
    assert rc.score(response, ["mem:1", "mem:2"], TEXTS)["quoted"] == 0.0


@pytest.mark.parametrize(
    "response",
    [
        {"ok": False, "error": "reconstruct is not available yet", "items": [], "returned_count": 0},
        {"ok": False, "error": "ToolError: cpersona reconstruct: boom"},
        {"error": "no items"},
        None,
    ],
)
def test_an_error_answer_is_a_miss_with_no_size(response) -> None:
    s = rc.score(response, ["mem:1"], TEXTS)
    assert s["error"]
    assert all(s[k] == 0.0 for k in rc.SCORES)
    assert all(s[k] is None for k in rc.SIZES)


def question(qid: str, asked_at: str = "2025-03-01T12:00:00+00:00", category: str = "4") -> Question:
    return Question(qid, f"what about {qid}?", asked_at, ("m1",), category, "x")


def rows_by_hand() -> list[dict]:
    locomo = Dataset("locomo", [])
    good = answer(item("mem:1", TEXTS["mem:1"], ["mem:1"]))
    miss = answer(item("mem:3", TEXTS["mem:3"], ["mem:3"]))
    error = {"ok": False, "error": "reconstruct is not available yet", "items": [], "returned_count": 0}
    rows = []
    for qid, ours, theirs, cued in (("q1", error, good, True), ("q2", error, miss, False), ("q3", good, good, True)):
        rows.append(
            rc.question_row(locomo, "hash", rc.OURS, "c1", question(qid), rc.NO_CUE, cued, ["mem:1"], TEXTS, ours)
        )
        rows.append(
            rc.question_row(
                locomo, "hash", rc.PEER, "c1", question(qid), rc.NO_CUE, cued, ["mem:1"], TEXTS, theirs, ms=5.0
            )
        )
        if cued:
            rows.append(
                rc.question_row(
                    locomo,
                    "hash",
                    rc.OURS,
                    "c1",
                    question(qid),
                    rc.CUE,
                    True,
                    ["mem:1"],
                    TEXTS,
                    {**ours, "time_cue": {}} if ours is good else ours,
                )
            )
            rows.append(
                rc.question_row(
                    locomo,
                    "hash",
                    rc.PEER,
                    "c1",
                    question(qid),
                    rc.CUE,
                    True,
                    ["mem:1"],
                    TEXTS,
                    {**theirs, "time_cue": {"applied": True}},
                )
            )
    return rows


def test_summaries_count_errors_as_misses_and_leave_them_out_of_sizes() -> None:
    rows = rows_by_hand()
    ours = rc.summarise([r for r in rows if r["system"] == rc.OURS and r["arm"] == rc.NO_CUE])
    assert ours["n"] == 3 and ours["errors"] == 2
    assert ours["quoted"] == pytest.approx(1 / 3)  # the two error rows are misses
    assert ours["items"] == 1.0  # the size means are over the one answer
    theirs = rc.summarise([r for r in rows if r["system"] == rc.PEER and r["arm"] == rc.NO_CUE])
    assert theirs["errors"] == 0 and theirs["quoted"] == pytest.approx(2 / 3)
    table = rc.headline_rows(rows)
    slices = [(line[2], line[3], line[4], line[-1]) for line in table]
    assert slices == [
        (rc.OURS, "all", rc.NO_CUE, 3),
        (rc.OURS, "cued", rc.NO_CUE, 2),
        (rc.OURS, "cued", rc.CUE, 2),
        (rc.PEER, "all", rc.NO_CUE, 3),
        (rc.PEER, "cued", rc.NO_CUE, 2),
        (rc.PEER, "cued", rc.CUE, 2),
    ]
    assert [line[-2] for line in table] == [2, 1, 1, 0, 0, 0]  # errors beside every figure
    lines = rc.paired_lines(rows)
    assert any(
        "`ours` quotes evidence where `cpersona` does not on 0 of 3 questions, the reverse on 1" in x for x in lines
    )
    errors = rc.error_lines(rows)
    assert errors[0].startswith("- `ours`: 3 of 5 calls answered with an error") and "not available" in errors[0]
    assert errors[1] == "- `cpersona`: no error answers (5 calls)."
    detail = rc.detail_rows(rows)
    assert detail[0][:5] == ["locomo", "hash", "**all**", rc.OURS, rc.NO_CUE]
    assert len(detail[0]) == len(rc.DETAIL_COLUMNS)


def test_relative_cues_are_sent_as_the_absolute_days_they_name() -> None:
    ago = {"ago": {"unit": "months", "value": 1}, "confidence": "likely"}
    cue, relative = rc.absolute_cue(ago, "2025-03-01T12:00:00+00:00", "2025-01-01T00:00:00+00:00")
    assert relative and cue == {"after": "2025-01-15", "before": "2025-02-14", "confidence": "likely"}
    plain = {"after": "2025-01-21", "before": "2025-01-31", "confidence": "sure"}
    assert rc.absolute_cue(plain, "2025-03-01T12:00:00+00:00", None) == (plain, False)
    far, _ = rc.absolute_cue(
        {"ago": "long_ago", "confidence": "vague"}, "2025-04-01T00:00:00+00:00", "2025-01-01T00:00:00+00:00"
    )
    assert far == {"after": "2025-01-01", "before": "2025-01-30", "confidence": "vague"}
    assert rc.absolute_cue({"ago": "long_ago", "confidence": "vague"}, "2025-04-01", None) == (None, True)


def test_calls_are_in_time_order_at_the_defaults_with_the_cue_arm_after() -> None:
    late, early = question("q1", "2025-03-02T00:00:00+00:00"), question("q2", "2025-03-01T00:00:00+00:00")
    cues = {"q1": {"cue": {"after": "2025-02-01", "before": "2025-02-28", "confidence": "likely"}}}
    calls = rc.calls_for("agent", [late, early], cues)
    assert [(q.qid, arm) for q, arm, _ in calls] == [("q2", rc.NO_CUE), ("q1", rc.NO_CUE), ("q1", rc.CUE)]
    assert calls[0][2] == {"agent_id": "agent", "query": "what about q2?"}  # no count, budget or top_k
    assert calls[2][2]["time_cue"] == cues["q1"]["cue"]


def test_question_cues_read_the_text_and_asked_at_only() -> None:
    turns = (Turn("m1", "the dentist", "2025-01-10T10:00:00+00:00", "A", 1),)
    sessions = (SessionSummary(1, "dentist", "d", "2025-01-10T10:00:00+00:00", "2025-01-10T10:00:00+00:00"),)
    questions = (
        Question(
            "q1", "What did the dentist say two weeks ago?", "2025-01-24T10:00:00+00:00", ("m1",), "relative", "x"
        ),
        Question("q2", "What did the dentist say?", "2025-01-24T10:00:00+00:00", ("m1",), "none", "x"),
    )
    conversation = Conversation("c", turns, sessions, questions)
    cues = rc.question_cues(conversation, list(questions))
    assert set(cues) == {"q1"} and cues["q1"]["relative"] and "ago" in cues["q1"]["extracted"]
    assert set(cues["q1"]["cue"]) == {"after", "before", "confidence"}


def test_variants_are_named_over_our_defaults() -> None:
    assert rc.our_defaults() == {"CPERSONA_BLOCK_BUILD_ENABLED": "true", "CPERSONA_BLOCK_RETRIEVAL_ENABLED": "true"}
    label, environ = rc.parse_variant(["CPERSONA_BLOCK_BUILD_ENABLED=false", "CPERSONA_BLOCK_RETRIEVAL_ENABLED=false"])
    assert label == "ours blocks-off" and not rc.blocks_on(environ)
    with pytest.raises(ValueError):
        rc.parse_variant(["CPERSONA_NO_SUCH=1"])
    with pytest.raises(ValueError):  # block retrieval without building is refused by our settings
        rc.parse_variant(["CPERSONA_BLOCK_BUILD_ENABLED=false"])


def test_parser_defaults() -> None:
    args = rc.build_parser().parse_args([])
    assert args.datasets == ["locomo", "long_span"] and args.embedders == ["local", "hash"]
    assert args.long_span == "large" and not args.skip_peer and args.out.name == "reconstruct.md"


def test_ours_end_to_end_on_the_small_long_span_history(tmp_path: Path) -> None:
    out, dump = tmp_path / "results" / "reconstruct.md", tmp_path / "rows.jsonl"
    argv = [
        "--datasets",
        "long_span",
        "--long-span",
        "small",
        "--embedders",
        "hash",
        "--skip-peer",
        "--workdir",
        str(tmp_path / "db"),
        "--out",
        str(out),
        "--dump-rows",
        str(dump),
    ]
    assert rc.main(argv) == 0
    text = out.read_text(encoding="utf-8")
    assert text.startswith(
        "# Reconstruct: ours against CPersona 2.6.14\n\nCommand: `python -m benchmarks.reconstruct --datasets long_span"
    )
    rule, headline, setup = text.index("## What is measured"), text.index("## Headline"), text.index("## Setup")
    assert rule < headline < setup  # the rule comes first, before any number
    assert not any(line.startswith("|") for line in text[rule:headline].splitlines())
    rows = [json.loads(line) for line in dump.read_text(encoding="utf-8").splitlines()]
    assert {r["system"] for r in rows} == {"ours"}
    uncued = [r for r in rows if r["arm"] == rc.NO_CUE]
    assert len(uncued) == 35 and len(rows) == 35 + sum(1 for r in uncued if r["cued"])
    for r in rows:
        if r["error"] is not None:  # an error answer (ours before its reconstruct lands) is a miss, with no size
            assert all(r[k] == 0.0 for k in rc.SCORES) and r["size_chars"] is None
        else:
            assert r["size_chars"] > 0 and r["items"] >= 0
    line = next(row for row in text.splitlines() if row.startswith("| long-span-small | hash | ours | all | no cue |"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    errors, n = int(cells[-2]), int(cells[-1])
    assert n == 35 and errors == sum(1 for r in uncued if r["error"] is not None)
    if errors:
        assert re.search(
            rf"- `ours`: {sum(1 for r in rows if r['error'])} of {len(rows)} calls answered with an "
            r"error \(counted as misses",
            text,
        )
    else:
        assert "- `ours`: no error answers" in text


class FakeEmbedder:
    mode = "hash"
    model = "fake-4"

    def embed(self, texts):
        return np.stack([np.array([len(t), 1.0, 0.0, 0.0], dtype=np.float32) for t in texts])


def test_a_cpersona_failure_makes_error_rows_of_the_calls_it_did_not_answer(tmp_path: Path, monkeypatch) -> None:
    turns = (Turn("m1", TEXTS["mem:1"], "2025-01-10T10:00:00+00:00", "A", 1),)
    sessions = (SessionSummary(1, "dentist", "d", "2025-01-10T10:00:00+00:00", "2025-01-10T10:00:00+00:00"),)
    questions = (question("q1"), question("q2"))
    conversation = Conversation("c1", turns, sessions, questions)
    calls = rc.calls_for("c1", list(questions), {})
    ours = {
        "gold": {"q1": ["mem:1"], "q2": ["mem:1"]},
        "texts": {"mem:1": TEXTS["mem:1"]},
        "refs": {"m1": "mem:1"},
        "episodes": {},
    }

    async def loaded(*_args):
        return {"imported_memories": 1, "skipped_memories": 0, "imported_episodes": 1, "skipped_episodes": 0}, {}

    async def one_then_crash(calls, *_args):
        answers = _args[-1]
        answers.append((answer(item("mem:1", TEXTS["mem:1"], ["mem:1"])), 3.0))
        raise RuntimeError("the server went away")

    monkeypatch.setattr(rp, "ask_peer", loaded)
    monkeypatch.setattr(rc, "ask_reconstruct", one_then_crash)
    advanced = []
    args = argparse.Namespace(timeout=1.0, start_timeout=1.0, queue_timeout=1.0)
    rows, totals = rc.evaluate_peer(
        Dataset("locomo", []),
        conversation,
        FakeEmbedder(),
        ours,
        calls,
        args,
        "http://127.0.0.1:1/embed",
        tmp_path,
        lambda: advanced.append(1),
    )
    assert totals["failed"] == "RuntimeError: the server went away" and len(advanced) == 1  # the one not answered
    assert [r["error"] for r in rows] == [None, "CPersona failed: RuntimeError: the server went away"]
    assert rows[0]["quoted"] == 0.0  # no database to map through: CPersona's ref stays foreign
    facts = {"imports": [{"dataset": "locomo", "embedder": "hash", "conversation": "c1", **totals}], "ours": []}
    assert any(line.startswith("- **CPersona failed** on `c1`") for line in rc.check_lines(rows, facts))


def test_the_one_agent_layout_asks_every_locomo_question_of_one_store() -> None:
    from tests.conftest import LOCOMO_MINI

    argv = ["--locomo", str(LOCOMO_MINI), "--datasets", "locomo", "--skip-peer"]
    plain = rc.load(rc.build_parser().parse_args(argv))
    merged = rc.load(rc.build_parser().parse_args([*argv, "--layout", "one-agent"]))
    assert len(merged) == 1 and len(merged[0].conversations) == 1
    whole = merged[0].conversations[0]
    assert len(whole.turns) == sum(len(c.turns) for c in plain[0].conversations)
    assert len(whole.questions) == sum(len(c.questions) for c in plain[0].conversations)
