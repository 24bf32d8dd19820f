"""The behaviour golden: every case's full recall response over the fixed corpus, pinned in JSON.

A difference fails with a readable diff of the first differing cases. When the
change is intended, regenerate deliberately (it prints the full diff first):

    python -m tests.golden.regenerate
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.golden.cases import CASES, GOLDEN_FILE, diff_text, differences, generate, load, run_case
from tests.golden.corpus import build

REGENERATE = "python -m tests.golden.regenerate"


@pytest.fixture(scope="module")
def corpus_db(tmp_path_factory: pytest.TempPathFactory, backend: str) -> Path:
    path = tmp_path_factory.mktemp("golden") / "golden.db"
    build(path)
    return path


def test_golden_file_exists_and_names_every_case() -> None:
    assert GOLDEN_FILE.exists(), f"no golden at {GOLDEN_FILE}: run {REGENERATE}"
    names = [case["name"] for case in CASES]
    assert len(names) == len(set(names)), "case names must be unique"
    assert list(load()) == names, f"the golden's cases are not the current cases: run {REGENERATE}"


def test_every_case_matches_the_golden(tmp_path: Path) -> None:
    expected, actual = load(), generate(tmp_path)
    changed = differences(expected, actual)
    assert not changed, (
        f"{len(changed)} of {len(actual)} golden cases differ: {', '.join(changed)}\n"
        f"{diff_text(expected, actual, changed, first=3)}\n"
        f"If the change is intended: {REGENERATE} (and say why in the commit)."
    )


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_trace_changes_nothing_but_adds_the_trace_key(corpus_db: Path, case: dict[str, Any]) -> None:
    plain = run_case(corpus_db, case)
    traced = run_case(corpus_db, case, trace=True)
    assert "trace" not in plain
    assert isinstance(traced.pop("trace"), dict)
    assert json.dumps(traced, ensure_ascii=False) == json.dumps(plain, ensure_ascii=False)


def test_the_golden_covers_every_mode() -> None:
    """The corpus and cases keep exercising what the golden is for (a guard against a shrinking golden)."""
    golden = load()
    responses = {name: entry["response"] for name, entry in golden.items()}
    settings = [case["settings"] for case in CASES]
    arguments = [case["arguments"] for case in CASES]
    assert any(s.get("recall_mode") == "rsf" for s in settings)
    assert any(a.get("deep") for a in arguments)
    assert any(s.get("vector_reach", 0) > s.get("max_memories", 10000) for s in settings)
    assert any(s.get("episode_penalty_enabled") for s in settings)
    assert any(s.get("prior_age_rate", 0) > 0 for s in settings)
    assert any(case["thresholds"] for case in CASES)
    assert any(not a["query"].strip() for a in arguments)
    assert any(a.get("exclude_contents") for a in arguments)
    assert any(a.get("source_id") for a in arguments)
    assert any(r.get("gate_fallback") for r in responses.values())
    assert any(m.get("content_truncated") for r in responses.values() for m in r["messages"])
    signals = {m.get("match_reason", {}).get("signal") for r in responses.values() for m in r["messages"]}
    assert {"cosine", "rrf"} <= signals
    refs = {m.get("ref", "profile") for r in responses.values() for m in r["messages"]}
    assert "profile" in refs and any(ref.startswith("ep:") for ref in refs)
