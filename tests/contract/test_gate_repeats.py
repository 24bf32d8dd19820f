"""A recall's answer and the calibration that happens to be in force (docs/recall-process.md#the-gate).

Two rules, each checked on random stores under random automatic calibrations:
- a row whose text repeats every informative word of the query passes the gate whatever an automatic
  calibration's thresholds are (gate-v2, trace origin ``repeats``): a stored phrase the query repeats, two-character
  CJK words included, never depends on whether a background calibration has landed;
- a calibration changes only which rows pass, never the order of those that pass under both, and the trace names
  the calibration each answer was judged by.
An explicit calibration (a person's) stays the whole rule.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cuedrecall.api import Memory
from cuedrecall.config import Settings
from tests.conftest import REPLICA_ARMS, make_settings, open_memory

A = "repeater"
WORDS = [
    "apple",
    "river",
    "stone",
    "cloud",
    "paper",
    "lamp",
    "garden",
    "window",
    "violin",
    "copper",
    "harbor",
    "meadow",
    "pencil",
    "silver",
    "ticket",
]
SHIPPED = {name: getattr(Settings.from_env({}), name) for name in REPLICA_ARMS}  # the arms a user runs
PHRASES = [  # (stored text, query that repeats its informative words)
    ("東京オフィスの移転は十月に決まった。", "東京オフィス 移転"),
    ("The quarterly zephyr audit moved to Tuesday.", "zephyr audit"),
    ("Ticket BUG-4417 was closed after the hotfix.", "what about bug-4417?"),
    ("大阪の採用は来月から始まる。", "大阪 採用"),
]


def _fill(memory: Memory, rng: random.Random, count: int) -> None:
    for i in range(count):
        stamp = f"2025-03-01T{(i // 60) % 24:02d}:{i % 60:02d}:00+00:00"
        memory.store(agent_id=A, content=" ".join(rng.sample(WORDS, 5)) + f" note {i}", timestamp=stamp)


def _calibrate(memory: Memory, cosine: float, lexical: float, *, auto: bool, memories: int) -> None:
    """Thresholds for cosine and both lexical scales, recorded as an automatic (or explicit) calibration."""
    cal = memory.calibration
    values = [cal.threshold(A, signal, value) for signal, value in (("cosine", cosine), ("rrf", lexical))]
    values.append(cal.threshold(A, "rsf", min(1.0, lexical * 30)))
    with memory.store_.write() as conn:
        memory.store_.set_thresholds(conn, [*values, *cal.stamp(A, auto=auto, memories=memories)])


def _answer(memory: Memory, query: str) -> tuple[list[str], dict[str, Any]]:
    response = memory.recall(agent_id=A, query=query, trace=True)
    rows = sorted((m for m in response["messages"] if "ref" in m), key=lambda m: m["rank"])
    return [m["ref"] for m in rows], response["trace"]


def _decision(trace: dict[str, Any], ref: str) -> dict[str, Any]:
    return next(d for d in trace["gate"]["decisions"] if d["ref"] == ref)


@settings(max_examples=10, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    fillers=st.integers(20, 90),
    phrase=st.sampled_from(PHRASES),
    first=st.tuples(st.floats(0.3, 1.0), st.floats(0.0, 0.2)),
    second=st.tuples(st.floats(0.3, 1.0), st.floats(0.0, 0.2)),
)
def test_a_row_repeating_the_query_stays_and_a_calibration_moves_no_row_it_keeps(
    tmp_path_factory: Any,
    seed: int,
    fillers: int,
    phrase: tuple[str, str],
    first: tuple[float, float],
    second: tuple[float, float],
) -> None:
    text, query = phrase
    path = tmp_path_factory.mktemp("repeats") / "m.db"
    with open_memory(path, settings=make_settings(**SHIPPED), background=False) as memory:
        rng = random.Random(seed)
        _fill(memory, rng, fillers // 2)
        target = memory.store(agent_id=A, content=text, timestamp="2025-03-02T00:00:00+00:00")["ref"]
        _fill(memory, rng, fillers - fillers // 2)
        answers = {"none": _answer(memory, query)}
        for label, (cosine, lexical), at in (("first", first, 50), ("second", second, 200)):
            _calibrate(memory, cosine, lexical, auto=True, memories=at)
            answers[label] = _answer(memory, query)
    for label, (rows, trace) in answers.items():
        assert target in rows, (label, rows)
        decision = _decision(trace, target)
        if decision["origin"] != "repeats":  # it cleared a bar of its own; else the rule let it through
            assert decision["score"] >= decision["threshold"], decision
        expected = {"origin": "none", "memories_at": None} if label == "none" else {"origin": "auto"}
        assert expected.items() <= trace["config"]["calibration"].items()  # the trace names the calibration
    for one, other in (("none", "first"), ("first", "second"), ("none", "second")):
        kept = set(answers[one][0]) & set(answers[other][0])
        assert [r for r in answers[one][0] if r in kept] == [r for r in answers[other][0] if r in kept]


@settings(max_examples=6, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), phrase=st.sampled_from(PHRASES))
def test_the_repeat_rule_is_what_keeps_the_row_under_a_high_automatic_calibration(
    tmp_path_factory: Any, seed: int, phrase: tuple[str, str]
) -> None:
    """Under thresholds no row clears, gate-v2 keeps the repeating row (origin ``repeats``), gate-v1 refuses it,
    and an explicit calibration at the same thresholds refuses it too. Without vectors, so that the small pool's
    outlier bar (which lets a standout cosine through an automatic calibration) does not decide it first."""
    text, query = phrase
    path = tmp_path_factory.mktemp("high") / "m.db"
    lexical = {**SHIPPED, "embedding_mode": "none"}
    with open_memory(path, settings=make_settings(**lexical), background=False) as memory:
        _fill(memory, random.Random(seed), 40)
        target = memory.store(agent_id=A, content=text, timestamp="2025-03-02T00:00:00+00:00")["ref"]
        _calibrate(memory, 1.01, 1.01, auto=True, memories=50)
        rows, trace = _answer(memory, query)
        assert rows[:1] == [target]
        assert _decision(trace, target)["origin"] == "repeats" and trace["policy"]["gate"] == "gate-v2"
        _calibrate(memory, 1.01, 1.01, auto=False, memories=50)
        rows, trace = _answer(memory, query)
        assert target not in rows or trace["gate"]["gate_fallback"]  # a person's gate is the whole rule
    with open_memory(path, settings=make_settings(**lexical, recall_gate="gate-v1"), background=False) as memory:
        _calibrate(memory, 1.01, 1.01, auto=True, memories=50)
        rows, trace = _answer(memory, query)
        assert not _decision(trace, target)["passed"] or trace["gate"]["gate_fallback"]


def test_a_row_holding_only_some_of_the_query_words_is_judged_by_its_thresholds(db_path: Path) -> None:
    with open_memory(db_path, settings=make_settings(**SHIPPED), background=False) as memory:
        _fill(memory, random.Random(1), 40)
        partial = memory.store(agent_id=A, content="The zephyr meeting moved to Tuesday.")["ref"]
        dogs = memory.store(agent_id=A, content="The zephyr audits are done.")["ref"]  # audits is not audit
        _calibrate(memory, 1.01, 1.01, auto=True, memories=50)
        _, trace = _answer(memory, "zephyr audit")
    for ref in (partial, dogs):
        decision = _decision(trace, ref)
        assert decision["origin"] != "repeats" and not decision["passed"], decision


def test_a_query_of_more_informative_words_than_the_bound_leaves_the_repeat_rule_out(db_path: Path) -> None:
    """recall-bounds-v1: the rule checks at most MAX_REPEATED_WORDS words; a row repeating a longer query is judged
    by its thresholds (a pasted page is not a phrase a row repeats), one repeating exactly that many still passes."""
    from cuedrecall.recall.gate import MAX_REPEATED_WORDS

    def words(count: int) -> str:
        return " ".join(f"zq{i:03d}x" for i in range(count))

    lexical = {**SHIPPED, "embedding_mode": "none"}
    with open_memory(db_path, settings=make_settings(**lexical), background=False) as memory:
        _fill(memory, random.Random(2), 40)
        at_bound = memory.store(agent_id=A, content=words(MAX_REPEATED_WORDS))["ref"]
        over = memory.store(agent_id=A, content=words(MAX_REPEATED_WORDS + 1) + " over")["ref"]
        _calibrate(memory, 1.01, 1.01, auto=True, memories=50)
        _, trace = _answer(memory, words(MAX_REPEATED_WORDS))
        assert _decision(trace, at_bound)["origin"] == "repeats"
        _, trace = _answer(memory, words(MAX_REPEATED_WORDS + 1) + " over")
        assert all(d["origin"] != "repeats" for d in trace["gate"]["decisions"]), trace["gate"]["decisions"]
        assert not _decision(trace, over)["passed"] or trace["gate"]["gate_fallback"]
